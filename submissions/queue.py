"""The RQ queue: putting submissions on it, reading their live status, and repairing drift.

The job id is the submission id, so status lookups need nothing but the id, and enqueueing the
same submission twice is a no-op while its job exists.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, TypedDict

from redis import Redis
from redis.exceptions import RedisError
from rq import Callback, Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from submissions.hardware import ALL_QUEUES, route
from submissions.records import ACTIVE_STATES, Submission, SubmissionStore

if TYPE_CHECKING:  # not imported at run time: the web process never loads the model runner
    from evaluator.model_eval import Progress

log = logging.getLogger(__name__)

JOB_FUNCTION = "submissions.jobs.evaluate_submission"
JOB_TIMEOUT_S = 6 * 3600
RETRIES = 3


def job_id_for(submission_id: str) -> str:
    return f"submission-{submission_id}"


def connect(redis_url: str) -> Redis:
    return Redis.from_url(
        redis_url, socket_connect_timeout=2, socket_timeout=5, health_check_interval=30
    )


def queue_for(submission: Submission) -> str:
    return route(submission.kind, (submission.details or {}).get("model"))


def enqueue(redis: Redis, submission: Submission) -> Job:
    """Queue the submission on the queue its hardware needs. The job carries the submission itself,
    so a worker on another machine needs nothing from the web node's disk (submissions/remote.py)."""
    submission_id = submission.id
    queue = Queue(queue_for(submission), connection=redis)
    return queue.enqueue(
        JOB_FUNCTION,
        submission_id,
        snapshot=submission.job_snapshot(),
        job_id=job_id_for(submission_id),
        job_timeout=JOB_TIMEOUT_S,
        retry=Retry(max=RETRIES),
        on_failure=Callback("submissions.jobs.on_job_failure"),
        result_ttl=7 * 24 * 3600,
        failure_ttl=30 * 24 * 3600,
        description=f"evaluate submission {submission_id}",
    )


class LiveStatus(TypedDict, total=False):
    """What Redis knows of a submission's job (live_status)."""

    job_status: str | None  # RQ's: queued, started, finished, failed ...; None: no job
    queue_position: int | None  # 0: next
    progress: Progress | None  # the run's last report (model runs)
    queue: str | None


def live_status(redis: Redis, submission_id: str) -> LiveStatus:
    """What Redis knows of the job: its status, queue position and progress (best effort)."""
    try:
        job = Job.fetch(job_id_for(submission_id), connection=redis)
    except NoSuchJobError:
        return LiveStatus(job_status=None)
    position = None
    if job.get_status() == JobStatus.QUEUED:
        position = Queue(job.origin, connection=redis).get_job_position(job.id)
    return LiveStatus(
        job_status=job.get_status().value,
        queue_position=position,
        progress=job.meta.get("progress"),
        queue=job.origin if job.origin in ALL_QUEUES else None,
    )


# A worker pops a job's id (BLPOP when it listens to several queues: the id is then in no list)
# and registers the execution a moment later. A job "queued" in no list is stranded only if it stays
# so this long; before, a busy machine's slow worker had its job enqueued again and run twice.
STRANDED_AFTER_S = 5.0


def reconcile(
    redis: Redis, store: SubmissionStore, stranded_after_s: float = STRANDED_AFTER_S
) -> list[str]:
    """Re-enqueue accepted submissions whose job Redis no longer has (or never got), or whose job
    says "queued" while no queue holds it.

    Runs at app start and periodically. A job that is queued, started or scheduled for retry is
    left alone; a missing job is recreated, and so is a stranded one: Redis killed between writing
    the job and pushing its id (append-only file synced each second) keeps a "queued" job that no
    worker will ever take. A job looks stranded for a moment while a worker takes it, so it must
    stay stranded for stranded_after_s. Returns the re-enqueued submission ids.
    """
    requeued = []
    queued_ids: dict[str, set[str]] = {}  # queue name -> job ids in it, read once per pass
    looks_stranded: list[tuple[Submission, Job]] = []
    for submission in store.list(states=ACTIVE_STATES, limit=100_000):
        try:
            job = Job.fetch(job_id_for(submission.id), connection=redis)
        except NoSuchJobError:
            _requeue(redis, store, submission, "its job was missing from Redis")
            requeued.append(submission.id)
            continue
        if _stranded(redis, job, queued_ids):
            looks_stranded.append((submission, job))
    for submission in _still_stranded(redis, looks_stranded, stranded_after_s):
        _requeue(redis, store, submission, "its job was queued in no queue")
        requeued.append(submission.id)
    return requeued


def _requeue(redis: Redis, store: SubmissionStore, submission: Submission, why: str) -> None:
    enqueue(redis, submission)
    store.update(submission.id, state="queued")
    log.warning("re-enqueued submission %s: %s", submission.id, why)


def _stranded(redis: Redis, job: Job, queued_ids: dict[str, set[str]]) -> bool:
    """A job whose status is queued but whose id is in no queue's list, nor in the list a worker
    moves it to (RQ's intermediate queue), nor in the started registry."""
    if job.get_status(refresh=True) != JobStatus.QUEUED:
        return False
    if job.origin not in queued_ids:
        queued_ids[job.origin] = set(Queue(job.origin, connection=redis).get_job_ids())
    if job.id in queued_ids[job.origin]:
        return False
    queue = Queue(job.origin, connection=redis)
    return not (
        job.id in queue.get_job_ids()
        or job.id in queue.intermediate_queue.get_job_ids()
        or job.id in queue.started_job_registry
    )


def _still_stranded(
    redis: Redis, candidates: list[tuple[Submission, Job]], after_s: float
) -> list[Submission]:
    """The candidates still stranded after after_s: a worker that popped one registers it first."""
    deadline = time.monotonic() + after_s
    while candidates:
        candidates = [(s, job) for s, job in candidates if _stranded(redis, job, {})]
        if time.monotonic() >= deadline:
            break
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
    return [submission for submission, _ in candidates]


def queue_is_reachable(redis: Redis) -> bool:
    try:
        return bool(redis.ping())
    except RedisError:
        return False
