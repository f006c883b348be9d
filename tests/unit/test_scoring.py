"""Scoring: micro-averaged accuracy per tier and in total, with percentile-bootstrap 95% CIs."""
from __future__ import annotations

import json

import numpy as np
import pytest

from evaluator import suite as suite_module
from evaluator.predictions import PredictionsError
from evaluator.scoring import BOOTSTRAP_SAMPLES, accuracy_with_ci, score_answers, score_predictions_file
from evaluator.suite import TierGroup
from unit_helpers import item, make_task


def acc(block):
    return block["accuracy"]


def test_micro_accuracy_per_tier_and_total(tiny_task):
    # gold: q1 A, q2 B, q3 C (form x, 3 items), q4 D (form y, 1 item)
    answers = {"q1": "A", "q2": "B", "q3": "A", "q4": "A"}  # x: 2/3 correct, y: 0/1
    result = score_answers(tiny_task, tiny_task.load_split(), answers)
    assert result["metric"] == "accuracy" and result["n_items"] == 4
    total = acc(result["total"])
    assert total["value"] == pytest.approx(0.5) and total["n"] == 4  # micro 2/4, not macro (2/3+0)/2
    assert total["value"] != pytest.approx((2 / 3 + 0) / 2)
    form = result["tiers"]["form"]
    assert acc(form["x"])["value"] == pytest.approx(2 / 3) and acc(form["x"])["n"] == 3
    assert acc(form["y"])["value"] == 0.0 and acc(form["y"])["n"] == 1
    topic = result["tiers"]["topic"]
    assert acc(topic["t1"])["value"] == 1.0 and acc(topic["t1"])["n"] == 2  # q1, q2 right
    assert acc(topic["t2"])["value"] == 0.0 and acc(topic["t2"])["n"] == 2  # q3, q4 wrong
    # only aggregates come out: nothing keyed by item id
    assert "q1" not in json.dumps(result)


def test_ci_contains_value_and_lies_in_unit_interval(tiny_task):
    answers = {"q1": "A", "q2": "B", "q3": "A", "q4": "A"}
    result = score_answers(tiny_task, tiny_task.load_split(), answers)
    blocks = [result["total"]] + [v for tiers in result["tiers"].values() for v in tiers.values()]
    for block in blocks:
        stats = acc(block)
        low, high = stats["ci95"]
        assert 0.0 <= low <= stats["value"] <= high <= 1.0, stats


def test_all_correct_is_degenerate(tiny_task):
    answers = {"q1": "A", "q2": "B", "q3": "C", "q4": "D"}
    result = score_answers(tiny_task, tiny_task.load_split(), answers)
    assert acc(result["total"]) == {"value": 1.0, "ci95": [1.0, 1.0], "n": 4}
    none_right = score_answers(tiny_task, tiny_task.load_split(), {k: "B" if v != "B" else "A" for k, v in answers.items()})
    assert acc(none_right["total"]) == {"value": 0.0, "ci95": [0.0, 0.0], "n": 4}


def test_empty_tier_is_left_out():
    """A tier no item reaches (a partial model run) gets no column, not an empty one."""
    groups = (TierGroup("g", "G", ("full", "empty"), {}),)
    task = make_task([item("a", "A", g="full"), item("b", "B", g="full")], groups)
    try:
        result = score_answers(task, task.load_split(), {"a": "A", "b": "A"})
        assert "empty" not in result["tiers"]["g"]
        assert acc(result["tiers"]["g"]["full"])["value"] == 0.5
    finally:
        suite_module._SPLIT_CACHE.pop(task.key, None)


def test_scoring_is_deterministic(tiny_task):
    answers = {"q1": "A", "q2": "C", "q3": "C", "q4": "A"}
    split = tiny_task.load_split()
    assert score_answers(tiny_task, split, answers) == score_answers(tiny_task, split, answers)


def test_binomial_bootstrap_matches_resampling_bootstrap():
    n, k = 500, 350
    outcomes = np.zeros(n, dtype=bool)
    outcomes[:k] = True
    ours = accuracy_with_ci(k, n, np.random.default_rng(1))
    assert ours["value"] == 0.7 and ours["n"] == n

    rng = np.random.default_rng(2)
    resampled = outcomes[rng.integers(0, n, size=(BOOTSTRAP_SAMPLES, n))].mean(axis=1)
    low, high = np.quantile(resampled, [0.025, 0.975])
    brute_width = high - low
    width = ours["ci95"][1] - ours["ci95"][0]
    assert abs(width - brute_width) / brute_width < 0.2, (width, brute_width)
    # and both agree with the normal approximation 2 * 1.96 * sqrt(p(1-p)/n) ~= 0.080
    normal = 2 * 1.96 * np.sqrt(0.7 * 0.3 / n)
    assert abs(width - normal) / normal < 0.2
    assert ours["ci95"][0] < 0.7 < ours["ci95"][1]


def test_score_predictions_file_end_to_end(tiny_task, tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "answer": a}) for i, a in
                              [("q4", "D"), ("q3", "C"), ("q2", "A"), ("q1", "A")]) + "\n")
    result = score_predictions_file(tiny_task, path)
    assert acc(result["total"])["value"] == 0.75
    assert acc(result["tiers"]["form"]["y"])["value"] == 1.0
    split = tiny_task.load_split()
    assert result["split"] == {"name": "test", "sha256": split.sha256, "n_items": 4}
    assert result["suite_version"] == "0.0.1"
    assert result["scoring_seconds"] >= 0

    path.write_text('{"id": "q1", "answer": "A"}\n')
    with pytest.raises(PredictionsError) as info:
        score_predictions_file(tiny_task, path, filename="mine.jsonl")
    assert str(info.value).startswith("mine.jsonl rejected: file, field 'id': 3 of 4")
