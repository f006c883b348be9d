"""A file of the wrong task (evaluator/predictions.py): its unknown ids are one problem, with a
count, a few ids quoted whole, and the task they look like; stray unknown ids in a right file get
no such hint. On PrefEval's shipped splits: mcq's ids are those of open_ended, and mcq_turns's
are the same with a turn suffix ("-t0")."""

from __future__ import annotations

import json

import pytest

from evaluator.predictions import PredictionsError, read_predictions
from evaluator.registry import get_task
from space.status_text import format_error
from submissions.intake import SubmissionError


def lines_for(ids: list[str], field: str) -> list[bytes]:
    return [json.dumps({"id": i, field: "A"}).encode() + b"\n" for i in ids]


def refused(task_name: str, ids: list[str], field: str = "answer") -> PredictionsError:
    task = get_task("prefeval", task_name)
    with pytest.raises(PredictionsError) as info:
        read_predictions(lines_for(ids, field), task, task.load_split())
    return info.value


def shown(error: PredictionsError) -> str:
    """What the submit tab shows (the intake's refusal of the file, as format_error writes it)."""
    return format_error(SubmissionError(422, str(error), error.as_dict()["problems"]))


def test_a_file_of_mcq_turns_sent_as_mcq_names_mcq_turns_once():
    turns = [item.id for item in get_task("prefeval", "mcq_turns").load_split().items]
    error = refused("mcq", turns)
    unknown = [p for p in error.problems if p.message.endswith("choose that task")]
    assert len(unknown) == 1 and len(error.problems) <= 3, [str(p) for p in error.problems]
    message = unknown[0].message
    assert "these ids look like prefeval/mcq_turns: choose that task" in message
    # counted, not listed: the file stops at the line limit (3,000 items + 1,000), all unknown
    assert unknown[0].count == 4000 and message.startswith("4000 unknown ids")
    assert repr(turns[0]) in message and turns[0].endswith("-t0")  # whole, suffix and all
    text = shown(error)
    assert text.count("\n- ") == len(error.problems) and "... and" not in text, text
    assert text.count("choose that task") == 1


def test_ids_two_tasks_share_are_told_apart_by_the_answer_field():
    # PrefEval's mcq and open_ended hold the same ids: "answer" is mcq's field, "response" the other's
    mcq = [item.id for item in get_task("prefeval", "mcq").load_split().items]
    message = next(p.message for p in refused("mcq_turns", mcq).problems if p.field == "id")
    assert message.endswith("these ids look like prefeval/mcq: choose that task"), message
    message = next(
        p.message for p in refused("mcq_turns", mcq, "response").problems if p.field == "id"
    )
    assert message.endswith("these ids look like prefeval/open_ended: choose that task"), message
    # a field neither names: both
    message = next(p.message for p in refused("mcq_turns", mcq, "x").problems if p.field == "id")
    assert "look like prefeval/mcq or prefeval/open_ended: choose that task" in message


def test_a_few_stray_ids_in_a_right_file_are_counted_without_a_hint():
    ids = [item.id for item in get_task("prefeval", "mcq").load_split().items]
    ids[10:13] = ["stray-1", "stray-2", "stray-3"]
    error = refused("mcq", ids)
    unknown = next(p for p in error.problems if "unknown" in p.message)
    assert unknown.count == 3 and unknown.lines == (11, 12, 13)
    assert unknown.message.startswith("3 unknown ids (not in split test of prefeval/mcq)")
    assert "'stray-1', 'stray-2', 'stray-3'" in unknown.message
    assert "look like" not in unknown.message
    # one unknown id reads as before
    ids[10:13] = ["stray-1", *ids[:2]]
    one = next(p for p in refused("mcq", ids).problems if "unknown" in p.message)
    assert one.message == "unknown id 'stray-1' (not in split test of prefeval/mcq)"
