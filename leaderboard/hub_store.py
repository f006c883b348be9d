"""The results store on the Hugging Face Hub: the local store's interface and layout, in a dataset repo.

Chosen by PERSONABOARD_RESULTS_REPO (+ a token); the local folder stays the default. Layout as in
leaderboard/store.py (results/ and requests/ sharded by id_shard, releases/, data/scores/part-NNNNN.parquet,
README.md); a repo made before the records were sharded is moved to that layout once, by `ensure`.

One publish is one `create_commit` with `parent_commit` set to the head it read, so two publishers
(two machines, or two processes) never overwrite each other: the Hub refuses the second (412, or
409 while a commit is in flight), and the loser re-reads the new head and tries again. The table is
carried forward, not rebuilt: the newest part at the parent plus the new record's rows, so a
publish costs one part download however many results there are, and the table at every revision is
the fold of the records at that revision (tests/test_hub_store.py checks it).

Table parts are cached by blob id (immutable), and the head is re-read at most every HEAD_TTL_S
(the read path calls head_revision() on every request), and at once when a head signal
(leaderboard/head_signal.py: a token in Redis every publisher renews) says another process published.
"""

from __future__ import annotations

import io
import json
import random
import threading
import time
from typing import Any, Iterable, Sequence

import pandas as pd

from evaluator.hub import DatasetRepo, HubCommitConflict, HubNotFound, HubUnavailable
from leaderboard.boards import (
    BOARDS_DIR,
    STALE_PATH,
    board_tasks,
    mark_lagging,
    refresh_due,
    refreshed_boards,
    task_of_path,
)
from leaderboard.head_signal import UNKNOWN
from leaderboard.result_record import validate_record
from leaderboard.store import (
    DETAILS_DIR,
    SCORES_DIR,
    SHARD_RECORDS,
    Release,
    StoreError,
    StoreUnavailable,
    Version,
    as_json,
    card_is_current,
    check_release_name,
    dataset_card,
    details_path,
    details_to_publish,
    flat_record_paths,
    record_files,
    record_path,
    release_note,
    release_path,
    request_path,
    requests_message,
    supersedes,
)
from leaderboard.table import records_to_scores

HEAD_TTL_S = 2.0
MAX_CONFLICT_RETRIES = 20
PART_CACHE = 64
FIRST_PART = f"{SCORES_DIR}/part-00000.parquet"
NOT_READ = object()


class HubDatasetStore:
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
        self._parts: dict[str, pd.DataFrame] = {}  # blob id -> parsed table part
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

    def ensure(self) -> None:
        """Create the repo (private if configured) with its card and an empty table, once; a repo
        whose card is not this version's may hold records in the flat layout: shard them, once."""
        if self._ensured:
            return
        self._hub(self.repo.create, self.private)
        for _ in range(MAX_CONFLICT_RETRIES):
            head = self._hub(self.repo.resolve)
            card = self._hub(self.repo.read, "README.md", head)
            try:
                if card is None:
                    self._commit(
                        {
                            "README.md": dataset_card().encode(),
                            FIRST_PART: _parquet(records_to_scores([])),
                        },
                        "Create the results dataset",
                        head,
                    )
                elif not card_is_current(card):
                    self._shard_flat_records(head)
                break
            except HubCommitConflict:
                continue
        self._ensured = True

    def _shard_flat_records(self, head: str) -> None:
        """As the local store's: records kept flat in results|requests/<suite>/<task>/ move into their
        shard folders in one commit, with the card that describes the layout."""
        listed = [
            p
            for folder in ("results", "requests")
            for p in self._hub(self.repo.files, head, folder)
        ]
        moves = flat_record_paths(listed)
        if not moves:
            return
        snapshot = self._hub(self.repo.download, head)
        files = {new: (snapshot / old).read_bytes() for old, new in moves}
        files["README.md"] = dataset_card(
            board_tasks(self._hub(self.repo.files, head, BOARDS_DIR))
        ).encode()
        self._commit(
            files,
            "Shard the records folders by id (a commit rehashes small trees only)",
            head,
            [old for old, _ in moves],
        )

    def _commit(
        self, files: dict[str, bytes], message: str, parent: str, deletions: Sequence[str] = ()
    ) -> str:
        revision = self._hub(self.repo.commit, files, message, parent, list(deletions))
        with self._lock:
            # not matched to any token: another publisher's newer commit may have been signalled first
            self._head = (time.monotonic(), revision, NOT_READ)
        if self.head_signal is not None:
            self.head_signal.published(
                revision
            )  # before the publish returns: readers see it next time
        return revision

    def _retrying(self, attempt):
        """Run attempt(head) until it commits without a conflict; it returns the revision."""
        self.ensure()
        for tries in range(MAX_CONFLICT_RETRIES):
            head = self.head_revision(fresh=True)
            try:
                return attempt(head)
            except HubCommitConflict:
                time.sleep(
                    random.uniform(0.05, 0.2) * (tries + 1)
                )  # another publisher won: re-read, retry
        raise StoreUnavailable(
            f"the results repo {self.repo.repo_id} kept moving: {MAX_CONFLICT_RETRIES} conflicts in a row"
        )

    # -- writing --------------------------------------------------------------------------------
    record_path = staticmethod(record_path)

    def publish(
        self,
        record: dict[str, Any],
        request: dict[str, Any] | None = None,
        details: bytes | None = None,
    ) -> str:
        """Add a result record (and its request record, and its details file on a public split)
        and the table's new rows in one commit.

        Idempotent per submission: if the record is already at the head, the revision whose
        commit added it is returned and nothing is written.
        """
        record = validate_record(record)  # only records of the result record's shape are published
        path = record_path(record)

        def attempt(head: str) -> str:
            if self._hub(self.repo.read, path, head) is not None:
                return self._published_in(record["submission_id"]) or head
            part_path, part = self._tail_part(head)
            rows = records_to_scores([record])
            tail = pd.concat([part, rows], ignore_index=True) if len(part) else rows
            files = {path: as_json(record).encode(), part_path: _parquet(tail)}
            files.update(self._lagging_files(head, [(record["suite"], record["task"])]))
            if (shown := details_to_publish(record, details)) is not None:
                files[details_path(record["suite"], record["task"], record["submission_id"])] = (
                    shown
                )
            if request is not None:
                current = self._hub(self.repo.read, request_path(request), head)
                if supersedes(request, json.loads(current) if current is not None else None):
                    files[request_path(request)] = as_json(request).encode()
            return self._commit(files, publish_message(record), head)

        return self._retrying(attempt)

    def _published_in(self, submission_id: str) -> str | None:
        for commit in self._hub(self.repo.commits):
            if commit.message.startswith(f"Add result {submission_id} "):
                return commit.revision
        return None

    def withdraw(self, submission_id: str, message: str) -> str | None:
        """As the local store's: the result leaves the head's records and table in one commit."""

        def attempt(head: str) -> str | None:
            removed = [
                p
                for folder in ("results", "requests", DETAILS_DIR)
                for p in self._hub(self.repo.files, head, folder)
                if p.endswith((f"/{submission_id}.json", f"/{submission_id}.parquet"))
            ]
            if not removed:
                return None
            files: dict[str, bytes] = {}
            parts = {}
            for path, blob in self._part_blobs(head).items():
                frame = self._part(path, blob, head)
                if (frame["submission_id"] == submission_id).any():
                    parts[path] = frame[frame["submission_id"] != submission_id].reset_index(
                        drop=True
                    )
                    files[path] = _parquet(parts[path])
            files.update(
                self._lagging_files(
                    head, {task_of_path(p) for p in removed if p.startswith("results/")}
                )
            )
            return self._commit(files, message, head, removed)

        return self._retrying(attempt)

    def published_details(
        self, suite: str, task: str, submission_id: str, revision: str | None = None
    ) -> bytes | None:
        """A result's details file at a revision (default: the newest), None if it has none."""
        sha = self.resolve_revision(revision)
        return self._hub(self.repo.read, details_path(suite, task, submission_id), sha)

    def current_record(self, submission_id: str) -> dict[str, Any] | None:
        head = self.head_revision(fresh=True)
        for path in self._hub(self.repo.files, head, "results"):
            if path.endswith(f"/{submission_id}.json"):
                data = self._hub(self.repo.read, path, head)
                return json.loads(data) if data is not None else None
        return None

    def publish_requests(self, requests: list[dict[str, Any]]) -> str | None:
        """As the local store's: the request records that changed, in one commit (None if none did)."""

        def attempt(head: str) -> str | None:
            files = {}
            for request in requests:
                path = request_path(request)
                current = self._hub(self.repo.read, path, head)
                if supersedes(request, json.loads(current) if current is not None else None):
                    files[path] = as_json(request).encode()
            return self._commit(files, requests_message(requests), head) if files else None

        return self._retrying(attempt)

    def sync_group(self, prefix: str, records: list[dict[str, Any]], message: str) -> str | None:
        """As the local store's: make the records whose id starts with `prefix` exactly `records`."""
        records = [validate_record(r) for r in records]

        def attempt(head: str) -> str | None:
            present = [
                p
                for p in self._hub(self.repo.files, head, "results")
                if p.rsplit("/", 1)[-1].startswith(prefix) and p.endswith(".json")
            ]
            wanted = {record_path(r): as_json(r).encode() for r in records}
            changed = {
                p: data for p, data in wanted.items() if self._hub(self.repo.read, p, head) != data
            }
            removed = [p for p in present if p not in wanted]
            if not changed and not removed:
                return None
            # the group's rows leave every part they are in, and its current rows join the newest part
            ids = {r["submission_id"] for r in records} | {
                p.rsplit("/", 1)[-1][:-5] for p in removed
            }
            parts = self._part_blobs(head)
            files = dict(changed)
            for path, blob in parts.items():
                frame = self._part(path, blob, head)
                if frame["submission_id"].isin(ids).any():
                    files[path] = frame[~frame["submission_id"].isin(ids)].reset_index(drop=True)
            tail_path = max(parts) if parts else FIRST_PART
            tail = files.get(
                tail_path,
                self._part(tail_path, parts[tail_path], head) if parts else records_to_scores([]),
            )
            files[tail_path] = pd.concat([tail, records_to_scores(records)], ignore_index=True)
            tasks = {(r["suite"], r["task"]) for r in records} | {task_of_path(p) for p in removed}
            files.update(self._lagging_files(head, tasks))
            files = {p: _parquet(v) if isinstance(v, pd.DataFrame) else v for p, v in files.items()}
            return self._commit(files, message, head, removed)

        return self._retrying(attempt)

    def _lagging_files(self, head: str, tasks: Iterable[tuple[str, str]]) -> dict[str, bytes]:
        """boards/stale.json with `tasks` added, if that changes it (leaderboard/boards.py)."""
        marked = mark_lagging(self._hub(self.repo.read, STALE_PATH, head), tasks)
        return {STALE_PATH: marked} if marked is not None else {}

    def _current_boards(self, head: str, older_than_s: float = 0.0) -> tuple[dict[str, bytes], str]:
        """Every lagging board as of `head`, if a refresh is due (else no files), and a message."""
        stale = self._hub(self.repo.read, STALE_PATH, head)
        if not refresh_due(stale, older_than_s):
            return {}, ""
        listed = board_tasks(self._hub(self.repo.files, head, BOARDS_DIR))
        card = self._hub(self.repo.read, "README.md", head)
        return refreshed_boards(stale, listed, lambda: self.scores(head), card)

    def refresh_boards(self, older_than_s: float = 0.0) -> str | None:
        """As the local store's: every lagging board rewritten in one commit, if one is due."""
        # a look at the kept head first: the publisher asks every pass, and mostly nothing is due
        if not refresh_due(
            self._hub(self.repo.read, STALE_PATH, self.head_revision()), older_than_s
        ):
            return None

        def attempt(head: str) -> str | None:
            files, message = self._current_boards(head, older_than_s)
            return self._commit(files, message, head) if files else None

        return self._retrying(attempt)

    def release(self, name: str, notes: str = "") -> Release:
        check_release_name(name)
        if any(tag.name == name for tag in self._hub(self.repo.tags)):
            raise StoreError(f"release {name!r} already exists")

        def attempt(head: str) -> str:
            files = self._current_boards(head)[0]  # a named release carries current boards
            files[release_path(name)] = as_json(release_note(name, notes, head)).encode()
            return self._commit(files, f"Release {name}", head)

        revision = self._retrying(attempt)
        try:
            self._hub(self.repo.tag, name, revision, notes)
        except HubCommitConflict:  # 409: someone tagged it first
            raise StoreError(f"release {name!r} already exists") from None
        note = json.loads(self._hub(self.repo.read, release_path(name), revision))
        return Release(name, revision, notes, note["created_at"])

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
            note = json.loads(
                self._hub(self.repo.read, release_path(tag.name), tag.revision) or b"{}"
            )
            found.append(
                Release(tag.name, tag.revision, note.get("notes", ""), note.get("created_at", ""))
            )
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    def scores(self, revision: str | None = None) -> pd.DataFrame:
        """The leaderboard table at a revision (default: the newest): its parts, each parsed once."""
        frames = [frame for _, frame in self.score_parts(revision) if len(frame)]
        if not frames:
            return records_to_scores([])
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()

    def score_parts(self, revision: str | None = None) -> list[tuple[str, pd.DataFrame]]:
        """The table's parts at a revision, in order, with their blob ids (the read path pivots each once)."""
        sha = self.resolve_revision(revision)
        return [
            (blob, self._part(path, blob, sha))
            for path, blob in sorted(self._part_blobs(sha).items())
        ]

    def _part_blobs(self, sha: str) -> dict[str, str]:
        return {
            p: b
            for p, b in self._hub(self.repo.files, sha, SCORES_DIR).items()
            if p.endswith(".parquet")
        }

    def _part(self, path: str, blob: str, sha: str) -> pd.DataFrame:
        with self._lock:
            cached = self._parts.get(blob)
        if cached is not None:
            return cached
        data = self._hub(self.repo.read, path, sha)
        frame = pd.read_parquet(io.BytesIO(data)) if data is not None else records_to_scores([])
        with self._lock:
            self._parts[blob] = frame
            while len(self._parts) > PART_CACHE:
                self._parts.pop(next(iter(self._parts)))
        return frame

    def _tail_part(self, sha: str) -> tuple[str, pd.DataFrame]:
        """The part a publish appends to: the newest, or a new one once it holds SHARD_RECORDS results."""
        parts = self._part_blobs(sha)
        if not parts:
            return FIRST_PART, records_to_scores([])
        path = max(parts)
        frame = self._part(path, parts[path], sha)
        if frame["submission_id"].nunique() >= SHARD_RECORDS:
            return f"{SCORES_DIR}/part-{len(parts):05d}.parquet", records_to_scores([])
        return path, frame

    def records(self, revision: str | None = None) -> list[dict[str, Any]]:
        sha = self.resolve_revision(revision)
        folder = self._hub(self.repo.download, sha)
        return [json.loads(p.read_text(encoding="utf-8")) for p in record_files(folder / "results")]


def publish_message(record: dict[str, Any]) -> str:
    return f"Add result {record['submission_id']} ({record['suite']}/{record['task']})"


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()
