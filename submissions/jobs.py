"""The work a queue worker does for one submission.

The job is safe to run more than once: a finished submission is skipped, and the store's publish
is idempotent per submission, so a job retried after its worker was killed publishes once.
"""

from __future__ import annotations

import base64
import functools
import logging
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable

from redis import Redis
from redis.exceptions import RedisError
from rq import get_current_job
from rq.job import Job

from evaluator.backends.base import BackendError
from evaluator.judge import Judge, judge_for, judged_setting
from evaluator.predictions import PredictionsError, answers_sha256
from evaluator.registry import UnknownSuiteError, get_task
from evaluator.scoring import Scores, score_predictions_file
from evaluator.settings import EvaluatorSettings, load_evaluator_settings
from evaluator.suite import Task
from leaderboard.head_signal import RedisHeadSignal
from leaderboard.outbox import OnPublished, Outbox, OutboxEntry, OutboxPayload, Withhold
from leaderboard.result_record import (
    KIND_COMPUTED,
    KIND_PARTIAL,
    ResultRecord,
    Timings,
    new_record,
)
from leaderboard.results import open_outbox
from leaderboard.store import StoreUnavailable
from submissions import queue
from submissions.details import details_file
from submissions.metrics import record_job
from submissions.moderation import keep_withheld, shared_visibility
from submissions.records import Submission, SubmissionStore, utc_now
from submissions.remote import RemoteLedger, ensure_pinned_split, note_released, send_event
from submissions.settings import load_submission_settings

if TYPE_CHECKING:  # loaded by a model run only (_evaluate_model)
    from evaluator.model_eval import Progress, RetrievalStats, RunStats

log = logging.getLogger(__name__)

# How long a finished job waits to see its result published before it reports "finished, waiting to
# publish" (the outbox keeps the result; whoever publishes it later records the revision).
PUBLISH_WAIT_S = 30.0


def _stores(
    snapshot: dict[str, Any] | None = None, connection: Redis | None = None
) -> tuple[SubmissionStore | RemoteLedger, Outbox]:
    """Where this job reads and reports its submission: the web node's records (a worker on the web
    node), or the job's snapshot and Redis events (a worker elsewhere: submissions/remote.py)."""
    settings = load_submission_settings()
    submissions: SubmissionStore | RemoteLedger
    if settings.worker_remote:
        if snapshot is None:
            raise RuntimeError(
                "a remote worker needs the submission in the job (queued by an older version?)"
            )
        submissions = RemoteLedger(_redis(connection), snapshot)
    else:
        submissions = SubmissionStore(settings.submissions_db)
    return submissions, publishing_outbox(connection)


def _redis(connection: Redis | None = None) -> Redis:
    job = get_current_job()
    return connection or (
        job.connection if job is not None else queue.connect(load_submission_settings().redis_url)
    )


def publishing_outbox(connection: Redis | None = None) -> Outbox:
    """This machine's outbox, reporting each published result's revision where the records are:
    the web node's database, or (from a remote worker) an event the web node folds in."""
    settings = load_submission_settings()
    if settings.worker_remote:
        redis = _redis(connection)

        def report(submission_id: str, revision: str) -> None:
            send_event(redis, submission_id, {"revision": revision})

        withhold = withhold_hidden_remote(redis)
    else:
        records = SubmissionStore(settings.submissions_db)
        report, withhold = records.update_revision, withhold_hidden(records)
    return open_outbox(
        on_published=record_published(report),
        head_signal=head_signal(settings.redis_url),
        withhold=withhold,
    )


def withhold_hidden(records: SubmissionStore) -> Withhold:
    """The outbox's last check before a result goes out, where the records are: a submission an
    operator hid or deleted since its job started is not published; its record is kept for unhide."""

    def withhold(entry: OutboxEntry) -> bool:
        record = entry["record"]
        current = records.get(record["submission_id"])
        if current is None or current.visibility == "public":
            return False
        return keep_withheld(records, current.id, record, "worker")

    return withhold


def withhold_hidden_remote(redis: Redis) -> Withhold:
    """The same check on a worker elsewhere: the visibility the web node keeps in Redis; a withheld
    record goes to the web node (an event), which keeps it for unhide. Redis unreachable: the entry
    waits in the outbox (never published without the check)."""

    def withhold(entry: OutboxEntry) -> bool:
        record = entry["record"]
        submission_id = record["submission_id"]
        try:
            if shared_visibility(redis, submission_id) in (None, "public"):
                return False
            send_event(redis, submission_id, {"withheld_record": record})
        except RedisError as exc:
            raise StoreUnavailable(
                f"cannot tell whether {submission_id} was hidden (Redis: {exc}); it waits"
            ) from None
        return True

    return withhold


@functools.lru_cache(maxsize=4)
def head_signal(redis_url: str) -> RedisHeadSignal:
    """This process's results head signal (one Redis client, not one per job): other processes, the
    web node's leaderboard above all, see a publish from here at once (leaderboard/head_signal.py)."""
    return RedisHeadSignal(redis_url)


def record_published(report: Callable[[str, str], None]) -> OnPublished:
    """The outbox's report: a result that went out gets its revision on the submission record."""

    def on_published(entry: OutboxEntry, revision: str | None) -> None:
        if entry.get("kind") == "result" and revision:
            report(entry["record"]["submission_id"], revision)

    return on_published


def _connection() -> Redis | None:
    job = get_current_job()
    return job.connection if job is not None else None


def _report_progress(done: int, total: int) -> None:
    job = get_current_job()
    if job is not None:
        job.meta["progress"] = {"done": done, "total": total}
        job.save_meta()


def result_record(
    submission: Submission,
    metrics: Scores,
    timings: Timings,
    run: RunStats | None = None,
) -> ResultRecord:
    """The published record: the result with everything needed to reproduce or audit it."""
    provenance = {
        "suite_version": metrics["suite_version"],
        "split": metrics["split"],
        "scorer_version": metrics["scorer_version"],
        "attempts": submission.attempts,
    }
    if "release" in metrics:  # a hidden split: how the published numbers were released
        provenance["release"] = metrics["release"]
    scoring = metrics.get("scoring_provenance") or {}
    provenance.update(scoring)
    # A judge-scored result is comparable only with results of the same judge (and judge protocol):
    # they are part of the setting.
    setting = judged_setting(submission.setting, scoring)
    if submission.kind == "model":
        details = submission.details or {}
        model = {k: v for k, v in details["model"].items() if k != "path"}
        provenance.update(run or {})
        provenance["model"] = model  # the run's own "model" (a bare name) must not replace this
        # a limited run, or one that skipped items the model cannot run (n/a: e.g. contexts longer than its window)
        partial = (
            bool(details.get("limit")) or bool(run and run.get("not_applicable"))
        ) and metrics["n_items"] < metrics["split"]["full_n_items"]
        source, row_kind = (
            f"model run ({provenance.get('protocol')})",
            KIND_PARTIAL if partial else KIND_COMPUTED,
        )
    else:
        provenance.update(
            {
                "predictions_sha256": submission.file_sha256,
                "predictions_bytes": submission.file_bytes,
                "protocol": "uploaded predictions",
            }
        )
        source, row_kind = "predictions file", KIND_COMPUTED
    return new_record(
        submission_id=submission.id,
        suite=submission.suite,
        task=submission.task,
        setting=setting,
        model_name=submission.model_name,
        model_link=submission.model_link,
        description=submission.description,
        source=source,
        row_kind=row_kind,
        submitted_at=submission.created_at,
        provenance=provenance,
        timings=timings,
        n_items=metrics["n_items"],
        metrics={"metric": metrics["metric"], "total": metrics["total"], "tiers": metrics["tiers"]},
    )


def _judge(task: Task, settings: EvaluatorSettings, submission_id: str) -> Judge | None:
    """The judge of a judge-scored task, keeping what it writes (scores, rationales) beside the
    submission's answers in the private checkpoints folder; None for other tasks."""
    judge = judge_for(task, settings)
    return (
        judge.keeping(settings.checkpoints_dir / f"{submission_id}.judge.jsonl") if judge else None
    )


def _evaluate_model(
    submission: Submission, task: Task, submissions: SubmissionStore | RemoteLedger
) -> tuple[Scores, RunStats]:
    """Run the model on the hidden split (resuming from the checkpoint) and score its answers."""
    from evaluator.backends import ModelSpec
    from evaluator.backends.pool import shared_pool
    from evaluator.model_eval import Checkpoint, run_model
    from evaluator.models import ResolvedModel, download_hub_model
    from evaluator.scoring import score_answers, split_provenance

    settings = load_evaluator_settings()
    details = submission.details or {}
    resolved = ResolvedModel(**details["model"])
    if resolved.source == "endpoint":
        from evaluator.endpoints import endpoint_backend

        backend = endpoint_backend(resolved.name, settings.data_dir)
        warm = None
    else:
        path = resolved.path or download_hub_model(resolved)
        # kept warm across jobs where the worker runs jobs in its own process (submissions/worker.py)
        backend, warm = shared_pool().acquire(
            ModelSpec(resolved.name, path, resolved.model_type, resolved.revision), settings.backend
        )
    checkpoint = Checkpoint(settings.checkpoints_dir / f"{submission.id}.jsonl")
    last_saved = [0.0]
    job = (
        get_current_job()
    )  # progress is reported from the checkpoint writer's thread, where RQ's is unset

    def on_progress(report: Progress) -> None:
        if job is not None:
            job.meta["progress"] = report
            job.save_meta()
        if time.monotonic() - last_saved[0] > 2 or report["done"] == report["total"]:
            submissions.update(
                submission.id, progress_done=report["done"], progress_total=report["total"]
            )
            last_saved[0] = time.monotonic()

    run = run_model(
        task,
        submission.setting,
        backend,
        details.get("protocol"),
        details.get("limit"),
        checkpoint,
        on_progress,
    )
    metrics = score_answers(task, run.split, run.answers, _judge(task, settings, submission.id))
    full = task.load_split()
    metrics.update(split_provenance(task, run.split, full))
    stats = run.stats.copy()
    # two runs with the same answers are one row (an upload of the same answers too)
    stats["answers_sha256"] = answers_sha256(run.answers)
    if warm is not None:
        stats["engine_warm"] = (
            warm  # loaded by an earlier job of this worker (its prefix cache too)
        )
    stats["seeds"] = {
        "option_shuffle": task.options.get("shuffle_seed"),
        "decoding": "greedy (no sampling)",
    }
    if submission.setting == "rag":
        stats.update(retrieval_stats(task, settings))
    return metrics, stats


def retrieval_stats(task: Task, settings: EvaluatorSettings) -> RetrievalStats:
    """What a `rag` row records of its retriever: the model, and where the suite's paper names
    another (task option `paper_retriever`), that deviation."""
    from evaluator.backends.embedding import retriever_name

    used = retriever_name(settings)
    paper = task.options.get("paper_retriever")
    stats: RetrievalStats = {"retrieval_model": used}
    if paper and used != paper:
        stats["retrieval_deviation"] = f"the paper's retriever is {paper}"
    return stats


def _wait_for_gate(gate: Path, limit_s: float = 600) -> None:
    """Hold the running job until the test opens the gate (creates the file); bounded."""
    deadline = time.monotonic() + limit_s
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def evaluate_submission(
    submission_id: str, snapshot: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    submissions, results = _stores(snapshot)
    submission = submissions.start_attempt(submission_id)
    if submission is None:
        log.info("submission %s already finished or unknown; nothing to do", submission_id)
        return None
    started = time.time()
    if gate := load_submission_settings().job_gate:  # fault injection for the worker-kill tests
        _wait_for_gate(gate)
    run_stats = None
    try:
        if isinstance(
            submissions, RemoteLedger
        ):  # the web node's pinned split, from the Hub, on first use
            ensure_pinned_split(submissions.redis, submission.suite)
        task = get_task(submission.suite, submission.task)
        _report_progress(0, submission.progress_total)
        if submission.kind == "model":
            metrics, run_stats = _evaluate_model(submission, task, submissions)
        else:
            metrics = score_predictions_file(
                task,
                submission.file_path,
                submission.filename or "predictions file",
                _judge(task, load_evaluator_settings(), submission.id),
            )
    except (PredictionsError, UnknownSuiteError, BackendError, FileNotFoundError) as exc:
        # Deterministic failures: retrying cannot help, so fail now with the reason.
        submissions.update(submission_id, state="failed", error=str(exc), finished_at=utc_now())
        record_job(_connection(), "rejected", time.time() - started)
        return None
    done = metrics["n_items"]
    _report_progress(done, done)
    if task.suite.split_hidden:
        released = _through_the_ladder(submissions, submission, metrics)
        if released is None:  # withheld: finished, nothing published (the reason is the result)
            record_job(_connection(), "withheld", time.time() - started)
            return None
        metrics = released
    timings: Timings = {
        "submitted_at": submission.created_at,
        "started_at": submission.started_at,
        "scoring_seconds": metrics.get("scoring_seconds"),
        "job_seconds": time.time() - started,
    }
    record = result_record(submission, metrics, timings, run_stats).published()
    current = submissions.get(submission_id)
    if current is None or current.state == "cancelled":  # an operator stopped it meanwhile
        record_job(_connection(), "cancelled", time.time() - started)
        return None
    # Durable in the outbox first; published now unless the store is down (then it waits, in order).
    publish_started = time.time()
    entry: OutboxPayload = {"record": record, "request": submission.request_record("finished")}
    if (details := details_file(task, submission)) is not None:  # public splits only
        entry["details"] = base64.b64encode(details).decode("ascii")  # in the result's commit
    _, revision = results.publish_now("result", entry, wait_s=PUBLISH_WAIT_S)
    record_job(_connection(), "finished", time.time() - started, time.time() - publish_started)
    current = submissions.get(submission_id)
    if (
        current is None or current.visibility != "public"
    ):  # hidden or deleted while it ran: out again, in order
        results.publish_now(
            "withdraw",
            {
                "submission_id": submission_id,
                "message": f"Withdraw result {submission_id} (hidden by an operator)",
            },
            wait_s=PUBLISH_WAIT_S,
        )
    published = (
        {"revision": revision} if revision else {}
    )  # else the publisher records it when it goes out
    submissions.update(
        submission_id,
        state="finished",
        result=record["metrics"],
        **published,
        request_status="finished",
        progress_done=done,
        progress_total=done,
        finished_at=utc_now(),
    )
    return {"revision": revision}


def submitter_of(submission: Submission) -> str:
    """Whose best a hidden-split score is compared with: the verified owner, else the model name."""
    owner = getattr(submission, "owner", None)
    return f"owner:{owner}" if owner else f"name:{submission.model_name.strip().casefold()}"


@functools.lru_cache(maxsize=64)
def _release_floor(suite: str, task: str, split_sha256: str) -> float | None:
    """The task's first-release floor (evaluator/release.py), once per installed split."""
    from evaluator import release

    return release.first_release_floor(get_task(suite, task))


def _through_the_ladder(
    submissions: SubmissionStore | RemoteLedger, submission: Submission, metrics: Scores
) -> Scores | None:
    """The one released number (evaluator/release.py), or None after recording why the result is
    withheld. The exact metrics go no further than this function."""
    from evaluator import release

    task = get_task(submission.suite, submission.task)
    step = release.primary_step(metrics)
    value = release.primary_value(metrics)
    too_few = metrics["n_items"] < release.MIN_ITEMS
    if too_few:  # refused at intake; never released if one gets here
        value = None
    floor = _release_floor(task.suite.name, task.name, task.load_split().sha256)
    scope = release.ladder_scope(submission.suite, submission.task)
    # The dither is keyed by the submitter and the exact value: the same score shows the same
    # number to its submitter (a copy cannot draw a new rounding and climb on it), files one item
    # apart draw independently, and two identities' draws are unrelated (no pair of files is
    # seen to be equal or not). evaluator/release.py dither.
    offset = release.dither(
        release.installation_key(task), f"{submitter_of(submission)}|{scope}|{value!r}", "live"
    )
    jitter = release.threshold_jitter(step)
    released, best = submissions.decide_release(
        submission.id,
        submitter_of(submission),
        scope,
        lambda best: (
            release.beats(value, best, step, jitter, floor=floor, offset=offset),
            release.round_to(value, step, offset),
        ),
    )
    if released:
        if (
            isinstance(submissions, SubmissionStore)
            and best is not None
            and (redis := _connection()) is not None
        ):
            note_released(
                redis, submitter_of(submission), scope, best
            )  # remote workers' Ladder sees this node's best too
        if "private" in metrics:  # kept for the operator's next named release, never published
            if isinstance(submissions, SubmissionStore):
                from submissions.private_part import keep

                keep(submissions, submission.id, metrics["private"])
            else:  # a remote worker: sent to the web node, which keeps it (submissions/remote.py)
                submissions.keep_private(submission.id, metrics["private"])
        return release.released_metrics(metrics, offset)
    withheld = release.Withheld(
        best=best, step=step, metric=metrics["metric"], too_few_items=too_few
    )
    n = metrics["n_items"]
    submissions.update(
        submission.id,
        state="finished",
        result=withheld.as_result(),
        revision=None,
        progress_done=n,
        progress_total=n,
        finished_at=utc_now(),
    )
    return None


def on_job_failure(
    job: Job,
    connection: Redis,
    exc_type: type[BaseException],
    exc_value: BaseException,
    traceback: TracebackType | None,
) -> None:
    """RQ calls this when the job raised or its worker died; RQ retries afterwards if it can."""
    record_job(connection, "error")
    submission_id = job.args[0]
    submissions, _ = _stores(job.kwargs.get("snapshot"), connection)
    current = submissions.get(submission_id)
    if current is None or current.state in ("finished", "cancelled"):
        return
    name = getattr(exc_type, "__name__", "error")
    reason = (
        f"{name}: {exc_value}"
        if str(exc_value or "")
        else f"{name} (the worker stopped before finishing)"
    )
    if job.retries_left:
        submissions.update(
            submission_id, state="queued", error=f"attempt failed ({reason}); retrying"
        )
    else:
        submissions.update(
            submission_id,
            state="failed",
            error=f"evaluation failed: {reason}",
            finished_at=utc_now(),
        )
