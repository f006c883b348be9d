"""Service metrics in Prometheus form: queues, jobs, publishing.

Workers run in their own processes (on other machines too), so what they measure lives in Redis,
next to the queue: `record_job` adds one finished job to a counter and to duration histograms,
and `ServiceCollector` reads Redis when /metrics is scraped. Any number of web processes report
the same numbers, and a restarted worker loses nothing.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from redis import Redis
from redis.client import Pipeline
from redis.exceptions import RedisError
from rq import Queue, Worker

log = logging.getLogger(__name__)

KEY = "personaboard:metrics"
OUTCOMES = (
    "finished",
    "withheld",
    "cancelled",
    "rejected",
    "error",
)  # published / scored on a hidden split, nothing released (the Ladder) / stopped by an operator
#    while it ran / failed for a reason given / raised or died
JOB_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600)
PUBLISH_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
QUEUE_STATES = {
    "started": "started_job_registry",
    "deferred": "deferred_job_registry",
    "scheduled": "scheduled_job_registry",
    "failed": "failed_job_registry",
}


def _observe(pipe: Pipeline, name: str, buckets: tuple[float, ...], seconds: float) -> None:
    key = f"{KEY}:{name}"
    bucket = next((str(b) for b in buckets if seconds <= b), "+Inf")
    pipe.hincrby(key, bucket, 1)
    pipe.hincrby(key, "count", 1)
    pipe.hincrbyfloat(key, "sum", seconds)


def record_job(
    redis: Redis | None,
    outcome: str,
    seconds: float | None = None,
    publish_seconds: float | None = None,
) -> None:
    """Count one job by outcome, with its duration (and its publish's). Never fails the job."""
    if redis is None:
        return
    try:
        pipe = redis.pipeline(transaction=False)
        pipe.hincrby(f"{KEY}:jobs", outcome, 1)
        if seconds is not None:
            _observe(pipe, "job_seconds", JOB_BUCKETS, seconds)
        if publish_seconds is not None:
            _observe(pipe, "publish_seconds", PUBLISH_BUCKETS, publish_seconds)
        pipe.execute()
    except RedisError as exc:
        log.warning("metrics not recorded (queue unreachable): %s", exc)


def _text(value: bytes | str) -> str:
    """A Redis reply as text: the client answers bytes unless it was made to decode."""
    return value.decode() if isinstance(value, bytes) else value


def _histogram(
    redis: Redis, name: str, buckets: tuple[float, ...], help_text: str
) -> HistogramMetricFamily:
    raw = {_text(k): _text(v) for k, v in redis.hgetall(f"{KEY}:{name}").items()}
    cumulative, running = [], 0
    for bound in [*(str(b) for b in buckets), "+Inf"]:
        running += int(raw.get(bound, 0))
        cumulative.append((bound if bound == "+Inf" else str(float(bound)), running))
    family = HistogramMetricFamily(
        f"personaboard_{name.removesuffix('_seconds')}_duration_seconds", help_text
    )
    family.add_metric([], cumulative, sum_value=float(raw.get("sum", 0)))
    return family


class ServiceCollector:
    """Read at scrape time: queue lengths from RQ, job counts and durations from Redis, the read
    path's state from this process, and the store's publish backlog."""

    def __init__(
        self,
        redis: Redis,
        publish_backlog: Callable[[], int] | None = None,
        read_path: Callable[[], dict[str, float]] | None = None,
        publish_rejected: Callable[[], int] | None = None,
    ):
        self.redis = redis
        self.publish_backlog = publish_backlog
        self.publish_rejected = publish_rejected
        self.read_path = read_path

    def describe(self) -> Iterable:
        return []  # collected fresh on every scrape

    def collect(self) -> Iterable:
        up = GaugeMetricFamily(
            "personaboard_queue_up", "1 when Redis (the queue) answered this scrape"
        )
        try:
            families = list(self._queue_families())
            up.add_metric([], 1)
        except RedisError as exc:
            log.warning("metrics: queue unreachable: %s", exc)
            families = []
            up.add_metric([], 0)
        yield up
        yield from families
        if self.publish_backlog is not None:
            backlog = GaugeMetricFamily(
                "personaboard_publish_backlog",
                "results evaluated but not yet in the results dataset",
            )
            backlog.add_metric([], self.publish_backlog())
            yield backlog
        if self.publish_rejected is not None:
            rejected = GaugeMetricFamily(
                "personaboard_publish_rejected",
                "outbox entries the results store refused (need an operator)",
            )
            rejected.add_metric([], self.publish_rejected())
            yield rejected
        if self.read_path is not None:
            state = self.read_path()
            builds = CounterMetricFamily(
                "personaboard_leaderboard_builds",
                "leaderboard tables built by this web process (one per revision)",
            )
            builds.add_metric([], state["builds"])
            yield builds

    def _queue_families(self):
        jobs = GaugeMetricFamily(
            "personaboard_queue_jobs", "jobs per queue and state", labels=["queue", "state"]
        )
        for queue in Queue.all(connection=self.redis):
            jobs.add_metric([queue.name, "queued"], queue.count)
            for state, registry in QUEUE_STATES.items():
                jobs.add_metric([queue.name, state], getattr(queue, registry).count)
        yield jobs
        workers = GaugeMetricFamily("personaboard_workers", "workers registered with the queue")
        workers.add_metric([], len(Worker.all(connection=self.redis)))
        yield workers
        counts = {_text(k): int(v) for k, v in self.redis.hgetall(f"{KEY}:jobs").items()}
        outcome = CounterMetricFamily(
            "personaboard_jobs",
            "jobs ended, by outcome (finished: published; withheld: scored on a hidden split, "
            "nothing released; cancelled: stopped by an operator while it ran; "
            "rejected: failed with a reason; error: raised or its worker died)",
            labels=["outcome"],
        )
        for name in OUTCOMES:
            outcome.add_metric([name], counts.get(name, 0))
        yield outcome
        yield _histogram(
            self.redis, "job_seconds", JOB_BUCKETS, "wall time of a job, start to publish"
        )
        yield _histogram(
            self.redis, "publish_seconds", PUBLISH_BUCKETS, "time to publish one result"
        )
