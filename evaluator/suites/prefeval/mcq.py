"""PrefEval MCQ: builds the items from the upstream files.

Upstream layout (data/): `mcq_options/<topic>.json` holds the preference, the question and four
options with the aligned one at index 0; `implicit_preference/{choice-based,persona-driven}/<topic>.json`
hold, row for row, the conversations that reveal the same preference implicitly.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from evaluator.suite import Item, Task

FORM_SOURCES = {
    "explicit": None,
    "implicit_choice": "implicit_preference/choice-based",
    "implicit_persona": "implicit_preference/persona-driven",
}


def shuffled_options(options: list[str], seed: int, topic: str, row: int) -> tuple[dict[str, str], str]:
    """Shuffle the four options for one (topic, row) and return (lettered options, gold letter).

    The shuffle depends only on (seed, topic, row), not on iteration order, so the same pair has
    the same letters in all three forms and a split rebuilt from the same data is identical.
    """
    order = list(range(len(options)))
    random.Random(f"{seed}:{topic}:{row}").shuffle(order)
    letters = "ABCD"
    lettered = {letters[pos]: options[index] for pos, index in enumerate(order)}
    gold = letters[order.index(0)]  # upstream puts the aligned option at index 0
    return lettered, gold


def _context(form: str, record: dict) -> list[dict[str, str]]:
    """The conversation that states or reveals the preference, as chat messages."""
    if form == "explicit":
        return [{"role": "user", "content": record["preference"]}]
    conversation = record["conversation"]
    if form == "implicit_choice":
        return [
            {"role": "user", "content": conversation["query"]},
            {"role": "assistant", "content": conversation["assistant_options"]},
            {"role": "user", "content": conversation["user_selection"]},
            {"role": "assistant", "content": conversation["assistant_acknowledgment"]},
        ]
    messages = []
    for key in sorted(conversation, key=int):
        messages.append({"role": "user", "content": conversation[key]["user"]})
        messages.append({"role": "assistant", "content": conversation[key]["assistant"]})
    return messages


def build_items(task: Task) -> list[Item]:
    data = task.suite.data_dir
    seed = int(task.options["shuffle_seed"])
    topics = task.tier_group("topic").tiers
    items = []
    for form, source in FORM_SOURCES.items():
        for topic in topics:
            mcq_rows = _read(data / "mcq_options" / f"{topic}.json")
            context_rows = mcq_rows if source is None else _read(data / source / f"{topic}.json")
            for row, (mcq, ctx) in enumerate(zip(mcq_rows, context_rows, strict=True)):
                options, gold = shuffled_options(mcq["classification_task_options"], seed, topic, row)
                item_id = f"{form}-{topic}-{row:03d}"
                items.append(
                    Item(
                        id=item_id,
                        tiers={"form": form, "topic": topic},
                        public={
                            "id": item_id,
                            "form": form,
                            "topic": topic,
                            "context": _context(form, mcq if source is None else ctx),
                            "question": mcq["question"],
                            "options": options,
                        },
                        gold=gold,
                    )
                )
    return items


def _read(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))
