"""Metrics over per-item arrays, with 95% confidence intervals (evaluator/statistics.py): a registry.

A task's hooks turn (items, answers) into named per-item arrays (`correct`, `pred_pos`/`gold_pos`,
`pred`/`gold` ratings, `consistent`); a metric reads those arrays at a set of item indices, so
the same function serves the total and every tier. Metrics are micro averages over items.

What each metric reads, its label and its scale are data (metrics.yaml, and a suite's own
metrics.yaml); a metric that is not a mean is a function registered with @register_statistic.
Manifests are checked against this registry at discovery, so an unknown metric fails at start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from evaluator.statistics import MetricStats, Units, mean_stats, share_stats, statistic_interval
from evaluator.yaml_files import read_yaml

Arrays = dict[str, np.ndarray]
Statistic = Callable[[Arrays, np.ndarray], float]
METRIC_KINDS = ("share", "mean", "statistic")
SCALES = {"percent": 100, "raw": 1}  # how a metric's value is shown: value x factor
RESAMPLE_SAMPLES = 1000  # for metrics that are not means (F1, Spearman): each draw recomputes them


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    kind: str  # share | mean | statistic
    reads: tuple[str, ...]
    scale: str  # percent | raw
    function: Statistic | None = None  # statistics only
    origin: str = ""  # the file that declared it (for error messages)


class MetricError(ValueError):
    """A metric declaration or name the registry refuses; the message names file, key and allowed values."""


_METRICS: dict[str, Metric] = {}
_STATISTICS: dict[str, Statistic] = {}


def register_statistic(name: str) -> Callable[[Statistic], Statistic]:
    """Decorator: the function computing metric `name` from the arrays at item indices (NaN: undefined)."""

    def register(function: Statistic) -> Statistic:
        if _STATISTICS.get(name, function) is not function:
            raise MetricError(
                f"statistic {name!r} is registered twice ({_STATISTICS[name].__module__} and {function.__module__})"
            )
        _STATISTICS[name] = function
        return function

    return register


def load_metric_table(path: Path) -> list[str]:
    """Register the metrics a metrics.yaml declares; returns their names. Refuses unknown keys, kinds
    and scales, a statistic without a registered function, and a name declared differently twice."""
    spec = read_yaml(path) or {}
    names = []
    for name, entry in spec.items():
        where = f"{path}: {name}"
        if not isinstance(entry, dict):
            raise MetricError(f"{where}: expected a mapping with label, kind, reads, scale")
        unknown = sorted(set(entry) - {"label", "kind", "reads", "scale"})
        if unknown:
            raise MetricError(
                f"{where}.{unknown[0]}: unknown key; allowed: label, kind, reads, scale"
            )
        kind, scale, reads = (
            entry.get("kind"),
            entry.get("scale", "raw"),
            tuple(entry.get("reads") or ()),
        )
        if kind not in METRIC_KINDS:
            raise MetricError(
                f"{where}.kind: {kind!r} is not a metric kind; allowed: {', '.join(METRIC_KINDS)}"
            )
        if scale not in SCALES:
            raise MetricError(
                f"{where}.scale: {scale!r} is not a scale; allowed: {', '.join(SCALES)}"
            )
        if not reads or (kind != "statistic" and len(reads) != 1):
            raise MetricError(
                f"{where}.reads: a {kind} reads {'one array' if kind != 'statistic' else 'one or more arrays'}"
            )
        function = _STATISTICS.get(name) if kind == "statistic" else None
        if kind == "statistic" and function is None:
            raise MetricError(
                f"{where}: kind statistic, but no function is registered with @register_statistic({name!r})"
            )
        metric = Metric(
            name, str(entry.get("label", name)), kind, reads, scale, function, str(path)
        )
        previous = _METRICS.get(name)
        if previous is not None and (previous.kind, previous.reads, previous.function) != (
            kind,
            reads,
            function,
        ):
            raise MetricError(
                f"{where}: metric {name!r} is already declared differently in {previous.origin}"
            )
        _METRICS[name] = metric
        names.append(name)
    return names


def get_metric(name: str) -> Metric:
    try:
        return _METRICS[name]
    except KeyError:
        raise MetricError(
            f"unknown metric {name!r}; known metrics: {', '.join(_METRICS)}"
        ) from None


def known_metrics() -> tuple[str, ...]:
    """Every registered metric, in declaration order (the table's metric columns follow it)."""
    return tuple(_METRICS)


def metric_labels() -> dict[str, str]:
    return {name: metric.label for name, metric in _METRICS.items()}


def metric_scale(name: str) -> int:
    """The factor a metric's value is shown with: 100 for shares of items, 1 for the rest."""
    metric = _METRICS.get(name)
    return SCALES[metric.scale] if metric else 1


def available(metric: str, arrays: Arrays) -> bool:
    return all(name in arrays for name in get_metric(metric).reads)


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else float("nan")


@register_statistic("precision")
def precision(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred_pos"][idx], a["gold_pos"][idx]
    return _ratio((pred & gold).sum(), pred.sum())


@register_statistic("recall")
def recall(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred_pos"][idx], a["gold_pos"][idx]
    return _ratio((pred & gold).sum(), gold.sum())


@register_statistic("f1")
def f1(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred_pos"][idx], a["gold_pos"][idx]
    tp = (pred & gold).sum()
    return _ratio(2 * tp, pred.sum() + gold.sum())


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank), as Spearman's rho needs."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_values = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_values)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(values)]))
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end - 1) / 2 + 1
    return ranks


@register_statistic("spearman")
def spearman(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred"][idx], a["gold"][idx]
    if len(idx) < 2:
        return float("nan")
    rp, rg = _ranks(pred), _ranks(gold)
    if rp.std() == 0 or rg.std() == 0:
        return float("nan")  # a constant rating has no rank correlation
    return float(np.corrcoef(rp, rg)[0, 1])


def _mean_stats(
    metric: str, values: np.ndarray, units: Units, rng: np.random.Generator
) -> MetricStats:
    if values.dtype.kind == "f":
        keep = ~np.isnan(values)
        values, units = values[keep], units.subset(np.flatnonzero(keep))
    if len(values) == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    if get_metric(metric).kind == "share":
        return share_stats(values, units, rng)
    return mean_stats(values, units, rng)


def metric_stats(
    metric: str,
    arrays: Arrays,
    idx: np.ndarray,
    rng: np.random.Generator,
    units: Units | None = None,
) -> MetricStats:
    """The metric over the items at `idx`, with its 95 % interval over the units those items
    belong to (`units` covers all items; None: every item is its own unit)."""
    n = len(idx)
    if units is None:
        units = Units.of(None, len(next(iter(arrays.values()))) if arrays else n)
    here = units.subset(idx) if n else Units(np.array([], dtype=np.int64), 0)
    spec = get_metric(metric)
    if spec.kind != "statistic":
        return _mean_stats(metric, arrays[spec.reads[0]][idx], here, rng)
    function = spec.function
    assert function is not None  # a statistic is registered with its function (check_names)
    if n == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    value = function(arrays, idx)
    low, high = statistic_interval(
        lambda positions: function(arrays, idx[positions]), here, rng, RESAMPLE_SAMPLES
    )
    clean = lambda x: None if np.isnan(x) else float(x)  # noqa: E731
    stats: MetricStats = {
        "value": clean(value),
        "ci95": [clean(low), clean(high)],
        "n": n,
        "interval": "bootstrap",
    }
    if not here.independent:
        stats["n_units"] = here.n_units
    return stats


def metric_value(metric: str, arrays: Arrays, idx: np.ndarray) -> MetricStats:
    """metric_stats' value and item count over the items at `idx`, without the interval (no
    resampling): {"value": ..., "n": ...}, equal to those two fields of metric_stats."""
    spec = get_metric(metric)
    if spec.kind != "statistic":
        values = arrays[spec.reads[0]][idx]
        if values.dtype.kind == "f":
            values = values[~np.isnan(values)]
        return {"value": float(values.mean()) if len(values) else None, "n": len(values)}
    function = spec.function
    assert function is not None  # a statistic is registered with its function (check_names)
    if len(idx) == 0:
        return {"value": None, "n": 0}
    value = function(arrays, idx)
    return {"value": None if np.isnan(value) else float(value), "n": len(idx)}


load_metric_table(
    Path(__file__).with_name("metrics.yaml")
)  # the built-in metrics; suites add theirs at discovery
