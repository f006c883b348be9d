"""Honest uncertainty: intervals over a suite's independent units, and paired comparisons of two rows.

Items of one benchmark are often not independent: PrefEval asks every (preference, question) pair
in three forms, PersonaFeedback asks many questions of one persona, RealPref asks each preference
in 24 (expression type x context) items and a user's 13 preferences share one history. Resampling
items as if they were independent then understates the uncertainty (PrefEval: 1.7x too narrow for
a model whose correctness is shared within a pair). The unit a suite's items cluster in is declared
in its manifest (`bootstrap_unit`, optionally nested `within` a larger unit), and every interval
here resamples those units: for nested units, the outermost level the items carry (RealPref: the
user, whose preferences stay together), which keeps every correlation below it intact (resampling
only the top level of a hierarchy is the standard cluster bootstrap; resampling again inside it
would count the inner variation twice).

Crossed units (`crossed_with`: Re-Centering stage 2 asks each prompt about the attributes of 4
users, and each user recurs across prompts) are neither: resampling either factor alone keeps the
other's correlation out. The variance of a mean is then the two-way cluster-robust estimator of
Cameron, Gelbach and Miller (2011): V = V_prompt + V_user - V_prompt∩user, each term the one-way
sandwich (CR1) variance over that factor's clusters (the intersection: the prompt-user cells; the
item itself where each pair appears once). The difference can come out below a one-way term (or
negative) in a small sample; CGM fix a non-positive-definite matrix by zeroing its negative
eigenvalues, which for one mean would be 0 (no interval at all). Here it is floored at the larger
one-way variance instead, as the nested levels are: never narrower than either factor alone says.
Statistics that are not means (F1) take the same combination of their one-way cluster bootstrap
variances, applied to the shape of the pigeonhole bootstrap (Owen 2007: both factors resampled
independently, each item kept with the product of its prompt's and its user's multiplicity),
whose own variance is V_prompt + V_user + V_prompt∩user to first order: too wide by twice the
intersection. Ratings' means use the pigeonhole percentile interval as it is (conservative).

- Shares (accuracy and other 0/1 means): the Wilson score interval, whose width does not collapse
  at 0 % or 100 % as a percentile bootstrap does, computed with the Kish effective sample size
  n / design effect, the design effect being the cluster bootstrap's variance (scaled by G/(G-1),
  the usual small-sample correction for G clusters) over the variance of independent items. With
  one item per unit that is the plain Wilson interval.
- Other means (ratings): the percentile bootstrap over units.
- Paired comparison of two rows on the same items: the difference of their means, its cluster
  bootstrap interval, and the two-sided p-value of a sign-flip (permutation) test over units,
  exact up to 16 units that differ; with units = items and 0/1 outcomes it is McNemar's exact test.
  Crossed units: the normal interval and z-test with the two-way variance (no sign flip respects
  two crossed factors).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Required, TypedDict

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_SAMPLES = 2000
EXACT_SIGN_FLIP_MAX_UNITS = 16


class MetricStats(TypedDict, total=False):
    """One metric over some items: one cell of a result (its total, a tier), from the scorer to the
    results store and the board (leaderboard/result_record.py's Stats validates it on the way in).
    metric_value's cells carry the value and count only."""

    value: Required[float | None]  # None: no item to take it over (or a statistic undefined there)
    ci95: list[float | None]  # the 95 % interval, [None, None] without items
    n: Required[int]  # the items it is over
    interval: str  # how ci95 was made: "wilson" | "bootstrap"
    n_effective: float  # the effective sample size, where clustering makes it differ from n
    n_units: int  # the units resampled, where items are not independent
    n_units_by: dict[str, int]  # crossed units: each factor's count
    step: float  # a hidden split's released number: the noise step it was rounded to


class PairedComparison(TypedDict, total=False):
    """paired_comparison: row A against row B on the same items."""

    difference: Required[float | None]  # mean(A) - mean(B); None without items
    ci95: Required[list[float | None]]
    p_value: Required[float | None]
    test: str  # which test gave p_value
    n: Required[int]
    n_units: Required[int]
    n_units_by: dict[str, int]
    a_mean: float | None  # None only once rounded (comparison.py, a hidden split's) from a NaN
    b_mean: float | None


@dataclass(frozen=True)
class Units:
    """Which unit each item belongs to: `codes[i]` is item i's unit, 0..n_units-1. `name` is what
    one unit is (the level resampled: "item", "preference_pair", "user", ...). `inner`: for nested
    units, the units one level down (RealPref: the preferences inside the users)."""

    codes: np.ndarray
    n_units: int
    name: str = "item"
    inner: "Units | None" = None
    # Crossed units: each factor's one-way units over the same items (prompt, user); `codes` are
    # then the first factor's and `name` names both ("prompt x user").
    factors: tuple["Units", ...] = ()

    @classmethod
    def of(
        cls, labels: list[str] | list[tuple[str, ...]] | np.ndarray | None, n_items: int, name=None
    ) -> "Units":
        """Units from one label per item (None: every item its own unit). A tuple label names
        nested units, outermost first ((user, preference)): items are grouped by the outermost."""
        if labels is None:
            return cls(np.arange(n_items), n_items, name or "item")
        labels = [label[0] if isinstance(label, tuple) else label for label in labels]
        _, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
        codes = codes.astype(np.int64).reshape(-1)
        return cls(codes, int(codes.max()) + 1 if len(codes) else 0, name or "unit")

    def subset(self, idx: np.ndarray) -> "Units":
        """The units of a subset of items (e.g. one tier), renumbered 0..k-1."""
        _, codes = np.unique(self.codes[idx], return_inverse=True)
        codes = codes.astype(np.int64).reshape(-1)
        inner = self.inner.subset(idx) if self.inner is not None else None
        factors = tuple(factor.subset(idx) for factor in self.factors)
        return Units(codes, int(codes.max()) + 1 if len(codes) else 0, self.name, inner, factors)

    @property
    def independent(self) -> bool:
        return self.n_units == len(self.codes)

    @property
    def levels(self) -> list["Units"]:
        """This level and every level nested in it, outermost first."""
        return [self] + (self.inner.levels if self.inner is not None else [])


def nested_units(labels: list[str | tuple[str, ...]], levels: tuple[str, ...]) -> Units:
    """The units to resample for items labelled at declared `levels` (innermost first, e.g.
    ("preference", "user")): a plain label is the innermost level; a tuple (outer, ..., inner)
    names every level, outermost first. All items must name the same number of levels. The
    outermost level named is resampled; the inner ones ride along (`Units.inner`)."""
    depths = {len(label) if isinstance(label, tuple) else 1 for label in labels}
    if len(depths) > 1:
        raise ValueError(
            "items name their units at different depths: " + ", ".join(map(str, sorted(depths)))
        )
    depth = depths.pop() if depths else 1
    if depth > len(levels):
        raise ValueError(f"items name {depth} unit levels; the task declares {len(levels)}")
    inner: Units | None = None
    for level in range(depth):  # innermost first: each level's units are its label path
        paths = [
            "\x1f".join(label[: depth - level]) if isinstance(label, tuple) else label
            for label in labels
        ]
        units = Units.of(paths, len(labels), levels[level])
        inner = Units(units.codes, units.n_units, units.name, inner)
    assert inner is not None  # depth >= 1: the loop ran
    return inner


def crossed_units(labels: list[str | tuple[str, ...]], factors: tuple[str, str]) -> Units:
    """The units of items labelled by two crossed factors (`factors`, e.g. ("prompt", "user")):
    a tuple (prompt, user) per item. A split whose items all name only the first factor (a plain
    label: no user recorded) gets that factor's one-way units, named after it alone."""
    depths = {len(label) if isinstance(label, tuple) else 1 for label in labels}
    if len(depths) > 1:
        raise ValueError(
            "items name their units at different depths: " + ", ".join(map(str, sorted(depths)))
        )
    depth = depths.pop() if depths else len(factors)
    if depth == 1:
        return Units.of([str(label) for label in labels], len(labels), factors[0])
    if depth != len(factors):
        raise ValueError(
            f"items name {depth} units; the task declares {len(factors)} crossed units "
            f"({' x '.join(factors)})"
        )
    one_way = tuple(
        Units.of([label[k] for label in labels], len(labels), name)
        for k, name in enumerate(factors)
    )
    first = one_way[0]
    return Units(first.codes, first.n_units, " x ".join(factors), factors=one_way)


def _cells(units: Units) -> Units:
    """The intersection of crossed factors: items sharing every factor's unit (a prompt-user cell)."""
    keys = np.stack([factor.codes for factor in units.factors], axis=1)
    _, codes = np.unique(keys, axis=0, return_inverse=True)
    codes = codes.astype(np.int64).reshape(-1)
    return Units(codes, int(codes.max()) + 1 if len(codes) else 0, "cell")


def sandwich_variance(values: np.ndarray, units: Units) -> float:
    """The one-way cluster-robust (CR1) variance of the item mean: G/(G-1) x sum over units of
    (unit total - mean x unit size)^2 / n^2; what the cluster bootstrap's variance approximates."""
    n = len(values)
    if n == 0:
        return float("nan")
    sums, sizes = _unit_sums(values, units)
    residuals = sums - float(values.mean()) * sizes
    g = units.n_units
    variance = float((residuals**2).sum()) / n**2
    return variance * g / (g - 1) if g > 1 else variance


def two_way_variance(values: np.ndarray, units: Units) -> dict[str, float]:
    """Cameron-Gelbach-Miller two-way variance of the item mean over crossed units: each
    factor's one-way variance, the intersection's, `two_way` = their sum less the intersection,
    and `variance`: that floored at the larger one-way variance (the module's docstring says why)."""
    first, second = units.factors
    parts = {
        first.name: sandwich_variance(values, first),
        second.name: sandwich_variance(values, second),
        "intersection": sandwich_variance(values, _cells(units)),
    }
    two_way = parts[first.name] + parts[second.name] - parts["intersection"]
    return {
        **parts,
        "two_way": two_way,
        "variance": max(two_way, parts[first.name], parts[second.name]),
    }


def wilson_interval(share: float, n_effective: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a share observed over `n_effective` independent trials."""
    if n_effective <= 0:
        return (float("nan"), float("nan"))
    denominator = 1 + z * z / n_effective
    centre = (share + z * z / (2 * n_effective)) / denominator
    half = (
        z
        * math.sqrt(share * (1 - share) / n_effective + z * z / (4 * n_effective**2))
        / denominator
    )
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # exact at the edges (the formula gives 0 and 1 there, up to rounding)
    return (0.0 if share <= 0 else float(low), 1.0 if share >= 1 else float(high))


def _unit_sums(values: np.ndarray, units: Units) -> tuple[np.ndarray, np.ndarray]:
    sums = np.bincount(units.codes, weights=values.astype(float), minlength=units.n_units)
    sizes = np.bincount(units.codes, minlength=units.n_units).astype(float)
    return sums, sizes


def cluster_bootstrap_means(
    values: np.ndarray, units: Units, rng: np.random.Generator, samples: int = BOOTSTRAP_SAMPLES
) -> np.ndarray:
    """Bootstrap draws of the item mean, resampling whole units with replacement.

    A draw takes each unit a Multinomial(G, 1/G) number of times; its mean is the drawn units'
    item total over their item count (the ratio estimator, right for units of unequal size).
    Drawing the counts is the same bootstrap as materialising resampled index lists, in O(B x G).
    """
    sums, sizes = _unit_sums(values, units)
    g = units.n_units
    counts = rng.multinomial(g, np.full(g, 1.0 / g), size=samples).astype(float)
    return (counts @ sums) / (counts @ sizes)


def cluster_variance(values: np.ndarray, units: Units, rng: np.random.Generator) -> float:
    """The variance of the item mean over units: the cluster bootstrap's, times G/(G-1) (the
    bootstrap's plug-in variance is that much too small for G units; CR1 in the sandwich form).

    Nested units: the largest of the levels' variances. Resampling the outer level accounts for
    every correlation below it, so in expectation its variance is the largest; but with few outer
    units (a split of 2 users) its estimate is noise, and can come out below the variance the
    inner units already show. The larger one is never narrower than either level says.

    Crossed units: the two-way variance (two_way_variance), no resampling."""
    if units.factors:
        return two_way_variance(values, units)["variance"]
    variances = []
    for level in units.levels:
        variance = float(cluster_bootstrap_means(values, level, rng).var())
        g = level.n_units
        variances.append(variance * g / (g - 1) if g > 1 else variance)
    return max(variances)


def share_stats(values: np.ndarray, units: Units, rng: np.random.Generator) -> MetricStats:
    """A mean of values in [0, 1] (a share, or a mean of halves) with its Wilson interval at the
    effective sample size: n for independent 0/1 items; otherwise p(1-p) over the variance over
    units (cluster_variance), at most n for 0/1 values."""
    n = len(values)
    share = float(values.mean())
    binary = bool(np.isin(values, (0, 1)).all())
    if binary and units.independent:
        n_effective = float(n)
    elif 0.0 < share < 1.0:
        # Values between 0 and 1 (a pairwise judge's two orders averaged) vary less than 0/1
        # outcomes: their n_effective may exceed n; clustering brings it down. Units of unequal
        # size can bring it below the number of units (a large unit weighs more): not floored.
        variance = cluster_variance(values, units, rng)
        n_effective = share * (1 - share) / variance if variance > 0 else float(n)
    else:
        # No variation to measure the clustering from: assume the worst (all of a unit's items
        # share one outcome), so the interval is as wide as with one item per unit.
        n_effective = float(min(f.n_units for f in units.factors or (units,)))
    if binary:
        n_effective = min(n_effective, float(n))
    low, high = wilson_interval(share, n_effective)
    stats: MetricStats = {"value": share, "ci95": [low, high], "n": n, "interval": "wilson"}
    _count_units(stats, units)
    if n_effective != n:
        stats["n_effective"] = round(float(n_effective), 2)
    return stats


def _count_units(stats: MetricStats, units: Units) -> None:
    """`n_units` (crossed units: the first factor's count, and every factor's in `n_units_by`)."""
    if not units.independent:
        stats["n_units"] = units.n_units
    if units.factors:
        stats["n_units_by"] = {factor.name: factor.n_units for factor in units.factors}


def pigeonhole_weights(units: Units, rng: np.random.Generator, samples: int) -> np.ndarray:
    """Item multiplicities of `samples` pigeonhole bootstrap draws (Owen 2007) over crossed
    units: every factor's units drawn with replacement, independently; an item counts the product
    of its units' multiplicities (samples x items)."""
    weights = np.ones((samples, len(units.codes)))
    for factor in units.factors:
        g = factor.n_units
        counts = rng.multinomial(g, np.full(g, 1.0 / g), size=samples).astype(float)
        weights *= counts[:, factor.codes]
    return weights


def pigeonhole_means(
    values: np.ndarray, units: Units, rng: np.random.Generator, samples: int = BOOTSTRAP_SAMPLES
) -> np.ndarray:
    """Pigeonhole bootstrap draws of the item mean (draws that keep no item are left out)."""
    weights = pigeonhole_weights(units, rng, samples)
    totals = weights.sum(axis=1)
    kept = totals > 0
    return (weights[kept] @ values.astype(float)) / totals[kept]


def mean_stats(values: np.ndarray, units: Units, rng: np.random.Generator) -> MetricStats:
    """A mean of non-binary values (ratings) with its percentile bootstrap interval over units
    (nested units: the level whose draws vary most, as in cluster_variance; crossed units: the
    pigeonhole bootstrap)."""
    draws = (
        pigeonhole_means(values, units, rng)
        if units.factors
        else max(
            (cluster_bootstrap_means(values, level, rng) for level in units.levels),
            key=lambda d: float(d.var()),
        )
    )
    low, high = np.quantile(draws, [0.025, 0.975])
    stats: MetricStats = {
        "value": float(values.mean()),
        "ci95": [float(low), float(high)],
        "n": len(values),
        "interval": "bootstrap",
    }
    _count_units(stats, units)
    return stats


def resample_unit_indices(units: Units, rng: np.random.Generator) -> np.ndarray:
    """One bootstrap draw of item positions: G units drawn with replacement, all their items kept
    (crossed units: a pigeonhole draw, each item repeated by its multiplicity)."""
    if units.factors:
        weights = pigeonhole_weights(units, rng, 1)[0].astype(np.int64)
        return np.repeat(np.arange(len(units.codes)), weights)
    members = _members(units)
    drawn = rng.integers(0, units.n_units, size=units.n_units)
    return (
        np.concatenate([members[u] for u in drawn])
        if units.n_units
        else np.array([], dtype=np.int64)
    )


def _members(units: Units) -> list[np.ndarray]:
    order = np.argsort(units.codes, kind="stable")
    bounds = np.searchsorted(units.codes[order], np.arange(units.n_units + 1))
    return [order[bounds[u] : bounds[u + 1]] for u in range(units.n_units)]


def _statistic_draws(
    function: Callable[[np.ndarray], float], units: Units, rng: np.random.Generator, samples: int
) -> np.ndarray:
    """The statistic on `samples` cluster bootstrap draws of item positions (NaN draws left out)."""
    members = _members(units)
    draws = []
    for _ in range(samples):
        drawn = rng.integers(0, units.n_units, size=units.n_units)
        draws.append(function(np.concatenate([members[u] for u in drawn])))
    return np.array([d for d in draws if not np.isnan(d)])


def statistic_interval(
    function: Callable[[np.ndarray], float], units: Units, rng: np.random.Generator, samples: int
) -> tuple[float, float]:
    """Percentile interval of any statistic of item positions (F1, Spearman), resampling units
    (crossed units: _crossed_statistic_interval)."""
    if units.factors:
        return _crossed_statistic_interval(function, units, rng, samples)
    finite = _statistic_draws(function, units, rng, samples)
    if not len(finite):
        return (float("nan"), float("nan"))
    low, high = np.quantile(finite, [0.025, 0.975])
    return (float(low), float(high))


def _crossed_statistic_interval(
    function: Callable[[np.ndarray], float], units: Units, rng: np.random.Generator, samples: int
) -> tuple[float, float]:
    """A statistic that is not a mean, over crossed units: the pigeonhole bootstrap's percentile
    interval, narrowed about the estimate to the two-way variance (V_prompt + V_user -
    V_prompt∩user, each the one-way cluster bootstrap's variance of the statistic x G/(G-1),
    floored at the larger one-way one). The pigeonhole draws give the shape (bounded, skewed near
    0 or 1), the CGM combination the spread; never widened past the pigeonhole interval, so its
    ends stay within the statistic's range."""
    positions = np.arange(len(units.codes))
    value = function(positions)
    pigeonhole = np.array(
        [
            function(np.repeat(positions, weights)) if weights.any() else float("nan")
            for weights in pigeonhole_weights(units, rng, samples).astype(np.int64)
        ]
    )
    pigeonhole = pigeonhole[~np.isnan(pigeonhole)]
    if np.isnan(value) or not len(pigeonhole):
        return (float("nan"), float("nan"))
    variances = []
    for one_way in (*units.factors, _cells(units)):
        draws = _statistic_draws(function, one_way, rng, samples)
        g = one_way.n_units
        variance = float(draws.var()) if len(draws) else 0.0
        variances.append(variance * g / (g - 1) if g > 1 else variance)
    first, second, intersection = variances
    two_way = max(first + second - intersection, first, second)
    spread = float(pigeonhole.var())
    scale = min(1.0, math.sqrt(two_way / spread)) if spread > 0 else 1.0
    low, high = np.quantile(pigeonhole, [0.025, 0.975])
    return (float(value + scale * (low - value)), float(value + scale * (high - value)))


def sign_flip_p_value(
    unit_differences: np.ndarray, rng: np.random.Generator, samples: int = 20000
) -> float:
    """Two-sided p-value of "no difference" for per-unit summed differences (A - B).

    Under the null the two rows are exchangeable within a unit, so each unit's difference is as
    likely negated: the statistic's null distribution is over all sign flips. Units without a
    difference do not move the statistic and are left out. Exact (all 2^k flips) for k <= 16
    differing units, a Monte-Carlo estimate with the +1 correction above that.
    """
    d = unit_differences[unit_differences != 0]
    k = len(d)
    if k == 0:
        return 1.0
    observed = abs(d.sum())
    tolerance = 1e-9 * max(1.0, observed)
    if k <= EXACT_SIGN_FLIP_MAX_UNITS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=k)))
        return float((np.abs(signs @ d) >= observed - tolerance).mean())
    signs = rng.choice((1.0, -1.0), size=(samples, k))
    extreme = (np.abs(signs @ d) >= observed - tolerance).sum()
    return float((extreme + 1) / (samples + 1))


def paired_comparison(
    a: np.ndarray, b: np.ndarray, units: Units, rng: np.random.Generator
) -> PairedComparison:
    """Row A against row B on the same items: mean(A) - mean(B), its interval over units, p-value."""
    if len(a) != len(b) or len(a) != len(units.codes):
        raise ValueError("a paired comparison needs both rows' outcomes on the same items")
    n = len(a)
    if n == 0:
        return {"difference": None, "ci95": [None, None], "p_value": None, "n": 0, "n_units": 0}
    difference = a.astype(float) - b.astype(float)
    if units.factors:
        return _crossed_comparison(a, b, difference, units)
    draws = cluster_bootstrap_means(difference, units, rng)
    low, high = np.quantile(draws, [0.025, 0.975])
    sums, _ = _unit_sums(difference, units)
    binary = set(np.unique(a)).issubset({0, 1}) and set(np.unique(b)).issubset({0, 1})
    result: PairedComparison = {
        "difference": float(difference.mean()),
        "ci95": [float(low), float(high)],
        "p_value": sign_flip_p_value(sums, rng),
        "test": "sign-flip permutation over units"
        + (" (McNemar exact)" if binary and units.independent else ""),
        "n": n,
        "n_units": units.n_units,
        "a_mean": float(np.mean(a)),
        "b_mean": float(np.mean(b)),
    }
    return result


def _crossed_comparison(
    a: np.ndarray, b: np.ndarray, difference: np.ndarray, units: Units
) -> PairedComparison:
    """The paired comparison over crossed units: normal interval and two-sided z-test with the
    two-way variance of the mean difference (floored as in two_way_variance)."""
    mean = float(difference.mean())
    se = math.sqrt(max(two_way_variance(difference, units)["variance"], 0.0))
    p_value = 1.0 if mean == 0 else (math.erfc(abs(mean) / se / math.sqrt(2)) if se > 0 else 0.0)
    return {
        "difference": mean,
        "ci95": [mean - Z95 * se, mean + Z95 * se],
        "p_value": float(p_value),
        "test": f"two-way cluster-robust z-test ({units.name})",
        "n": len(difference),
        "n_units": units.n_units,
        "n_units_by": {factor.name: factor.n_units for factor in units.factors},
        "a_mean": float(np.mean(a)),
        "b_mean": float(np.mean(b)),
    }
