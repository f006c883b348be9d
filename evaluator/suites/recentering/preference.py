"""Stage 3, personalized response preference: rate A vs. B given one attribute of the user.

Ratings (submitted and model) are on the annotators' scale: 1 = strongly prefer A, 5 = strongly
prefer B. The scorer orients them as the paper's Table 6 does (higher = prefers the personalized
response): r if the personalized response is B, 6 - r if it is A. Which slot is personalized is
scorer-side only (judges see the two responses blind). Gold: the human mean rating, already in
that orientation in the split. An unparsable model rating (None) counts as 3, no preference.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from evaluator.suite import Item, Task
from evaluator.suites.recentering.common import prompt_for, rows, tier_of

NEUTRAL = 3.0


def build_items(task: Task, folder: Path) -> list[Item]:
    low, high = task.answer_range
    items = []
    for row in rows(task, folder):
        profile = row.get("profile")
        if (
            not isinstance(profile, list)
            or not profile
            or not all(isinstance(a, str) and a.strip() for a in profile)
        ):
            row.fail("profile", "expected a non-empty list of attribute strings")
        slot = row.text("personalized").strip().upper()
        if slot not in ("A", "B"):
            row.fail("personalized", f"{slot!r} is not A or B")
        rating = row.get("rating")
        if (
            isinstance(rating, bool)
            or not isinstance(rating, (int, float))
            or not low <= rating <= high
        ):
            row.fail("rating", f"{rating!r} is not a number from {low:g} to {high:g}")
        generator = tier_of(row, "generator", task, "generator")
        prompt, a, b = row.text("prompt"), row.text("response_a"), row.text("response_b")
        items.append(
            Item(
                id=row.id,
                tiers={"generator": generator},
                public={
                    "id": row.id,
                    "profile": list(profile),
                    "prompt": prompt,
                    "attribute": row.text("attribute"),
                    "response_a": a,
                    "response_b": b,
                },
                gold={"rating": float(rating), "personalized": slot},
                unit=response_pair(prompt, a, b),
            )
        )
    return items


def response_pair(prompt: str, a: str, b: str) -> str:
    """The response pair an item rates (its bootstrap unit): the prompt and its two responses,
    in either order; rated once per relevant attribute."""
    key = json.dumps([prompt.strip(), sorted((a.strip(), b.strip()))], ensure_ascii=False)
    return "pair:" + hashlib.sha256(key.encode()).hexdigest()[:16]


def oriented(rating: float | None, personalized: str) -> float:
    """An A/B-scale rating as 'prefers the personalized response' (None -> 3, no preference)."""
    if rating is None:
        return NEUTRAL
    return float(rating) if personalized == "B" else 6.0 - float(rating)


def item_arrays(task: Task, items: list[Item], answers: dict) -> dict[str, np.ndarray]:
    return {
        "pred": np.array(
            [oriented(answers.get(i.id), i.gold["personalized"]) for i in items], dtype=float
        ),
        "gold": np.array([i.gold["rating"] for i in items], dtype=float),
    }


# -- model runs ---------------------------------------------------------------------------------


def build_requests(task: Task, publics: list[dict], setting: str, tools) -> list:
    from evaluator.protocols import ChoiceRequest

    prompt = prompt_for(task, setting)
    labels = tuple(str(r) for r in range(int(task.answer_range[0]), int(task.answer_range[1]) + 1))
    requests = []
    for pub in publics:
        user = prompt["user"].format(
            profile="\n".join(f"- {a}" for a in pub["profile"]),
            prompt=pub["prompt"],
            response_a=pub["response_a"],
            response_b=pub["response_b"],
            attribute=pub["attribute"],
        )
        messages = [
            {"role": "system", "content": prompt["system"]},
            {"role": "user", "content": user},
        ]
        requests.append(ChoiceRequest(pub["id"], messages, labels))
    return requests


_DIGIT = re.compile(r"(?<![\d.])([1-5])(?!\d|\.\d)")


def parse_answer(text: str) -> str | None:
    """generate_parse: the first standalone digit 1-5 of the reply ('4', 'Rating: 2'); else None."""
    match = _DIGIT.search(text or "")
    return match.group(1) if match else None


def decision_answer(decision) -> float | None:
    """rating_logprobs: the expected rating over "1".."5"; generate_parse: the parsed digit."""
    from evaluator.protocols import expected_rating

    if decision.scores:
        return expected_rating(decision)
    return None if decision.answer is None else float(decision.answer)


def gold_answer(task: Task, item: Item) -> float:
    """The A/B-scale rating that orients to the human mean rating (a perfect file)."""
    return oriented(item.gold["rating"], item.gold["personalized"])  # 6 - r is its own inverse
