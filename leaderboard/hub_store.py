"""The results store on the Hugging Face Hub: the local store's interface and layout, in a dataset repo.

Chosen by PERSONABOARD_RESULTS_REPO (+ a token); the local folder stays the default. Layout:
leaderboard/layout.py. What each change writes is decided by the store core
(leaderboard/changes.py), as for the local store: this store gives the core a view of a revision
(`HubView`: files read with `hf_hub_download`, folders listed with `list_repo_tree`) and commits
what it returns.

One change is one `create_commit` with `parent_commit` set to the head it read, so two publishers
(two machines, or two processes) never overwrite each other: the Hub refuses the second (412, or
409 while a commit is in flight), and the loser re-reads the new head, asks the core again and
retries. The table is carried forward, not rebuilt: a part of the new record's rows, merged with
the parent's newest small parts in tiers (leaderboard/changes.py _appended), so a publish reads
only the parts after the newest full one however many results there are, and the table at every
revision is the fold of the records at that revision (tests/test_hub_store.py).

Table parts are cached by blob id (immutable), and the head is re-read at most every HEAD_TTL_S
(the read path calls head_revision() on every request), and at once when a head signal
(leaderboard/head_signal.py: a token in Redis every publisher renews) says another process published.
"""

from __future__ import annotations

import json
import random
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable, cast

from evaluator.hub import DatasetRepo, HubCommitConflict, HubNotFound, HubUnavailable
from leaderboard import changes
from leaderboard.changes import Change, DatasetView, MemoView, PartCache
from leaderboard.head_signal import UNKNOWN
from leaderboard.layout import (
    StoreError,
    StoreUnavailable,
    card_is_current,
    check_release_name,
    record_files,
    release_path,
)
from leaderboard.result_record import RecordData
from leaderboard.store import CoreStore, Release, Version

HEAD_TTL_S = 2.0
MAX_CONFLICT_RETRIES = 20
NOT_READ = object()


class HubView:
    """The dataset at one commit of the Hub repo (changes.DatasetView)."""

    def __init__(self, store: HubDatasetStore, revision: str):
        self.store = store
        self.revision: str | None = revision
        self.parts = store._parts

    def read(self, path: str) -> bytes | None:
        return self.store._hub(self.store.repo.read, path, self.revision)

    def files(self, folder: str) -> dict[str, str]:
        return self.store._hub(self.store.repo.files, self.revision, folder)

    def read_many(self, paths: list[str]) -> list[bytes | None]:
        return [self.read(path) for path in paths]


class HubDatasetStore(CoreStore):
    kind = "hub"
    head_is_cheap = (
        False  # head_revision() may ask the Hub (the read path never calls it on the event loop)
    )

    def __init__(self, repo: DatasetRepo, private: bool = False, head_signal=None):
        self.repo = repo
        self.private = private
        self.head_signal = head_signal  # RedisHeadSignal or None
        self._ensured = False
        # (when read, revision, the signal's token read just before it; NOT_READ: never matches)
        self._head: tuple[float, str, object] | None = None
        self._parts = PartCache()  # blob id -> parsed table part
        self._lock = threading.Lock()

    @property
    def location(self) -> str:
        return self.repo.repo_id

    # -- plumbing -------------------------------------------------------------------------------
    def _hub(self, call, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except HubUnavailable as exc:
            raise StoreUnavailable(
                f"the results repo {self.repo.repo_id} cannot be reached: {exc}"
            ) from None
        except HubNotFound as exc:
            raise StoreError(str(exc)) from None

    def _view(self, revision: str) -> MemoView:
        return MemoView(HubView(self, revision))

    def ensure(self) -> None:
        """Create the repo (private if configured) with its card and an empty table, once; a repo
        whose card is not this version's may hold records in the flat layout: shard them, once."""
        if self._ensured:
            return
        self._hub(self.repo.create, self.private)
        for _ in range(MAX_CONFLICT_RETRIES):
            head = self._hub(self.repo.resolve)
            view = self._view(head)
            card = view.read("README.md")
            try:
                if card is None:
                    self._commit(head, changes.creation(view))
                elif not card_is_current(card):
                    self._commit(head, changes.shard_flat_records(view))
                break
            except HubCommitConflict:
                continue
        self._ensured = True

    def _commit(self, head: str, change: Change | None) -> str | None:
        if change is None:
            return None
        revision = self._hub(
            self.repo.commit, change.files, change.message, head, list(change.deletions)
        )
        with self._lock:
            # not matched to any token: another publisher's newer commit may have been signalled first
            self._head = (time.monotonic(), revision, NOT_READ)
        if self.head_signal is not None:
            # before the change returns: readers see it next time
            self.head_signal.published(revision)
        return revision

    def _change(self, make: Callable[[DatasetView], Change | None]) -> str | None:
        """The core's change at the head (make(view)), committed on it; after a conflict (another
        publisher moved the head) the core is asked again at the new head."""
        self.ensure()
        for tries in range(MAX_CONFLICT_RETRIES):
            head = self.head_revision(fresh=True)
            try:
                return self._commit(head, make(self._view(head)))
            except HubCommitConflict:
                time.sleep(random.uniform(0.05, 0.2) * (tries + 1))  # re-read, retry
        raise StoreUnavailable(
            f"the results repo {self.repo.repo_id} kept moving: {MAX_CONFLICT_RETRIES} conflicts in a row"
        )

    def _reading(self, revision: str | None) -> AbstractContextManager[DatasetView]:
        assert revision is not None
        return nullcontext(self._view(revision))

    def _fresh_head(self) -> str:
        return self.head_revision(fresh=True)

    def _revisions(self) -> list[str]:
        return [commit.revision for commit in self._hub(self.repo.commits)]

    # -- writing --------------------------------------------------------------------------------
    def release(self, name: str, notes: str = "") -> Release:
        check_release_name(name)
        if any(tag.name == name for tag in self._hub(self.repo.tags)):
            raise StoreError(f"release {name!r} already exists")
        made: dict[str, Any] = {}

        def make(view: DatasetView) -> Change:
            change, made["note"] = changes.release_files(view, name, notes)
            return change

        revision = self._change(make)
        assert revision is not None
        try:
            self._hub(self.repo.tag, name, revision, notes)
        except HubCommitConflict:  # 409: someone tagged it first
            raise StoreError(f"release {name!r} already exists") from None
        return Release(name, revision, notes, made["note"]["created_at"])

    # -- reading --------------------------------------------------------------------------------
    def head_revision(self, fresh: bool = False) -> str:
        """main's commit sha; re-read from the Hub when `fresh`, when the head signal's token changed
        since the kept head was read (someone published), and at least every HEAD_TTL_S (publishers
        that could not reach Redis). Else one Redis GET, or nothing without a signal."""
        with self._lock:
            cached = self._head
        token = (
            self.head_signal.token() if self.head_signal is not None else UNKNOWN
        )  # before the Hub read
        if (
            not fresh
            and cached
            and time.monotonic() - cached[0] < HEAD_TTL_S
            and (token is UNKNOWN or token == cached[2])
        ):
            return cached[1]
        self.ensure()
        revision = self._hub(self.repo.resolve)
        with self._lock:
            self._head = (time.monotonic(), revision, token)
        return revision

    head = head_revision

    def resolve_revision(self, revision: str | None) -> str:
        """The commit sha a client named (a sha, its prefix, `main` or a release name; None: the newest)."""
        if revision is None:
            return self.head_revision()
        try:
            return self.repo.resolve(revision)
        except HubNotFound:
            raise StoreError(f"unknown revision {revision!r}") from None
        except HubUnavailable as exc:
            raise StoreUnavailable(str(exc)) from None

    def versions(self) -> list[Version]:
        return [
            Version(c.revision, c.created_at, c.message)
            for c in self._hub(self.repo.commits)
            if c.message != "initial commit"
        ]  # the Hub's own empty first commit

    def releases(self) -> list[Release]:
        found = []
        for tag in self._hub(self.repo.tags):
            note = changes.read_json(self._view(tag.revision), release_path(tag.name)) or {}
            found.append(
                Release(tag.name, tag.revision, note.get("notes", ""), note.get("created_at", ""))
            )
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def records(self, revision: str | None = None) -> list[RecordData]:
        """Every result record at a revision: the repo's snapshot at it, downloaded in parallel
        (the library's cache keeps the files, so a later revision fetches the new ones only)."""
        folder = self._hub(self.repo.download, self.resolve_revision(revision))
        return [
            cast(RecordData, json.loads(p.read_text(encoding="utf-8")))
            for p in record_files(folder / "results")
        ]
