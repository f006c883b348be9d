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
YAML = re.compile(r"```yaml\n(.*?)```", re.DOTALL)
DATA = re.compile(r"`(data/[\w.]+)`[^\n]*\n\n```jsonl\n(.*?)```", re.DOTALL)


def guide_files() -> dict[str, str]:
    """The guide's example files: the yaml blocks headed `# manifest.yaml` / `# prompts.yaml`, and
    each jsonl block under the name of its data file (`data/test.jsonl`, ...)."""
    guide = GUIDE.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for text in YAML.findall(guide):
        first = text.splitlines()[0].strip()
        if first in ("# manifest.yaml", "# prompts.yaml"):
            found.setdefault(first[2:], text)
    for name, text in DATA.findall(guide):
        found.setdefault(name, text)
    assert set(found) == {"manifest.yaml", "prompts.yaml", "data/test.jsonl", "data/pairs.jsonl"}
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
    assert set(guide_suite.tasks) == {"mcq", "pair"}
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


def test_the_guides_pairwise_task_is_asked_in_both_orders_and_scored_per_order(guide_suite):
    from evaluator.protocols import Decision
    from evaluator.scoring import score_answers

    task = guide_suite.tasks["pair"]
    split = task.load_split()

    class Tools:
        protocol = "choice_logprobs"

    first = split.items[0]  # p1: A is better
    requests = task.hooks.build_requests(task, [first.public], "zero_shot", Tools())
    assert [r.id for r in requests] == ["p1::ab", "p1::ba"]
    ab, ba = (r.messages[-1]["content"] for r in requests)
    assert ab.index(first.public["answer_a"]) < ab.index(first.public["answer_b"])
    assert ba.index(first.public["answer_b"]) < ba.index(first.public["answer_a"])
    # in the swapped order "B" is the first answer: stored as "A", the item's own order
    assert task.hooks.decision_answer(Decision("p1::ba", "B")) == "A"
    assert task.hooks.decision_answer(Decision("p1::ab", "B")) == "B"

    golds = {item.id: item.gold for item in split.items}
    flip = {"A": "B", "B": "A"}
    answers = {
        "p1": {"ab": golds["p1"], "ba": golds["p1"]},  # right twice
        "p2": {"ab": golds["p2"], "ba": flip[golds["p2"]]},  # position-biased: half right
        "p3": {"ab": flip[golds["p3"]], "ba": flip[golds["p3"]]},  # wrong twice
        "p4": {"ab": golds["p4"], "ba": golds["p4"]},
    }
    total = score_answers(task, split, answers)["total"]
    assert total["accuracy"]["value"] == (1 + 0.5 + 0 + 1) / 4
    assert total["position_consistency"]["value"] == 3 / 4
