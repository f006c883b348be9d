"""The suite contract, run over every suite the registry finds: a new suite gets these checks for free.

For each suite: its fixture split installs (tests/fixtures/splits/<suite>, or its bundled data),
its manifest round-trips. For each task: the public inputs carry no gold field (and no public
field gives the gold away), a perfect predictions file scores 100 % (accuracy; Spearman 1 for ratings), a
constant file scores what the gold distribution says (label tasks: the share of items whose gold is
that label), and a bad line is refused naming its line and field. A task whose
answers are judged (no answer is perfect by construction) is held to the refusal check only.
A task whose items repeat something (an id field or a substantial input shared by several items:
the same preference, prompt, persona or history) must declare the unit its intervals resample
(`bootstrap_unit`), and every item must name it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from evaluator import suite as suite_module
from evaluator.manifest import dump_manifest, parse_manifest
from evaluator.predictions import PredictionsError, read_predictions
from evaluator.registry import all_suites
from evaluator.scoring import item_units, score_answers
from evaluator.split_install import install
from evaluator.splits import installed_info

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "splits"
TASKS = [(suite.name, task) for suite in all_suites().values() for task in suite.tasks]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Every suite's split: fixture splits installed into a private splits folder, bundled ones as they are."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path_factory.mktemp("splits")))
        suite_module.clear_split_cache()
        for suite in all_suites().values():
            if suite.split_spec.get("source") == "installed":
                fixture = FIXTURES / suite.name
                assert fixture.is_dir(), (
                    f"suite {suite.name} installs its split: add a small fixture split at {fixture}"
                )
                info = install(suite, str(fixture))
                assert (
                    info["fixture"] is True
                    and installed_info(suite)["tasks"].keys() == suite.tasks.keys()
                )
        yield
        suite_module.clear_split_cache()


def lines(records) -> list[bytes]:
    return [json.dumps(r).encode() for r in records]


def answers_from(task, split, by_id):
    return read_predictions(
        lines({"id": i.id, task.answer_field: by_id[i.id]} for i in split.items), task, split
    )


@pytest.mark.parametrize("suite_name", sorted(all_suites()))
def test_manifest_round_trips(suite_name):
    suite = all_suites()[suite_name]
    again = parse_manifest(dump_manifest(suite.manifest), "round trip")
    assert again == suite.manifest


@pytest.mark.parametrize("suite_name,task_name", TASKS)
def test_inputs_carry_no_gold(installed, suite_name, task_name):
    check_inputs_carry_no_gold(all_suites()[suite_name].tasks[task_name])


@pytest.mark.parametrize("suite_name,task_name", TASKS)
def test_perfect_and_constant_files(installed, suite_name, task_name):
    check_perfect_and_constant_files(all_suites()[suite_name].tasks[task_name])


@pytest.mark.parametrize("suite_name,task_name", TASKS)
def test_bad_line_refused_with_line_and_field(installed, suite_name, task_name):
    check_bad_line_refused_with_line_and_field(all_suites()[suite_name].tasks[task_name])


# -- the contract's checks, on any task (a suite built elsewhere, e.g. the guide's: test_suite_guide.py)


def check_inputs_carry_no_gold(task) -> None:
    split = task.load_split()
    assert split.items, f"{task.key}: the split has no items"
    for item in split.items:
        assert item.public.get("id") == item.id
        assert task.answer_field not in item.public and "gold" not in item.public, (
            item.public.keys()
        )
    golds = [task.hooks.gold_answer(task, item) for item in split.items]
    if any(g is None for g in golds) or len(set(map(str, golds))) < 2:
        return  # no gold answers to compare with (judged texts), or a one-answer split
    for field in split.items[0].public:
        values = [item.public.get(field) for item in split.items]
        assert [str(v) for v in values] != [str(g) for g in golds], (
            f"{task.key}: public field {field!r} is the gold"
        )


def check_perfect_and_constant_files(task) -> None:
    split = task.load_split()
    golds = {item.id: task.hooks.gold_answer(task, item) for item in split.items}
    if any(g is None for g in golds.values()):
        assert task.judge, (
            f"{task.key}: gold_answer gives no answer for some items, and the task is not judge-scored"
        )
        return
    perfect = score_answers(task, split, answers_from(task, split, golds))["total"]
    if "accuracy" in perfect:
        assert perfect["accuracy"]["value"] == 1.0
    if "spearman" in perfect:
        assert perfect["spearman"]["value"] == pytest.approx(1.0)
    assert "accuracy" in perfect or "spearman" in perfect, (
        f"{task.key}: no metric says what perfect is"
    )
    gold_values = np.array(list(golds.values()), dtype=object)
    if task.answer_kind == "label":
        for label in task.answer_labels:
            constant = score_answers(
                task, split, answers_from(task, split, {i: label for i in golds})
            )["total"]
            assert constant["accuracy"]["value"] == pytest.approx(
                float(np.mean(gold_values == label))
            ), label
    else:
        # A rating task may orient the submitted scale (recentering: A/B -> "prefers the personalized
        # response"), so a constant answer has no suite-free expectation beyond this: the gold side
        # of the metrics is what the gold says, whatever the answers, and perfect answers match it.
        low = task.answer_range[0]
        constant = score_answers(task, split, answers_from(task, split, {i: low for i in golds}))[
            "total"
        ]
        gold_side = [m for m in ("human_mean_rating",) if m in perfect]
        for metric in gold_side:
            assert constant[metric]["value"] == pytest.approx(perfect[metric]["value"])
        if "mean_rating" in perfect and gold_side:
            assert perfect["mean_rating"]["value"] == pytest.approx(
                perfect["human_mean_rating"]["value"]
            )


def check_bad_line_refused_with_line_and_field(task) -> None:
    split = task.load_split()
    first, second = split.items[0], split.items[1]
    good = task.hooks.gold_answer(task, first)
    good = (
        good
        if good is not None
        else ("some text" if not task.answer_labels else task.answer_labels[0])
    )
    with pytest.raises(PredictionsError) as caught:
        read_predictions(
            lines(
                [
                    {"id": first.id, task.answer_field: good},
                    {"id": second.id, task.answer_field: {"not": "an answer"}},
                ]
            ),
            task,
            split,
        )
    located = [(p.line, p.field) for p in caught.value.problems]
    assert (2, task.answer_field) in located, located
    assert (1, task.answer_field) not in located


# A public value shared by several items means they are not independent draws: an identifier
# (a field named *_id) or a substantial input (text, list or mapping of at least this many
# characters as JSON). Short values (a tier such as "wildchat" or "simple") repeat by design.
SUBSTANTIAL_CHARS = 20


def repeated_input(split) -> str | None:
    """The first public field whose value several items share, with an example; None if none."""
    fields = {field for item in split.items for field in item.public if field != "id"}
    for field in sorted(fields):
        seen: dict[str, str] = {}
        for item in split.items:
            if field not in item.public:
                continue
            value = json.dumps(item.public[field], sort_keys=True, ensure_ascii=False)
            if not field.endswith("_id") and len(value) < SUBSTANTIAL_CHARS:
                continue
            if value in seen:
                return f"public field {field!r} is shared by items {seen[value]!r} and {item.id!r}"
            seen[value] = item.id
    return None


def unit_problem(task, split) -> str | None:
    """Why the task's intervals would treat dependent items as independent (None: they do not)."""
    shared = repeated_input(split)
    if not task.bootstrap_unit:
        if shared:
            return (
                f"{task.key}: {shared}, but the task declares no bootstrap_unit: its intervals "
                "would resample items as if they were independent"
            )
        return None
    try:
        units = item_units(task, split)
    except ValueError as exc:
        return str(exc)
    if units.n_units > len(split.items) or units.n_units < 1:
        return f"{task.key}: {units.n_units} units for {len(split.items)} items"
    return None


@pytest.mark.parametrize("suite_name,task_name", TASKS)
def test_items_that_repeat_a_unit_declare_it(installed, suite_name, task_name):
    task = all_suites()[suite_name].tasks[task_name]
    assert unit_problem(task, task.load_split()) is None


def test_an_undeclared_unit_fails_the_contract(installed):
    """The check bites: RealPref's items without their declaration, and with a unit missing."""
    task = all_suites()["realpref"].tasks["mcq"]
    split = task.load_split()
    undeclared = dataclasses.replace(task, bootstrap_unit={})
    problem = unit_problem(undeclared, split)
    assert problem and "declares no bootstrap_unit" in problem, problem
    assert "shared by items" in problem
    one_missing = suite_module.Split(
        split.name, [dataclasses.replace(split.items[0], unit=None), *split.items[1:]]
    )
    assert "has none" in unit_problem(task, one_missing)
    # items naming their units at different depths (a plain preference beside (user, preference))
    mixed = suite_module.Split(
        split.name, [dataclasses.replace(split.items[0], unit="p"), *split.items[1:]]
    )
    assert "different depths" in unit_problem(task, mixed)
    # and a split whose items share nothing needs no declaration
    distinct = suite_module.Split(split.name, split.items[:1])
    assert unit_problem(undeclared, distinct) is None


def test_realpref_resamples_users_with_their_preferences(installed):
    task = all_suites()["realpref"].tasks["mcq"]
    split = task.load_split()
    units = item_units(task, split)
    users = {item.public["user_id"] for item in split.items}
    preferences = {item.public["preference_id"] for item in split.items}
    assert units.name == "user" and units.n_units == len(users) == 2
    assert len(preferences) == 5 and len(split.items) == 5 * 4 * 6
    # every item of one user is in one unit, and no unit spans two users
    by_unit: dict[int, set[str]] = {}
    for item, code in zip(split.items, units.codes):
        by_unit.setdefault(int(code), set()).add(item.public["user_id"])
    assert all(len(u) == 1 for u in by_unit.values())
