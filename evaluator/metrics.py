"""Metrics over per-item arrays, with 95% confidence intervals (evaluator/statistics.py).

A task's hooks turn (items, answers) into named per-item arrays (`correct`, `pred_pos`/`gold_pos`,
`pred`/`gold` ratings, `consistent`); a metric reads those arrays at a set of item indices, so
the same function serves the total and every tier. Metrics are micro averages over items.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from evaluator.statistics import Units, mean_stats, share_stats, statistic_interval

Arrays = dict[str, np.ndarray]
RESAMPLE_SAMPLES = 1000  # for metrics that are not means (F1, Spearman): each draw recomputes them


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else float("nan")


def precision(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred_pos"][idx], a["gold_pos"][idx]
    return _ratio((pred & gold).sum(), pred.sum())


def recall(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred_pos"][idx], a["gold_pos"][idx]
    return _ratio((pred & gold).sum(), gold.sum())


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


def spearman(a: Arrays, idx: np.ndarray) -> float:
    pred, gold = a["pred"][idx], a["gold"][idx]
    if len(idx) < 2:
        return float("nan")
    rp, rg = _ranks(pred), _ranks(gold)
    if rp.std() == 0 or rg.std() == 0:
        return float("nan")  # a constant rating has no rank correlation
    return float(np.corrcoef(rp, rg)[0, 1])


# Metrics that are the mean of one per-item array: their bootstrap is exact and cheap (below).
MEAN_METRICS = {
    "accuracy": "correct",
    "yes_rate": "pred_pos",
    "human_yes_rate": "gold_pos",
    "mean_rating": "pred",
    "human_mean_rating": "gold",
    "position_consistency": "consistent",
    # LLM-judge ratings (1-5) of open-ended answers, e.g. RealPref's three rubrics
    "alignment": "alignment",
    "awareness": "awareness",
    "quality": "quality",
}
OTHER_METRICS: dict[str, tuple[Callable[[Arrays, np.ndarray], float], tuple[str, ...]]] = {
    "precision": (precision, ("pred_pos", "gold_pos")),
    "recall": (recall, ("pred_pos", "gold_pos")),
    "f1": (f1, ("pred_pos", "gold_pos")),
    "spearman": (spearman, ("pred", "gold")),
}
KNOWN_METRICS = (*MEAN_METRICS, *OTHER_METRICS)
# Shares of items, shown as percentages; the rest (correlations, ratings) are shown as they are.
PERCENT_METRICS = frozenset({"accuracy", "precision", "recall", "f1", "yes_rate", "human_yes_rate", "position_consistency"})
METRIC_LABELS = {
    "accuracy": "Accuracy", "precision": "Precision", "recall": "Recall", "f1": "F1", "yes_rate": "YES-rate",
    "human_yes_rate": "Human YES-rate", "spearman": "Spearman", "mean_rating": "Mean rating",
    "human_mean_rating": "Human mean rating", "position_consistency": "Position consistency",
    "awareness": "Pref. awareness", "alignment": "Pref. alignment", "quality": "Answer quality",
}


def available(metric: str, arrays: Arrays) -> bool:
    if metric in MEAN_METRICS:
        return MEAN_METRICS[metric] in arrays
    return all(name in arrays for name in OTHER_METRICS[metric][1])


# Metrics whose per-item values lie in [0, 1]: their interval is a Wilson interval (no collapse at
# 0 % or 100 %); ratings get a bootstrap. Both resample the suite's declared units (statistics.py).
SHARE_METRICS = frozenset({"accuracy", "yes_rate", "human_yes_rate", "position_consistency"})


def _mean_stats(metric: str, values: np.ndarray, units: Units, rng: np.random.Generator) -> dict[str, Any]:
    if values.dtype.kind == "f":
        keep = ~np.isnan(values)
        values, units = values[keep], units.subset(np.flatnonzero(keep))
    if len(values) == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    if metric in SHARE_METRICS:
        return share_stats(values, units, rng)
    return mean_stats(values, units, rng)


def metric_stats(metric: str, arrays: Arrays, idx: np.ndarray, rng: np.random.Generator,
                 units: Units | None = None) -> dict[str, Any]:
    """The metric over the items at `idx`, with its 95 % interval over the units those items
    belong to (`units` covers all items; None: every item is its own unit)."""
    n = len(idx)
    if units is None:
        units = Units.of(None, len(next(iter(arrays.values()))) if arrays else n)
    here = units.subset(idx) if n else Units(np.array([], dtype=np.int64), 0)
    if metric in MEAN_METRICS:
        return _mean_stats(metric, arrays[MEAN_METRICS[metric]][idx], here, rng)
    function, _ = OTHER_METRICS[metric]
    if n == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    value = function(arrays, idx)
    low, high = statistic_interval(lambda positions: function(arrays, idx[positions]), here, rng, RESAMPLE_SAMPLES)
    clean = lambda x: None if np.isnan(x) else float(x)  # noqa: E731
    stats = {"value": clean(value), "ci95": [clean(low), clean(high)], "n": n, "interval": "bootstrap"}
    if not here.independent:
        stats["n_units"] = here.n_units
    return stats
