"""Column names through the registry (leaderboard/columns.yaml, read by leaderboard/columns.py).

A column the board computes is named in code by its constant in leaderboard/columns.py, never by
the name written as a string: renamed in the YAML, the string would quietly read a column that is
no longer there, while the constant fails at once (`registry()` checks each against the YAML).
The lint parses every module of the repository (tests aside) with ast.

Not checked:
- the names of the result record's fields (leaderboard/result_record.py; `model_name`, `row_kind`,
  `total`, `protocol` ...): the record's schema spells them, and the same words are the keys of
  records, API bodies and the dataset's long table, where they are no board column (the values
  of `row_kind` go through their constants: tests/unit/test_row_kind_literals.py);
- the tests: they state the published downloads' columns as a reader spells them;
- the NOT_COLUMN_ONLY names below, ordinary words with other meanings in the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from leaderboard import columns
from leaderboard.columns import ColumnRegistryError, read_registry, registry
from leaderboard.result_record import (
    JudgeProvenance,
    Metrics,
    ModelProvenance,
    Provenance,
    ResultRecord,
    SplitProvenance,
    Stats,
)

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_MODULES = {Path("leaderboard/columns.py")}  # where the names are defined, once
NOT_SCANNED = {"tests", ".venv", "build", "dist"}
NOT_COLUMN_ONLY = {
    # also plotly's font and marker size, and the name of the board's public `?size=` URL filter
    "size": "leaderboard.columns.SIZE where the column is meant",
}


def record_field_names() -> set[str]:
    """Every key of the result record, nested ones included."""
    names = set(ResultRecord.model_fields) | set(Metrics.model_fields) | set(Stats.model_fields)
    for typed in (Provenance, ModelProvenance, SplitProvenance, JudgeProvenance):
        names |= set(typed.__annotations__)
    return names


def checked_names() -> set[str]:
    """The registry's computed columns: those no record field shares a name with."""
    named = {c.name for c in registry() if not c.placeholder}
    return named - record_field_names() - set(NOT_COLUMN_ONLY)


def literals_in(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each string constant in `source` equal to one of `names`."""
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    )


def modules() -> list[Path]:
    """Every Python file of the repository but the tests' (and the virtual environment's)."""
    found = []
    for top in ROOT.iterdir():
        if top.name in NOT_SCANNED or top.name.startswith("."):
            continue
        paths = [top] if top.suffix == ".py" else top.rglob("*.py") if top.is_dir() else []
        found += [path.relative_to(ROOT) for path in paths]
    return sorted(found)


def test_every_computed_column_has_a_constant():
    names = checked_names()
    assert {"rank", "rank_among", "total_ci_low", "total_ci_high", "above_reference"} <= names
    missing = names - set(columns.NAMED_COLUMNS)
    assert not missing, f"add a constant to leaderboard/columns.py for {sorted(missing)}"


def test_no_module_writes_a_computed_columns_name():
    names = checked_names()
    constant = {value: key for key, value in vars(columns).items() if key.isupper()}
    found = []
    scanned = modules()
    assert Path("leaderboard/board.py") in scanned and Path("space/board_view.py") in scanned
    for path in scanned:
        if path in REGISTRY_MODULES:
            continue
        for line, name in literals_in((ROOT / path).read_text(encoding="utf-8"), names):
            found.append(f"{path}:{line}: {name!r}: use leaderboard.columns.{constant[name]}")
    assert not found, "column names written as strings:\n" + "\n".join(found)


def test_the_lint_sees_a_name_wherever_a_string_can_stand():
    source = (
        'board["rank"]\nrow.get("rank_among")\ncols = ["total_ci_low"]\n'
        "f\"{row['above_reference']}\"\nlabel = 'rank group'\n"
    )
    assert literals_in(source, checked_names()) == [
        (1, "rank"),
        (2, "rank_among"),
        (3, "total_ci_low"),
        (4, "above_reference"),
    ]


def test_a_registry_without_a_named_column_is_refused(tmp_path):
    entries = [
        f"  - {{name: {c.name!r}, label: {c.label!r}, type: {c.type}, shown: {c.shown}, "
        f"source: {c.source}"
        + (f", chooser: {c.chooser!r}, chooser_label: {c.chooser_label!r}" if c.chooser else "")
        + "}"
        for c in registry()
        if c.name != columns.RANK_AMONG
    ]
    path = tmp_path / "columns.yaml"
    path.write_text("columns:\n" + "\n".join(entries) + "\n", encoding="utf-8")
    with pytest.raises(ColumnRegistryError, match="no column rank_among"):
        read_registry(path)
    path.write_text(
        path.read_text(encoding="utf-8")
        + "  - {name: rank_among, label: Ranked among, type: str, shown: never, source: board}\n",
        encoding="utf-8",
    )
    assert len(read_registry(path)) == len(registry())
