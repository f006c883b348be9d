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


def test_released_metrics_round_and_drop_small_tiers():
    metrics = {
        "metric": "accuracy",
        "n_items": 200,
        "split": {"name": "test"},
        "total": {"accuracy": stats(0.6150, 200), "f1": stats(0.4333, 200)},
        "tiers": {
            "agreement": {
                "unanimous": {"accuracy": stats(0.71, 150)},
                "split": {"accuracy": stats(0.31, 50)},
                "tiny": {"accuracy": stats(1.0, 3)},
            }
        },
    }
    out = release.released_metrics(metrics)
    assert out["total"]["accuracy"]["value"] == 0.6
    assert "f1" not in out["total"] and out["release"]["withheld_metrics"] == ["f1"]
    assert set(out["total"]["accuracy"]) == {"value", "ci95", "n", "step"}  # no other field leaves
    assert set(out["tiers"]["agreement"]) == {"unanimous", "split"}  # the 3-item tier is withheld
    assert (
        out["tiers"]["agreement"]["split"]["accuracy"]["value"] == 0.4
    )  # step 0.2 for 50 items: 0.31 -> 0.4
    assert out["release"]["step"] == 0.1 and out["split"] == {"name": "test"}
    # a one-item change (1/200) never shows in a released value unless it crosses a rounding edge
    moved = json.loads(json.dumps(metrics))
    moved["total"]["accuracy"]["value"] += 1 / 200
    assert release.released_metrics(moved)["total"]["accuracy"]["value"] == 0.6


def test_secondary_metrics_of_gold_and_answers_are_withheld_others_rounded():
    """The single-YES probe: all NO but one item YES makes precision that item's label (its
    denominator is the one YES answer); it must not leave, while the YES-rates (answers alone,
    gold alone) carry no label of the submitter's choosing and leave rounded."""
    metrics = {
        "metric": "accuracy",
        "n_items": 200,
        "total": {
            "accuracy": stats(0.505, 200),
            "precision": stats(1.0, 1),
            "recall": stats(0.01, 100),
            "f1": stats(0.0198, 200),
            "yes_rate": stats(0.005, 200),
            "human_yes_rate": stats(0.4987, 200),
        },
        "tiers": {},
    }
    out = release.released_metrics(metrics)
    assert set(out["total"]) == {"accuracy", "yes_rate", "human_yes_rate"}
    assert out["total"]["human_yes_rate"]["value"] == 0.5  # rounded to the 0.1 step of 200 items
    assert out["total"]["yes_rate"]["value"] == 0.0
    assert out["release"]["withheld_metrics"] == ["f1", "precision", "recall"]
    kinds = {m: release.released_metric_kind(m, "accuracy") for m in metrics["total"]}
    assert kinds == {
        "accuracy": "ladder",
        "precision": "withheld",
        "recall": "withheld",
        "f1": "withheld",
        "yes_rate": "answers",
        "human_yes_rate": "gold",
    }
    assert release.released_metric_kind("human_mean_rating", "spearman") == "gold"
    assert release.released_metric_kind("mean_rating", "spearman") == "withheld"


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
