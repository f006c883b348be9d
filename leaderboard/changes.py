"""The results store's core: every write to the results dataset, as a pure function of what the
dataset holds at its head.

A store (leaderboard/store.py: a local git folder; leaderboard/hub_store.py: a Hub dataset) does
two things only: it gives a `DatasetView` of its head (read a file, list a folder), and it
commits a `Change` on top of that head (the files to add or replace, the paths to delete, the
commit message). Everything between (what a publish writes, the table parts it adds and merges
(log-structured: _appended), the stale marker of the boards, whether a result is already
published, the messages) is decided here, once, from paths and contents of the view; never from commit
messages. Layout and serialisation: leaderboard/layout.py; the boards: leaderboard/boards.py.

    publish        a result record, its table rows, its details and request record (or None: the
                   record is at the head already, so a retried job publishes nothing)
    withdrawal     a result leaves the records and the table (None: it is not there)
    request_records  changed request records (None: none changed)
    group_sync     the records of an id prefix made exactly a list (the papers' reported rows)
    board_refresh  the lagging boards that are due (None: none is)
    release_files  a named release's notes, with every lagging board written
    creation, split_legacy_table, shard_flat_records   a new dataset, and older layouts moved once

Tested on an in-memory view (tests/unit/test_changes.py) and through both stores.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, cast

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
from leaderboard.layout import (
    CARD_PATH,
    CREATE_MESSAGE,
    DETAILS_DIR,
    FIRST_PART,
    LEGACY_SCORES_PATH,
    SCORES_DIR,
    SHARD_MESSAGE,
    SPLIT_MESSAGE,
    RequestRecord,
    as_json,
    dataset_card,
    details_path,
    details_to_publish,
    flat_record_paths,
    flat_result_path,
    is_part_path,
    part_bytes,
    publish_message,
    record_order,
    record_path,
    release_note,
    release_path,
    request_path,
    requests_message,
    result_path,
    submission_of_path,
    supersedes,
)
from leaderboard.result_record import RecordData, ResultRecord, checked_record, validate_record
from leaderboard.table import WideRows, records_to_scores, wide_rows

LOG = logging.getLogger(__name__)

PART_CACHE = 128  # parsed table parts kept per store object (immutable, keyed by blob id): the
# whole table up to ~55,000 results in parts of 500 (and at most ~22 smaller parts)
# tiered compaction of the table's parts (_appended): this many parts of one size tier merge into one
# of the next tier, so parts hold 1, 10, 100 or SHARD_RECORDS (500) results
MERGE_FANIN = 10
PART_NAME = re.compile(r"part-(\d+)\.parquet")


class PartCache:
    """Parsed table parts by blob id (a part's bytes never change under one id), least recently
    used dropped first: reading each new revision after a publish parses one part."""

    def __init__(self, size: int = PART_CACHE):
        self.size = size
        self._frames: OrderedDict[str, pd.DataFrame] = OrderedDict()
        self._wide: OrderedDict[str, WideRows] = OrderedDict()  # blob id -> the part pivoted
        self._lock = threading.Lock()

    def get(self, blob: str, load: Callable[[], bytes | None]) -> pd.DataFrame:
        with self._lock:
            if blob in self._frames:
                self._frames.move_to_end(blob)
                return self._frames[blob]
        data = load()
        frame = pd.read_parquet(io.BytesIO(data)) if data is not None else records_to_scores([])
        return self.remember(blob, frame)

    def remember(self, blob: str, frame: pd.DataFrame) -> pd.DataFrame:
        with self._lock:
            self._frames[blob] = frame
            while len(self._frames) > self.size:
                self._frames.popitem(last=False)
        return frame

    def pivoted(self, blob: str, load: Callable[[], pd.DataFrame]) -> WideRows:
        """The part's rows pivoted (table.wide_rows), once per part: a board refresh at 20,000
        results pivoted the whole table again (0.45 s of its 1.2 s); now only parts new since."""
        with self._lock:
            if blob in self._wide:
                self._wide.move_to_end(blob)
                return self._wide[blob]
        wide = wide_rows(load())
        with self._lock:
            self._wide[blob] = wide
            while len(self._wide) > self.size:
                self._wide.popitem(last=False)
        return wide


class DatasetView(Protocol):
    """The dataset at one revision, read-only: all the core reads."""

    revision: str | None  # None: an empty repository (nothing committed yet)
    parts: PartCache

    def read(self, path: str) -> bytes | None:
        """The file's bytes, None if there is no such file."""
        ...

    def files(self, folder: str) -> dict[str, str]:
        """path -> blob id of every file under `folder` (empty if there is none)."""
        ...

    def read_many(self, paths: list[str]) -> list[bytes | None]:
        """read() of each path, in order (in one go where the store can: every record at once)."""
        ...


class MemoView:
    """A view that asks the one it wraps at most once per path and folder (a revision never changes)."""

    def __init__(self, view: DatasetView):
        self.view = view
        self.revision = view.revision
        self.parts = view.parts
        self._read: dict[str, bytes | None] = {}
        self._files: dict[str, dict[str, str]] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._read:
            self._read[path] = self.view.read(path)
        return self._read[path]

    def files(self, folder: str) -> dict[str, str]:
        if folder not in self._files:
            self._files[folder] = self.view.files(folder)
        return self._files[folder]

    def read_many(self, paths: list[str]) -> list[bytes | None]:
        return self.view.read_many(paths)  # bulk reads are not kept: each is read once


@dataclass(frozen=True)
class Change:
    """One commit's worth: files to add or replace, paths to delete, the message."""

    message: str
    files: dict[str, bytes] = field(default_factory=dict)
    deletions: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        return [*self.files, *self.deletions]


# -- reading the table --------------------------------------------------------------------------------
def part_blobs(view: DatasetView) -> dict[str, str]:
    """path -> blob id of the table's parts (a store made before parts: its one file)."""
    found = {p: b for p, b in view.files(SCORES_DIR).items() if is_part_path(p)}
    if not found and (legacy := view.files("data").get(LEGACY_SCORES_PATH)):
        found[LEGACY_SCORES_PATH] = legacy
    return found


def part_frame(view: DatasetView, path: str, blob: str) -> pd.DataFrame:
    return view.parts.get(blob, lambda: view.read(path))


def score_parts(view: DatasetView) -> list[tuple[str, pd.DataFrame]]:
    """The table's parts, in order, each with its blob id (same id: same bytes, so the read path
    derives what it needs from a part once)."""
    return [(blob, part_frame(view, path, blob)) for path, blob in sorted(part_blobs(view).items())]


def pivoted_parts(view: DatasetView) -> list[WideRows]:
    """The table's parts pivoted (table.wide_rows), in order; each part once per store object."""
    return [
        view.parts.pivoted(blob, functools.partial(part_frame, view, path, blob))
        for path, blob in sorted(part_blobs(view).items())
    ]


def scores(view: DatasetView) -> pd.DataFrame:
    frames = [frame for _, frame in score_parts(view) if len(frame)]
    if not frames:
        return records_to_scores([])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()


def read_json(view: DatasetView, path: str) -> dict[str, Any] | None:
    data = view.read(path)
    return json.loads(data) if data is not None else None


def holds_result(view: DatasetView, suite: str, task: str, submission_id: str) -> bool:
    """Whether the result is published at this revision (in either records layout)."""
    return (
        view.read(result_path(suite, task, submission_id)) is not None
        or view.read(flat_result_path(suite, task, submission_id)) is not None
    )


def added_in(revisions: Sequence[str], holds: Callable[[str], bool]) -> str | None:
    """The revision whose commit added what the head holds: `revisions` newest first (the head
    first, a linear history), `holds(revision)` whether it is there. Galloping back from the head,
    then bisecting: ~2 log2(n) looks, not one per commit. None if the head does not hold it."""
    if not revisions or not holds(revisions[0]):
        return None
    present, step = 0, 1  # present: an index known to hold it (all between it and the head do)
    absent = len(revisions)  # an index known not to (or past the oldest)
    while present + step < absent:
        if holds(revisions[present + step]):
            present += step
            step *= 2
        else:
            absent = present + step
            break
    while absent - present > 1:
        middle = (present + absent) // 2
        if holds(revisions[middle]):
            present = middle
        else:
            absent = middle
    return revisions[present]


# -- the changes --------------------------------------------------------------------------------------
def creation(view: DatasetView) -> Change | None:
    """A new dataset: its card and an empty table (None: it has a card already)."""
    if view.read(CARD_PATH) is not None:
        return None
    files = {CARD_PATH: dataset_card().encode(), FIRST_PART: part_bytes(records_to_scores([]))}
    return Change(CREATE_MESSAGE, files)


def records(view: DatasetView) -> list[RecordData]:
    """Every result record, in path order (suite, task, id)."""
    paths = sorted((p for p in view.files("results") if p.endswith(".json")), key=record_order)
    return [cast(RecordData, json.loads(data or b"{}")) for data in view.read_many(paths)]


def records_of(
    view: DatasetView, keys: Sequence[tuple[str, str, str]]
) -> list[ResultRecord | None]:
    """The result records of (suite, task, submission id) keys, by path, typed (None where the view
    holds no such result): a page about a few results reads those, not every record. A file there
    that is no result record (edited by hand: the stores write only checked ones) reads as none,
    with a warning naming it."""
    paths = [result_path(suite, task, sid) for suite, task, sid in keys]
    return [
        _checked_or_none(path, data)
        for path, data in zip(paths, view.read_many(paths), strict=True)
    ]


def _checked_or_none(path: str, data: bytes | None) -> ResultRecord | None:
    if not data:
        return None
    try:
        return checked_record(json.loads(data))
    except ValueError as exc:  # RecordError, or a file that is no JSON
        LOG.warning("%s is not a result record, read as none: %s", path, exc)
        return None


def current_record(view: DatasetView, submission_id: str) -> RecordData | None:
    """A submission's result record, if the view holds it (whatever its suite and task)."""
    for path in view.files("results"):
        if path.endswith(".json") and submission_of_path(path) == submission_id:
            return cast(RecordData | None, read_json(view, path))
    return None


def table_files(records: list[RecordData], part_size: int) -> dict[str, bytes]:
    """The whole table from records, in parts of `part_size` results (creation, repair)."""
    chunks = [records[i : i + part_size] for i in range(0, len(records), part_size)] or [[]]
    return {
        f"{SCORES_DIR}/part-{i:05d}.parquet": part_bytes(records_to_scores(chunk))
        for i, chunk in enumerate(chunks)
    }


def split_legacy_table(view: DatasetView, part_size: int) -> Change | None:
    """A store made before the table was split into parts: its one file becomes parts, once."""
    if LEGACY_SCORES_PATH not in view.files("data"):
        return None
    files = table_files(records(view), part_size)
    files[CARD_PATH] = dataset_card(board_tasks(view.files(BOARDS_DIR))).encode()
    return Change(SPLIT_MESSAGE, files, (LEGACY_SCORES_PATH,))


def shard_flat_records(view: DatasetView) -> Change | None:
    """A store made before id_shard keeps its records flat in results|requests/<suite>/<task>/:
    they move into their shard folders, with the card that describes the layout (older revisions
    keep the flat layout; every reader takes both). None: nothing is flat."""
    listed = [p for folder in ("results", "requests") for p in view.files(folder)]
    moves = flat_record_paths(listed)
    if not moves:
        return None
    files = {new: view.read(old) or b"" for old, new in moves}
    files[CARD_PATH] = dataset_card(board_tasks(view.files(BOARDS_DIR))).encode()
    return Change(SHARD_MESSAGE, files, tuple(old for old, _ in moves))


def _lagging(
    view: DatasetView, tasks: Iterable[tuple[str, str]], added_bytes: int = 0, rewritten=False
) -> dict[str, bytes]:
    """boards/stale.json with `tasks` marked, if that changes it (leaderboard/boards.py)."""
    marked = mark_lagging(
        view.read(STALE_PATH), tasks, added_bytes=added_bytes, rewritten=rewritten
    )
    return {STALE_PATH: marked} if marked is not None else {}


def part_tiers(part_size: int) -> list[int]:
    """Results in a part of each size tier, smallest first: 1, k, k^2, ... below `part_size`, then
    `part_size` (k = MERGE_FANIN, at most `part_size`): 1, 10, 100, 500 for SHARD_RECORDS."""
    fanin = max(2, min(MERGE_FANIN, part_size))
    sizes = [1]
    while sizes[-1] * fanin < part_size:
        sizes.append(sizes[-1] * fanin)
    return sizes + [part_size] if part_size > 1 else sizes


def part_tier(results: int, tiers: list[int]) -> int:
    """A part's tier: the largest tier size it reaches (0 for an empty part); the last tier is full."""
    return max((i for i, size in enumerate(tiers) if results >= size), default=0)


def part_number(path: str) -> int:
    match = PART_NAME.fullmatch(path.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else -1


def results_in(frame: pd.DataFrame) -> int:
    return int(frame["submission_id"].nunique())


def split_by_results(rows: pd.DataFrame, part_size: int) -> list[pd.DataFrame]:
    """`rows` in order, cut into parts of `part_size` results (the last one smaller)."""
    if not len(rows):
        return [rows]
    chunk = pd.factorize(rows["submission_id"])[0] // part_size  # a result's rows are contiguous
    return [rows[chunk == i].reset_index(drop=True) for i in range(int(chunk.max()) + 1)]


def _appended(
    view: DatasetView,
    records: list[RecordData],
    part_size: int,
    changed: dict[str, pd.DataFrame] | None = None,
) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The parts to write and the parts to delete once `records`' rows are appended (`changed`:
    parts already edited by the same change, written too).

    Log-structured, so no publish rewrites a large part: the rows become new parts of their own
    (of at most `part_size` results: a publish's one result is a part of one), then tiered
    compaction (_run_to_merge): once the newest parts of tier <= t hold a part of tier t + 1's
    worth of results (ten parts of tier t; five of 100 for a full part of 500), they are merged
    into one (cut at `part_size`). Tiers of 1, 10, 100 and 500 (SHARD_RECORDS) results; a full part
    never merges again, so each result's rows are written 4 times, a publish rewrites at most one
    part, and at most 9 + 9 + 4 small parts + n / 500 exist. Names keep the table's order: a new part
    is numbered after the highest, a merged run keeps its first part's name and the others are
    deleted (all are the newest parts), so sorting the names gives the rows as published and the
    numbers stay below the most parts ever alive at once. Only the newest parts, back to the
    newest full one, are read."""
    tables = dict(changed or {})
    blobs = part_blobs(view)
    order = sorted(p for p in blobs if p != LEGACY_SCORES_PATH)
    deleted: list[str] = []

    def frame(path: str) -> pd.DataFrame:
        return tables[path] if path in tables else part_frame(view, path, blobs[path])

    number = max((part_number(p) for p in order), default=-1) + 1
    for rows in split_by_results(records_to_scores(records), part_size) if records else []:
        if order and not len(frame(order[-1])):  # the newest part is empty (a new dataset's)
            path = order[-1]
        else:
            path, number = f"{SCORES_DIR}/part-{number:05d}.parquet", number + 1
            order.append(path)
        tables[path] = rows

    tiers = part_tiers(part_size)
    tail: list[int] = []  # results in each of the newest parts after the newest full one
    for path in reversed(order):
        results = results_in(frame(path))
        if results >= part_size:
            break
        tail.insert(0, results)
    while run := _run_to_merge(tail, tiers):
        paths = order[len(order) - run :]
        frames = [f for f in map(frame, paths) if len(f)]
        rows = pd.concat(frames, ignore_index=True) if frames else records_to_scores([])
        pieces = split_by_results(rows, part_size)  # at most len(paths): each part was below full
        tables.update(zip(paths, pieces))
        for path in paths[len(pieces) :]:
            tables.pop(path, None)
            if path in blobs:
                deleted.append(path)
        order = order[: len(order) - run] + paths[: len(pieces)]
        last = results_in(pieces[-1])  # the pieces before it are full
        if last >= part_size:  # a full part ends the tail: nothing before it merges again
            tail = []
        else:
            tail = (tail[: len(tail) - run] if len(pieces) == 1 else []) + [last]
    return tables, deleted


def _run_to_merge(tail: list[int], tiers: list[int]) -> int:
    """How many of the newest parts to merge (0: none), given the results in each part after the
    newest full one (oldest first): for the lowest tier t where the newest parts of tier <= t
    hold as many results as a part of tier t + 1 (ten of tier t: 10 x 1, 10 x 10, 10 x 100), all
    of those parts (smaller ones a withdrawal or a sync left between go along)."""
    levels = [part_tier(results, tiers) for results in tail]
    for tier in range(len(tiers) - 1):
        run = total = 0
        while run < len(tail) and levels[-1 - run] <= tier:
            total += tail[-1 - run]
            run += 1
        if total >= tiers[tier + 1]:
            return run
    return 0


def _request_file(view: DatasetView, request: RequestRecord) -> dict[str, bytes]:
    """The request record's file, if it supersedes the one the view holds (a status never goes back)."""
    if supersedes(request, read_json(view, request_path(request))):
        return {request_path(request): as_json(request).encode()}
    return {}


def publish(
    view: DatasetView,
    given: Mapping[str, Any],
    part_size: int,
    request: RequestRecord | None = None,
    details: bytes | None = None,
) -> Change | None:
    """Add a result: its record, its rows as a new table part (with the newest small parts merged
    when their tier is complete: _appended), its details on a public split, its request record if that
    changed, and its task's board marked lagging with the bytes it adds. None if the record is at
    the head already (a retried job: the first result stands)."""
    record = validate_record(given)
    suite, task, sid = record["suite"], record["task"], record["submission_id"]
    # the sharded path only: both stores move flat records before any change (their `ensure`)
    if view.read(result_path(suite, task, sid)) is not None:
        return None
    files = {record_path(record): as_json(record).encode()}
    tables, merged_away = _appended(view, [record], part_size)
    files.update({p: part_bytes(t) for p, t in tables.items()})
    if (shown := details_to_publish(record, details)) is not None:
        files[details_path(suite, task, sid)] = shown
    added = len(files[record_path(record)]) + (len(shown) if shown is not None else 0)
    files.update(_lagging(view, [(suite, task)], added_bytes=added))
    if request is not None:
        files.update(_request_file(view, request))
    return Change(publish_message(record), files, tuple(merged_away))


def withdrawal(view: DatasetView, submission_id: str, message: str) -> Change | None:
    """A result leaves the head's records (its request record and details too) and the table's
    parts that hold it; its board lags. None if the head does not hold it."""
    removed = [
        p
        for folder in ("results", "requests", DETAILS_DIR)
        for p in view.files(folder)
        if submission_of_path(p) == submission_id and p.endswith((".json", ".parquet"))
    ]
    if not removed:
        return None
    files: dict[str, bytes] = {}
    for path, blob in part_blobs(view).items():
        frame = part_frame(view, path, blob)
        if (frame["submission_id"] == submission_id).any():
            kept = frame[frame["submission_id"] != submission_id].reset_index(drop=True)
            files[path] = part_bytes(kept)
    tasks = {task_of_path(p) for p in removed if p.startswith("results/")}
    files.update(_lagging(view, tasks, rewritten=True))
    return Change(message, files, tuple(removed))


def request_records(view: DatasetView, requests: list[RequestRecord]) -> Change | None:
    """The request records that supersede the head's, in one change (None: none does)."""
    files: dict[str, bytes] = {}
    for request in requests:
        files.update(_request_file(view, request))
    return Change(requests_message(requests), files) if files else None


def group_sync(
    view: DatasetView, prefix: str, given: Sequence[Mapping[str, Any]], message: str, part_size: int
) -> Change | None:
    """Make the records whose id starts with `prefix` exactly `records`: new ones added, changed
    ones rewritten, unlisted ones removed (the papers' reported rows: a corrected transcription
    replaces the old rows, in history). The group's rows leave every part they are in and its
    current rows are appended as new parts (_appended). None if nothing changed."""
    records = [validate_record(r) for r in given]
    present = [
        p
        for p in view.files("results")
        if p.endswith(".json") and submission_of_path(p).startswith(prefix)
    ]
    wanted = {record_path(r): as_json(r).encode() for r in records}
    changed = {p: data for p, data in wanted.items() if view.read(p) != data}
    removed = [p for p in present if p not in wanted]
    if not changed and not removed:
        return None
    ids = {r["submission_id"] for r in records} | {submission_of_path(p) for p in removed}
    tables: dict[str, pd.DataFrame] = {}
    for path, blob in part_blobs(view).items():
        frame = part_frame(view, path, blob)
        if frame["submission_id"].isin(ids).any():
            tables[path] = frame[~frame["submission_id"].isin(ids)].reset_index(drop=True)
    tables, merged_away = _appended(view, records, part_size, tables)
    files = dict(changed)
    files.update({path: part_bytes(frame) for path, frame in tables.items()})
    tasks = {(r["suite"], r["task"]) for r in records} | {task_of_path(p) for p in removed}
    files.update(_lagging(view, tasks, rewritten=True))
    return Change(message, files, (*removed, *merged_away))


def boards_due(
    view: DatasetView,
    older_than_s: float = 0.0,
    added_share: float = 0.0,
    now: datetime | None = None,
) -> bool:
    """Whether a board refresh is due (a cheap look at the stale marker only)."""
    return refresh_due(view.read(STALE_PATH), older_than_s, now, added_share)


def board_refresh(
    view: DatasetView,
    older_than_s: float = 0.0,
    added_share: float = 0.0,
    now: datetime | None = None,
) -> Change | None:
    """The lagging boards that are due (leaderboard/boards.py refresh_tasks), ranked afresh from
    the table, in one change; None if none is."""
    files, message = refreshed_boards(
        view.read(STALE_PATH),
        board_tasks(view.files(BOARDS_DIR)),
        lambda: pivoted_parts(view),
        view.read(CARD_PATH),
        older_than_s,
        added_share,
        now,
    )
    return Change(message, files) if files else None


def release_files(view: DatasetView, name: str, notes: str) -> tuple[Change, dict[str, Any]]:
    """A named release's change: its notes, and every lagging board written (a release's boards
    are always current); with the note, for the caller's Release."""
    note = release_note(name, notes, view.revision or "")
    boards = board_refresh(view)
    files = dict(boards.files) if boards is not None else {}
    files[release_path(name)] = as_json(note).encode()
    return Change(f"Release {name}", files), note
