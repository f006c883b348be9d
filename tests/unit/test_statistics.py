"""Intervals over units, Wilson at the edges, and the paired comparison, against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluator.metrics import metric_stats
from evaluator.statistics import (
    Units,
    cluster_bootstrap_means,
    cluster_variance,
    nested_units,
    paired_comparison,
    share_stats,
    sign_flip_p_value,
    wilson_interval,
)


def test_wilson_interval_by_hand():
    # p = 0.7, n = 10, z = 1.96: centre = (0.7 + 1.9208/10) / 1.38416 = 0.644...,
    # half = 1.96 * sqrt(0.021 + 0.00960) / 1.38416 = 0.2477...
    low, high = wilson_interval(0.7, 10, z=1.96)
    z2 = 1.96**2
    centre = (0.7 + z2 / 20) / (1 + z2 / 10)
    half = 1.96 * math.sqrt(0.7 * 0.3 / 10 + z2 / 400) / (1 + z2 / 10)
    assert (low, high) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (low, high) == pytest.approx((0.3968, 0.8922), abs=1e-4)
    # at 0 of 20 the interval keeps a width: upper bound z^2 / (n + z^2) = 3.8416 / 23.8416
    low, high = wilson_interval(0.0, 20, z=1.96)
    assert low == 0.0 and high == pytest.approx(3.8416 / 23.8416, abs=1e-12)
    low, high = wilson_interval(1.0, 20, z=1.96)
    assert high == 1.0 and low == pytest.approx(20 / 23.8416, abs=1e-12)


def test_all_correct_keeps_a_width_and_clusters_widen_it():
    rng = np.random.default_rng(0)
    perfect = np.ones(30, dtype=bool)
    by_item = metric_stats("accuracy", {"correct": perfect}, np.arange(30), rng)
    assert by_item["value"] == 1.0 and by_item["ci95"][1] == 1.0
    assert by_item["ci95"][0] == pytest.approx(30 / (30 + 1.959963984540054**2), abs=1e-9)
    # ten units of three items: no variation to measure the clustering from -> as wide as 10 items
    units = Units.of([str(i // 3) for i in range(30)], 30)
    by_unit = metric_stats("accuracy", {"correct": perfect}, np.arange(30), rng, units)
    assert by_unit["n_units"] == 10 and by_unit["n_effective"] == 10
    assert by_unit["ci95"][0] == pytest.approx(wilson_interval(1.0, 10)[0])
    assert by_unit["ci95"][0] < by_item["ci95"][0]


def test_cluster_interval_for_shared_correctness_is_sqrt_cluster_size_wider():
    """A model whose correctness is shared by all three forms of a pair: the design effect is 3,
    so the interval over pairs is about sqrt(3) = 1.73 times the interval over items."""
    pairs = 300
    per_pair = np.random.default_rng(5).random(pairs) < 0.6
    correct = np.repeat(per_pair, 3)
    units = Units.of(np.repeat(np.arange(pairs), 3).astype(str), len(correct))
    item = share_stats(correct, Units.of(None, len(correct)), np.random.default_rng(1))
    cluster = share_stats(correct, units, np.random.default_rng(1))
    ratio = (cluster["ci95"][1] - cluster["ci95"][0]) / (item["ci95"][1] - item["ci95"][0])
    assert 1.55 < ratio < 1.9, ratio
    assert cluster["n_effective"] == pytest.approx(pairs, rel=0.15)


def test_cluster_bootstrap_draws_are_ratio_means():
    # units of unequal size: unit 0 = [1, 1, 1], unit 1 = [0]; every draw is one of
    # {both unit 0: 1.0, both unit 1: 0.0, one each: 3/4}
    values = np.array([1.0, 1, 1, 0])
    units = Units.of(["a", "a", "a", "b"], 4)
    draws = cluster_bootstrap_means(values, units, np.random.default_rng(0), samples=4000)
    assert set(np.round(draws, 12)) == {0.0, 0.75, 1.0}
    assert (draws == 0.75).mean() == pytest.approx(0.5, abs=0.03)


def test_sign_flip_p_value_by_hand():
    # three units with difference +1, two without: 2^3 flips, |sum| = 3 for (+,+,+) and (-,-,-)
    assert sign_flip_p_value(
        np.array([1.0, 1, 1, 0, 0]), np.random.default_rng(0)
    ) == pytest.approx(2 / 8)
    # differences (2, 1, -1): sums over the 8 sign vectors: 2,4,0,2,-2,0,-4,-2 -> |s| >= 2 in 6 of 8
    assert sign_flip_p_value(np.array([2.0, 1, -1]), np.random.default_rng(0)) == pytest.approx(
        6 / 8
    )
    assert sign_flip_p_value(np.zeros(4), np.random.default_rng(0)) == 1.0


def test_paired_comparison_matches_mcnemar_by_hand():
    # 12 items: A right on 9, B right on 4; discordant: A only on 6 items, B only on 1.
    a = np.array([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    b = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0])
    result = paired_comparison(a, b, Units.of(None, 12), np.random.default_rng(0))
    assert result["difference"] == pytest.approx(5 / 12)
    # McNemar exact: 2 * P(Binomial(7, 1/2) <= 1) = 2 * 8/128 = 0.125
    assert result["p_value"] == pytest.approx(0.125)
    assert "McNemar" in result["test"]
    assert result["ci95"][0] < 5 / 12 < result["ci95"][1]
    identical = paired_comparison(a, a, Units.of(None, 12), np.random.default_rng(0))
    assert identical["difference"] == 0 and identical["p_value"] == 1.0


def test_paired_comparison_over_units_counts_units_not_items():
    # two pairs of three items each, A better on every item of both: over items McNemar would give
    # 2/2^6; over pairs only 2 units differ -> p = 2/4
    a = np.ones(6)
    b = np.zeros(6)
    units = Units.of(["p", "p", "p", "q", "q", "q"], 6)
    assert paired_comparison(a, b, units, np.random.default_rng(0))["p_value"] == pytest.approx(0.5)
    assert paired_comparison(a, b, Units.of(None, 6), np.random.default_rng(0))[
        "p_value"
    ] == pytest.approx(2 / 64)
    with pytest.raises(ValueError):
        paired_comparison(a, b[:5], units, np.random.default_rng(0))


def test_nested_units_resample_the_outermost_level():
    # (user, preference): three preferences of user a, one of user b -> two units, named "user"
    labels = [("a", "p1"), ("a", "p1"), ("a", "p2"), ("a", "p3"), ("b", "p4")]
    units = nested_units(labels, ("preference", "user"))
    assert units.name == "user" and units.n_units == 2
    assert list(units.codes) == [0, 0, 0, 0, 1]
    # a split that names only the preference (no user): preferences are resampled
    flat = nested_units(["p1", "p1", "p2"], ("preference", "user"))
    assert flat.name == "preference" and flat.n_units == 2
    with pytest.raises(ValueError, match="different depths"):
        nested_units([("a", "p1"), "p2"], ("preference", "user"))
    with pytest.raises(ValueError, match="declares 1"):
        nested_units([("a", "p1")], ("preference",))
    assert units.subset(np.array([3, 4])).name == "user"


def test_cluster_variance_is_the_bootstrap_variance_with_the_small_sample_correction():
    # 4 units of 5 identical outcomes (1, 1, 0, 0): the mean over units is the mean of 4 Bernoulli
    # cluster values; its unbiased variance is s^2/G = (1/3)/4 = 1/12; the plug-in bootstrap
    # gives (G-1)/G of that, and the correction G/(G-1) brings it back.
    values = np.repeat([1.0, 1, 0, 0], 5)
    units = Units.of(np.repeat(list("abcd"), 5), 20)
    raw = cluster_bootstrap_means(values, units, np.random.default_rng(3), samples=20000).var()
    assert raw == pytest.approx(0.25 / 4, rel=0.05)
    assert cluster_variance(values, units, np.random.default_rng(3)) == pytest.approx(
        1 / 12, rel=0.08
    )
    # so the effective n is p(1-p)/variance = 0.25 * 12 = 3 units, not 4 (and not 20 items)
    stats = share_stats(values, units, np.random.default_rng(3))
    assert stats["n_effective"] == pytest.approx(3, rel=0.1) and stats["n_units"] == 4


def test_one_large_unit_can_bring_the_effective_n_below_the_unit_count():
    # one unit of 40 items all wrong, nine single items all right: the mean (9/49) hangs on the
    # big unit, so the interval must be wider than for 10 independent units (no floor at 10)
    values = np.array([0.0] * 40 + [1.0] * 9)
    units = Units.of(["big"] * 40 + [f"u{i}" for i in range(9)], 49)
    stats = share_stats(values, units, np.random.default_rng(0))
    assert stats["n_units"] == 10 and stats["n_effective"] < 10
    floor = wilson_interval(stats["value"], 10)
    assert stats["ci95"][1] - stats["ci95"][0] > floor[1] - floor[0]


def test_nested_units_keep_the_inner_level_and_use_the_larger_variance():
    # two users whose accuracies coincide (0.5 each) but whose preferences differ widely: the
    # user-level bootstrap sees no variation; the preference level does, and the interval uses it
    labels = [("a", "p1")] * 10 + [("a", "p2")] * 10 + [("b", "p3")] * 10 + [("b", "p4")] * 10
    values = np.array([1.0] * 10 + [0.0] * 10 + [1.0] * 10 + [0.0] * 10)
    units = nested_units(labels, ("preference", "user"))
    assert [level.name for level in units.levels] == ["user", "preference"]
    assert [level.n_units for level in units.levels] == [2, 4]
    assert cluster_bootstrap_means(values, units, np.random.default_rng(0)).var() == 0
    stats = share_stats(values, units, np.random.default_rng(0))
    # preference level: 4 units of 0/1 -> variance (1/4)/4 * 4/3 -> n_effective 3
    assert stats["n_units"] == 2 and stats["n_effective"] == pytest.approx(3, rel=0.1)
    tier = units.subset(np.arange(20))  # user a only: one user, two preferences
    assert tier.n_units == 1 and tier.inner.n_units == 2
