"""The Ladder on hidden splits (evaluator/release.py) and its memory (SubmissionStore.decide_release)."""

from __future__ import annotations

import json

import pytest

from evaluator import release
from submissions.records import SubmissionStore


def stats(value, n, low=None, high=None):
    return {
        "value": value,
        "ci95": [
            low if low is not None else value - 0.01,
            high if high is not None else value + 0.01,
        ],
        "n": n,
        "interval": "wilson",
        "n_units": n,
    }


def test_noise_step_is_span_over_root_n_rounded_up():
    assert release.noise_step(200, "accuracy") == 0.1  # 0.0707 -> 0.1
    assert release.noise_step(3000, "accuracy") == 0.02  # 0.0183 -> 0.02
    assert release.noise_step(10_000, "accuracy") == 0.01
    assert release.noise_step(100, "spearman") == 0.2  # span 2
    assert release.noise_step(400, "alignment") == 0.2  # 1-5 rating, span 4
    for n in (1, 7, 50, 999, 123_456):
        step = release.noise_step(n, "accuracy")
        assert step >= 1 / n**0.5 - 1e-12 and step < 2.5 / n**0.5


def test_live_release_is_one_rounded_number_with_a_band_of_it():
    """Before a named release a hidden split's result is the primary value on the public part,
    rounded, and nothing else: no tier cell, no secondary metric, no rate, no exact interval (each
    of those taught labels or the division before)."""
    metrics = {
        "metric": "accuracy",
        "n_items": 200,
        "split": {"name": "test"},
        "total": {
            "accuracy": stats(0.6150, 200),
            "f1": stats(0.4333, 200),
            "precision": stats(1.0, 1),
            "yes_rate": stats(0.005, 200),
            "human_yes_rate": stats(0.4987, 200),
        },
        "tiers": {
            "agreement": {
                "unanimous": {"accuracy": stats(0.71, 150)},
                "split": {"accuracy": stats(0.31, 50)},
            }
        },
        "private": {"metric": "accuracy", "total": {"accuracy": stats(0.9, 100)}, "n_items": 100},
    }
    out = release.released_metrics(metrics)
    assert out["total"] == {
        "accuracy": {"value": 0.6, "ci95": [0.4, 0.8], "n": 200, "step": 0.1}
    }  # the band: the released value +- 2 steps, nothing the value does not say
    assert out["tiers"] == {} and "private" not in out and out["split"] == {"name": "test"}
    assert out["release"]["withheld_metrics"] == ["f1", "human_yes_rate", "precision", "yes_rate"]
    assert out["release"]["withheld_tiers"] == ["agreement"] and out["release"]["part"] == "public"
    # a one-item change (1/200) never shows unless it crosses a rounding edge
    moved = json.loads(json.dumps(metrics))
    moved["total"]["accuracy"]["value"] += 1 / 200
    assert release.released_metrics(moved)["total"]["accuracy"]["value"] == 0.6
    # a metric no rule names (added to a suite later) is withheld as well, by construction
    metrics["total"]["new_metric"] = stats(0.3, 200)
    assert "new_metric" in release.released_metrics(metrics)["release"]["withheld_metrics"]


def test_band_stays_in_the_metric_range():
    assert release.live_band(0.9, 0.1, "accuracy") == [0.7, 1.0]
    assert release.live_band(-0.8, 0.2, "spearman") == [-1.0, -0.4]
    assert release.live_band(None, 0.1, "accuracy") == [None, None]


def test_dither_is_fixed_by_key_uniform_and_unbiased():
    """Keyed by the secret and the answers: the same file shows the same number; files one item
    apart draw independent offsets; rounding with them is unbiased (E[rounded] = value)."""
    assert release.dither("s", "k", "v") == release.dither("s", "k", "v")
    assert release.dither("s", "k", "v") != release.dither("t", "k", "v")
    draws = [release.dither("s", f"file-{i}", "live/value") for i in range(20_000)]
    assert min(draws) >= -0.5 and max(draws) < 0.5
    assert abs(sum(draws) / len(draws)) < 0.01
    value, step = 0.6337, 0.1
    rounded = [release.round_to(value, step, d) for d in draws]
    assert set(rounded) == {0.6, 0.7}
    assert abs(sum(rounded) / len(rounded) - value) < 0.002


def test_first_release_must_clear_the_floor_by_a_shaky_step():
    """No released best yet: the bar is the task's floor (best constant answer) + step + jitter,
    so a constant file with one item changed (floor +- 1/n) is never released."""
    floor, step, n = 0.55, 0.1, 100
    for jitter in (-step / 2, 0.0, step / 2):
        assert not release.beats(floor + 1 / n, None, step, jitter, floor=floor)
        assert not release.beats(floor - 1 / n, None, step, jitter, floor=floor)
    assert release.beats(floor + 0.16, None, step, step / 2, floor=floor)
    assert release.beats(0.2, None, step)  # no floor (a judge-scored task): as before


def test_nothing_is_released_from_fewer_than_min_items():
    """A partial run of one item: its human_yes_rate is its label, its accuracy the right/wrong."""
    metrics = {
        "metric": "accuracy",
        "n_items": 1,
        "total": {"accuracy": stats(1.0, 1), "human_yes_rate": stats(1.0, 1)},
        "tiers": {"agreement": {"split": {"accuracy": stats(1.0, 1)}}},
    }
    out = release.released_metrics(metrics)
    assert out["total"] == {} and out["tiers"] == {}
    assert release.MIN_ITEMS == 50


def test_shaky_threshold_stays_within_half_a_step():
    draws = [release.threshold_jitter(0.1) for _ in range(2000)]
    assert all(-0.05 - 1e-12 <= d <= 0.05 + 1e-12 for d in draws)
    assert len({round(d, 6) for d in draws}) > 100  # fresh draws, not one fixed offset
    assert min(draws) < -0.04 and max(draws) > 0.04
    # the bar moves with the draw: the same value clears it or not
    assert release.beats(0.66, 0.6, 0.1, jitter=-0.05) and not release.beats(0.66, 0.6, 0.1, 0.0)


def test_one_ladder_per_task_across_settings():
    assert release.ladder_scope("recentering", "relevance") == "recentering/relevance"


@pytest.mark.parametrize(
    "value,best,expected",
    [
        (0.5, None, True),
        (0.69, 0.6, False),
        (0.7, 0.6, True),
        (0.95, 0.6, True),
        (None, 0.6, False),
        (0.5, 0.6, False),
    ],
)
def test_beats(value, best, expected):
    assert release.beats(value, best, 0.1) is expected


def test_decide_release_keeps_the_best_per_submitter_and_scope(tmp_path):
    store = SubmissionStore(tmp_path / "s.sqlite3")
    step = 0.1

    def ladder(value):
        return lambda best: (release.beats(value, best, step), release.round_to(value, step))

    assert store.decide_release("a", "alice", "x/y/z", ladder(0.52)) == (True, 0.5)
    assert store.decide_release("b", "alice", "x/y/z", ladder(0.58)) == (
        False,
        0.5,
    )  # not by a full step
    assert store.decide_release("c", "alice", "x/y/z", ladder(0.61)) == (True, 0.6)
    assert store.decide_release("d", "bob", "x/y/z", ladder(0.3)) == (
        True,
        0.3,
    )  # bob has his own ladder
    assert store.decide_release("e", "alice", "x/y/other", ladder(0.3)) == (
        True,
        0.3,
    )  # and so has a scope
    # a retried job gets its first decision back, not a comparison with its own released value
    assert store.decide_release("c", "alice", "x/y/z", ladder(0.61)) == (True, 0.6)
    assert store.decide_release("b", "alice", "x/y/z", ladder(0.99)) == (False, 0.5)


def boundary_attack_advantage(trials: int, n: int = 200, shaky: bool = True) -> float:
    """Net labels per upload of the Ladder-boundary attack (right inferences minus wrong ones, per
    upload): the file sits exactly on best + step when the unknown item is YES, one item (1/n)
    below when it is NO; released -> the attacker says YES. A deterministic bar gives 1.0."""
    import random

    step, best, net = release.noise_step(n, "accuracy"), 0.5, 0
    rng = random.Random(5)
    for _ in range(trials):
        label_yes = rng.random() < 0.5
        value = best + step - (0 if label_yes else 1 / n)
        jitter = release.threshold_jitter(step) if shaky else 0.0
        said_yes = release.beats(value, best, step, jitter)
        net += 1 if said_yes == label_yes else -1
    return net / trials


def test_shaky_bar_turns_the_boundary_attack_into_a_near_coin_flip():
    assert boundary_attack_advantage(200, shaky=False) == 1.0  # one label per upload
    # (1/n)/step = 5% at n = 200: about 5 net labels per 100 uploads, not 100
    assert boundary_attack_advantage(20_000) < 0.10


def test_single_change_spearman_is_exact():
    """`_changed_ranks` (one ranking per (old, new) pair, then a swap) equals recomputing the rank
    correlation for every item changed, ties included."""
    import numpy as np

    from evaluator.metrics import _ranks
    from evaluator.release import _changed_ranks

    rng = np.random.default_rng(3)
    gold = rng.choice([1.0, 1.5, 2.0, 3.0, 3.5, 4.0, 5.0], size=60)
    gold_ranks = _ranks(gold)
    base = rng.choice([2.0, 4.0], size=60)  # a constant rating read against the response order
    changed_to = np.where(base == 2.0, 5.0, 1.0)
    fast = _changed_ranks(base, changed_to, gold_ranks)
    for i in range(60):
        pred = base.copy()
        pred[i] = changed_to[i]
        slow = np.corrcoef(_ranks(pred), gold_ranks)[0, 1]
        assert abs(fast[i] - slow) < 1e-9, (i, fast[i], slow)
    one_hot = _changed_ranks(np.full(60, 3.0), np.full(60, 5.0), gold_ranks)
    top = int(np.argmax(gold))
    # one item raised from a constant: corr = its standardized gold rank / sqrt(n - 1)
    centred = gold_ranks - gold_ranks.mean()
    assert abs(one_hot[top] - centred[top] / np.sqrt((centred**2).sum() * (1 - 1 / 60))) < 1e-9
    assert one_hot[top] > 0.15  # about a step at n = 60 (0.2 + jitter): why the floor moved
