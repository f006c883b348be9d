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
from typing import TYPE_CHECKING, Any, BinaryIO, TypedDict

import pandas as pd
from redis import Redis
from redis.exceptions import RedisError

from evaluator.models import ModelRegistry
from leaderboard.board import manifest_tier_order
from leaderboard.outbox import Outbox
from leaderboard.readpath import Body, Filters, LeaderboardCache, Page
from leaderboard.reference import publish_reference
from leaderboard.reported import publish_reported
from leaderboard.results import open_outbox, open_store
from leaderboard.store import ResultsStore, StoreError, StoreUnavailable
from submissions import moderation, queue
from submissions.identity import Identity, IdentityStore
from submissions.intake import (
    ModelForm,
    SubmissionForm,
    Submitter,
    accept_model,
    accept_predictions,
)
from submissions.jobs import head_signal, record_published, withhold_hidden
from submissions.records import REQUEST_STATUS, PublicSubmission, Submission, SubmissionStore
from submissions.remote import EventFolder, list_workers, publish_installed_pins
from submissions.settings import SubmissionSettings

if TYPE_CHECKING:  # the web process never loads the model runner
    from evaluator.model_eval import Progress

log = logging.getLogger(__name__)

RECONCILE_EVERY_S = 30
READ_THREADS = 2  # leaderboard builds run here, never in the pool other endpoints (health) share
PUBLISH_EVERY_S = 2.0  # the web node's publisher: requests/ records, then the outbox backlog


class PublicAction(TypedDict):
    """An operator action on a submission as shown publicly (who, when, what, why)."""

    at: str
    actor: str
    action: str
    reason: str


class SubmissionStatus(PublicSubmission):
    """Services.submission_status(): the public submission, its live queue state and its public
    history (what the API's status route answers and the UI's status views show)."""

    queue_position: int | None  # 0: next
    queue: str | None
    job_status: str | None
    progress: Progress
    history: list[PublicAction]  # oldest first


@dataclass
class Services:
    settings: SubmissionSettings
    records: SubmissionStore
    results: ResultsStore  # local folder or Hub dataset (leaderboard/results.py chooses)
    redis: Redis
    models: ModelRegistry
    outbox: Outbox
    board: LeaderboardCache = field(init=False)  # the read path: one table per results revision
    _stop: threading.Event = field(default_factory=threading.Event)
    _read_pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(READ_THREADS, thread_name_prefix="leaderboard")
    )
    _store_ready: bool = False

    def __post_init__(self) -> None:
        self.board = LeaderboardCache(self.results, manifest_tier_order)

    @classmethod
    def create(cls, settings: SubmissionSettings) -> "Services":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        records = SubmissionStore(settings.submissions_db)
        results = open_store(
            head_signal=head_signal(settings.redis_url)
        )  # others' publishes seen at once
        services = cls(
            settings,
            records,
            results,
            queue.connect(settings.redis_url),
            ModelRegistry(settings.data_dir),
            open_outbox(
                results,
                on_published=record_published(records.update_revision),
                withhold=withhold_hidden(records),
            ),
        )
        services.prepare_store()
        return services

    # -- publishing -------------------------------------------------------------------------------
    def prepare_store(self) -> bool:
        """Create the dataset and sync the papers' reported rows, once; a Hub that is down only postpones it."""
        if not self._store_ready:
            try:
                self.results.ensure()
                publish_reported(self.results)  # the papers' own rows, once per store (idempotent)
                publish_reference(
                    self.results
                )  # chance and majority lines of the installed multiple-choice splits
                self._store_ready = True
            except StoreUnavailable as exc:
                log.warning("results store unavailable; retrying in the background: %s", exc)
        return self._store_ready

    def publish_pending(self) -> int:
        """One pass of the web node's publisher: queue the requests/ records whose status changed, then
        push the outbox (oldest first; stops at a Hub outage and carries on next pass). Returns the backlog."""
        if self.prepare_store():
            changed = self.records.requests_to_publish()
            if (
                changed
            ):  # one entry (one commit) for every request record that changed since the last pass
                self.outbox.put(
                    "requests",
                    {"requests": [s.request_record(REQUEST_STATUS[s.state]) for s in changed]},
                )
                for submission in changed:
                    self.records.update(
                        submission.id, request_status=REQUEST_STATUS[submission.state]
                    )
            self.outbox.drain()
        return self.outbox.backlog()

    def start_publisher(self) -> None:
        def loop() -> None:
            while not self._stop.wait(PUBLISH_EVERY_S):
                try:
                    self.publish_pending()
                except Exception:  # noqa: BLE001 - the loop must outlive any one failure
                    log.exception("publisher pass failed")

        threading.Thread(target=loop, name="publisher", daemon=True).start()

    def start_event_folder(self) -> None:
        """Fold remote workers' events (state, progress, revision) into the records, as they come;
        and pin this node's Hub-installed splits for them (submissions/remote.py)."""
        folder = EventFolder(
            queue.connect(self.settings.redis_url), self.records, outbox=self.outbox
        )

        def loop() -> None:
            pinned = False
            while not self._stop.is_set():
                try:
                    if not pinned:
                        publish_installed_pins(folder.redis)
                        pinned = True
                    folder.fold(block_ms=1000)
                except RedisError as exc:
                    log.warning("queue unreachable, worker events postponed: %s", exc)
                    self._stop.wait(2.0)
                except Exception:  # noqa: BLE001 - the loop must outlive any one bad event
                    log.exception("folding worker events failed")
                    self._stop.wait(2.0)

        threading.Thread(target=loop, name="events", daemon=True).start()

    def workers(self) -> list[dict[str, Any]]:
        """Every worker registered in Redis: hardware queues, heartbeat, what it runs (no host details)."""
        return list_workers(self.redis)

    def results_head(self) -> str | None:
        """The newest results revision, or None while the store cannot be reached."""
        try:
            return self.results.head_revision()
        except StoreError as exc:
            log.warning("results head unavailable: %s", exc)
            return None

    @property
    def identities(self) -> IdentityStore:
        return IdentityStore(self.records)

    def submitter(self, identity: Identity, idempotency_key: str | None = None) -> Submitter:
        """The identity with its daily limits (settings, or the operator's override for this user)."""
        return Submitter.of(identity, self.identities, self.settings.quotas, idempotency_key)

    # -- background repair ------------------------------------------------------------------------
    def reconcile(self) -> list[str]:
        try:
            moderation.withdraw_stale(self.records, self.outbox)  # hidden rows never stay published
        except Exception:  # noqa: BLE001 - a store problem must not stop the queue repair below
            log.exception("withdrawing hidden results failed; retried at the next reconcile")
        try:
            moderation.mirror_visibility(
                self.redis, self.records
            )  # for workers elsewhere (a lost write)
            return queue.reconcile(self.redis, self.records)
        except RedisError as exc:
            log.warning("queue unreachable, reconcile postponed: %s", exc)
            return []

    def start_board_watcher(self) -> None:
        """Build each new results head's leaderboard (and its default bodies) once it moved and
        stood still for a look (leaderboard/readpath.py LeaderboardCache.watch)."""
        threading.Thread(
            target=self.board.watch, args=(self._stop,), name="leaderboard-watch", daemon=True
        ).start()

    def start_reconciler(self) -> None:
        def loop() -> None:
            while not self._stop.wait(RECONCILE_EVERY_S):
                self.reconcile()

        self.reconcile()
        threading.Thread(target=loop, name="reconcile", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._read_pool.shutdown(wait=False, cancel_futures=True)

    # -- the one way in: the API, the UI (and anything else that takes submissions) go through these
    def submit_predictions(
        self, form: SubmissionForm, stream: BinaryIO | None, filename: str, submitter: Submitter
    ) -> Submission:
        """Validate, store, record and queue a predictions file (SubmissionError on a refusal)."""
        return accept_predictions(
            form,
            stream,
            filename,
            records=self.records,
            uploads_dir=self.settings.uploads_dir,
            max_bytes=self.settings.max_upload_bytes,
            redis=self.redis,
            submitter=submitter,
        )

    def submit_model(self, form: ModelForm, submitter: Submitter) -> Submission:
        """Resolve, check, record and queue a model run (SubmissionError on a refusal)."""
        return accept_model(
            form, records=self.records, registry=self.models, redis=self.redis, submitter=submitter
        )

    def submission(self, submission_id: str) -> Submission | None:
        return self.records.get(submission_id) if submission_id else None

    def recent_submissions(self, limit: int = 50) -> list[Submission]:
        return self.records.list(limit=limit, public_only=True)

    def registered_models(self) -> dict[str, dict]:
        """The operator's local models (submitted by name)."""
        return self.models.all()

    # -- reads shared by the API and the UI ---------------------------------------------------
    def compare(self, a_id: str, b_id: str, identity: Identity | None = None) -> dict[str, Any]:
        """Paired comparison of two finished submissions (submissions/compare.py); `identity`, the
        caller's, is needed where the split is hidden (metered there like submissions)."""
        from submissions.compare import compare_submissions

        submitter = self.submitter(identity) if identity is not None else None
        return compare_submissions(self.records, a_id, b_id, submitter)

    def submission_status(self, submission: Submission) -> SubmissionStatus:
        live = queue.LiveStatus(job_status=None)
        if submission.state in ("queued", "running"):
            try:
                live = queue.live_status(self.redis, submission.id)
            except RedisError:
                live = queue.LiveStatus(job_status="unknown (queue unreachable)")
        progress: Progress = live.get("progress") or {
            "done": submission.progress_done,
            "total": submission.progress_total,
        }
        status = SubmissionStatus(
            **submission.public(),
            queue_position=live.get("queue_position"),
            queue=live.get("queue"),
            job_status=live.get("job_status"),
            progress=progress,
            history=self.history(submission.id),
        )
        if submission.visibility != "public":  # hidden or deleted: no scores, no text of it shown
            status.update({"result": None, "description": "", "revision": None})
        return status

    def history(self, submission_id: str) -> list[PublicAction]:
        """The row's operator actions as shown publicly."""
        return [
            PublicAction(at=e["at"], actor=e["actor"], action=e["action"], reason=e["reason"])
            for e in self.records.history(submission_id)
        ]

    def leaderboard(
        self,
        suite: str | None = None,
        task: str | None = None,
        setting: str | None = None,
        tier: str | None = None,
        revision: str | None = None,
    ) -> pd.DataFrame:
        """The filtered leaderboard (shared: do not modify it)."""
        return self.board.table(revision).view(Filters(suite, task, setting, tier))

    async def leaderboard_body(
        self,
        filters: Filters,
        fmt: str,
        revision: str | None = None,
        gzipped: bool = False,
        page: Page | None = None,
    ) -> Body:
        """The encoded leaderboard: from memory when this head's body is built, otherwise built on
        the read threads, so the event loop never does the work and never waits for it."""
        if revision is None:
            table = self.board.cached_head()
            found = table.cached_body(filters, fmt, gzipped, page) if table is not None else None
            if found is not None:
                return found
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._read_pool, lambda: self.board.table(revision).body(filters, fmt, gzipped, page)
        )
