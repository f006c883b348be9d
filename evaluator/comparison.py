"""Paired comparison of two results on the same items: is row A really better than row B?

Two rows' totals each carry an interval, but whether their difference is real is a question about
the items both answered: a paired test is far more sensitive than two overlapping intervals. The
scorer recomputes both rows' per-item outcomes of the primary metric (they never leave this
module), takes the items both rows cover, and returns the difference with its interval over the
suite's units and a sign-flip p-value (evaluator/statistics.py). On a hidden split the figures are
rounded to the split's noise level like any released score, so two uploads that differ in one
answer learn nothing about that item.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluator.metrics import get_metric
from evaluator.scoring import BOOTSTRAP_SEED, item_arrays, item_units
from evaluator.statistics import PairedComparison, paired_comparison
from evaluator.suite import Split, Task


class ComparisonError(ValueError):
    pass


class RowComparison(PairedComparison, total=False):
    """compare_answers: the paired comparison of two rows, with what it was over."""

    metric: str
    unit: str  # the level resampled
    split_items: int
    release: dict[str, float | str]  # a hidden split's: the step its numbers were rounded to


def compare_answers(
    task: Task, answers_a: dict[str, Any], answers_b: dict[str, Any]
) -> RowComparison:
    if task.judge:
        raise ComparisonError(
            f"{task.key} is scored by a judge model; its rows are compared by their intervals only"
        )
    spec = get_metric(task.metric)
    if spec.kind == "statistic":
        raise ComparisonError(
            f"{task.key}'s metric {task.metric!r} is not a mean over items: no paired comparison"
        )
    split = task.load_split()
    common = [item for item in split.items if item.id in answers_a and item.id in answers_b]
    if not common:
        raise ComparisonError("the two rows share no items")
    shared = Split(split.name, common)
    field = spec.reads[0]
    a = np.asarray(
        item_arrays(task, shared, {i.id: answers_a[i.id] for i in common})[field], dtype=float
    )
    b = np.asarray(
        item_arrays(task, shared, {i.id: answers_b[i.id] for i in common})[field], dtype=float
    )
    keep = ~(np.isnan(a) | np.isnan(b))
    kept = Split(split.name, [item for item, k in zip(common, keep) if k])
    units = item_units(task, kept)
    result: RowComparison = {
        **paired_comparison(a[keep], b[keep], units, np.random.default_rng(BOOTSTRAP_SEED)),
        "metric": task.metric,
        "unit": units.name,  # the level resampled (nested units: the outermost)
        "split_items": len(split.items),
    }
    return _released(task, result) if task.suite.split_hidden else result


def _released(task: Task, result: RowComparison) -> RowComparison:
    from evaluator.release import noise_step, round_to

    step = noise_step(result["n"], task.metric)
    rounded = result.copy()
    rounded["difference"] = round_to(result["difference"], step)
    rounded["a_mean"] = round_to(result["a_mean"], step)
    rounded["b_mean"] = round_to(result["b_mean"], step)
    rounded["ci95"] = [round_to(v, step) for v in result["ci95"]]
    rounded["p_value"] = None if result["p_value"] is None else round(result["p_value"], 2)
    rounded["release"] = {"step": step, "note": "hidden split: rounded to its noise level"}
    return rounded
