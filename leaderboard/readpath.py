"""The read path: the leaderboard of a revision, computed once and served from memory.

Any results store serves it (the local git store, the Hub store) through `TableSource`:

    head_revision()            the newest revision id; called on every request (on the read
                               threads; on the event loop too when the store sets
                               `head_is_cheap = True`: a file read, never network I/O)
    resolve_revision(revision) the full id of a revision a client named (None: the newest);
                               raises StoreError for an unknown one
    scores(revision)           the long scores table at that revision (leaderboard.table)
    score_parts(revision)      optional: the table's parts as (blob id, part); each part is pivoted
                               once (by blob id), so a publish, which rewrites one part, costs
                               one part's pivot and a cheap finish (leaderboard.table.finish_view)
    pivoted_part(blob, part)   optional: the store's own pivot of a part (shared with its boards
                               refresh in the same process); table.wide_rows otherwise

The cache is keyed on the store's head revision, never on an in-process flag: a publish from any
process (a worker, another web process) changes the head, the next request sees a new key, and the
table is rebuilt once for it; a request never gets the table of an older head. Filtered views and
their encoded bodies (JSON, CSV, parquet) are memoised per revision, with a strong ETag that
changes with the revision and the bytes. JSON is served a page at a time (`Page`); CSV and
parquet are the complete downloads. `LeaderboardCache.watch` builds the new head's table and its
default bodies once the head moved and stood still for a look (0.2 s; not every head of a burst of
publishes), so readers after a publish rarely wait on a build.

What a new head costs is kept small (20,000 results): what is derived from a part (its
ranking cells, its reference rows) is derived once per part (`PartMemo`), so a publish derives its
own part's; a suite's, task's or setting's view is cut from the whole view (`_narrowed`) instead of
concatenating and sorting every part again; and each task's ranked board is ranked once per head
and shared by the whole board (the default page), the suite's and the task's (`_task_boards`),
and by later heads as long as the parts holding that task are the same (`PartMemo.task_board`):
a publish into one task ranks that task alone, not every suite's tasks (and papers' rows).
Each equals, byte for byte, what board.board_download and table.finish_view give from every row
(tests/unit/test_readpath_fast.py).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Callable, Hashable, NamedTuple, Protocol

import numpy as np
import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.board import (
    REFERENCE_KIND,
    best_line,
    board_download,
    rank_rows,
    ranking_column,
)
from leaderboard.columns import TOTAL_CI_HIGH, TOTAL_CI_LOW, board_download_columns
from leaderboard.overview import SIZE_CHOICES, TYPE_CHOICES, filter_overview, overview_table
from leaderboard.table import (
    CELL_COLUMNS,
    EMPTY_VIEW_COLUMNS,
    EXPORT_FORMATS,
    ID_COLUMNS,
    PROVENANCE_COLUMNS,
    SLICE_COLUMNS,
    TOTAL,
    TRAILING_COLUMNS,
    WideRows,
    export,
    finish_view,
    in_slice,
    wide_rows,
)
from leaderboard.view_query import (
    BOARD_TYPE_CHOICES,
    check_sort_column,
    keep_columns,
    keep_rows,
    sort_rows,
)

log = logging.getLogger(__name__)

VIEWS_PER_REVISION = 64  # filtered views kept per revision (filters come from anyone: bounded)
BODIES_PER_REVISION = 128
BODY_BYTES_PER_REVISION = 256 * 1024 * 1024
PINNED_REVISIONS = 4  # older revisions clients asked for by id, besides the head
GZIP_MIN_BYTES = 1024  # smaller bodies go out as they are
# Large bodies are sent a piece at a time, so a slow reader holds one piece of transport buffer, not
# the body; the pieces are cut once per body (held beside it), not copied out on every request.
SEND_PIECE_BYTES = 256 * 1024
WIDE_PARTS = (
    256  # pivoted table parts kept (by blob id; of 1 to SHARD_RECORDS results), across revisions
)
# JSON pages. 100 rows is a screenful of a ranked board and ~150 KB of JSON (~17 KB gzipped) at the
# widest task (23 tiers): cheap to encode after a publish and to send to 50 clients at once. The
# complete table (29 MB of JSON at 20,000 rows) is the CSV / parquet download.
DEFAULT_PAGE_ROWS = 100
MAX_PAGE_ROWS = 1000
TASK_BOARDS = 64  # ranked task boards kept across revisions (PartMemo.task_board)
WATCH_EVERY_S = 0.2  # how often the watcher reads the head (a file read for the local store)
WARM_BODIES = 8  # after a new head: the bodies last asked for on the old one are built for it too
WARM_AFTER_S = 1.0  # ... once no publish came for this long (a 20,000-row CSV costs seconds of CPU)
# ... if that body was at most this large: the complete CSV at 20,000 results (8.7 MB, 1-2 s of CPU
# holding the interpreter lock) is built when it is asked for; warmed, it slowed every reader of
# the page meanwhile (the first request after a publish and a refresh: ~30 -> ~180 ms)
WARM_BODY_MAX_BYTES = 1024 * 1024
WATCH_REST_RATIO = 1.0  # after a build of t seconds the watcher rests t x this


class TableSource(Protocol):
    def head_revision(self) -> str: ...

    def resolve_revision(self, revision: str | None) -> str: ...

    def scores(self, revision: str | None = None) -> pd.DataFrame: ...


class Page(NamedTuple):  # NamedTuple, not a dataclass: hashed on every request (C tuple hash)
    """Rows offset .. offset + limit of a view, in any format (limit None: to the last row)."""

    offset: int = 0
    limit: int | None = DEFAULT_PAGE_ROWS

    @property
    def end(self) -> int | None:
        return None if self.limit is None else self.offset + self.limit


BOARD, OVERVIEW = "board", "overview"  # the views a revision serves


class Filters(NamedTuple):
    suite: str | None = None
    task: str | None = None
    setting: str | None = None
    tier: str | None = None
    view: str = BOARD  # OVERVIEW: one row per model across suites (leaderboard/overview.py)
    # Both views: rows (models) whose name contains `search`, of this type (the overview's
    # TYPE_CHOICES, the board's BOARD_TYPE_CHOICES), size bucket and license (one the view has).
    search: str | None = None
    model_type: str | None = None
    size: str | None = None
    license: str | None = None
    # BOARD: the column chooser's entries shown (None: every column) and the header sort
    # (`column:asc|desc`), as leaderboard/view_query.py applies them
    columns: tuple[str, ...] | None = None
    sort: str | None = None

    @property
    def overview_base(self) -> "Filters":
        """The unfiltered overview these filters keep models of (built once, filtered cheaply)."""
        return Filters(self.suite, self.task, view=OVERVIEW)

    @property
    def board_base(self) -> "Filters":
        """The ranked board these filters narrow (ranked once, narrowed cheaply)."""
        return Filters(self.suite, self.task, self.setting, self.tier)


class UnknownFilter(ValueError):
    """A filter value not allowed: `parameter` names it, `allowed` lists what it may be.

    `scope` None: no suite declares the value (a bad request). Otherwise the value is a real one,
    but not one of what `scope` names ("the tasks of suite 'prefeval'", "the licenses of the
    overview's models"): a well-formed request for something that is not there (the API's 404)."""

    def __init__(
        self, parameter: str, value: str, allowed: list[str], scope: str | None = None
    ) -> None:
        self.parameter, self.value, self.allowed, self.scope = parameter, value, allowed, scope
        shown = ", ".join(allowed[:60]) + (
            f" and {len(allowed) - 60} more" if len(allowed) > 60 else ""
        )
        what = f"unknown value {value!r}" if scope is None else f"{value!r} is not one of {scope}"
        super().__init__(f"{parameter}: {what}; allowed: {shown}")


def check_filters(filters: Filters) -> None:
    """Raise UnknownFilter for a suite, task, setting or tier the manifests do not declare (within
    the suite and task given): a typo answers 4xx with the allowed values, not an empty 200. A value
    some other suite or task declares is named with the `scope` that lacks it (a 404, not a 422)."""
    from evaluator.registry import all_suites
    from evaluator.splits import release_tier_columns

    suites = all_suites()
    if filters.suite is not None and filters.suite not in suites:
        raise UnknownFilter("suite", filters.suite, sorted(suites))
    scope = [suites[filters.suite]] if filters.suite else list(suites.values())
    within = f"suite {filters.suite!r}" if filters.suite else None
    tasks = [t for s in scope for name, t in s.tasks.items() if filters.task in (None, name)]
    if filters.task is not None and not tasks:
        raise UnknownFilter(
            "task",
            filters.task,
            sorted({name for s in scope for name in s.tasks}),
            _elsewhere(filters.task, "task", f"the tasks of {within}" if within else None),
        )
    if filters.setting is not None:
        settings = sorted({name for s in scope for name in s.settings})
        # a judged task's rows carry the judge after the setting ("zero_shot+judge:...")
        base = filters.setting.split("+judge:", 1)[0]
        if base not in settings:
            raise UnknownFilter(
                "setting",
                filters.setting,
                settings,
                _elsewhere(base, "setting", f"the settings of {within}" if within else None),
            )
    if filters.tier is not None:
        tiers = {f"{g.name}/{tier}" for t in tasks for g in t.tier_groups for tier in g.tiers}
        tiers |= {name for t in tasks for name in release_tier_columns(t)}
        bare = {name.split("/", 1)[1] for name in tiers}
        if filters.tier not in tiers | bare:
            of = f"task {filters.task!r}" if filters.task else within
            raise UnknownFilter(
                "tier",
                filters.tier,
                sorted(tiers),
                _elsewhere(filters.tier, "tier", f"the tiers of {of}" if of else None),
            )
    for parameter, value, allowed in (
        (
            "type",
            filters.model_type,
            TYPE_CHOICES if filters.view == OVERVIEW else BOARD_TYPE_CHOICES,
        ),
        ("size", filters.size, SIZE_CHOICES),
    ):
        if value is not None and value not in allowed:
            raise UnknownFilter(parameter, value, list(allowed))


def _elsewhere(value: str, parameter: str, scope: str | None) -> str | None:
    """`scope` when the value is one some suite declares (only the combination is wrong)."""
    return scope if scope is not None and value in filter_values()[parameter] else None


def filter_values() -> dict[str, list[str]]:
    """Every value a suite, task, setting or tier filter may take, from the manifests (the
    API's schema lists them; a value outside them is a bad request). Tiers: `group/tier` and the
    bare tier names."""
    from evaluator.registry import all_suites
    from evaluator.splits import release_tier_columns

    suites = all_suites()
    tasks = [t for s in suites.values() for t in s.tasks.values()]
    tiers = {f"{g.name}/{tier}" for t in tasks for g in t.tier_groups for tier in g.tiers}
    tiers |= {name for t in tasks for name in release_tier_columns(t)}
    return {
        "suite": sorted(suites),
        "task": sorted({t.name for t in tasks}),
        "setting": sorted({name for s in suites.values() for name in s.settings}),
        "tier": sorted(tiers | {name.split("/", 1)[1] for name in tiers}),
    }


def check_license(
    frame: pd.DataFrame, license: str | None, scope: str = "the licenses of the overview's models"
) -> None:
    """A license filter names one the view's models have (licenses are data, not manifests: any
    other is a well-formed request for models that are not there)."""
    if license is not None and license not in set(frame["license"]):
        raise UnknownFilter("license", license, sorted(set(frame["license"])), scope)


@dataclass(frozen=True)
class Body:
    """One encoded view: what the API sends, and its validator."""

    revision: str
    content: bytes
    media_type: str
    etag: str
    encoding: str | None = None  # "gzip": content is compressed (Content-Encoding)
    page: Page | None = None  # the page it holds (None: the complete view)
    total: int = 0  # rows in the complete view

    @cached_property
    def pieces(self) -> tuple[bytes, ...]:
        """`content` in SEND_PIECE_BYTES pieces (one piece, the content itself, when it is small)."""
        if len(self.content) <= SEND_PIECE_BYTES:
            return (self.content,)
        view = memoryview(self.content)
        return tuple(
            bytes(view[start : start + SEND_PIECE_BYTES])
            for start in range(0, len(view), SEND_PIECE_BYTES)
        )

    @property
    def held_bytes(self) -> int:
        """Memory it may hold: the content, and its pieces once it was sent (a large body)."""
        return len(self.content) * (2 if len(self.content) > SEND_PIECE_BYTES else 1)

    def matches(self, if_none_match: str | None) -> bool:
        """RFC 9110 If-None-Match: weak comparison against a list of entity tags, or `*`."""
        if not if_none_match:
            return False
        tags = [tag.strip() for tag in if_none_match.split(",")]
        return "*" in tags or any(tag.removeprefix("W/") == self.etag for tag in tags)


class _Bounded(OrderedDict):
    """Least-recently-used dict with a cap on entries (and optionally on bytes)."""

    def __init__(
        self,
        max_items: int,
        max_bytes: int | None = None,
        size: Callable[[Any], int] = lambda v: 0,
    ):
        super().__init__()
        self.max_items, self.max_bytes, self.size, self.bytes = max_items, max_bytes, size, 0

    def get_fresh(self, key: Hashable):
        value = super().get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key: Hashable, value) -> None:
        if key in self:
            self.bytes -= self.size(self.pop(key))
        self[key] = value
        self.bytes += self.size(value)
        while len(self) > self.max_items or (
            self.max_bytes is not None and self.bytes > self.max_bytes and len(self) > 1
        ):
            _, dropped = self.popitem(last=False)
            self.bytes -= self.size(dropped)


def _is_score_column(column: str) -> bool:
    """A tier or metric column (board.py's test of the columns a task's board drops when empty)."""
    return "/" in column or (column != TOTAL and column in known_metrics())


def rank_cells(part: WideRows, tier: str | None) -> pd.DataFrame:
    """A part's cells of the columns board_download may rank on (`total`, or the tier named:
    board.ranking_column), submission ids as Python strings: rank_rows reads only its ranking
    column's cells, and board_download's `isin` on arrow strings cost 0.2 s per board at 20,000
    results (on Python strings 8 ms)."""
    cells = part.cells
    if not len(cells):
        return cells
    names = {
        c
        for c in cells["column"].unique()
        if c == TOTAL or (tier and "/" in c and (c == tier or c.split("/", 1)[1] == tier))
    }
    kept = cells[cells["column"].isin(names)]
    return kept.assign(submission_id=kept["submission_id"].astype(object))


def part_tasks(part: WideRows) -> frozenset[tuple[str, str]]:
    """The (suite, task) pairs a part holds rows of."""
    pairs = part.columns[["suite", "task"]].drop_duplicates()
    return frozenset(zip(map(str, pairs["suite"]), map(str, pairs["task"])))


def reference_rows(part: WideRows) -> WideRows:
    """A part with its reference rows only (its columns as they are: a view keeps the same ones)."""
    return WideRows(part.rows[part.rows["row_kind"] == REFERENCE_KIND], part.columns, part.cells)


class PartMemo:
    """What the read path derives from one pivoted part, kept while the part is: parts are shared
    by revisions, so a publish (one new part) derives only its own."""

    def __init__(self, max_items: int = 8 * WIDE_PARTS):
        self._memo = _Bounded(max_items)
        self._boards = _Bounded(TASK_BOARDS)
        self._lock = threading.Lock()

    def task_board(self, key: Hashable, holders: tuple[WideRows, ...]) -> pd.DataFrame | None:
        """A task's ranked board kept by an earlier revision whose parts holding the task are these
        same parts (None: none is): a publish into one task leaves every other task's board as it
        was, so a new head ranks only the tasks it changed."""
        with self._lock:
            found = self._boards.get_fresh((key, tuple(map(id, holders))))
        if found is not None and all(a is b for a, b in zip(found[0], holders)):
            return found[1]
        return None

    def keep_task_board(
        self, key: Hashable, holders: tuple[WideRows, ...], board: pd.DataFrame
    ) -> None:
        with self._lock:
            self._boards.put((key, tuple(map(id, holders))), (holders, board))

    def get(self, part: WideRows, what: Hashable, make: Callable[..., Any]) -> Any:
        key = (id(part), what)
        with self._lock:
            found = self._memo.get_fresh(key)
        if found is not None and found[0] is part:  # the same part, not a new one at a reused id
            return found[1]
        value = make(part, *what[1:]) if isinstance(what, tuple) else make(part)
        with self._lock:
            self._memo.put(key, (part, value))
        return value


class RevisionTable:
    """Everything served for one revision: its pivoted parts, then views and bodies as they are asked for."""

    def __init__(
        self,
        revision: str,
        parts: list[WideRows],
        tier_order: list[str],
        derived: PartMemo | None = None,
    ):
        self.revision = revision
        self.parts = parts
        self.tier_order = tier_order
        # what is derived from each part (shared across revisions: a publish derives one part's)
        self._derived = derived if derived is not None else PartMemo()
        self._repeats: bool | None = None  # whether a result is held twice (_ids_repeat)
        self._repeats_lock = threading.Lock()
        self._lock = threading.Lock()
        self._views = _Bounded(VIEWS_PER_REVISION)
        self._bodies = _Bounded(
            BODIES_PER_REVISION, BODY_BYTES_PER_REVISION, size=lambda b: b.held_bytes
        )
        self._building: dict[
            tuple, threading.Lock
        ] = {}  # body key -> its build: concurrent askers build once

    def holds(self, parts: list[WideRows], tier_order: list[str]) -> bool:
        """Whether a table of `parts` would be this one: the same pivoted parts (the same blobs),
        in the same order, under the same tier order."""
        return (
            tier_order == self.tier_order
            and len(parts) == len(self.parts)
            and all(mine is theirs for mine, theirs in zip(self.parts, parts))
        )

    def renamed(self, revision: str) -> RevisionTable:
        """This table as `revision`, a commit that changed none of its parts (a boards refresh, a
        request record): every view and body it built is the new one's too, the bodies under the
        new revision's ETag. So such a commit costs readers nothing (it cost a whole rebuild)."""
        table = RevisionTable(revision, self.parts, self.tier_order, self._derived)
        table._repeats = self._repeats
        old_prefix = len(self.revision[:16])
        with self._lock:
            for key, frame in self._views.items():
                table._views.put(key, frame)
            for key, body in self._bodies.items():
                etag = f'"{revision[:16]}{body.etag[1 + old_prefix :]}'
                table._bodies.put(key, replace(body, revision=revision, etag=etag))
        return table

    def all_rows(self) -> pd.DataFrame:
        """Every result of the revision, one row each, unfiltered (the overview's input)."""
        rows = [part.rows for part in self.parts if len(part.rows)]
        if not rows:
            return wide_rows(pd.DataFrame()).rows
        return pd.concat(rows, ignore_index=True) if len(rows) > 1 else rows[0]

    def recent_bodies(
        self, count: int, max_bytes: int | None = None
    ) -> list[tuple[Filters, str, bool, Page | None]]:
        """The `count` bodies asked for most recently (of at most `max_bytes` each), newest first,
        as (filters, fmt, gzipped, page)."""
        with self._lock:
            keys = [
                key
                for key, body in self._bodies.items()
                if max_bytes is None or len(body.content) <= max_bytes
            ][-count:]
        return [(key[0], key[1], len(key) == 4, key[2]) for key in reversed(keys)]

    def cached_body(
        self, filters: Filters, fmt: str, gzipped: bool = False, page: Page | None = None
    ) -> Body | None:
        """The body if it is built already (never builds: safe on the event loop)."""
        key = (filters, fmt, page)
        if gzipped:
            plain = self._bodies.get_fresh(key)
            if plain is not None and len(plain.content) < GZIP_MIN_BYTES:
                return plain
            return self._bodies.get_fresh((*key, "gzip"))
        return self._bodies.get_fresh(key)

    def view(self, filters: Filters) -> pd.DataFrame:
        with self._lock:
            frame = self._views.get_fresh(filters)
            if frame is None and filters.view == OVERVIEW:
                base = filters.overview_base
                frame = self._views.get_fresh(base)
                if frame is None:
                    frame = overview_table(self.all_rows(), filters.suite, filters.task)
                    self._views.put(base, frame)
                if filters != base:
                    check_license(frame, filters.license)
                    frame = filter_overview(
                        frame, filters.model_type, filters.size, filters.license, filters.search
                    )
                    self._views.put(filters, frame)
            if frame is None:
                frame = self._narrowed(filters)
                if frame is None:
                    frame = finish_view(
                        self.parts,
                        filters.suite,
                        filters.task,
                        filters.setting,
                        filters.tier,
                        tier_order=self.tier_order,
                    )
                self._views.put(filters, frame)
            return frame

    def _narrowed(self, filters: Filters) -> pd.DataFrame | None:
        """table.finish_view of a suite, task or setting (no tier) from the whole view (the default
        page's, built with each head; the lock held): the same rows in the same order (sorted on
        the same keys, ties broken by submission_id) with the columns its slices have, without
        concatenating and sorting every part again. None where that does not hold (a tier sorts
        on its column; a result held twice may keep another row)."""
        whole_filters = Filters()
        if filters.tier is not None or filters == whole_filters or self._ids_repeat():
            return None
        whole = self._views.get_fresh(whole_filters)
        if whole is None:
            whole = finish_view(self.parts, tier_order=self.tier_order)
            self._views.put(whole_filters, whole)
        slices = [p.columns for p in self.parts if len(p.columns)]
        if whole.empty or not slices:
            return None
        present = pd.concat(slices, ignore_index=True) if len(slices) > 1 else slices[0]
        keep = np.ones(len(whole), dtype=bool)
        for column, wanted in zip(SLICE_COLUMNS, (filters.suite, filters.task, filters.setting)):
            if wanted:
                keep &= in_slice(whole, column, wanted)
                present = present[in_slice(present, column, wanted)]
        if not keep.any():
            return pd.DataFrame(columns=EMPTY_VIEW_COLUMNS)
        # the columns finish_view gives these slices
        value_columns = set(present["column"])
        metric_columns = [c for c in known_metrics() if c in value_columns]
        tier_columns = [c for c in value_columns if c != TOTAL and c not in metric_columns]
        if self.tier_order:
            rank = {name: i for i, name in enumerate(self.tier_order)}
            tier_columns.sort(key=lambda c: (rank.get(c, len(rank)), c))
        else:
            tier_columns.sort()
        ordered = [
            *ID_COLUMNS,
            TOTAL,
            TOTAL_CI_LOW,
            TOTAL_CI_HIGH,
            *metric_columns,
            *tier_columns,
            *TRAILING_COLUMNS,
            *PROVENANCE_COLUMNS,
        ]
        frame = whole[keep].reindex(columns=ordered)
        if frame["n_items"].dtype.kind == "f" and frame["n_items"].notna().all():
            frame["n_items"] = frame["n_items"].astype("int64")  # as finish_view: whole numbers
        return frame.reset_index(drop=True)

    def board(self, filters: Filters) -> pd.DataFrame:
        """What the downloads carry: the view's rows as the board shows them (rank and rank group,
        the reference-line verdict, model facts; leaderboard/columns.yaml), each task ranked as
        its board. The overview is its own table."""
        if filters.view == OVERVIEW:
            return self.view(filters)
        base = filters.board_base
        ranked = self._ranked(base)
        if filters == base:
            return ranked
        key = (filters, "board")
        with self._lock:
            frame = self._views.get_fresh(key)
        if frame is None:
            # the reader's filters, sort and columns on the ranked board: ranks stay the view's
            check_license(ranked, filters.license, "the licenses of this board's models")
            check_sort_column(ranked, filters.sort)
            frame = keep_rows(
                ranked, filters.model_type, filters.size, filters.license, filters.search
            )
            frame = keep_columns(sort_rows(frame, filters.sort), filters.columns, filters.tier)
            with self._lock:
                self._views.put(key, frame)
        return frame

    def _ranked(self, filters: Filters) -> pd.DataFrame:
        """The board of a suite/task/setting/tier view, each task ranked as its board is."""
        key = (filters, "board")
        with self._lock:
            frame = self._views.get_fresh(key)
        if frame is None:
            view = self.view(filters)

            def references(suite: str, task: str) -> pd.DataFrame:
                return finish_view(
                    self._reference_parts(),
                    suite,
                    task,
                    None,
                    filters.tier,
                    tier_order=self.tier_order,
                )

            if filters.tier is None and not view.empty and not self._ids_repeat():
                frame = self._task_boards(view, filters.setting, references)
            else:
                frame = board_download(
                    view, self._rank_cells(filters.tier), references, filters.tier
                )
            with self._lock:
                self._views.put(key, frame)
        return frame

    def _task_boards(
        self,
        view: pd.DataFrame,
        setting: str | None,
        references: Callable[[str, str], pd.DataFrame],
    ) -> pd.DataFrame:
        """board.board_download of a view ranked on `total` (no tier), each task's board kept: the
        whole board (the default page, built with each head), a suite's and a task's board hold the
        same rows of a task in the same order, so they rank it once. Keyed on the rows' columns and
        dtypes too (a view's `n_items` is whole numbers only where every row of it has one)."""
        cells: pd.DataFrame | None = None  # every part's ranking cells: only if a task is ranked
        boards = []
        grouped = view.groupby(["suite", "task"], sort=False)
        # per task, which score columns hold a value and whether every row has an item count: the
        # tier and metric columns of the other tasks of the view are not this board's
        scored = [c for c in view.columns if _is_score_column(c)]
        has_value = view[scored].notna().groupby(grouped.ngroup()).any().to_numpy()
        counted = view["n_items"].notna().groupby(grouped.ngroup()).all().to_numpy()
        dtypes = dict(zip(view.columns, map(str, view.dtypes)))
        for number, ((suite, task), positions) in enumerate(grouped.indices.items()):
            foreign = {c for c, kept in zip(scored, has_value[number]) if not kept}
            # whole numbers, as finish_view gives a view of this task alone: the whole board
            # (float where another task lacks counts) and the task's view then share its board
            whole_counts = view["n_items"].dtype.kind == "f" and bool(counted[number])
            shape = tuple(
                (c, "int64" if c == "n_items" and whole_counts else dtypes[c])
                for c in view.columns
                if c not in foreign
            )
            key = ("task board", suite, task, setting, len(positions), shape)
            with self._lock:
                board = self._views.get_fresh(key)
            if board is None:
                holders = self._holders(str(suite), str(task))
                shared = (key, tuple(self.tier_order))
                board = self._derived.task_board(shared, holders)
                if board is None:
                    rows = view.iloc[positions].drop(columns=list(foreign))
                    if whole_counts:
                        rows = rows.assign(n_items=rows["n_items"].astype("int64"))
                    if cells is None:
                        cells = self._rank_cells(None)
                    own = cells[cells["submission_id"].isin(rows["submission_id"])]
                    line = best_line(references(str(suite), str(task)), ranking_column(rows, None))
                    board = rank_rows(rows, own, line, None)
                    self._derived.keep_task_board(shared, holders, board)
                with self._lock:
                    self._views.put(key, board)
            boards.append(board)
        frame = pd.concat(boards, ignore_index=True) if len(boards) > 1 else boards[0]
        metrics = [c for c in known_metrics() if c in frame]
        tiers = [c for c in frame.columns if "/" in c]
        return frame.reindex(columns=board_download_columns(metrics, tiers))

    def _holders(self, suite: str, task: str) -> tuple[WideRows, ...]:
        """The parts that hold rows of the task (its board, and its reference line, come from
        these alone)."""
        return tuple(
            p for p in self.parts if (suite, task) in self._derived.get(p, "tasks", part_tasks)
        )

    def _ids_repeat(self) -> bool:
        """Whether a result is held twice (the first row counts: finish_view): then a view of a
        task may keep another row of it than the whole view, and each view is built on its own."""
        with self._repeats_lock:  # its own lock: asked with self._lock held too (view)
            if self._repeats is None:
                ids = [p.rows["submission_id"] for p in self.parts if len(p.rows)]
                self._repeats = bool(ids) and bool(
                    pd.concat(ids, ignore_index=True).duplicated().any()
                )
            return self._repeats

    def _rank_cells(self, tier: str | None) -> pd.DataFrame:
        """The cells board_download reads (rank_rows ranks on one column): those of the columns it
        may rank on, each part's cut once (rank_cells)."""
        cells = [
            c
            for c in (self._derived.get(p, ("cells", tier), rank_cells) for p in self.parts)
            if len(c)
        ]
        if not cells:
            return pd.DataFrame(columns=CELL_COLUMNS)
        return pd.concat(cells, ignore_index=True) if len(cells) > 1 else cells[0]

    def _reference_parts(self) -> list[WideRows]:
        """The parts with their reference rows only (each task's reference line is the best of
        them): the same line as from every row, without a view of the whole table per board. A
        result held twice (the first row counts: finish_view) keeps every row, to stay exact."""
        with self._lock:
            found = self._views.get_fresh("reference parts")
        if found is not None:
            return found
        if self._ids_repeat():
            parts = self.parts
        else:
            parts = [self._derived.get(p, "references", reference_rows) for p in self.parts]
        with self._lock:
            self._views.put("reference parts", parts)
        return parts

    def body(
        self, filters: Filters, fmt: str, gzipped: bool = False, page: Page | None = None
    ) -> Body:
        """The encoded view (rows `page` of it, if given), built once; `gzipped`: the gzip variant for
        clients that accept it (compressed once per revision, not per request), unless the body is
        too small to gain."""
        found = self.cached_body(filters, fmt, gzipped, page)
        if found is not None:
            return found
        key = (filters, fmt, page)
        with self._lock:
            gate = self._building.setdefault(key, threading.Lock())
        try:
            with gate:
                return self._build_body(key, gzipped)
        finally:
            with self._lock:
                self._building.pop(key, None)

    def _build_body(self, key: tuple, gzipped: bool) -> Body:
        filters, fmt, page = key
        found = self.cached_body(filters, fmt, gzipped, page)  # built while we waited at the gate
        if found is not None:
            return found
        plain = self.cached_body(filters, fmt, page=page)
        if plain is None:
            view = self.board(filters)
            rows = view.iloc[page.offset : page.end] if page is not None else view
            content = export(rows, fmt)
            digest = hashlib.blake2b(content, digest_size=8).hexdigest()
            plain = Body(
                self.revision,
                content,
                EXPORT_FORMATS[fmt],
                f'"{self.revision[:16]}-{digest}"',
                page=page,
                total=len(view),
            )
            with self._lock:
                self._bodies.put(key, plain)
        if not gzipped or len(plain.content) < GZIP_MIN_BYTES:
            return plain
        # mtime=0: the same bytes every time, so the variant's ETag can be derived from the plain one
        packed = Body(
            self.revision,
            gzip.compress(plain.content, compresslevel=6, mtime=0),
            plain.media_type,
            plain.etag[:-1] + '-gzip"',
            encoding="gzip",
            page=page,
            total=plain.total,
        )
        with self._lock:
            self._bodies.put((*key, "gzip"), packed)
        return packed


# Built with each new head's table, before it becomes the head (by the watcher, as a rule): the
# API's first JSON page of the whole board, plain and gzip. Other views and downloads are built on
# their first request.
DEFAULT_BODIES = ((Filters(), "json", Page()),)


class LeaderboardCache:
    """The leaderboard tables of the head revision (and a few pinned ones), built once each."""

    def __init__(self, source: TableSource, tier_order: Callable[[], list[str]]):
        self.source = source
        self.tier_order = tier_order
        self._head: RevisionTable | None = None
        self._pinned = _Bounded(PINNED_REVISIONS)
        self._wide = _Bounded(
            WIDE_PARTS
        )  # blob id -> WideRows: shared by every revision holding the part
        self._derived = PartMemo()  # per part: its ranking cells, its reference rows
        self._build_lock = threading.Lock()  # one build at a time: a burst of requests builds once
        self.builds = 0  # tables built (tests, metrics)
        self.renamed = (
            0  # heads whose table is the previous head's, renamed (RevisionTable.renamed)
        )
        self.parts_pivoted = 0  # table parts pivoted (tests: a publish pivots one)

    def cached_head(self) -> RevisionTable | None:
        """The head's table if it is built, without blocking; None when the head moved (or cold),
        or when the store cannot tell its head without I/O that may block (the Hub)."""
        head = self._head
        if (
            head is not None
            and getattr(self.source, "head_is_cheap", False)
            and head.revision == self.source.head_revision()
        ):
            return head
        return None

    def table(self, revision: str | None = None) -> RevisionTable:
        """The table of `revision` (None: the head), built if needed; blocks while it is built."""
        if revision is None:
            wanted = self.source.head_revision()
            current = self._head
            if current is not None and current.revision == wanted:
                return current
        else:
            wanted = self.source.resolve_revision(revision)  # StoreError for an unknown revision
            for table in (self._head, self._pinned.get_fresh(wanted)):
                if table is not None and table.revision == wanted:
                    return table
        with self._build_lock:
            if revision is None:
                wanted = self.source.head_revision()  # it may have moved while we waited
            for table in (self._head, self._pinned.get_fresh(wanted)):  # built while we waited?
                if table is not None and table.revision == wanted:
                    return table
            parts, tier_order, head = self._wide_parts(wanted), self.tier_order(), self._head
            if revision is None and head is not None and head.holds(parts, tier_order):
                table = head.renamed(wanted)
                self.renamed += 1
            else:
                table = RevisionTable(wanted, parts, tier_order, self._derived)
                self.builds += 1
            if revision is None:
                for (
                    filters,
                    fmt,
                    page,
                ) in DEFAULT_BODIES:  # before it is the head: the fast path finds them
                    table.body(filters, fmt, gzipped=True, page=page)
                self._head = table
            else:
                self._pinned.put(wanted, table)
            return table

    def _wide_parts(self, revision: str) -> list[WideRows]:
        """The revision's table parts, pivoted; a part pivoted for an earlier revision is reused."""
        score_parts = getattr(self.source, "score_parts", None)
        if score_parts is None:  # a store that does not expose its parts: the table is one part
            self.parts_pivoted += 1
            return [wide_rows(self.source.scores(revision))]
        pivot = getattr(self.source, "pivoted_part", None)  # the store's, shared with its refresh
        parts = []
        for blob, frame in score_parts(revision):
            wide = self._wide.get_fresh(blob)
            if wide is None:
                wide = pivot(blob, frame) if pivot is not None else wide_rows(frame)
                self.parts_pivoted += 1
                self._wide.put(blob, wide)
            parts.append(wide)
        return parts

    def _warm(
        self, table: RevisionTable, wanted: list[tuple[Filters, str, bool, Page | None]]
    ) -> None:
        """Build `wanted` (what readers asked for on the previous head: the CSV download, a popular
        filter) for the new head, after it is the head, so its readers wait for none of them."""
        for filters, fmt, gzipped, page in wanted:
            if self._head is not table:
                return  # the head moved again: the next round warms the newer one
            try:
                table.body(filters, fmt, gzipped, page)
            except UnknownFilter:  # a license or sort column the new head no longer has
                continue

    def watch(self, stop: threading.Event, every_s: float = WATCH_EVERY_S) -> None:
        """Until `stop`: whenever the head moves (a publish by any process) and then stands still
        for one look (`every_s`), build its table and default bodies; once the head has stood
        still for WARM_AFTER_S, the bodies readers asked
        for last on the heads before it. So the first readers after a publish find them built, and
        a burst of publishes is not slowed by re-encoding a large download after each one."""
        wanted: list[
            tuple[Filters, str, bool, Page | None]
        ] = []  # to warm once the head stands still
        moved_at = 0.0
        seen: str | None = None  # the newest head seen moving: built once it stands still a look
        while not stop.is_set():
            try:
                head, current = self._head, self.source.head_revision()
                if head is not None and head.revision != current and current != seen:
                    # moved since the last look: while publishes keep coming (a burst, a backlog
                    # drained) the web process builds no head nobody asked for, and takes no CPU
                    # from the publishers; a reader in between builds the one it wants
                    seen = current
                elif head is None or head.revision != current:
                    started = time.perf_counter()
                    table = self.table()  # with its DEFAULT_BODIES
                    if head is not None and table is not head:
                        recent = head.recent_bodies(WARM_BODIES, WARM_BODY_MAX_BYTES)
                        wanted = list(dict.fromkeys([*recent, *wanted]))[:WARM_BODIES]
                        moved_at = time.monotonic()
                    took = time.perf_counter() - started
                    log.debug("leaderboard %s built in %.3f s", table.revision[:12], took)
                    # at most half a core: during a burst of publishes, heads nobody asked for are
                    # skipped rather than each built (a reader in between builds the one it wants)
                    stop.wait(took * WATCH_REST_RATIO)
                elif wanted and time.monotonic() - moved_at >= WARM_AFTER_S:
                    self._warm(head, wanted)
                    wanted = []
            except Exception:  # the store unreachable for a while (the Hub): try again later
                log.warning("leaderboard prebuild failed; readers build on demand", exc_info=True)
                stop.wait(10 * every_s)
            stop.wait(every_s)
