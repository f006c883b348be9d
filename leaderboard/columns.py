"""The leaderboard's column registry (columns.yaml beside this file), read once and checked.

Everything that lists the board's columns asks here: the board's column order and chooser
(space/board_view.py), the header labels (space/display.py) and the downloads
(leaderboard/readpath.py via `board_download_columns`). Score columns (`{metric}`, `{tier}`) are
placeholders filled from the manifests and metrics.yaml by the caller.

Code that names a column the board computes (not a field of the result record, whose names the
record's schema spells: leaderboard/result_record.py) uses the constants below, never the name
itself: tests/unit/test_column_literals.py fails on such a name written as a string anywhere else,
and `registry()` fails if columns.yaml no longer lists a column named here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from evaluator.yaml_files import read_yaml

REGISTRY = Path(__file__).with_name("columns.yaml")
METRIC_COLUMNS, TIER_COLUMNS = "{metric}", "{tier}"  # placeholders for the score columns
Shown = Literal["always", "default", "optional", "never"]
SHOWN: tuple[Shown, ...] = ("always", "default", "optional", "never")
SOURCES = ("record", "provenance", "scores", "board")
TYPES = ("str", "int", "float", "bool")

# The board's computed columns (leaderboard/board.py, leaderboard/table.py), by name.
RANK = "rank"
RANK_GROUP = "rank_group"
RANK_AMONG = "rank_among"
TOTAL_CI_LOW = "total_ci_low"
TOTAL_CI_HIGH = "total_ci_high"
ABOVE_REFERENCE = "above_reference"
SIZE = "size"
DUPLICATE_OF = "duplicate_of"
COMPARABLE_PAPER_ROWS = "comparable_paper_rows"
RANKED_ON = "ranked_on"
MODEL_REVISION = "model_revision"
SPLIT_SHA256 = "split_sha256"
PARSE_WARNING = "parse_warning"
NAMED_COLUMNS = (
    RANK,
    RANK_GROUP,
    RANK_AMONG,
    TOTAL_CI_LOW,
    TOTAL_CI_HIGH,
    ABOVE_REFERENCE,
    SIZE,
    DUPLICATE_OF,
    COMPARABLE_PAPER_ROWS,
    RANKED_ON,
    MODEL_REVISION,
    SPLIT_SHA256,
    PARSE_WARNING,
)


@dataclass(frozen=True)
class Column:
    name: str
    label: str
    type: str
    shown: Shown
    source: str
    chooser: str | None = None
    chooser_label: str | None = None
    stored: bool = False  # also in the results dataset's table (data/scores/*.parquet)
    about: str = ""

    @property
    def placeholder(self) -> bool:
        return self.name in (METRIC_COLUMNS, TIER_COLUMNS)


class ColumnRegistryError(ValueError):
    pass


def parse_columns(entries: list[dict], where: str = "columns.yaml") -> tuple[Column, ...]:
    """The registry's entries as Columns; ColumnRegistryError naming the entry and field otherwise."""
    known = set(Column.__dataclass_fields__)
    columns, names = [], set()
    for i, entry in enumerate(entries):
        at = f"{where}: columns[{i}] ({entry.get('name', '?')})"
        if unknown := set(entry) - known:
            raise ColumnRegistryError(f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        try:
            column = Column(**entry)
        except TypeError as exc:
            raise ColumnRegistryError(f"{at}: {exc}") from None
        for field, allowed in (("shown", SHOWN), ("source", SOURCES), ("type", TYPES)):
            if getattr(column, field) not in allowed:
                raise ColumnRegistryError(f"{at}: {field} must be one of {', '.join(allowed)}")
        if (column.chooser is None) != (column.shown in ("always", "never")):
            raise ColumnRegistryError(
                f"{at}: chooser: a column shown 'default' or 'optional' names its chooser entry, "
                "one shown 'always' or 'never' none"
            )
        if column.chooser and not column.chooser_label:
            raise ColumnRegistryError(f"{at}: chooser_label missing")
        if column.name in names:
            raise ColumnRegistryError(f"{at}: name listed twice")
        names.add(column.name)
        columns.append(column)
    return tuple(columns)


def read_registry(path: Path) -> tuple[Column, ...]:
    """A registry file's columns, checked; it must list every column named by a constant here."""
    data = read_yaml(path) or {}
    columns = parse_columns(data.get("columns") or [], str(path))
    listed = {c.name for c in columns}
    if unlisted := [name for name in NAMED_COLUMNS if name not in listed]:
        # renamed or dropped in the YAML: the code naming it would read a column that is not there
        raise ColumnRegistryError(
            f"{path}: no column {', '.join(unlisted)} (named in leaderboard/columns.py)"
        )
    return columns


@lru_cache(maxsize=1)
def registry() -> tuple[Column, ...]:
    return read_registry(REGISTRY)


def column(name: str) -> Column:
    for entry in registry():
        if entry.name == name:
            return entry
    raise KeyError(name)


def fixed_labels() -> dict[str, str]:
    """Header label of every named (non-placeholder) column."""
    return {c.name: c.label for c in registry() if not c.placeholder}


def chooser_entries() -> dict[str, str]:
    """The column chooser: entry -> label, in display order (one entry may show several columns)."""
    return {c.chooser: c.chooser_label or c.chooser for c in registry() if c.chooser}


def default_chooser() -> list[str]:
    """The chooser entries on by default."""
    return list(dict.fromkeys(c.chooser for c in registry() if c.chooser and c.shown == "default"))


def stored_columns() -> list[str]:
    """The named columns the results dataset's table carries (besides its long-table keys)."""
    return [c.name for c in registry() if c.stored and not c.placeholder]


def board_download_columns(metrics: list[str], tiers: list[str]) -> list[str]:
    """Every column of the board and its downloads, in order, with the score columns filled in."""
    out: list[str] = []
    for entry in registry():
        if entry.name == METRIC_COLUMNS:
            out += metrics
        elif entry.name == TIER_COLUMNS:
            out += tiers
        else:
            out.append(entry.name)
    return out
