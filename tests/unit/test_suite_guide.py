"""The suite guide (evaluator/suites/README.md) is safe to follow literally: its example suite,
built from the guide's own code blocks exactly as written, passes `suites check` and the suite
contract; the same suite with a data line that lacks its id is named by `suites check` with the
file, line and field."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/unit (the contract's checks)

from test_suite_contract import (  # noqa: E402
    check_bad_line_refused_with_line_and_field,
    check_inputs_carry_no_gold,
    check_perfect_and_constant_files,
)

from evaluator import suite as suite_module  # noqa: E402
from evaluator.registry import check_suites, discover_suite  # noqa: E402

GUIDE = Path(__file__).resolve().parents[2] / "evaluator" / "suites" / "README.md"
BLOCK = re.compile(r"```(yaml|jsonl)\n(.*?)```", re.DOTALL)


def guide_files() -> dict[str, str]:
    """The guide's example files: the yaml blocks headed `# manifest.yaml` / `# prompts.yaml`, and
    the jsonl block (the data file the manifest's `items.file` names)."""
    found: dict[str, str] = {}
    for kind, text in BLOCK.findall(GUIDE.read_text(encoding="utf-8")):
        first = text.splitlines()[0].strip()
        if kind == "yaml" and first in ("# manifest.yaml", "# prompts.yaml"):
            found.setdefault(first[2:], text)
        elif kind == "jsonl":
            found.setdefault("data/test.jsonl", text)
    assert set(found) == {"manifest.yaml", "prompts.yaml", "data/test.jsonl"}, set(found)
    return found


def write_guide_suite(root: Path, data: str | None = None) -> Path:
    files = guide_files()
    if data is not None:
        files["data/test.jsonl"] = data
    folder = root / "mysuite"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "manifest.yaml"


@pytest.fixture
def guide_suite(tmp_path):
    manifest = write_guide_suite(tmp_path / "suites")
    suite = discover_suite(manifest, package="guide_mysuite")
    yield suite
    for task in suite.tasks.values():
        suite_module._SPLIT_CACHE.pop(task.key, None)


def test_the_guides_example_passes_suites_check_and_the_contract(guide_suite, tmp_path):
    assert check_suites(tmp_path / "suites") == []
    for task in guide_suite.tasks.values():
        assert len(task.load_split().items) >= 2
        check_inputs_carry_no_gold(task)
        check_perfect_and_constant_files(task)
        check_bad_line_refused_with_line_and_field(task)


def test_a_data_line_without_its_id_is_named_by_suites_check(tmp_path):
    lines = guide_files()["data/test.jsonl"].splitlines()
    third = json.loads(lines[2])
    del third["id"]
    lines[2] = json.dumps(third)
    write_guide_suite(tmp_path / "suites", "\n".join(lines) + "\n")
    problems = check_suites(tmp_path / "suites")
    assert len(problems) == 1, problems
    assert "test.jsonl, line 3: missing field 'id'" in problems[0], problems
