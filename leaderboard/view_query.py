"""What the board's reader narrows a ranked board to, the same in the tab and in every download.

The board tab (space/tabs/leaderboard.py) and GET /api/v1/leaderboard apply these to the ranked
board of a suite/task/setting/tier (ranks stay those of the whole view, so a filtered row keeps
its place among all models): the model-fact filters and the name search (`keep_rows`), the header
sort (`sort_rows`: within each section, as the browser sorts the table, blanks last) and the
column chooser (`keep_columns`). So a search that shows 2 rows downloads those 2 rows.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.columns import (
    ABOVE_REFERENCE,
    DUPLICATE_OF,
    RANK,
    SIZE,
    chooser_entries,
    registry,
)
from leaderboard.overview import SIZE_CHOICES, TYPE_CHOICES
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL, KIND_REFERENCE, KIND_REPORTED
from leaderboard.table import UNKNOWN

# A board's model types: the overview's, and what a paper's and a reference row are.
BOARD_TYPE_CHOICES = (
    *(t for t in TYPE_CHOICES if t != UNKNOWN),
    "paper",
    "reference line",
    UNKNOWN,
)
BOARD_SIZE_CHOICES = SIZE_CHOICES
NO_COLUMNS = "none"  # `columns=none`: every chooser entry off (what the page's URL writes)
DIRECTIONS = ("asc", "desc")
# The board's header columns that are not a download column of the same name: the interval (no
# sort key: sorting by it keeps the order), the reference verdict, the size (sorted by parameters).
SORT_ALIASES: dict[str, str | None] = {"ci": None, "reference": ABOVE_REFERENCE}
SORT_SOURCE = {SIZE: "parameters"}
# The sections the board draws (space/display.py SECTION_TITLES); any other kind is a paper's row.
SECTIONS = (KIND_COMPUTED, KIND_REFERENCE, KIND_PARTIAL, KIND_REPORTED)


def parse_columns(text: str | None) -> tuple[str, ...] | None:
    """`columns=ci,tiers` as the chooser entries in display order; `none`: none; empty or absent:
    None (every column). UnknownFilter names a part that is no chooser entry (an empty one too)."""
    if not text:
        return None
    if text == NO_COLUMNS:
        return ()
    entries = list(chooser_entries())
    given = text.split(",")
    for part in given:
        if part not in entries:
            raise _unknown("columns", part, [NO_COLUMNS, *entries])
    return tuple(entry for entry in entries if entry in given)


def columns_text(columns: Sequence[str] | None) -> str | None:
    """The `columns` parameter for chooser entries (None: every column)."""
    if columns is None:
        return None
    return ",".join(columns) or NO_COLUMNS


def sort_columns() -> list[str]:
    """Every column a sort may name: the registry's, every metric and tier the suites declare, and
    the board header's own (the interval, the reference verdict)."""
    from leaderboard.readpath import filter_values

    named = [c.name for c in registry() if not c.placeholder]
    tiers = [t for t in filter_values()["tier"] if "/" in t]
    return list(dict.fromkeys([*named, *known_metrics(), *tiers, *SORT_ALIASES]))


def parse_sort(text: str | None) -> str | None:
    """`sort=total:desc` checked against every column a board may have (UnknownFilter otherwise);
    empty or absent: None. A column this view lacks is found when the view is shaped."""
    if not text:
        return None
    column, _, direction = text.rpartition(":")
    if direction not in DIRECTIONS or column not in sort_columns():
        raise _unknown("sort", text, ["COLUMN:asc", "COLUMN:desc", *sort_columns()])
    return text


def keep_rows(
    board: pd.DataFrame,
    model_type: str | None = None,
    size: str | None = None,
    license: str | None = None,
    search: str | None = None,
) -> pd.DataFrame:
    """Rows of this model type, size bucket and license whose model name contains `search` (any
    case); None or empty: no filter. Attributes (the board's ranking facts) are kept."""
    keep = pd.Series(True, index=board.index)
    for column, wanted in (("model_type", model_type), (SIZE, size), ("license", license)):
        if wanted:
            keep &= board[column] == wanted
    needle = (search or "").strip().casefold()
    if needle:
        keep &= board["model_name"].astype(str).str.casefold().str.contains(needle, regex=False)
    if keep.all():
        return board
    shown = board[keep]
    shown.attrs.update(board.attrs)
    return shown


def sort_rows(board: pd.DataFrame, sort: str | None) -> pd.DataFrame:
    """The rows as a click on a header sorts them: within each section (of each task), by that
    column (numbers as numbers, text in any case), blanks last either way, ties in board order."""
    if not sort or board.empty:
        return board
    column, _, direction = sort.rpartition(":")
    source = SORT_ALIASES.get(column, column) if column in SORT_ALIASES else column
    source = SORT_SOURCE.get(column, source)
    if source is None:  # the interval column: no key, the order stays
        return board
    keys = _sort_keys(board, source, column == RANK)
    groups: dict[Any, list[int]] = {}
    kinds = board["row_kind"].where(board["row_kind"].isin(SECTIONS), "reported")
    for i, group in enumerate(zip(board["suite"], board["task"], kinds)):
        groups.setdefault(group, []).append(i)
    order: list[int] = []
    for members in groups.values():
        filled = [i for i in members if keys[i] is not None]
        order += sorted(filled, key=keys.__getitem__, reverse=direction == "desc")
        order += [i for i in members if keys[i] is None]
    shown = board.iloc[order].reset_index(drop=True)
    shown.attrs.update(board.attrs)
    return shown


def _sort_keys(board: pd.DataFrame, column: str, rank: bool) -> list[Any]:
    """Each row's sort key (None: blank). A copy of another result has no rank of its own."""
    values = board[column]
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        numbers = pd.to_numeric(values.astype("Float64"), errors="coerce")
        keys: list[Any] = [None if pd.isna(v) else float(v) for v in numbers]
    else:
        keys = [None if _blank(v) else str(v).casefold() for v in values]
    if rank and DUPLICATE_OF in board:
        keys = [None if not _blank(copy) else k for k, copy in zip(keys, board[DUPLICATE_OF])]
    return keys


def _blank(value: Any) -> bool:
    return (
        value is None
        or value is pd.NA
        or value == ""
        or (isinstance(value, float) and value != value)
    )


def keep_columns(
    board: pd.DataFrame, chosen: Sequence[str] | None, tier: str | None = None
) -> pd.DataFrame:
    """The columns the chooser's entries `chosen` show (None: every column); the columns the board
    always shows, those only the downloads carry, and the ranking tier stay."""
    if chosen is None:
        return board
    by_chooser = {c.name: c.chooser for c in registry() if not c.placeholder}
    metrics = set(known_metrics())

    def entry(name: str) -> str | None:
        if name in by_chooser:
            return by_chooser[name]
        if "/" in name:
            ranked = bool(tier) and (name == tier or name.split("/", 1)[1] == tier)
            return None if ranked else "tiers"
        return "metrics" if name in metrics else None

    keep = [name for name in board.columns if entry(name) in (None, *chosen)]
    shown = board[keep]
    shown.attrs.update(board.attrs)
    return shown


def check_sort_column(board: pd.DataFrame, sort: str | None) -> None:
    """UnknownFilter (with a scope: a 404) for a sort by a column this view does not have."""
    if not sort or board.empty:
        return
    column = sort.rpartition(":")[0]
    if column not in board.columns and column not in SORT_ALIASES:
        allowed = [*board.columns, *SORT_ALIASES]
        raise _unknown(
            "sort",
            sort,
            [f"{c}:{d}" for c in allowed for d in DIRECTIONS],
            "the columns of this view",
        )


def _unknown(parameter: str, value: str, allowed: list[str], scope: str | None = None):
    """leaderboard.readpath.UnknownFilter (imported here: the read path imports this module)."""
    from leaderboard.readpath import UnknownFilter

    return UnknownFilter(parameter, value, allowed, scope)
