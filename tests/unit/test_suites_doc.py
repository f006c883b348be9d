"""docs/suites.md's suites table says what the manifests declare: each suite's settings, and the
tasks that take them (it once said PrefEval's self_critic was open_ended only, while every PrefEval
task, mcq included, offers it)."""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.registry import all_suites
from space.choices import task_setting_choices

DOC = Path(__file__).resolve().parents[2] / "docs" / "suites.md"


def table_rows() -> dict[str, list[str]]:
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and (name := re.fullmatch(r"`(\w+)`", cells[0])):
            rows[name.group(1)] = cells
    return rows


def test_the_table_lists_each_suites_tasks_and_settings():
    rows = table_rows()
    assert set(rows) == set(all_suites())
    for name, suite in all_suites().items():
        _, tasks, _, settings, _ = rows[name]
        assert re.findall(r"`(\w+)`", tasks) == list(suite.tasks), name
        listed = [re.sub(r"\s*\(.*\)$", "", s).strip() for s in settings.split(",")]
        assert listed == list(suite.settings), name


def test_what_the_doc_says_of_self_critic_holds():
    text = " ".join(DOC.read_text().split())
    assert "self_critic` (every PrefEval task, mcq ones included)" in text
    assert "open_ended only" not in text
    for task in all_suites()["prefeval"].tasks:
        assert "self_critic" in task_setting_choices("prefeval", task), task
