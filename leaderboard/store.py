"""The results store in a local folder: the dataset (layout: leaderboard/layout.py) in a git
repository, each change one commit, so every version is immutable and can be read back by its
commit sha, exactly as a Hub revision; a release is a git tag, as on the Hub.

What each change writes is decided by the store core (leaderboard/changes.py), the same for the
Hub dataset (leaderboard/hub_store.py): this store gives the core a view of its head (`_view`:
files read with one `git cat-file --batch` per change) and commits what it returns (`_commit`:
git plumbing, under a file lock, so several worker processes publish into one folder). The files
on disk are the head's, written before each commit.

Publishing appends: it writes its rows as one small table part (merged with the newest small
parts in tiers: changes.py _appended) and commits only the paths it wrote, so its cost does not grow with the number of results; the records' folders are
sharded so that a commit rehashes small trees only (layout.id_shard). Readers get the table of a
revision with `scores(revision)`; parts are cached by blob id, so a new revision costs one part.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator, Protocol, Sequence, runtime_checkable

import pandas as pd

from leaderboard import changes
from leaderboard.changes import Change, DatasetView, MemoView, PartCache
from leaderboard.layout import (  # noqa: F401  (re-exported: the stores' callers import them from here)
    DETAILS_DIR,
    LEGACY_SCORES_PATH,
    RE_SHA,
    RELEASE_NAME,
    SCORES_DIR,
    SCORES_GLOB,
    RequestRecord,
    StoreError,
    StoreUnavailable,
    as_json,
    card_is_current,
    check_release_name,
    dataset_card,
    details_glob,
    details_path,
    git_blob_id,
    id_shard,
    is_part_path,
    parquet_bytes,
    record_path,
    release_path,
    request_path,
    result_glob,
    result_path,
)
from leaderboard.result_record import RecordData, ResultRecord
from leaderboard.table import WideRows

# results in a full table part: a publish writes a part of one result, merged in tiers of 10, 100
# and this many (leaderboard/changes.py _appended); a full part is never rewritten by a publish.
# 500, not 1,000: the window of publishes that holds a merge into a full part adds that part, and
# at 1,000 such a window of 100 publishes added 3.1x its records' bytes (bench/bench_history.py)
SHARD_RECORDS = 500
GC_AFTER_FILES = 1000  # a change writing this many files asks git to pack (see _change)
LAYOUT_MARKER = "personaboard-layout"  # in .git: this store's records are sharded (see ensure)
LAYOUT_VERSION = "sharded-records-1"


@dataclass(frozen=True)
class Version:
    revision: str
    created_at: str
    message: str


@dataclass(frozen=True)
class Release:
    name: str
    revision: str  # the tagged commit
    notes: str
    created_at: str


@runtime_checkable
class ResultsStore(Protocol):
    """What every results store offers (LocalDatasetStore here, HubDatasetStore in hub_store.py):
    the service, the outbox, the read path and the CLI use only this. Both lay the dataset out the
    same way (leaderboard/layout.py); a revision is a commit sha, a release a named one."""

    kind: str  # "local" | "hub"
    head_is_cheap: bool  # head_revision() never waits on the network (safe on an event loop)

    @property
    def location(self) -> str: ...
    def ensure(self) -> None: ...
    def publish(
        self,
        record: RecordData,
        request: RequestRecord | None = None,
        details: bytes | None = None,
    ) -> str: ...
    def published_details(
        self, suite: str, task: str, submission_id: str, revision: str | None = None
    ) -> bytes | None: ...
    def withdraw(self, submission_id: str, message: str) -> str | None: ...
    def refresh_boards(self, older_than_s: float = 0.0, added_share: float = 0.0) -> str | None: ...
    def current_record(self, submission_id: str) -> RecordData | None: ...
    def publish_requests(self, requests: list[RequestRecord]) -> str | None: ...
    def sync_group(
        self, prefix: str, records: Sequence[RecordData], message: str
    ) -> str | None: ...
    def release(self, name: str, notes: str = "") -> Release: ...
    def releases(self) -> list[Release]: ...
    def head_revision(self) -> str: ...
    def resolve_revision(self, revision: str | None) -> str: ...
    def versions(self) -> list[Version]: ...
    def scores(self, revision: str | None = None) -> pd.DataFrame: ...
    def score_parts(self, revision: str | None = None) -> list[tuple[str, pd.DataFrame]]: ...
    def records(self, revision: str | None = None) -> list[RecordData]: ...
    def records_of(
        self, keys: Sequence[tuple[str, str, str]], revision: str | None = None
    ) -> list[ResultRecord | None]: ...


class CoreStore:
    """What both stores do the same way, through the store core (leaderboard/changes.py): every
    write asks the core for a change at the head and commits it (`_change`); every read goes
    through a view. A store adds `_change`, `_reading` (a view of a revision, as a context),
    `_fresh_head` (the head as of now), `_revisions` (the history, newest first), `release` and
    the revision lookups."""

    _parts: PartCache  # blob id -> the part parsed (and pivoted): each store sets its own

    def _change(self, make: Callable[[DatasetView], Change | None]) -> str | None:
        raise NotImplementedError

    def _reading(self, revision: str | None) -> AbstractContextManager[DatasetView]:
        raise NotImplementedError

    def _fresh_head(self) -> str:
        raise NotImplementedError

    def _revisions(self) -> list[str]:
        raise NotImplementedError

    def head_revision(self) -> str:
        raise NotImplementedError

    def resolve_revision(self, revision: str | None) -> str:
        raise NotImplementedError

    record_path = staticmethod(record_path)

    def publish(
        self,
        record: RecordData,
        request: RequestRecord | None = None,
        details: bytes | None = None,
    ) -> str:
        """Add one result record (and its submission's request record, and its per-item details
        file on a public split) and append its rows to the table in a new version; returns its
        revision.

        If this submission was already published (a retried job), nothing is written and the
        revision that first published it is returned (changes.added_in: by the record's path).
        """
        revision = self._change(
            lambda view: changes.publish(view, record, SHARD_RECORDS, request, details)
        )
        return revision if revision is not None else self._added_in(record)

    def _added_in(self, record: RecordData) -> str:
        revisions = self._revisions()

        def holds(revision: str) -> bool:
            with self._reading(revision) as view:
                return changes.holds_result(
                    view, record["suite"], record["task"], record["submission_id"]
                )

        return changes.added_in(revisions, holds) or revisions[0]

    def withdraw(self, submission_id: str, message: str) -> str | None:
        """Remove one submission's result, request record and details from the records and the
        table in a new version (an operator hid or deleted it); versions published before keep it,
        as history. Returns the new revision, or None if the current version does not hold it.
        `publish` can put it back later."""
        return self._change(lambda view: changes.withdrawal(view, submission_id, message))

    def refresh_boards(self, older_than_s: float = 0.0, added_share: float = 0.0) -> str | None:
        """Rewrite the lagging boards that are due (leaderboard/boards.py refresh_tasks) in one new
        version; returns it, or None (nothing due). The defaults: every lagging board, now."""
        # a look at the kept head first: the publisher asks every pass, and mostly nothing is due
        with self._reading(self.head_revision()) as view:
            if not changes.boards_due(view, older_than_s, added_share):
                return None
        return self._change(lambda view: changes.board_refresh(view, older_than_s, added_share))

    def publish_requests(self, requests: list[RequestRecord]) -> str | None:
        """Write submissions' request records (public metadata and status) in one version; None if
        nothing changed. A status never goes back (a late "queued" does not undo "finished")."""
        return self._change(lambda view: changes.request_records(view, requests))

    def sync_group(self, prefix: str, records: Sequence[RecordData], message: str) -> str | None:
        """Make the records whose id starts with `prefix` exactly `records` (changes.group_sync);
        one new version if anything changed, else None."""
        return self._change(
            lambda view: changes.group_sync(view, prefix, records, message, SHARD_RECORDS)
        )

    def scores(self, revision: str | None = None) -> pd.DataFrame:
        """The leaderboard table at a revision (default: the newest); parts already parsed (by
        blob id) are reused, so each new revision after a publish parses one."""
        with self._reading(self.resolve_revision(revision)) as view:
            return changes.scores(view)

    def score_parts(self, revision: str | None = None) -> list[tuple[str, pd.DataFrame]]:
        """The table's parts at a revision, in order, each with its blob id (the read path pivots
        each once)."""
        with self._reading(self.resolve_revision(revision)) as view:
            return changes.score_parts(view)

    def pivoted_part(self, blob: str, frame: pd.DataFrame) -> WideRows:
        """A part (by blob id) pivoted, once per store object: the read path and the boards
        refresh of one process share each part's pivot (and its memory)."""
        return self._parts.pivoted(blob, lambda: frame)

    def records(self, revision: str | None = None) -> list[RecordData]:
        """Every result record at a revision (default: the newest), in path order."""
        with self._reading(self.resolve_revision(revision)) as view:
            return changes.records(view)

    def records_of(
        self, keys: Sequence[tuple[str, str, str]], revision: str | None = None
    ) -> list[ResultRecord | None]:
        """The result records of (suite, task, submission id) keys at a revision (default: the
        newest), typed (checked once, here), each None where that version holds no such result."""
        with self._reading(self.resolve_revision(revision)) as view:
            return changes.records_of(view, keys)

    def current_record(self, submission_id: str) -> RecordData | None:
        """The result record of a submission in the current version, if it is there."""
        with self._reading(self._fresh_head()) as view:
            return changes.current_record(view, submission_id)

    def published_details(
        self, suite: str, task: str, submission_id: str, revision: str | None = None
    ) -> bytes | None:
        """A result's details file at a revision (default: the newest), None if it has none."""
        with self._reading(self.resolve_revision(revision)) as view:
            return view.read(details_path(suite, task, submission_id))


class GitView:
    """The dataset at one commit of the local repository (changes.DatasetView): files read through
    one `git cat-file --batch` process, started on the first read and ended by close()."""

    def __init__(self, store: LocalDatasetStore, revision: str | None):
        self.store = store
        self.revision = revision
        self.parts = store._parts
        self._batch: subprocess.Popen | None = None
        self._blob_ids: dict[str, str] = {}  # path -> blob id of the files listed so far

    def read(self, path: str) -> bytes | None:
        if self.revision is None:
            return None
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self.store.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        stdin, stdout = self._batch.stdin, self._batch.stdout
        assert stdin is not None and stdout is not None
        stdin.write(f"{self.revision}:{path}\n".encode())
        stdin.flush()
        header = stdout.readline()
        if header.endswith((b" missing\n", b" ambiguous\n")) or not header:
            return None
        _, kind, size = header.split()  # "<sha> <type> <size>", then the object and a newline
        data = _read_exactly(stdout, int(size) + 1)[:-1]
        return data if kind == b"blob" else None  # a folder is no file

    def files(self, folder: str) -> dict[str, str]:
        found = self.store._blobs(self.revision, folder) if self.revision is not None else {}
        self._blob_ids.update(found)
        return found

    def read_many(self, paths: list[str]) -> list[bytes | None]:
        """Every path through one `git cat-file --batch` that is handed all of them at once (no
        round trip per file: 20,000 records in one pass)."""
        if self.revision is None or not paths:
            return [None] * len(paths)
        # a listed file by its blob id: git need not walk the trees down to each path
        names = "".join(
            f"{self._blob_ids.get(path) or f'{self.revision}:{path}'}\n" for path in paths
        ).encode()
        out = self.store._git("cat-file", "--batch", input=names)
        found: list[bytes | None] = []
        at = 0
        for _ in paths:
            end = out.index(b"\n", at)
            header = out[at : end + 1]
            at = end + 1
            if header.endswith((b" missing\n", b" ambiguous\n")):
                found.append(None)
                continue
            _, kind, size = header.split()
            found.append(out[at : at + int(size)] if kind == b"blob" else None)
            at += int(size) + 1
        return found

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait()
            if self._batch.stdout is not None:
                self._batch.stdout.close()
            self._batch = None


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise StoreError("git cat-file ended early")
    return data


class LocalDatasetStore(CoreStore):
    head_is_cheap = True  # head_revision() reads git's ref files: fine on the web app's event loop
    kind = "local"

    def __init__(self, root: Path):
        self.root = Path(root)
        self._parts = PartCache()  # blob id -> parsed table part
        self._head_seen: tuple[str, tuple, str] | None = (
            None  # (ref file, its stat, the sha it held)
        )

    @property
    def location(self) -> str:
        return str(self.root)

    # -- plumbing -------------------------------------------------------------------------------
    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        proc = subprocess.run(
            [
                "git",
                "-c",
                "user.name=PersonaBoard",
                "-c",
                "user.email=personaboard@localhost",
                "-c",
                "commit.gpgsign=false",
                *args,
            ],
            cwd=self.root,
            input=input,
            capture_output=True,
        )
        if proc.returncode != 0:
            raise StoreError(
                f"git {args[0]} failed in {self.root}: {proc.stderr.decode(errors='replace').strip()}"
            )
        return proc.stdout

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time across processes (several workers publish into one folder).

        The lock file says "writing" while a writer holds it and is emptied when it is done: a writer
        that finds it non-empty knows the last one died (or failed) mid-write and puts the index and
        the files back as the last commit has them first, so nothing it left (a record, a staged
        path, a half-built table part) is ever folded into another commit."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root.parent / f".{self.root.name}.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                lock.seek(0)
                if lock.read() and (self.root / ".git").exists():
                    self._discard_uncommitted()
                lock.truncate(0)
                lock.write(f"writing (pid {os.getpid()})\n")
                lock.flush()
                yield
                lock.truncate(0)
                lock.flush()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @contextmanager
    def _view(self, revision: str | None) -> Iterator[MemoView]:
        """The dataset at `revision` (None: nothing committed yet), for the core to read."""
        view = GitView(self, revision)
        try:
            yield MemoView(view)
        finally:
            view.close()

    def _commit(self, head: str | None, change: Change) -> str:
        """Write the change's files, and commit exactly its paths on top of `head` (the lock held).

        With plumbing: `git commit` refreshes the whole index (an lstat per record file, ~40 ms at
        20,000 results), and so does `git add -A` with paths from several top folders (it walks
        the working tree under their common prefix: 14 ms at 20,000 results, 5 at 100);
        `update-index` touches exactly the paths named. write-tree reuses the index's cached trees
        and rehashes only the (small, sharded) trees on the paths changed here. Files a dead writer
        left elsewhere are never added (and are discarded by the next writer: _locked)."""
        for path, data in change.files.items():
            self._write_bytes(path, data)
        for path in change.deletions:
            (self.root / path).unlink(missing_ok=True)
        paths = "\0".join(change.paths).encode()
        self._git("update-index", "--add", "--remove", "-z", "--stdin", input=paths)
        tree = self._git("write-tree").decode().strip()
        parent = ["-p", head] if head else []
        message = change.message
        commit = self._git("commit-tree", tree, *parent, "-m", message).decode().strip()
        self._git(
            "update-ref", "-m", f"commit: {message}", "HEAD", commit, *([head] if head else [])
        )
        return commit

    _reading = _view

    def _change(self, make: Callable[[DatasetView], Change | None]) -> str | None:
        """Under the lock: the core's change at the head (make(view) -> Change or None), committed."""
        self.ensure()
        with self._locked():
            head = self.head_revision()
            with self._view(head) as view:
                change = make(view)
            if change is None:
                return None
            commit = self._commit(head, change)
            for path, data in change.files.items():
                if is_part_path(path):  # the next publish (and reader) finds it parsed
                    self._parts.get(git_blob_id(data), functools.partial(bytes, data))
            if len(change.files) >= GC_AFTER_FILES or any(
                is_part_path(path) for path in change.deletions
            ):
                # `git commit` runs `git gc --auto` after each commit; commit-tree does not. Run
                # when table parts merge (every 10th publish: changes.py _appended), not per
                # process: jobs publish from short-lived forked processes; and after a change of
                # many files (a sync of thousands of rows), whose loose objects would otherwise
                # wait for the next merge to be packed, in the middle of a stream of publishes.
                # It returns at once unless loose objects piled up (then packs in the background).
                self._git("gc", "--auto", "--quiet")
            return commit

    def _fresh_head(self) -> str:
        return self.resolve_revision(None)

    def _revisions(self) -> list[str]:
        return self._git("rev-list", "--first-parent", "HEAD").decode().split()

    def ensure(self) -> None:
        """Create the repository with its card and an empty table, once; move an older layout
        (one scores file, flat record folders) to this one, once each, in versions of their own."""
        marker = self.root / ".git" / LAYOUT_MARKER
        if marker.exists() and not (self.root / LEGACY_SCORES_PATH).exists():
            return
        with self._locked():
            if not (self.root / ".git").exists():
                self._git("init", "-q", "-b", "main")
                # the index is rewritten on every commit: keep that write small as results grow
                self._git("config", "core.splitIndex", "true")
            head = self._head_or_none()
            for make in (
                changes.creation,
                lambda view: changes.split_legacy_table(view, SHARD_RECORDS),
                changes.shard_flat_records,
            ):
                if make is not changes.creation:
                    self._discard_uncommitted()  # a dead writer's files are not moved along
                with self._view(head) as view:
                    change = make(view)
                if change is not None:
                    head = self._commit(head, change)
            marker.write_text(LAYOUT_VERSION + "\n", encoding="ascii")

    def _head_or_none(self) -> str | None:
        try:
            return self._git("rev-parse", "--verify", "--quiet", "HEAD").decode().strip() or None
        except StoreError:
            return None

    def _discard_uncommitted(self) -> None:
        """Drop whatever a writer that died mid-change left (a record, a half-built table).

        Called with the lock held, so nothing uncommitted can belong to a live writer."""
        if self._head_or_none() is None:
            return
        self._git("reset", "-q", "--hard", "HEAD")
        self._git("clean", "-q", "-f", "-d")

    # -- writing --------------------------------------------------------------------------------
    def release(self, name: str, notes: str = "") -> Release:
        """Name the newest version: a commit adding releases/<name>.json (the notes) and every
        lagging board, tagged `name`."""
        self.ensure()
        check_release_name(name)
        with self._locked():
            if self._git("tag", "--list", name).strip():
                raise StoreError(f"release {name!r} already exists")
            head = self.head_revision()
            with self._view(head) as view:
                change, note = changes.release_files(view, name, notes)
            revision = self._commit(head, change)
            self._git("tag", name, revision)
        return Release(name, revision, notes, note["created_at"])

    def releases(self) -> list[Release]:
        """Every release, newest first."""
        self.ensure()
        out = self._git(
            "tag", "--list", "--sort=-creatordate", "--format=%(refname:short)%09%(objectname)"
        ).decode()
        found = []
        for line in out.splitlines():
            name, revision = line.split("\t")
            note = json.loads(self._show(revision, release_path(name)))
            found.append(Release(name, revision, note.get("notes", ""), note.get("created_at", "")))
        return found

    def _write_bytes(self, relative: str, data: bytes) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    # -- reading --------------------------------------------------------------------------------
    def head(self) -> str:
        self.ensure()
        return self.head_revision()

    def head_revision(self) -> str:
        """The newest revision, read from git's ref files: no process, cheap enough for every request
        (the read path keys its cached table on it, so publishes from other processes are seen).

        Usually one stat: git moves a ref by renaming a new file over it, so while the ref file's
        inode, size and times are those seen last, it holds the sha read then."""
        seen = self._head_seen
        if seen is not None:
            try:
                if _stat_key(seen[0]) == seen[1]:
                    return seen[2]
            except OSError:
                pass
        git = self.root / ".git"
        try:
            head = (git / "HEAD").read_text(encoding="ascii").strip()
            if not head.startswith("ref: "):
                return head
            ref = head[5:]
            try:
                ref_path = str(git / ref)
                key = _stat_key(ref_path)
                sha = (git / ref).read_text(encoding="ascii").strip()
                if _stat_key(ref_path) == key:  # not replaced while we read it
                    self._head_seen = (ref_path, key, sha)
                return sha
            except FileNotFoundError:  # packed by `git gc`
                for line in (git / "packed-refs").read_text(encoding="ascii").splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
        except (FileNotFoundError, NotADirectoryError):
            pass
        self.ensure()
        return self._git("rev-parse", "HEAD").decode().strip()

    def resolve_revision(self, revision: str | None) -> str:
        """The full commit sha of a revision (None: the newest); StoreError if there is none."""
        if revision is None:
            self.ensure()
            return self.head_revision()
        self.ensure()
        return self._verify(revision)

    def versions(self) -> list[Version]:
        self.ensure()
        out = self._git("log", "--format=%H%x09%cI%x09%s").decode()
        return [Version(*line.split("\t", 2)) for line in out.splitlines() if line]

    def _blobs(self, revision: str, *paths: str) -> dict[str, str]:
        """path -> blob id of the files at (or under) `paths` in a revision."""
        listing = self._git("ls-tree", "-r", revision, "--", *paths).decode().splitlines()
        return {
            path: meta.split()[2] for meta, _, path in (line.partition("\t") for line in listing)
        }

    def _verify(self, revision: str) -> str:
        """A commit sha (or its prefix), `main`, or a release name -> the full commit sha."""
        if (
            revision
            and RELEASE_NAME.fullmatch(revision)
            and not RE_SHA.fullmatch(revision)
            and revision != "main"
        ):
            revision = f"refs/tags/{revision}"  # a release name; never an option or another ref
        elif (
            not revision
            or any(c not in "0123456789abcdefABCDEF" for c in revision)
            and revision != "main"
        ):
            raise StoreError(f"unknown revision {revision!r}")
        try:
            return (
                self._git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}")
                .decode()
                .strip()
            )
        except StoreError:
            raise StoreError(f"unknown revision {revision.removeprefix('refs/tags/')!r}") from None

    def _show(self, revision: str, path: str) -> bytes:
        return self._git("show", f"{self._verify(revision)}:{path}")


def _stat_key(path: str) -> tuple:
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
