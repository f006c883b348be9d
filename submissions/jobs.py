"""The work a queue worker does for one submission.

The job is safe to run more than once: a finished submission is skipped, and the store's publish
is idempotent per submission, so a job retried after its worker was killed publishes once.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any

from rq import get_current_job

from backend.settings import load_settings
from evaluator.predictions import PredictionsError
from evaluator.registry import UnknownSuiteError, get_task
from evaluator.scoring import score_predictions_file
from leaderboard.store import LocalDatasetStore
from submissions.records import Submission, SubmissionStore, utc_now

log = logging.getLogger(__name__)

# Fault injection for the worker-kill tests: the job pauses this long after it is marked running.
FAULT_PAUSE_ENV = "PERSONABOARD_TEST_JOB_PAUSE_S"


def _stores() -> tuple[SubmissionStore, LocalDatasetStore]:
    settings = load_settings()
    return SubmissionStore(settings.submissions_db), LocalDatasetStore(settings.store_dir)


def _report_progress(done: int, total: int) -> None:
    job = get_current_job()
    if job is not None:
        job.meta["progress"] = {"done": done, "total": total}
        job.save_meta()


def result_record(submission: Submission, metrics: dict[str, Any], timings: dict[str, Any]) -> dict[str, Any]:
    """The published record: the result with everything needed to reproduce or audit it."""
    return {
        "submission_id": submission.id,
        "suite": submission.suite,
        "task": submission.task,
        "setting": submission.setting,
        "model_name": submission.model_name,
        "model_link": submission.model_link,
        "description": submission.description,
        "source": "predictions file",
        "row_kind": "computed",
        "submitted_at": submission.created_at,
        "provenance": {
            "suite_version": metrics["suite_version"],
            "split": metrics["split"],
            "scorer_version": metrics["scorer_version"],
            "predictions_sha256": submission.file_sha256,
            "predictions_bytes": submission.file_bytes,
            "protocol": "uploaded predictions",
            "attempts": submission.attempts,
        },
        "timings": timings,
        "n_items": metrics["n_items"],
        "metrics": {"metric": metrics["metric"], "total": metrics["total"], "tiers": metrics["tiers"]},
    }


def evaluate_submission(submission_id: str) -> dict[str, Any] | None:
    submissions, results = _stores()
    submission = submissions.start_attempt(submission_id)
    if submission is None:
        log.info("submission %s already finished or unknown; nothing to do", submission_id)
        return None
    started = time.time()
    if pause := float(os.environ.get(FAULT_PAUSE_ENV, "0") or 0):
        time.sleep(pause)
    try:
        task = get_task(submission.suite, submission.task)
        total = len(task.load_split().items)
        _report_progress(0, total)
        metrics = score_predictions_file(task, submission.file_path, submission.filename or "predictions file")
    except (PredictionsError, UnknownSuiteError, FileNotFoundError) as exc:
        # Deterministic failures: retrying cannot help, so fail now with the reason.
        submissions.update(submission_id, state="failed", error=str(exc), finished_at=utc_now())
        return None
    _report_progress(total, total)
    timings = {
        "submitted_at": submission.created_at,
        "started_at": submission.started_at,
        "scoring_seconds": metrics["scoring_seconds"],
        "job_seconds": time.time() - started,
    }
    record = result_record(submission, metrics, timings)
    revision = results.publish(record)
    submissions.update(
        submission_id, state="finished", result=record["metrics"], revision=revision,
        progress_done=total, progress_total=total, finished_at=utc_now(),
    )
    return {"revision": revision}


def on_job_failure(job, connection, exc_type, exc_value, traceback) -> None:
    """RQ calls this when the job raised or its worker died; RQ retries afterwards if it can."""
    submission_id = job.args[0]
    submissions, _ = _stores()
    current = submissions.get(submission_id)
    if current is None or current.state == "finished":
        return
    name = getattr(exc_type, "__name__", "error")
    reason = f"{name}: {exc_value}" if str(exc_value or "") else f"{name} (the worker stopped before finishing)"
    if job.retries_left:
        submissions.update(submission_id, state="queued", error=f"attempt failed ({reason}); retrying")
    else:
        submissions.update(submission_id, state="failed", error=f"evaluation failed: {reason}", finished_at=utc_now())
