"""Scoring: per-item correctness pooled into micro-averaged metrics per tier, with 95% CIs.

Only aggregates leave this module; the per-item correctness stays here, because together with a
submitter's own answers it would reveal the hidden gold labels.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Required, TypedDict

import numpy as np

from evaluator.backends.base import BackendError
from evaluator.judge import Judge, judge_unavailable_reason
from evaluator.metrics import available, metric_stats, metric_value
from evaluator.predictions import iter_lines, read_predictions
from evaluator.splits import PRIVATE_PART, PUBLIC_PART, SplitNotInstalled, private_item_ids
from evaluator.statistics import MetricStats, Units, crossed_units, nested_units
from evaluator.suite import Split, SplitInfo, Task

SCORER_VERSION = "1.0.0"
BOOTSTRAP_SEED = 20251122


class SplitFields(TypedDict):
    """split_provenance(): what a result records of the split it was scored on."""

    split: SplitInfo
    suite_version: str
    scorer_version: str


TierCells = dict[str, dict[str, dict[str, MetricStats]]]  # tier group -> tier -> metric -> stats


class PrivatePart(TypedDict):
    """Scores.private: the private part's primary metric, kept by the service, never published."""

    metric: str
    total: dict[str, MetricStats]
    n_items: int


class Scores(TypedDict, total=False):
    """The scorer's result: aggregates only, never an item's. score_answers gives the required
    keys (and the optional ones its task calls for); score_predictions_file adds the split's fields
    and the time taken; evaluator/release.py's released copy of a hidden split's adds `release`."""

    metric: Required[str]  # the primary metric
    interval_unit: str  # what the bootstrap resamples (items, or the task's units)
    total: Required[dict[str, MetricStats]]  # metric -> {value, ci95, n} on all items
    # tier group -> tier -> the primary metric (and any the task reports per tier) -> stats
    tiers: Required[TierCells]
    n_items: Required[int]
    scoring_provenance: dict[str, Any]  # a judge-scored task: its judge
    parts: dict[str, int]  # a split with a private part: the items of each part
    private: PrivatePart  # the private part's primary metric: kept, never published
    split: SplitInfo
    suite_version: str
    scorer_version: str
    scoring_seconds: float
    release: dict[str, Any]  # how a hidden split's numbers were released


def item_arrays(
    task: Task, split: Split, answers: Mapping[str, object], judge: Judge | None = None
) -> dict[str, np.ndarray]:
    """Per-item arrays the metrics read (the task's hook, or exact-match correctness). A
    judge-scored task's hook gets the judge the caller resolved (evaluator/judge.py)."""
    if task.judge:
        if judge is None:
            raise BackendError(
                judge_unavailable_reason(task)
                or f"{task.key} is scored by a judge and none was given"
            )
        return task.hooks.item_arrays(task, split.items, answers, judge)
    return task.hooks.item_arrays(task, split.items, answers)


def item_units(task: Task, split: Split) -> Units:
    """The independent units of the split's items, as the task declares them (else: the items);
    for nested units (`within`), the outermost level the items name; for crossed units
    (`crossed_with`), both."""
    if not task.bootstrap_unit:
        return Units.of(None, len(split.items))
    missing = [item.id for item in split.items if item.unit is None]
    if missing:
        raise ValueError(
            f"{task.key} declares bootstrap_unit {task.bootstrap_unit.get('name')!r} but item "
            f"{missing[0]!r} (and {len(missing) - 1} more) has none"
        )
    levels = tuple(
        level for level in (task.bootstrap_unit["name"], task.bootstrap_unit.get("within")) if level
    )
    labels = [item.unit for item in split.items if item.unit is not None]
    crossed = task.bootstrap_unit.get("crossed_with")
    try:
        if crossed:  # two crossed units (prompt x user): the two-way variance
            return crossed_units(labels, (task.bootstrap_unit["name"], crossed))
        return nested_units(labels, levels)
    except ValueError as exc:
        raise ValueError(f"{task.key}: {exc}") from None


# What one cell of a result holds: a metric over some items (metric_stats, with its interval; or
# metric_value, the point and count alone)
CellStats = Callable[[str, Any, np.ndarray], MetricStats]


def _aggregate(
    task: Task, split: Split, arrays, idx: np.ndarray, stats: CellStats
) -> tuple[dict[str, MetricStats], TierCells]:
    """Every metric on the items at `idx`, and the primary metric on every tier of them."""
    total = {m: stats(m, arrays, idx) for m in task.metrics if available(m, arrays)}
    tiers: TierCells = {}
    for group in task.tier_groups:
        position = {tier: i for i, tier in enumerate(group.tiers)}  # a dict lookup per item
        name = group.name
        codes = np.fromiter(
            (position[split.items[i].tiers[name]] for i in idx), dtype=np.int32, count=len(idx)
        )
        sorting = np.argsort(codes, kind="stable")
        order = idx[sorting]
        bounds = np.searchsorted(codes[sorting], np.arange(len(group.tiers) + 1))
        tiers[name] = {
            tier: {task.metric: stats(task.metric, arrays, order[bounds[i] : bounds[i + 1]])}
            for i, tier in enumerate(group.tiers)
            # a partial run may not reach every tier: no column rather than an empty one
            if bounds[i + 1] > bounds[i]
        }
    return total, tiers


def _with_intervals(units: Units) -> CellStats:
    """metric_stats over `units`, drawing from one generator seeded BOOTSTRAP_SEED: the cells of a
    result take their draws in the order _aggregate visits them (what makes a score reproducible)."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    return lambda metric, arrays, idx: metric_stats(metric, arrays, idx, rng, units)


def private_part_ids(task: Task) -> frozenset[str]:
    """The private part's ids (divided over the whole installed split, also for a partial run's
    subset). A split not installed here (given directly: the CLI on a folder) has none: the
    division is an installation's, salted with its secret."""
    if not task.suite.split_hidden:
        return frozenset()
    try:
        return private_item_ids(task, task.load_split().items)
    except SplitNotInstalled:
        return frozenset()


def _in_private_part(task: Task, split: Split) -> np.ndarray:
    """Per item of the split: whether it is in the private part (none on an open split)."""
    private = private_part_ids(task)
    return np.fromiter(
        (item.id in private for item in split.items), dtype=bool, count=len(split.items)
    )


def score_values(task: Task, split: Split, answers: Mapping[str, object]) -> Scores:
    """score_answers' values and item counts, total and per tier, without intervals (no resampling:
    a fraction of the cost): for answer sets whose intervals nobody reads, such as the reference
    lines' constant answers (evaluator/baselines.py), of which only the best one's interval is
    shown. On a hidden split with a private part: the public part, as score_answers."""
    if task.judge:
        raise ValueError(f"{task.key} is scored by a judge: score_values does not call one")
    arrays = item_arrays(task, split, answers)
    live = np.flatnonzero(~_in_private_part(task, split))
    total, tiers = _aggregate(task, split, arrays, live, metric_value)
    return {
        "metric": task.metric,
        "interval_unit": item_units(task, split).name,
        "total": total,
        "tiers": tiers,
        "n_items": len(live),
    }


def score_answers(
    task: Task, split: Split, answers: Mapping[str, object], judge: Judge | None = None
) -> Scores:
    """Aggregate metrics for a complete, validated set of answers: every metric on the total,
    the primary metric on every tier. `judge`: the judge model of a judge-scored task.

    On a hidden split with a private part (evaluator/splits.py private_item_ids) the total and
    tiers are of the public part only, and `private` holds the primary metric on the private part:
    kept by the service, released only when the operator names a release."""
    judge = judge.scoring() if judge else None  # a tally of this scoring's judge replies
    arrays = item_arrays(task, split, answers, judge)
    units = item_units(task, split)
    in_private = _in_private_part(task, split)
    live = np.flatnonzero(~in_private)
    total, tiers = _aggregate(task, split, arrays, live, _with_intervals(units))
    result: Scores = {
        "metric": task.metric,
        "interval_unit": units.name,
        "total": total,
        "tiers": tiers,
        "n_items": len(live),
    }
    if judge and task.judge:
        # with how many judge replies were read and how many gave no verdict the rule could read
        result["scoring_provenance"] = {"judge": judge.provenance(task), **judge.counts}
    if in_private.any():
        held = np.flatnonzero(in_private)
        held_total, _ = _aggregate(task, split, arrays, held, _with_intervals(units))
        result["parts"] = {PUBLIC_PART: len(live), PRIVATE_PART: len(held)}
        result["private"] = {
            "metric": task.metric,
            "total": {task.metric: held_total[task.metric]} if task.metric in held_total else {},
            "n_items": len(held),
        }
    return result


def split_provenance(task: Task, scored: Split, full: Split | None = None) -> SplitFields:
    """What a result records of the split it was scored on (the one place these fields are made):
    the items scored (`scored`: the whole split, or a model run's subset) and the whole split's hash."""
    full = full or scored
    return {
        "split": {
            "name": scored.name,
            "sha256": full.sha256,
            "n_items": len(scored.items),
            "full_n_items": len(full.items),
        },
        "suite_version": task.suite.version,
        "scorer_version": SCORER_VERSION,
    }


def score_predictions_file(
    task: Task, path: str | Path, filename: str | None = None, judge: Judge | None = None
) -> Scores:
    """Validate a predictions file and score it: the one entry point the CLI and the workers share."""
    split = task.load_split()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        answers = read_predictions(iter_lines(stream), task, split, filename or str(path))
    result = score_answers(task, split, answers, judge)
    result.update(split_provenance(task, split))
    result["scoring_seconds"] = time.perf_counter() - started
    return result
