"""Scoring: micro-averaged accuracy per tier and in total, with percentile-bootstrap 95% CIs."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from unit_helpers import item, make_task

from evaluator import suite as suite_module
from evaluator.metrics import metric_stats
from evaluator.predictions import PredictionsError
from evaluator.scoring import score_answers, score_predictions_file
from evaluator.statistics import BOOTSTRAP_SAMPLES
from evaluator.suite import TierGroup


def acc(block):
    return block["accuracy"]


def test_micro_accuracy_per_tier_and_total(tiny_task):
    # gold: q1 A, q2 B, q3 C (form x, 3 items), q4 D (form y, 1 item)
    answers = {"q1": "A", "q2": "B", "q3": "A", "q4": "A"}  # x: 2/3 correct, y: 0/1
    result = score_answers(tiny_task, tiny_task.load_split(), answers)
    assert result["metric"] == "accuracy" and result["n_items"] == 4
    total = acc(result["total"])
    assert (
        total["value"] == pytest.approx(0.5) and total["n"] == 4
    )  # micro 2/4, not macro (2/3+0)/2
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


def test_all_or_none_correct_keeps_a_wilson_width(tiny_task):
    """4 of 4 right is not certainty: the Wilson interval's lower end is 4 / (4 + z^2) = 0.510."""
    answers = {"q1": "A", "q2": "B", "q3": "C", "q4": "D"}
    result = score_answers(tiny_task, tiny_task.load_split(), answers)
    z2 = 1.959963984540054**2
    assert acc(result["total"])["value"] == 1.0 and acc(result["total"])["n"] == 4
    assert acc(result["total"])["ci95"] == pytest.approx([4 / (4 + z2), 1.0])
    none_right = score_answers(
        tiny_task, tiny_task.load_split(), {k: "B" if v != "B" else "A" for k, v in answers.items()}
    )
    assert acc(none_right["total"])["value"] == 0.0
    assert acc(none_right["total"])["ci95"] == pytest.approx([0.0, z2 / (4 + z2)])


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
    ours = metric_stats("accuracy", {"correct": outcomes}, np.arange(n), np.random.default_rng(1))
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
    path.write_text(
        "\n".join(
            json.dumps({"id": i, "answer": a})
            for i, a in [("q4", "D"), ("q3", "C"), ("q2", "A"), ("q1", "A")]
        )
        + "\n"
    )
    started = time.perf_counter()
    result = score_predictions_file(tiny_task, path)
    elapsed = time.perf_counter() - started
    assert acc(result["total"])["value"] == 0.75
    assert acc(result["tiers"]["form"]["y"])["value"] == 1.0
    split = tiny_task.load_split()
    assert result["split"] == {
        "name": "test",
        "sha256": split.sha256,
        "n_items": 4,
        "full_n_items": 4,
    }
    assert result["suite_version"] == "0.0.1"
    assert 0 < result["scoring_seconds"] <= elapsed  # the scorer's own clock, inside the call

    path.write_text('{"id": "q1", "answer": "A"}\n')
    with pytest.raises(PredictionsError) as info:
        score_predictions_file(tiny_task, path, filename="mine.jsonl")
    assert str(info.value).startswith("mine.jsonl rejected: file, field 'id': 3 of 4")


def test_three_level_scores_bootstrap_matches_resampling():
    """Both-order pairwise scores (0, 0.5, 1): the multinomial draw is the resampling bootstrap."""
    values = np.array([0.0] * 100 + [0.5] * 150 + [1.0] * 250)
    ours = metric_stats(
        "accuracy", {"correct": values}, np.arange(len(values)), np.random.default_rng(3)
    )
    assert ours["value"] == (75 + 250) / 500
    rng = np.random.default_rng(4)
    resampled = values[rng.integers(0, len(values), size=(BOOTSTRAP_SAMPLES, len(values)))].mean(
        axis=1
    )
    low, high = np.quantile(resampled, [0.025, 0.975])
    width = ours["ci95"][1] - ours["ci95"][0]
    assert abs(width - (high - low)) / (high - low) < 0.2


def test_precision_recall_f1_and_spearman_on_hand_cases():
    from evaluator.metrics import f1, precision, recall, spearman

    pred = np.array([1, 1, 0, 0, 1], dtype=bool)  # tp=2 (items 0, 1), fp=1 (item 4), fn=1 (item 2)
    gold = np.array([1, 1, 1, 0, 0], dtype=bool)
    arrays, idx = {"pred_pos": pred, "gold_pos": gold}, np.arange(5)
    assert precision(arrays, idx) == 2 / 3
    assert recall(arrays, idx) == 2 / 3
    assert f1(arrays, idx) == 2 / 3
    ratings = {"pred": np.array([1.0, 2, 3, 4, 5]), "gold": np.array([2.0, 1, 4, 3, 5])}
    # rank differences d = (1, 1, 1, 1, 0): rho = 1 - 6*4/(5*24) = 0.8
    assert abs(spearman(ratings, idx) - 0.8) < 1e-12
    tied = {"pred": np.array([1.0, 1, 2, 2]), "gold": np.array([1.0, 2, 3, 4])}
    # average ranks (1.5, 1.5, 3.5, 3.5) vs (1, 2, 3, 4): Pearson of ranks = 0.894427...
    assert abs(spearman(tied, np.arange(4)) - 0.8944271909999159) < 1e-12
    # a constant rating has no rank correlation: NaN, reported as no value (None), never 0
    assert np.isnan(spearman({"pred": np.ones(4), "gold": np.arange(4.0)}, np.arange(4)))
    constant = metric_stats(
        "spearman",
        {"pred": np.ones(4), "gold": np.arange(4.0)},
        np.arange(4),
        np.random.default_rng(0),
    )
    assert constant["value"] is None and constant["n"] == 4
