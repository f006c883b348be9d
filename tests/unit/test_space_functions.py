"""No function in space/ is longer than 80 lines: a tab's logic lives in plain handlers (tested
in process, tests/unit/test_tab_handlers.py) and its builder only lays out and wires."""

from __future__ import annotations

import ast
from pathlib import Path

SPACE = Path(__file__).resolve().parents[2] / "space"
MAX_LINES = 80


def long_functions(folder: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(
                        f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} ({lines})"
                    )
    return found


def test_the_check_finds_a_long_function(tmp_path):
    (tmp_path / "long.py").write_text("def f():\n" + "    x = 1\n" * MAX_LINES)
    (tmp_path / "short.py").write_text("def g():\n" + "    x = 1\n" * (MAX_LINES - 1))
    assert long_functions(tmp_path, MAX_LINES) == [f"{tmp_path.name}/long.py:1 f ({MAX_LINES + 1})"]


def test_no_function_in_space_is_over_80_lines():
    assert SPACE.is_dir() and any(SPACE.rglob("*.py"))
    assert long_functions(SPACE, MAX_LINES) == []
