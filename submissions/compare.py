"""Paired comparison of two finished submissions on the items both answered (GET /api/v1/compare).

The answers are read back from where the service already keeps them (an upload's file, a model
run's checkpoint); the evaluator recomputes the per-item outcomes and returns only the comparison.
"""

from __future__ import annotations

from typing import Any

from evaluator.comparison import ComparisonError, compare_answers
from evaluator.predictions import iter_lines, read_predictions
from evaluator.registry import get_task
from evaluator.settings import load_evaluator_settings
from submissions.intake import SubmissionError
from submissions.records import Submission, SubmissionStore


def _answers(task, submission: Submission) -> dict[str, Any]:
    if submission.kind == "model":
        from evaluator.model_eval import Checkpoint, _by_item

        path = load_evaluator_settings().checkpoints_dir / f"{submission.id}.jsonl"
        if not path.exists():
            raise SubmissionError(
                409,
                f"the answers of model run {submission.id} are no longer kept: no paired comparison",
            )
        return _by_item(Checkpoint(path).load().values())
    with open(submission.file_path, "rb") as stream:
        return read_predictions(
            iter_lines(stream), task, task.load_split(), submission.filename or "predictions file"
        )


def compare_submissions(records: SubmissionStore, a_id: str, b_id: str) -> dict[str, Any]:
    found = []
    for sid in (a_id, b_id):
        submission = records.get(sid)
        if submission is None:
            raise SubmissionError(404, f"no submission with id {sid!r}")
        if (
            submission.state != "finished"
            or not submission.revision
            or (submission.result or {}).get("released") is False
        ):
            raise SubmissionError(409, f"submission {sid} has no published result to compare")
        found.append(submission)
    a, b = found
    if (a.suite, a.task) != (b.suite, b.task):
        raise SubmissionError(
            422,
            f"{a_id} is on {a.suite}/{a.task} and {b_id} on {b.suite}/{b.task}: "
            "a paired comparison needs the same task",
        )
    task = get_task(a.suite, a.task)
    try:
        result = compare_answers(task, _answers(task, a), _answers(task, b))
    except ComparisonError as exc:
        raise SubmissionError(422, str(exc)) from None

    def row(s: Submission) -> dict[str, Any]:
        return {"submission_id": s.id, "model_name": s.model_name, "setting": s.setting}

    return {"suite": a.suite, "task": a.task, "a": row(a), "b": row(b), **result}
