"""Each task's input and answer format, explained from its manifest, with an example predictions file."""

from __future__ import annotations

import html
import json

from evaluator.suite import Task

PLACEHOLDER_IDS = ("item-1", "item-2", "item-3")


def answer_rule(task: Task) -> str:
    """What the answer field must hold, in words."""
    if task.answer_kind == "rating":
        low, high = task.answer_range
        return f"a number from {low:g} to {high:g}"
    if task.answer_labels:
        return "one of " + ", ".join(f"`{label}`" for label in task.answer_labels)
    return "free text (your model's answer)"


def example_answers(task: Task, n: int) -> list:
    if task.answer_kind == "rating":
        low, high = task.answer_range
        return [low + (high - low) * i / max(n - 1, 1) for i in range(n)]
    if task.answer_labels:
        return [task.answer_labels[i % len(task.answer_labels)] for i in range(n)]
    return ["Your model's answer, as plain text." for _ in range(n)]


def _public_ids(task: Task, n: int) -> list[str] | None:
    if not task.split_available():
        return None
    return [item.id for item in task.load_split().items[:n]]


def example_predictions(task: Task, n: int = 3) -> bytes:
    """The first `n` public item ids (placeholders when the split is not installed here), each with
    an answer of the right form: the file's shape, not right answers."""
    ids = _public_ids(task, n) or list(PLACEHOLDER_IDS[:n])
    return b"".join(
        json.dumps({"id": i, task.answer_field: a}).encode() + b"\n"
        for i, a in zip(ids, example_answers(task, len(ids)))
    )


def format_help(task: Task) -> str:
    """Markdown: the inputs, the answer field and its values, one example line, the example file."""
    suite = task.suite
    line = example_predictions(task, 1).decode().strip()
    parts = [
        f"**{html.escape(suite.title)} · {html.escape(task.title)}**: one JSON object per line, one line per item "
        f"of the split, with the item's `id` and the field `{task.answer_field}` holding {answer_rule(task)}.",
        f"Example line: `{line}`",
        f'<a class="pb-example" href="/examples/{html.escape(suite.name)}/{html.escape(task.name)}.jsonl" '
        f'download="{html.escape(suite.name)}-{html.escape(task.name)}-example.jsonl">Download an example file</a> '
        f"(the first items' ids with answers of the right form, not right answers).",
    ]
    return "\n\n".join(parts)
