"""Row kinds through their constants (leaderboard/result_record.py: KIND_COMPUTED, KIND_PARTIAL,
KIND_REPORTED, KIND_REFERENCE), never as strings compared with a row's kind.

A kind written as a string ("reference") where the code tests a row's `row_kind` reads as a column
name, a setting or a word of the UI, and a misspelt one ("refrence") quietly matches nothing; the
constant fails at import. The lint parses every module of the repository (tests aside) with ast and
fails on a kind's name as a string: compared with an expression that reads `row_kind` (`==`, `!=`,
`in`), passed to `.isin` on one, or written as the value of a `"row_kind"` key. The tables keyed
by kind (display labels, section order) take the constants too, by hand: a dict's keys are no
comparison this lint can tell from any other.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from unit.test_column_literals import ROOT, modules

from leaderboard import result_record
from leaderboard.result_record import ROW_KINDS, ResultRecord

KINDS = set(ROW_KINDS)


def reads_row_kind(node: ast.AST) -> bool:
    """`x["row_kind"]`, `x.get("row_kind")`, `x.row_kind`, or a name `row_kind`, anywhere in node."""
    for part in ast.walk(node):
        if isinstance(part, ast.Subscript) and isinstance(part.slice, ast.Constant):
            if part.slice.value == "row_kind":
                return True
        if isinstance(part, ast.Attribute) and part.attr == "row_kind":
            return True
        if isinstance(part, ast.Name) and part.id == "row_kind":
            return True
        if (
            isinstance(part, ast.Call)
            and isinstance(part.func, ast.Attribute)
            and part.func.attr == "get"
            and part.args
            and isinstance(part.args[0], ast.Constant)
            and part.args[0].value == "row_kind"
        ):
            return True
    return False


def kind_strings(node: ast.AST) -> list[str]:
    """The row kinds written as string constants anywhere in node (a tuple, `a if c else b` ...)."""
    return [
        item.value
        for item in ast.walk(node)
        if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value in KINDS
    ]


def kind_literals(source: str) -> list[tuple[int, str]]:
    """(line, kind) of each row kind written as a string where a row's kind is tested or set."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(reads_row_kind(side) for side in sides):
                found += [(node.lineno, k) for side in sides for k in kind_strings(side)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "isin"
            and reads_row_kind(node.func.value)
        ):
            found += [(node.lineno, k) for arg in node.args for k in kind_strings(arg)]
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "row_kind" and value is not None:
                    found += [(node.lineno, k) for k in kind_strings(value)]
        elif isinstance(node, ast.Assign) and any(reads_row_kind(t) for t in node.targets):
            found += [(node.lineno, k) for k in kind_strings(node.value)]
        elif (  # a default: record.get("row_kind", "computed")
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "row_kind"
        ):
            found += [(node.lineno, k) for k in kind_strings(node.args[1])]
    return sorted(found)


def test_the_constants_are_the_records_kinds():
    assert ROW_KINDS == (
        result_record.KIND_COMPUTED,
        result_record.KIND_PARTIAL,
        result_record.KIND_REPORTED,
        result_record.KIND_REFERENCE,
    )
    assert set(get_args(ResultRecord.model_fields["row_kind"].annotation)) == KINDS


def test_no_module_tests_a_row_kind_by_its_string():
    found = []
    for path in modules():
        if path == Path("leaderboard/result_record.py"):
            continue  # where the kinds are named, once
        for line, kind in kind_literals((ROOT / path).read_text(encoding="utf-8")):
            found.append(f"{path}:{line}: {kind!r}")
    assert not found, "row kinds written as strings (use leaderboard.result_record.KIND_*):\n" + (
        "\n".join(found)
    )


def test_the_lint_sees_a_kind_wherever_a_row_kind_is_tested():
    source = (
        'board["row_kind"] == "computed"\n'
        'record.get("row_kind") in ("reported", "reference")\n'
        'board["row_kind"].isin(["partial"])\n'
        '{"row_kind": "reported", "source": "computed"}\n'
        'row.row_kind != "partial"\n'
        'column == "reference"\n'  # a column's name: no row kind read here
        'source, row_kind = "file", "partial" if cut else "computed"\n'
        'record.get("row_kind", "computed")\n'
    )
    assert kind_literals(source) == [
        (1, "computed"),
        (2, "reference"),
        (2, "reported"),
        (3, "partial"),
        (4, "reported"),
        (5, "partial"),
        (7, "computed"),
        (7, "partial"),
        (8, "computed"),
    ]
