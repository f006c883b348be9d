"""Stage 1, attribute verification: flag extracted attributes the conversation does not support.

Gold: "unsupported" when the human label is uncertain or rejected, "supported" when accepted.
Positive class for precision / recall / F1: unsupported (paper Table 2). An unparsable model
answer (None) is wrong for accuracy and counts as not flagged for precision / recall / F1, i.e.
as an attribute passed downstream unchecked, the error recall is meant to catch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluator.suite import Item, Task
from evaluator.suites.recentering.common import final_answer, prompt_for, rows, tier_of

HUMAN_LABELS = {"accepted": "supported", "uncertain": "unsupported", "rejected": "unsupported"}
POSITIVE = "unsupported"


def build_items(task: Task, folder: Path) -> list[Item]:
    items = []
    for row in rows(task, folder):
        source = tier_of(row, "source", task, "source")
        conversation = row.get("conversation")
        if isinstance(conversation, bool) or not isinstance(conversation, (str, int)):
            row.fail("conversation", "expected a string or an integer (the conversation's id)")
        label = row.text("label").strip().lower()
        if label not in HUMAN_LABELS:
            row.fail("label", f"{label!r} is not one of {', '.join(HUMAN_LABELS)}")
        items.append(
            Item(
                id=row.id,
                tiers={"source": source},
                public={
                    "id": row.id,
                    "source": source,
                    "snippet": row.text("snippet"),
                    "attribute": row.text("attribute"),
                },
                gold=HUMAN_LABELS[label],
                unit=f"conversation:{conversation}",
            )
        )
    return items


def item_arrays(task: Task, items: list[Item], answers: dict) -> dict[str, np.ndarray]:
    pred = [answers.get(item.id) for item in items]
    gold_pos = np.array([item.gold == POSITIVE for item in items], dtype=bool)
    pred_pos = np.array([p == POSITIVE for p in pred], dtype=bool)  # None: not flagged
    correct = np.array(
        [p is not None and p == item.gold for p, item in zip(pred, items)], dtype=bool
    )
    return {"correct": correct, "pred_pos": pred_pos, "gold_pos": gold_pos}


# -- model runs ---------------------------------------------------------------------------------


def build_requests(task: Task, publics: list[dict], setting: str, tools) -> list:
    from evaluator.protocols import ChoiceRequest

    prompt = prompt_for(task, setting)
    requests = []
    for pub in publics:
        messages = [
            {"role": "system", "content": prompt["system"]},
            {
                "role": "user",
                "content": prompt["user"].format(
                    snippet=pub["snippet"], attribute=pub["attribute"]
                ),
            },
        ]
        requests.append(ChoiceRequest(pub["id"], messages, tuple(task.answer_labels)))
    return requests


def parse_answer(text: str) -> str | None:
    """The final 'Answer: ...' line mapped to supported / unsupported. Both prompts' answer words
    are accepted (they do not overlap): MAKES SENSE -> supported, MAYBE / DOESN'T MAKE SENSE ->
    unsupported (zero-shot, the annotators' labels); SUPPORTED / UNSUPPORTED (optimized)."""
    from evaluator.suites.recentering.common import prompts

    word = final_answer(text)
    if word is None:
        return None
    table = {
        **prompts()["verifier_zero_shot"]["answers"],
        **prompts()["verifier_optimized"]["answers"],
    }
    return table.get(word)
