"""The results store: a folder laid out like a Hugging Face Hub dataset repository, versioned by git.

    README.md                                    dataset card (configs point at the parquet table)
    results/<suite>/<task>/<xx>/<submission id>.json   one immutable record per result, with provenance
    requests/<suite>/<task>/<xx>/<submission id>.json  one record per submission: public metadata, status
                                                 (<xx>: id_shard(submission id), 256 folders per task)
    releases/<name>.json                         a named release's notes (the release is a tag)
    data/scores/part-NNNNN.parquet               the leaderboard table (one row per result and tier),
                                                 in parts of at most SHARD_RECORDS results
    boards/<suite>/<task>.parquet                the task's board as the API downloads it (ranks,
                                                 reference verdicts: leaderboard/boards.py), derived,
                                                 rewritten in batches by the publisher
    boards/stale.json                            the boards that lag behind the table, and since when
    details/<suite>/<task>/<xx>/<id>.parquet     a result's per-item answers, gold and outcome, on a
                                                 public split only (submissions/details.py)

Every publish is one git commit, so every version is immutable and can be read back by its
commit sha, exactly as a Hub revision; a release is a git tag, as on the Hub. The Hub store
(leaderboard/hub_store.py) maps the same operations onto `HfApi.create_commit` with the same
paths. Publishing is idempotent per submission id, so a job that is retried after its worker died
publishes its result exactly once.

Publishing appends: it rewrites only the newest table part (bounded size) and commits only the
paths it wrote, so its cost does not grow with the number of results; the records' folders are
sharded so that a commit rehashes small trees only (see id_shard). Readers get the table of a
revision with `scores(revision)`; parts are cached by blob id, so a new revision costs one part.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import logging
import os
import re
import subprocess
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol, runtime_checkable

import pandas as pd

from leaderboard.boards import (
    BOARDS_DIR,
    STALE_PATH,
    board_tasks,
    mark_lagging,
    refresh_due,
    refreshed_boards,
    task_of_path,
)
from leaderboard.result_record import validate_record
from leaderboard.table import records_to_scores

log = logging.getLogger(__name__)

SCORES_DIR = "data/scores"
SCORES_GLOB = f"{SCORES_DIR}/*.parquet"
LEGACY_SCORES_PATH = (
    "data/scores.parquet"  # one file, rewritten on every publish (stores made before parts)
)
SHARD_RECORDS = 1000  # results per table part: a publish rewrites at most this many results' rows
PART_CACHE = 64  # parsed table parts kept per store object (immutable, keyed by git blob id)
AUTO_GC_EVERY = (
    50  # a publish that brings a table part to a multiple of this many results runs `git gc --auto`
)

CARD_BODY = """# PersonaBoard results

- `results/<suite>/<task>/<xx>/<submission id>.json`: one JSON record per evaluated submission
  (`<xx>`: the first two hex digits of the sha256 of the submission id, so no folder grows past a few
  hundred files), with its provenance (suite version, split hash, predictions sha256 or model
  revision, setting, scorer version, timings).
- `data/scores/*.parquet` (config `scores`, the default): the long table, one row per result, tier
  and metric.
- `boards/<suite>/<task>.parquet` (config `board-<suite>-<task>`): the task's board as the
  leaderboard shows and downloads it: rank, rank group, above the reference line, model facts, one
  column per tier; each setting ranked on its own. Boards are rewritten in batches, a few seconds
  after results arrive and at every named release: `boards/stale.json` lists the boards that lack
  a result published since they were written (and since when); a board not listed there is exact.
- `details/<suite>/<task>/<xx>/<submission id>.parquet`: per-item answers of a result on a public
  split (never for a hidden split).

Every publish is a new revision. Each suite's data keeps its own license; see the PersonaBoard README.
"""


def dataset_card(boards: Iterable[tuple[str, str]] = ()) -> str:
    """The dataset card: its YAML `configs` name the scores table (the default config) and each
    task's board (leaderboard/boards.py), so `datasets.load_dataset(repo, "board-<suite>-<task>")`
    reads a board."""
    from leaderboard.boards import board_path, config_name

    configs = ["- config_name: scores\n  data_files: data/scores/*.parquet\n  default: true"]
    configs += [
        f"- config_name: {config_name(suite, task)}\n  data_files: {board_path(suite, task)}"
        for suite, task in sorted(set(boards))
    ]
    front = "license: other\npretty_name: PersonaBoard results\nconfigs:\n" + "\n".join(configs)
    return f"---\n{front}\n---\n{CARD_BODY}"


def card_is_current(card: bytes) -> bool:
    """Whether a dataset card describes this layout (whatever boards its configs list)."""
    return card.decode("utf-8", errors="replace").endswith("\n---\n" + CARD_BODY)


DATASET_CARD = dataset_card()  # a dataset without boards yet


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


class StoreError(RuntimeError):
    pass


class StoreUnavailable(StoreError):
    """The store cannot be reached right now (the Hub is down): nothing was published; try again later."""


RELEASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


LAYOUT_MARKER = "personaboard-layout"  # in .git: this store's records are sharded (see ensure)
LAYOUT_VERSION = "sharded-records-1"


def id_shard(submission_id: str) -> str:
    """The folder, under results/<suite>/<task>/ and requests/<suite>/<task>/, of a submission's records:
    two hex digits of its id's sha256, so a task holds at most 256 folders of ~1/256 of its records.

    Why: a commit rehashes every tree on a changed path, and a flat folder of 20,000 records is a ~1 MB
    tree rehashed and recompressed on every publish (the Hub also wants < 10k files per folder). A hash,
    not the id's first characters: ids of one kind share a prefix ("reported-", the benches' "bench-")."""
    return hashlib.sha256(submission_id.encode()).hexdigest()[:2]


def result_path(suite: str, task: str, submission_id: str, folder: str = "results") -> str:
    """Where a result record (folder "requests": a request record) lives in the dataset: the one
    place that spells the layout out."""
    return f"{folder}/{suite}/{task}/{id_shard(submission_id)}/{submission_id}.json"


def result_glob(submission_id: str, folder: str = "results") -> str:
    """A glob, relative to the dataset root, for a submission's record whatever its suite and task."""
    return f"{folder}/*/*/{id_shard(submission_id)}/{submission_id}.json"


DETAILS_DIR = "details"


def details_path(suite: str, task: str, submission_id: str) -> str:
    """Where a result's per-item details file lives (public splits only: see details_to_publish)."""
    return f"{DETAILS_DIR}/{suite}/{task}/{id_shard(submission_id)}/{submission_id}.parquet"


def details_glob(submission_id: str) -> str:
    return f"{DETAILS_DIR}/*/*/{id_shard(submission_id)}/{submission_id}.parquet"


def details_to_publish(record: dict[str, Any], details: bytes | None) -> bytes | None:
    """`details` if the record's task may show anything per item (a public split), else None.

    The job builds details only for public splits; this is the store's own check of the same rule
    (evaluator/release.py item_details_allowed), so nothing per item of a hidden split is ever
    written to the dataset, whoever asks."""
    if details is None:
        return None
    from evaluator.registry import UnknownSuiteError, get_task
    from evaluator.release import item_details_allowed

    try:
        allowed = item_details_allowed(get_task(record["suite"], record["task"]))
    except UnknownSuiteError:
        allowed = False
    if not allowed:
        log.error("details of %s not published: its split is hidden", record["submission_id"])
        return None
    return details


def record_path(record: dict[str, Any]) -> str:
    return result_path(record["suite"], record["task"], record["submission_id"])


def request_path(request: dict[str, Any]) -> str:
    return result_path(request["suite"], request["task"], request["submission_id"], "requests")


def flat_record_paths(paths) -> list[tuple[str, str]]:
    """(old path, sharded path) for each record stored in the flat layout of stores made before
    id_shard (results|requests/<suite>/<task>/<id>.json); other paths are left out."""
    moves = []
    for path in paths:
        parts = path.split("/")
        if len(parts) == 4 and parts[0] in ("results", "requests") and parts[3].endswith(".json"):
            folder, suite, task, name = parts
            moves.append((path, f"{folder}/{suite}/{task}/{id_shard(name[:-5])}/{name}"))
    return moves


def record_order(path: str) -> tuple[str, str, str]:
    """Sort key of a record's path in the dataset (results|requests/<suite>/<task>/[<xx>/]<id>.json):
    suite, task, id; the shard folder is no order."""
    parts = path.split("/")
    return parts[1], parts[2], parts[-1]


def record_files(folder: Path) -> list[Path]:
    """The record files under a dataset's results/ (or requests/) folder, either layout, in record_order."""
    return sorted(
        folder.glob("*/*/**/*.json"),
        key=lambda p: record_order(p.relative_to(folder.parent).as_posix()),
    )


def release_path(name: str) -> str:
    return f"releases/{name}.json"


def check_release_name(name: str) -> str:
    if not RELEASE_NAME.fullmatch(name or "") or RE_SHA.fullmatch(name):
        raise StoreError(
            f"release name {name!r}: use letters, digits, '.', '_' or '-' (at most 64), not a commit sha"
        )
    return name


RE_SHA = re.compile(r"[0-9a-f]{7,40}")


def release_note(name: str, notes: str, table_revision: str) -> dict[str, Any]:
    return {
        "name": name,
        "notes": notes,
        "table_revision": table_revision,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


STATUS_RANK = {"queued": 0, "finished": 1, "failed": 1, "cancelled": 1}


def supersedes(request: dict[str, Any], current: dict[str, Any] | None) -> bool:
    """Whether `request` should replace the stored record: it changed, and its status is not older."""
    if current == request:
        return False
    return current is None or STATUS_RANK.get(str(request.get("status")), 0) >= STATUS_RANK.get(
        str(current.get("status")), 0
    )


def requests_message(requests: list[dict[str, Any]]) -> str:
    shown = ", ".join(f"{r['submission_id']} {r.get('status')}" for r in requests[:5])
    return f"Requests: {shown}" + (f" and {len(requests) - 5} more" if len(requests) > 5 else "")


def as_json(data: dict[str, Any]) -> str:
    """The one serialisation of a stored record (so an unchanged record is an unchanged file)."""
    return json.dumps(data, indent=1, sort_keys=True)


@runtime_checkable
class ResultsStore(Protocol):
    """What every results store offers (LocalDatasetStore here, HubDatasetStore in hub_store.py):
    the service, the outbox, the read path and the CLI use only this. Both lay the dataset out the
    same way (module docstring); a revision is a commit sha, a release a named one."""

    kind: str  # "local" | "hub"
    head_is_cheap: bool  # head_revision() never waits on the network (safe on an event loop)

    @property
    def location(self) -> str: ...
    def ensure(self) -> None: ...
    def publish(
        self,
        record: dict[str, Any],
        request: dict[str, Any] | None = None,
        details: bytes | None = None,
    ) -> str: ...
    def published_details(
        self, suite: str, task: str, submission_id: str, revision: str | None = None
    ) -> bytes | None: ...
    def withdraw(self, submission_id: str, message: str) -> str | None: ...
    def refresh_boards(self, older_than_s: float = 0.0) -> str | None: ...
    def current_record(self, submission_id: str) -> dict[str, Any] | None: ...
    def publish_requests(self, requests: list[dict[str, Any]]) -> str | None: ...
    def sync_group(
        self, prefix: str, records: list[dict[str, Any]], message: str
    ) -> str | None: ...
    def release(self, name: str, notes: str = "") -> Release: ...
    def releases(self) -> list[Release]: ...
    def head_revision(self) -> str: ...
    def resolve_revision(self, revision: str | None) -> str: ...
    def versions(self) -> list[Version]: ...
    def scores(self, revision: str | None = None) -> pd.DataFrame: ...
    def score_parts(self, revision: str | None = None) -> list[tuple[str, pd.DataFrame]]: ...
    def records(self, revision: str | None = None) -> list[dict[str, Any]]: ...


class LocalDatasetStore:
    head_is_cheap = True  # head_revision() reads git's ref files: fine on the web app's event loop
    kind = "local"

    def __init__(self, root: Path):
        self.root = Path(root)
        self._parts: OrderedDict[str, pd.DataFrame] = OrderedDict()  # blob id -> parsed table part
        self._parts_lock = threading.Lock()
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

    def ensure(self) -> None:
        marker = self.root / ".git" / LAYOUT_MARKER
        if marker.exists() and not (self.root / LEGACY_SCORES_PATH).exists():
            return
        with self._locked():
            if not (self.root / ".git").exists():
                self._git("init", "-q", "-b", "main")
                # the index is rewritten on every commit: keep that write small as results grow
                self._git("config", "core.splitIndex", "true")
                (self.root / "README.md").write_text(DATASET_CARD, encoding="utf-8")
                self._write_scores([])
                self._git("add", "-A")
                self._git("commit", "-q", "-m", "Create the results dataset")
            if (self.root / LEGACY_SCORES_PATH).exists():
                # A store made before the table was split into parts: split it once, in a new version.
                self._discard_uncommitted()
                (self.root / LEGACY_SCORES_PATH).unlink()
                (self.root / "README.md").write_text(DATASET_CARD, encoding="utf-8")
                self._write_scores(self._read_records_from_disk())
                self._git("add", "-A")
                self._git(
                    "commit", "-q", "-m", "Split the scores table into parts (appends stay cheap)"
                )
            if not marker.exists():
                self._shard_flat_records()
                marker.write_text(LAYOUT_VERSION + "\n", encoding="ascii")

    def _shard_flat_records(self) -> None:
        """A store made before id_shard keeps its records flat in results|requests/<suite>/<task>/:
        move them into their shard folders once, in a new version (older versions keep the flat
        layout; every reader takes both)."""

        def flat() -> list[str]:
            return [
                str(p.relative_to(self.root))
                for folder in ("results", "requests")
                for p in (self.root / folder).glob("*/*/*.json")
            ]

        if not flat():
            return
        self._discard_uncommitted()  # a dead writer's record is not moved into this version
        for old, new in flat_record_paths(flat()):
            (self.root / new).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.root / old, self.root / new)
        boards = board_tasks(str(p.relative_to(self.root)) for p in self.root.glob("boards/*/*"))
        (self.root / "README.md").write_text(dataset_card(boards), encoding="utf-8")
        self._git("add", "-A")
        self._git(
            "commit",
            "-q",
            "-m",
            "Shard the records folders by id (a commit rehashes small trees only)",
        )

    # -- writing --------------------------------------------------------------------------------
    record_path = staticmethod(record_path)

    def publish(
        self,
        record: dict[str, Any],
        request: dict[str, Any] | None = None,
        details: bytes | None = None,
    ) -> str:
        """Add one result record (and its submission's request record, and its per-item details
        file on a public split) and append its rows to the table in a new version; returns its
        revision.

        If this submission was already published (a retried job), nothing is written and the
        revision that first published it is returned.
        """
        record = validate_record(record)  # only records of the result record's shape are published
        self.ensure()
        relative = self.record_path(record)
        message = f"Add result {record['submission_id']} ({record['suite']}/{record['task']})"
        with self._locked():
            head = self.head_revision()
            # What the last version has at this publish's paths (one small listing: the records are
            # sharded and the table has few parts), not what is on disk: a failed writer's files there
            # are overwritten, never read.
            wanted = [relative] + ([request_path(request)] if request is not None else [])
            committed = self._blobs(head, SCORES_DIR, STALE_PATH, *wanted)
            if relative in committed:  # a retried job: the first result stands
                # the commit that added it (--follow: past the one that moved it into its shard folder)
                return (
                    self._git(
                        "log", "-1", "--follow", "--diff-filter=A", "--format=%H", "--", relative
                    )
                    .decode()
                    .strip()
                )
            self._write(relative, as_json(record))
            part, results_in_part = self._append_scores(records_to_scores([record]), committed)
            paths = [relative, part]
            paths += self._mark_lagging(committed, [(record["suite"], record["task"])])
            if (details := details_to_publish(record, details)) is not None:
                path = details_path(record["suite"], record["task"], record["submission_id"])
                self._write_bytes(path, details)
                paths.append(path)
            if request is not None and self._request_changes(request, committed):
                # its requests/ record in the same version: a job that finishes before the web
                # node's publisher pass would otherwise leave the submission without one
                self._write(request_path(request), as_json(request))
                paths.append(request_path(request))
            commit = self._commit_paths(head, paths, message)
            if results_in_part % AUTO_GC_EVERY == 0:
                # `git commit` runs `git gc --auto` after each commit; commit-tree does not. Counted by
                # the table part, not per process: jobs publish from short-lived forked processes.
                # It returns at once unless loose objects piled up, and then packs in the background.
                self._git("gc", "--auto", "--quiet")
            return commit

    def _mark_lagging(
        self, committed: dict[str, str], tasks: Iterable[tuple[str, str]]
    ) -> list[str]:
        """Add `tasks` to boards/stale.json (the lock held; `committed`: the last version's blobs,
        the stale file's among them); returns the paths written: none when they all lag already."""
        blob = committed.get(STALE_PATH)
        marked = mark_lagging(self._git("cat-file", "blob", blob) if blob else None, tasks)
        if marked is None:
            return []
        self._write_bytes(STALE_PATH, marked)
        return [STALE_PATH]

    def _current_boards(self, head: str, older_than_s: float = 0.0) -> tuple[list[str], str]:
        """Write every lagging board as of `head` if a refresh is due (the lock held); returns the
        paths written (none when nothing was due) and a commit message for them."""
        committed = self._blobs(head, STALE_PATH, BOARDS_DIR, "README.md")
        blob = committed.get(STALE_PATH)
        stale = self._git("cat-file", "blob", blob) if blob else None
        if not refresh_due(stale, older_than_s):
            return [], ""
        card = self._git("cat-file", "blob", committed["README.md"])
        files, message = refreshed_boards(
            stale, board_tasks(committed), lambda: self.scores(head), card
        )
        for path, data in files.items():
            self._write_bytes(path, data)
        return list(files), message

    def refresh_boards(self, older_than_s: float = 0.0) -> str | None:
        """Rewrite every lagging board (boards/stale.json) in one new version, if the oldest change
        they lack is at least `older_than_s` old; returns the new revision, or None (nothing due)."""
        self.ensure()
        with self._locked():
            head = self.head_revision()
            paths, message = self._current_boards(head, older_than_s)
            return self._commit_paths(head, paths, message) if paths else None

    def _commit_paths(self, head: str, paths: list[str], message: str) -> str:
        """Commit the files written at `paths` on top of `head` (the lock held); returns the commit.

        With plumbing: `git commit` refreshes the whole index (an lstat per record file, ~40 ms at
        20,000 results); write-tree reuses the index's cached trees and rehashes only the (small,
        sharded) trees on the paths added here."""
        self._git("add", "--", *paths)
        tree = self._git("write-tree").decode().strip()
        commit = self._git("commit-tree", tree, "-p", head, "-m", message).decode().strip()
        self._git("update-ref", "-m", f"commit: {message}", "HEAD", commit, head)
        return commit

    def _append_scores(self, rows: pd.DataFrame, committed: dict[str, str]) -> tuple[str, int]:
        """Append rows to the newest committed table part, or start a new part when it is full;
        returns its path and how many results it holds. `committed`: path -> blob id of the parts
        in the last version."""
        parts = sorted(
            path
            for path in committed
            if path.startswith(SCORES_DIR + "/") and path.endswith(".parquet")
        )
        tail = self._part(committed[parts[-1]]) if parts else None
        if tail is None or tail["submission_id"].nunique() >= SHARD_RECORDS:
            path, frame = f"{SCORES_DIR}/part-{len(parts):05d}.parquet", rows
        else:
            path, frame = (
                parts[-1],
                pd.concat([tail, rows], ignore_index=True) if len(tail) else rows,
            )
        data = parquet_bytes(frame)
        self._write_bytes(path, data)
        self._remember_part(_blob_id(data), data)  # the next publish (and reader) finds it parsed
        for stray in (self.root / SCORES_DIR).glob(
            "part-*.parquet"
        ):  # a failed writer's extra part
            if (
                str(stray.relative_to(self.root)) not in committed
                and str(stray.relative_to(self.root)) != path
            ):
                stray.unlink()
        return path, frame["submission_id"].nunique()

    def _request_changes(self, request: dict[str, Any], committed: dict[str, str]) -> bool:
        """Whether `request` supersedes the request record the last version holds (see supersedes)."""
        blob = committed.get(request_path(request))
        current = json.loads(self._git("cat-file", "blob", blob)) if blob else None
        return supersedes(request, current)

    def withdraw(self, submission_id: str, message: str) -> str | None:
        """Remove one submission's result and request record from the table in a new version (an
        operator hid or deleted it); versions published before keep it, as history. Returns the new
        revision, or None if the current version does not hold it. `publish` can put it back later."""
        self.ensure()
        with self._locked():
            self._git(
                "clean", "-q", "-f", "--", SCORES_DIR
            )  # as in publish: a dead writer's leftovers
            self._git("checkout", "-q", "HEAD", "--", SCORES_DIR)
            self._git(
                "clean", "-q", "-f", "--", result_glob(submission_id)
            )  # never committed: not published
            records = list(self.root.glob(result_glob(submission_id)))
            requests = list(
                self.root.glob(result_glob(submission_id, "requests"))
            )  # its public metadata too
            if not records and not requests:
                return None
            details = list(self.root.glob(details_glob(submission_id)))
            changed = [str(p.relative_to(self.root)) for p in records + requests + details]
            for path in records + requests + details:
                path.unlink()
            for part in sorted(
                (self.root / SCORES_DIR).glob("part-*.parquet")
            ):  # only the parts holding it
                frame = pd.read_parquet(part)
                if (frame["submission_id"] == submission_id).any():
                    _write_parquet(
                        frame[frame["submission_id"] != submission_id].reset_index(drop=True), part
                    )
                    changed.append(str(part.relative_to(self.root)))
            head = self.head_revision()
            changed += self._mark_lagging(
                self._blobs(head, STALE_PATH),
                [task_of_path(str(path.relative_to(self.root))) for path in records],
            )
            self._git("add", "-A", "--", *changed)
            self._git("commit", "-q", "-m", message)
            return self.head_revision()

    def published_details(
        self, suite: str, task: str, submission_id: str, revision: str | None = None
    ) -> bytes | None:
        """A result's details file at a revision (default: the newest), None if it has none."""
        rev = self.resolve_revision(revision)
        blob = self._blobs(rev, details_path(suite, task, submission_id)).get(
            details_path(suite, task, submission_id)
        )
        return self._git("cat-file", "blob", blob) if blob else None

    def current_record(self, submission_id: str) -> dict[str, Any] | None:
        """The result record of a submission in the current version, if it is there."""
        self.ensure()
        paths = list(self.root.glob(result_glob(submission_id)))
        return json.loads(paths[0].read_text(encoding="utf-8")) if paths else None

    def sync_group(self, prefix: str, records: list[dict[str, Any]], message: str) -> str | None:
        """Make the records whose id starts with `prefix` exactly `records`: add new ones, rewrite
        changed ones, remove ones no longer listed; one new version if anything changed, else None.
        (The papers' reported rows: a corrected transcription replaces the old rows, in history.)"""
        records = [validate_record(r) for r in records]
        self.ensure()
        with self._locked():
            self._discard_uncommitted()
            wanted = {self.record_path(r): as_json(r) for r in records}
            present = {
                str(p.relative_to(self.root)): p
                for p in (self.root / "results").glob(f"*/*/*/{prefix}*.json")
            }
            changed = False
            for relative, text in wanted.items():
                target = self.root / relative
                if not target.exists() or target.read_text(encoding="utf-8") != text:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                    changed = True
            for relative, path in present.items():
                if relative not in wanted:
                    path.unlink()
                    changed = True
            if not changed:
                return None
            self._write_scores(self._read_records_from_disk())
            tasks = {(r["suite"], r["task"]) for r in records}
            tasks |= {task_of_path(p) for p in present if p not in wanted}
            self._mark_lagging(self._blobs(self.head_revision(), STALE_PATH), tasks)
            self._git("add", "-A")
            self._git("commit", "-q", "-m", message)
            return self._git("rev-parse", "HEAD").decode().strip()

    def _discard_uncommitted(self) -> None:
        """Drop whatever a writer that died mid-publish left (a record, a half-built table).

        Called with the lock held, so nothing uncommitted can belong to a live writer. Without this
        a full rebuild's `git add -A` would commit the dead attempt's record inside another commit;
        instead that submission's retried job publishes it in its own. (`publish` does the same for
        the paths it touches only: it never adds anything else.)
        """
        self._git("reset", "-q", "--hard", "HEAD")
        self._git("clean", "-q", "-f", "-d")

    def publish_requests(self, requests: list[dict[str, Any]]) -> str | None:
        """Write submissions' request records (public metadata and status) in one version; None if
        nothing changed. A status never goes back (a late "queued" does not undo "finished")."""
        self.ensure()
        with self._locked():
            written = []
            for request in requests:
                relative = request_path(request)
                old = self.root / relative
                current = json.loads(old.read_text(encoding="utf-8")) if old.exists() else None
                if supersedes(request, current) and self._write(relative, as_json(request)):
                    written.append(relative)
            if not written:
                return None
            return self._commit_paths(self.head_revision(), written, requests_message(requests))

    def release(self, name: str, notes: str = "") -> Release:
        """Name the newest version: a commit adding releases/<name>.json (the notes), tagged `name`."""
        self.ensure()
        check_release_name(name)
        with self._locked():
            if self._git("tag", "--list", name).strip():
                raise StoreError(f"release {name!r} already exists")
            head = self.head_revision()
            note = release_note(name, notes, head)
            self._write(release_path(name), as_json(note))
            paths = [release_path(name), *self._current_boards(head)[0]]
            self._git("add", "--", *paths)
            self._git("commit", "-q", "-m", f"Release {name}")
            self._git("tag", name)
            revision = self.head_revision()
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

    def _write(self, relative: str, text: str) -> bool:
        """Write a file of the dataset atomically; False if it already had this content."""
        target = self.root / relative
        if target.exists() and target.read_text(encoding="utf-8") == text:
            return False
        self._write_bytes(relative, text.encode("utf-8"))
        return True

    def _write_bytes(self, relative: str, data: bytes) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def _write_scores(self, records: list[dict[str, Any]]) -> None:
        """Rebuild the whole table from records (creation, reported-row sync, repair): rare paths."""
        folder = self.root / SCORES_DIR
        folder.mkdir(parents=True, exist_ok=True)
        chunks = [
            records[i : i + SHARD_RECORDS] for i in range(0, len(records), SHARD_RECORDS)
        ] or [[]]
        for i, chunk in enumerate(chunks):
            _write_parquet(records_to_scores(chunk), folder / f"part-{i:05d}.parquet")
        for stale in sorted(folder.glob("part-*.parquet"))[len(chunks) :]:
            stale.unlink()

    def _read_records_from_disk(self) -> list[dict[str, Any]]:
        return [
            json.loads(p.read_text(encoding="utf-8")) for p in record_files(self.root / "results")
        ]

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

    def scores(self, revision: str | None = None) -> pd.DataFrame:
        """The leaderboard table at a revision (default: the newest), read from that commit.

        Parts are immutable blobs: a part already parsed (by blob id) is reused, so reading each new
        revision after a publish parses one part, not the whole table."""
        frames = [frame for _, frame in self.score_parts(revision) if len(frame)]
        if not frames:
            return records_to_scores([])
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()

    def score_parts(self, revision: str | None = None) -> list[tuple[str, pd.DataFrame]]:
        """The table's parts at a revision, in order, each with its blob id (the same id: the same
        bytes, so the read path derives what it needs from a part once)."""
        rev = self.resolve_revision(revision)
        blobs = [
            (path, blob)
            for path, blob in self._blobs(rev, "data").items()
            if path == LEGACY_SCORES_PATH
            or (path.startswith(SCORES_DIR + "/") and path.endswith(".parquet"))
        ]
        return [(blob, self._part(blob)) for _, blob in sorted(blobs)]

    def _blobs(self, revision: str, *paths: str) -> dict[str, str]:
        """path -> blob id of the files at (or under) `paths` in a revision."""
        listing = self._git("ls-tree", "-r", revision, "--", *paths).decode().splitlines()
        return {
            path: meta.split()[2] for meta, _, path in (line.partition("\t") for line in listing)
        }

    def _part(self, blob: str) -> pd.DataFrame:
        with self._parts_lock:
            if blob in self._parts:
                self._parts.move_to_end(blob)
                return self._parts[blob]
        return self._remember_part(blob, self._git("cat-file", "blob", blob))

    def _remember_part(self, blob: str, data: bytes) -> pd.DataFrame:
        frame = pd.read_parquet(io.BytesIO(data))
        with self._parts_lock:
            self._parts[blob] = frame
            while len(self._parts) > PART_CACHE:
                self._parts.popitem(last=False)
        return frame

    def records(self, revision: str | None = None) -> list[dict[str, Any]]:
        self.ensure()
        if revision is None:
            return self._read_records_from_disk()
        rev = self._verify(revision)
        names = self._git("ls-tree", "-r", "--name-only", rev, "--", "results").decode().split()
        return [
            json.loads(self._show(rev, name))
            for name in sorted(names, key=record_order)
            if name.endswith(".json")
        ]

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


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (sha1 object format, git's default)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)
