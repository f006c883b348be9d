"""Chance and majority lines, by hand on a tiny split and on PrefEval's bundled split."""

from __future__ import annotations

import pytest
from unit_helpers import item, make_task

from evaluator import suite as suite_module
from evaluator.baselines import reference_lines
from evaluator.suite import TierGroup


@pytest.fixture
def skewed_task():
    groups = (TierGroup("form", "Form", ("x", "y"), {}),)
    golds = [
        ("q1", "A", "x"),
        ("q2", "C", "x"),
        ("q3", "C", "x"),
        ("q4", "B", "y"),
        ("q5", "C", "y"),
        ("q6", "A", "y"),
    ]
    task = make_task([item(i, g, form=f) for i, g, f in golds], groups)
    yield task
    suite_module._SPLIT_CACHE.pop(task.key, None)


def test_chance_is_the_mean_of_constant_answers_and_majority_the_best(skewed_task):
    chance, majority = reference_lines(skewed_task)
    assert chance["kind"] == "chance" and majority["kind"] == "majority"
    # constant A: 2/6, B: 1/6, C: 3/6, D: 0 -> mean 1/4; per tier x: (1/3 + 0 + 2/3 + 0)/4 = 1/4
    assert chance["metrics"]["total"]["accuracy"]["value"] == pytest.approx(0.25)
    assert chance["metrics"]["total"]["accuracy"]["ci95"] == [None, None]
    assert chance["metrics"]["tiers"]["form"]["x"]["accuracy"]["value"] == pytest.approx(0.25)
    assert majority["label"] == "C"
    assert majority["metrics"]["total"]["accuracy"]["value"] == pytest.approx(0.5)
    assert majority["metrics"]["tiers"]["form"]["x"]["accuracy"]["value"] == pytest.approx(2 / 3)
    assert majority["metrics"]["tiers"]["form"]["y"]["accuracy"]["value"] == pytest.approx(1 / 3)
    low, high = majority["metrics"]["total"]["accuracy"]["ci95"]
    assert low < 0.5 < high


def test_prefeval_always_c_beats_uniform_chance():
    from evaluator.registry import get_task

    task = get_task("prefeval", "mcq")
    chance, majority = reference_lines(task)
    assert chance["metrics"]["total"]["accuracy"]["value"] == pytest.approx(0.25)
    gold = [i.gold for i in task.load_split().items]
    assert majority["label"] == max("ABCD", key=gold.count) == "C"
    assert majority["metrics"]["total"]["accuracy"]["value"] == pytest.approx(
        gold.count("C") / len(gold)
    )
    assert majority["metrics"]["total"]["accuracy"]["value"] > 0.28


def test_reference_rows_are_published_once(tmp_path):
    from leaderboard.reference import publish_reference
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(tmp_path / "results")
    store.ensure()
    assert publish_reference(store) is not None
    rows = [
        r
        for r in store.records()
        if r["row_kind"] == "reference" and (r["suite"], r["task"]) == ("prefeval", "mcq")
    ]
    assert sorted(r["model_name"] for r in rows) == [
        "Chance (uniform over 4)",
        "Majority (always C)",
    ]
    assert publish_reference(store) is None  # nothing changed: no new version


def test_reference_rows_of_a_hidden_split_are_released_like_scores(skewed_task):
    from leaderboard.reference import _row

    assert skewed_task.suite.split_hidden
    majority = reference_lines(skewed_task)[1]
    row = _row(skewed_task, majority, "sha")
    assert row["metrics"]["tiers"] == {}  # tiers of 3 items: withheld, not a list of labels
    # and no total either: nothing on a hidden split is released from fewer than 50 items
    assert row["metrics"]["total"] == {} and row["metrics"]["release"]["min_items"] == 50


def _points(block: dict) -> dict:
    """A result's cells with only what score_values gives: value and item count."""
    return {m: {"value": s["value"], "n": s["n"]} for m, s in block.items()}


@pytest.mark.parametrize("answer", ["A", "C", "mixed"])
def test_score_values_are_score_answers_without_the_intervals(answer):
    """The lines' constant answers are scored without resampling (a fraction of the cost at
    start-up): the same values and counts, total and per tier, as the full scoring gives."""
    from evaluator.registry import get_task
    from evaluator.scoring import score_answers, score_values

    task = get_task("prefeval", "mcq")
    split = task.load_split()
    answers = {
        item.id: ("ABCD"[n % 4] if answer == "mixed" else answer)
        for n, item in enumerate(split.items)
    }
    full, points = score_answers(task, split, answers), score_values(task, split, answers)
    assert points["n_items"] == full["n_items"] and points["metric"] == full["metric"]
    assert points["total"] == _points(full["total"])
    assert points["tiers"] == {
        group: {tier: _points(cells) for tier, cells in by_tier.items()}
        for group, by_tier in full["tiers"].items()
    }
    assert points["total"]["accuracy"]["value"] > 0  # not an empty comparison


def test_reference_rows_are_kept_in_the_cache_under_the_split_and_the_code(tmp_path, skewed_task):
    """A start reads the rows an earlier one scored for the same split and code (the web app's
    start-up saves seconds of scoring), and scores them again once the split changes."""
    import dataclasses
    import json

    from leaderboard.reference import _task_rows

    cache = tmp_path / "cache"
    computed = _task_rows(skewed_task, cache)
    assert [r["model_name"] for r in computed] == ["Chance (uniform over 4)", "Majority (always C)"]
    (kept,) = (cache / "reference-rows").iterdir()
    assert json.loads(kept.read_text()) == computed
    assert _task_rows(skewed_task, None) == computed  # no cache: the same rows, scored

    # read from there, not scored again: an edit of the kept file shows
    edited = [{**row, "model_name": "edited"} for row in computed]
    kept.write_text(json.dumps(edited))
    assert [r["model_name"] for r in _task_rows(skewed_task, cache)] == ["edited", "edited"]

    # a torn file is scored again and replaced
    kept.write_text('[{"model_name": ')
    assert _task_rows(skewed_task, cache) == computed
    assert json.loads(kept.read_text()) == computed

    # another split (one gold changed) has another key: scored, and kept beside the first
    split = skewed_task.load_split()
    items = [dataclasses.replace(split.items[0], gold="B"), *split.items[1:]]
    suite_module._SPLIT_CACHE[skewed_task.key] = dataclasses.replace(split, items=items)
    changed = _task_rows(skewed_task, cache)
    assert changed != computed
    assert (
        changed[0]["provenance"]["split"]["sha256"] != computed[0]["provenance"]["split"]["sha256"]
    )
    assert len(list((cache / "reference-rows").iterdir())) == 2
