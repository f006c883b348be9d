"""Paired comparison of two finished submissions on the items both answered (GET /api/v1/compare).

The answers are read back from where the service already keeps them (an upload's file, a model
run's checkpoint); the evaluator recomputes the per-item outcomes and returns only the comparison.

Both rows must be finished, published and public: a hidden or deleted row answers 404 as if it
did not exist (its scores are not shown anywhere else either). On a hidden split a paired
comparison would tell more than the two released rows do: its p-value and overlap count read the
per-item outcomes (two rows differing in one item each: p 0.5 if their labels agree, 1.0 if not;
a one-item row: the other row's right/wrong on it). There it compares only the released values,
from full runs, and reads no answers (`hidden_split_comparison`).

A comparison on a hidden split is still metered like a submission: it needs an identity (401
without one) and takes one of that identity's daily comparisons on the suite (429 once spent;
`QuotaLimits.comparisons`, PERSONABOARD_QUOTA_COMPARISONS). It reveals nothing the board does not
show today, but it is the one read of a hidden split that names two rows of the caller's choice,
so it is attributed and bounded: should anything more ever be answered here, no anonymous caller
could ask it without limit. Its budget is its own, not the upload quota's, because a comparison
teaches nothing about the gold, and spending an upload on it would only push people to compare
by hand from the board. Public splits stay open to anyone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluator.comparison import ComparisonError, compare_answers
from evaluator.predictions import iter_lines, read_predictions
from evaluator.registry import get_task
from evaluator.scoring import private_part_ids
from evaluator.settings import load_evaluator_settings
from evaluator.statistics import MetricStats
from evaluator.suite import Task
from submissions.identity import IdentityStore
from submissions.intake import SubmissionError, Submitter, quota_error
from submissions.quotas import today
from submissions.records import Submission, SubmissionStore


def _answers(task: Task, submission: Submission) -> dict[str, Any]:
    try:
        return _read_answers(task, submission)
    except OSError:  # the upload or checkpoint was removed (a deleted row, a cleaned data folder)
        raise SubmissionError(
            409,
            f"the answers of submission {submission.id} are no longer kept: no paired comparison",
        ) from None


def _read_answers(task: Task, submission: Submission) -> dict[str, Any]:
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


def _released_primary(submission: Submission) -> MetricStats | dict[str, Any]:
    result = submission.result or {}
    metric = result.get("metric")
    return (result.get("total") or {}).get(metric, {}) if metric else {}


def is_partial(submission: Submission) -> bool:
    """A model run on a subset of the split (`limit`), or one that skipped items it cannot run
    (n/a: e.g. prompts over its context window). A finished run's progress_total is the count of
    items it scored, which on a hidden split with a private part counts the public part only
    (evaluator/scoring.py); an upload answers every item or is refused. Not seen: a run whose
    skipped items were all in the private part."""
    if (submission.details or {}).get("limit"):
        return True
    if submission.kind != "model":
        return False
    task = get_task(submission.suite, submission.task)
    private = private_part_ids(task)
    scored_when_whole = sum(1 for item in task.load_split().items if item.id not in private)
    return submission.progress_total < scored_when_whole


def hidden_split_comparison(a: Submission, b: Submission) -> dict[str, Any]:
    """Two rows of a hidden split compared by their released values only (see the module's note)."""
    for s in (a, b):
        if is_partial(s):
            raise SubmissionError(
                409,
                f"submission {s.id} is a partial run: on a hidden split only full runs are compared",
            )
    a_stats, b_stats = _released_primary(a), _released_primary(b)
    a_value, b_value = a_stats.get("value"), b_stats.get("value")
    step = max(a_stats.get("step") or 0, b_stats.get("step") or 0) or None
    return {
        "metric": (a.result or {}).get("metric"),
        "a_mean": a_value,
        "b_mean": b_value,
        "difference": None if a_value is None or b_value is None else round(a_value - b_value, 10),
        "ci95": [None, None],
        "p_value": None,
        "n": None,
        "n_units": None,
        "test": "none (hidden split: released values only)",
        "paired": False,
        "release": {
            "step": step,
            "note": "hidden split: the difference of the two released values; no paired test "
            "(its p-value and item counts would read per-item outcomes of hidden labels)",
        },
    }


IDENTITY_NEEDED = (
    "a comparison on a hidden split needs an identity: send `Authorization: Bearer <API token>` "
    "(an operator issues tokens with `personaboard users token NAME`); it counts against your "
    "daily comparisons on the suite"
)


def require_submitter(submitter: Submitter | None) -> Submitter:
    """The caller of a comparison on a hidden split, or 401."""
    if submitter is None:
        raise SubmissionError(401, IDENTITY_NEEDED, field="Authorization")
    return submitter


def take_comparison(records: SubmissionStore, submitter: Submitter, suite: str) -> None:
    """Count one comparison on a hidden split against the caller's daily budget, or 429."""
    window, limit = today(), submitter.limits.of("comparisons")
    used = IdentityStore(records).take_comparison(
        submitter.identity.name, suite, limit, window.start
    )
    if used >= limit:
        raise quota_error("comparisons", suite, used, limit)


def compare_submissions(
    records: SubmissionStore, a_id: str, b_id: str, submitter: Submitter | None = None
) -> dict[str, Any]:
    """Compare rows a and b. `submitter`: the caller with their limits (None: anonymous), needed
    only where the task's split is hidden (see the module's note)."""
    found = []
    for sid in (a_id, b_id):
        submission = records.get(sid)
        if submission is None or submission.visibility != "public":
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

    def row(s: Submission) -> dict[str, Any]:
        return {"submission_id": s.id, "model_name": s.model_name, "setting": s.setting}

    if task.suite.split_hidden:
        caller = require_submitter(submitter)
        # refuses partial runs before a comparison is taken
        result: Mapping[str, Any] = hidden_split_comparison(a, b)
        take_comparison(records, caller, a.suite)
    else:
        try:
            result = compare_answers(task, _answers(task, a), _answers(task, b))
        except ComparisonError as exc:
            raise SubmissionError(422, str(exc)) from None
    return {"suite": a.suite, "task": a.task, "a": row(a), "b": row(b), **result}
