"""Helpers for the fast unit tests (tests/unit is on sys.path): tiny tasks with known answers.

A tiny task is built from the suite dataclasses directly; its split goes into the split cache under
a unique suite name, so `task.load_split()` (the path the scorer and the workers use) returns it
without any hooks module. The cache entry is removed at teardown.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from evaluator import suite as suite_module
from evaluator.suite import Item, Split, Suite, Task, TierGroup


def make_task(
    items: list[Item],
    tier_groups: tuple[TierGroup, ...],
    labels: tuple[str, ...] = ("A", "B", "C", "D"),
    answer_field: str = "answer",
    split_name: str = "test",
) -> Task:
    suite = Suite(
        name=f"unit-{uuid.uuid4().hex[:8]}",
        title="Unit",
        version="0.0.1",
        description="",
        citation="",
        license="",
        homepage="",
        settings={"zero_shot": "plain"},
        folder=Path("."),
    )
    task = Task(
        suite=suite,
        name="tiny",
        title="Tiny",
        description="",
        answer_field=answer_field,
        answer_labels=labels,
        metric="accuracy",
        tier_groups=tier_groups,
        hooks_module="tests.unit.unit_helpers",
        options={"split": split_name},
    )
    suite.tasks[task.name] = task
    suite_module._SPLIT_CACHE[task.key] = Split(name=split_name, items=list(items))
    return task


def build_items(task: Task, folder: Path) -> list[Item]:
    """The tiny task's hooks (this module): its items are the cached split's."""
    return suite_module._SPLIT_CACHE[task.key].items


def item(item_id: str, gold: str, **tiers: str) -> Item:
    return Item(id=item_id, tiers=dict(tiers), public={"id": item_id, "options": {}}, gold=gold)


def jsonl(*records) -> list[bytes]:
    """Lines as read_predictions gets them (bytes, no newline); str/bytes pass through as raw lines."""
    out = []
    for record in records:
        if isinstance(record, bytes):
            out.append(record)
        elif isinstance(record, str):
            out.append(record.encode())
        else:
            out.append(json.dumps(record).encode())
    return out
