"""Reference lines for multiple-choice tasks: uniform chance and the best constant answer on the split.

A number means little without them: PrefEval's official letter order puts the gold on C for 29 %
of items, so "always C" scores 29.3 % where uniform chance is 25 %. Both lines are computed by the
scorer itself from constant answer sets, so they use exactly the metric the rows use:
- uniform chance: the mean over labels of the score of answering that label everywhere, which (by
  linearity) is the expected score of answering uniformly at random;
- majority: the best of those constant scores (the label is named; every submitter can learn it by
  uploading four constant files, so naming it reveals nothing new about the gold).
Only mean metrics are averaged; a task whose constant answers do not score (no label answers) has
no reference line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from evaluator.suite import Split, Task

if TYPE_CHECKING:
    from evaluator.scoring import Scores, TierCells
    from evaluator.statistics import MetricStats


class LineMetrics(TypedDict):
    """A reference line's numbers, shaped as a record's `metrics` (the primary metric only)."""

    metric: str
    total: dict[str, MetricStats]
    tiers: TierCells


class ReferenceLine(TypedDict):
    """One reference line of a task (reference_lines), the board's row of it made from it
    (leaderboard/reference.py)."""

    kind: Literal["chance", "majority"]
    label: str | None  # majority: the constant answer
    n_items: int
    metrics: LineMetrics


def _constant(split: Split, label: str) -> dict[str, str]:
    """The answers of a model that answers `label` to every item."""
    return {item.id: label for item in split.items}


def _value(block: Mapping[str, MetricStats], metric: str) -> float | None:
    stats = block.get(metric)
    return None if stats is None else stats.get("value")


def _mean_line(scores: list[Scores], metric: str) -> LineMetrics:
    """The average of several constant answers' results, total and per tier (no interval: an expectation)."""
    first = scores[0]

    def average(blocks: list[Mapping[str, MetricStats]]) -> MetricStats | None:
        values = [_value(b, metric) for b in blocks]
        known = [v for v in values if v is not None]
        if len(known) < len(values):
            return None
        return {
            "value": sum(known) / len(known),
            "ci95": [None, None],
            "n": blocks[0][metric]["n"],
        }

    total: dict[str, MetricStats] = {}
    if (line := average([s["total"] for s in scores])) is not None:
        total[metric] = line
    tiers: TierCells = {}
    for group, by_tier in first["tiers"].items():
        for tier in by_tier:
            line = average([s["tiers"][group][tier] for s in scores])
            if line is not None:
                tiers.setdefault(group, {})[tier] = {metric: line}
    return {"metric": metric, "total": total, "tiers": tiers}


def has_reference_lines(task: Task) -> bool:
    """Whether the task is of the kind that has the lines (a label task scored without a judge),
    decided from its config alone: the split is not read."""
    return task.answer_kind == "label" and len(task.answer_labels) >= 2 and not task.judge


def reference_lines(task: Task) -> list[ReferenceLine]:
    """[{"kind": "chance"|"majority", "label": ..., "metrics": {...}, "n_items": ...}] for a label task
    whose split is available; [] otherwise."""
    if not has_reference_lines(task) or not task.split_available():
        return []
    from evaluator.scoring import score_answers, score_values

    split = task.load_split()
    # each label's constant answers without intervals: the chance line is their average (no
    # interval), the majority line the best of them, scored again in full below
    by_label = {
        label: score_values(task, split, _constant(split, label)) for label in task.answer_labels
    }
    metric = task.metric
    scored = {
        label: result
        for label, result in by_label.items()
        if _value(result["total"], metric) is not None
    }
    if not scored:
        return []
    n_items = next(iter(scored.values()))["n_items"]
    best = max(
        scored,
        key=lambda label: (
            _value(scored[label]["total"], metric),
            -task.answer_labels.index(label),
        ),
    )
    # the one constant answer set whose interval is shown: scored in full, as a submission would be
    majority = score_answers(task, split, _constant(split, best))
    return [
        {
            "kind": "chance",
            "label": None,
            "n_items": n_items,
            "metrics": _mean_line(list(scored.values()), metric),
        },
        {
            "kind": "majority",
            "label": best,
            "n_items": n_items,
            "metrics": {
                "metric": metric,
                "total": {metric: majority["total"][metric]},
                "tiers": {
                    g: {t: {metric: s[metric]} for t, s in by_tier.items() if metric in s}
                    for g, by_tier in majority["tiers"].items()
                },
            },
        },
    ]
