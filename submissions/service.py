"""The objects every request handler and UI callback shares, built once per app.

Lives in the submissions layer so that the web app (backend/) and the UI (space/) both reach it
by importing down; neither imports the other for it.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from redis import Redis
from redis.exceptions import RedisError

from evaluator.models import ModelRegistry
from evaluator.registry import all_suites
from leaderboard.readpath import Body, Filters, LeaderboardCache
from leaderboard.reported import publish_reported
from leaderboard.store import LocalDatasetStore
from leaderboard.table import column_name
from submissions import queue
from submissions.records import Submission, SubmissionStore
from submissions.settings import SubmissionSettings

log = logging.getLogger(__name__)

RECONCILE_EVERY_S = 30
READ_THREADS = 2  # leaderboard builds run here, never in the pool other endpoints (health) share


@dataclass
class Services:
    settings: SubmissionSettings
    records: SubmissionStore
    results: LocalDatasetStore
    redis: Redis
    models: ModelRegistry
    board: LeaderboardCache = None  # the read path: one table per results revision
    _stop: threading.Event = field(default_factory=threading.Event)
    _read_pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(READ_THREADS, thread_name_prefix="leaderboard"))

    def __post_init__(self) -> None:
        if self.board is None:
            self.board = LeaderboardCache(self.results, manifest_tier_order)

    @classmethod
    def create(cls, settings: SubmissionSettings) -> "Services":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        results = LocalDatasetStore(settings.store_dir)
        results.ensure()
        publish_reported(results)  # the papers' own rows, once per store (idempotent)
        return cls(settings, SubmissionStore(settings.submissions_db), results, queue.connect(settings.redis_url),
                   ModelRegistry(settings.data_dir))

    # -- background repair ------------------------------------------------------------------------
    def reconcile(self) -> list[str]:
        try:
            return queue.reconcile(self.redis, self.records)
        except RedisError as exc:
            log.warning("queue unreachable, reconcile postponed: %s", exc)
            return []

    def start_reconciler(self) -> None:
        def loop() -> None:
            while not self._stop.wait(RECONCILE_EVERY_S):
                self.reconcile()

        self.reconcile()
        threading.Thread(target=loop, name="reconcile", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._read_pool.shutdown(wait=False, cancel_futures=True)

    # -- reads shared by the API and the UI ---------------------------------------------------
    def submission_status(self, submission: Submission) -> dict[str, Any]:
        status = submission.public()
        live: dict[str, Any] = {"job_status": None}
        if submission.state in ("queued", "running"):
            try:
                live = queue.live_status(self.redis, submission.id)
            except RedisError:
                live = {"job_status": "unknown (queue unreachable)"}
        status["queue_position"] = live.get("queue_position")
        status["job_status"] = live.get("job_status")
        progress = live.get("progress") or {"done": submission.progress_done, "total": submission.progress_total}
        status["progress"] = progress
        return status

    def leaderboard(self, suite=None, task=None, setting=None, tier=None, revision=None) -> pd.DataFrame:
        """The filtered leaderboard (shared: do not modify it)."""
        return self.board.table(revision).view(Filters(suite, task, setting, tier))

    async def leaderboard_body(self, filters: Filters, fmt: str, revision: str | None = None) -> Body:
        """The encoded leaderboard: from memory when this head's body is built, otherwise built on
        the read threads, so the event loop never does the work and never waits for it."""
        if revision is None:
            table = self.board.cached_head()
            found = table.cached_body(filters, fmt) if table is not None else None
            if found is not None:
                return found
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._read_pool, lambda: self.board.table(revision).body(filters, fmt))


def manifest_tier_order() -> list[str]:
    """Tier columns in the order the suites' manifests declare them."""
    order = []
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                order.extend(column_name(group.name, tier) for tier in group.tiers)
    return order
