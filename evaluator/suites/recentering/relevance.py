"""Stage 2, attribute relevance: should this attribute of the user change the response to the prompt?

Gold: the majority of the annotators' YES/NO votes (three in the paper); tier `agreement`:
unanimous or split. Positive class: YES. An unparsable model answer (None: no final
"Answer: YES"/"Answer: NO" line) is wrong for accuracy and counts as not YES for precision,
recall, F1 and the YES-rate (the attribute is not selected), so with unparsed answers accuracy
is lower than the confusion matrix behind P/R/F1 would imply; run stats record how many.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluator.suite import Item, Task
from evaluator.suites.recentering.common import Row, final_answer, prompt_for, rows

VOTES = ("YES", "NO")


def _user_of(row: Row, named: bool) -> str | None:
    """The user whose attribute the item asks about (optional field `user`: each prompt is paired
    with several users, who recur across prompts); a split names it on every line or on none."""
    if (row.their("user") in row.record) != named:
        row.fail("user", "named on some lines and not others: give it on every line or on none")
    if not named:
        return None
    value = row.get("user")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        row.fail("user", "expected a non-empty string or an integer")
    return str(value)


def build_items(task: Task, folder: Path) -> list[Item]:
    items = []
    lines = rows(task, folder)
    named = bool(lines) and lines[0].their("user") in lines[0].record
    for row in lines:
        votes = row.get("votes")
        if (
            not isinstance(votes, list)
            or len(votes) % 2 == 0
            or not all(isinstance(v, str) and v.strip().upper() in VOTES for v in votes)
        ):
            row.fail("votes", 'expected an odd number of YES/NO votes, e.g. ["YES", "NO", "NO"]')
        yes = sum(v.strip().upper() == "YES" for v in votes)
        gold = "YES" if 2 * yes > len(votes) else "NO"
        agreement = "unanimous" if yes in (0, len(votes)) else "split"
        prompt = " ".join(row.text("prompt").split())  # the prompt, whitespace aside
        user = _user_of(row, named)
        items.append(
            Item(
                id=row.id,
                tiers={"agreement": agreement},
                public={
                    "id": row.id,
                    "prompt": row.text("prompt"),
                    "attribute": row.text("attribute"),
                },
                gold=gold,
                # crossed units (the manifest's bootstrap_unit): prompt x user where users are named
                unit=(prompt, user) if user is not None else prompt,
            )
        )
    return items


def item_arrays(task: Task, items: list[Item], answers: dict) -> dict[str, np.ndarray]:
    pred = [answers.get(item.id) for item in items]
    return {
        "correct": np.array(
            [p is not None and p == item.gold for p, item in zip(pred, items)], dtype=bool
        ),
        "pred_pos": np.array([p == "YES" for p in pred], dtype=bool),  # None: not YES
        "gold_pos": np.array([item.gold == "YES" for item in items], dtype=bool),
    }


# -- model runs ---------------------------------------------------------------------------------


def build_requests(task: Task, publics: list[dict], setting: str, tools) -> list:
    """generate_parse: the relevance prompt + 'end with Answer: YES/NO'; choice_logprobs: the same
    prompt asking for YES or NO only, read from the first token (YES and NO must be one token each)."""
    from evaluator.protocols import ChoiceRequest

    prompt = prompt_for(task, setting)
    suffix = (
        prompt["logprob_suffix"]
        if tools.protocol == "choice_logprobs"
        else prompt["generate_suffix"]
    )
    requests = []
    for pub in publics:
        user = prompt["user"].format(prompt=pub["prompt"], attribute=pub["attribute"]) + suffix
        messages = [
            {"role": "system", "content": prompt["system"]},
            {"role": "user", "content": user},
        ]
        requests.append(ChoiceRequest(pub["id"], messages, tuple(task.answer_labels)))
    return requests


def parse_answer(text: str) -> str | None:
    """'...\\nAnswer: YES' -> 'YES'; 'Answer: no' -> 'NO'; no final answer line -> None."""
    word = final_answer(text)
    return word if word in VOTES else None
