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


def shuffled_topic(rows: list[dict], seed: int) -> list[tuple[dict[str, str], str]]:
    """Letter the four options of every row of one topic as the official PrefEval run does.

    Upstream seeds `random` with 41 once per topic run and calls `random.sample(options, 4)` row by
    row, the aligned option being index 0; replaying that stream gives the official letters, and
    the same (topic, row) has the same letters in all three forms.
    """
    rng = random.Random(seed)
    lettered = []
    for row in rows:
        options = row["classification_task_options"]
        shuffled = rng.sample(options, len(options))
        letters = "ABCD"
        lettered.append(({letters[i]: text for i, text in enumerate(shuffled)}, letters[shuffled.index(options[0])]))
    return lettered


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
            letters = shuffled_topic(mcq_rows, seed)
            for row, (mcq, ctx, (options, gold)) in enumerate(zip(mcq_rows, context_rows, letters, strict=True)):
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
