"""The display schema, as data: how each metric is written (one format per metric, everywhere: the
table, the model and result pages, the status, the plots) and what each column is called (read
from the manifests: tiers, their labels, the metrics).

The UI only rounds for display; the API and the downloads keep full precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evaluator.metrics import get_metric, metric_labels, metric_scale
from evaluator.registry import all_suites
from evaluator.splits import release_tier_columns
from leaderboard.columns import fixed_labels
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL, KIND_REFERENCE, KIND_REPORTED
from space.choices import pretty

ROW_KINDS = {
    KIND_COMPUTED: "verified",
    KIND_REPORTED: "reported (paper)",
    KIND_PARTIAL: "partial run (not ranked)",
    KIND_REFERENCE: "reference line (chance / majority)",
}
SECTION_TITLES = {
    KIND_COMPUTED: "Verified here (ranked)",
    KIND_REFERENCE: "Reference lines: chance and majority (not ranked)",
    KIND_PARTIAL: "Partial runs (not ranked)",
    KIND_REPORTED: "Papers' own numbers (not verified here, not ranked)",
}
# The verified section when none of its rows has a rank (each fails to clear the reference line).
UNRANKED_COMPUTED_TITLE = "Verified here (none ranked yet: none clears the reference line)"
# A tier cell of a partial run with fewer items than this is hidden: its 95% interval is wider than
# +-30 points for a share, too wide to mean anything.
MIN_CELL_ITEMS = 10


@dataclass(frozen=True)
class MetricFormat:
    scale: float  # shown value = stored value x scale
    decimals: int
    unit: str  # appended in prose ("33.3%"), not in table cells


DECIMALS = {"statistic": 3, "mean": 2}  # correlations; ratings (1-5 scales). Shares: 1 decimal in %


def metric_format(metric: str | None) -> MetricFormat:
    """From the metric registry (evaluator/metrics.yaml): shares in percent with one decimal;
    statistics (correlations) with three decimals; means of ratings with two."""
    if metric is None or metric_scale(metric) == 100:
        return MetricFormat(100, 1, "%")
    try:
        kind = get_metric(metric).kind
    except ValueError:
        kind = "mean"
    return MetricFormat(1, DECIMALS.get(kind, 2), "")


def format_value(value, metric: str | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    spec = metric_format(metric)
    return f"{float(value) * spec.scale:.{spec.decimals}f}"


def format_interval(low, high, metric: str | None) -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return ""
    return f"{format_value(low, metric)}–{format_value(high, metric)}"


def metric_label(metric: str) -> str:
    return metric_labels().get(metric, metric)


# The board shows two columns composed of registry columns: the interval (total_ci_low/high) and the
# reference-line verdict (above_reference).
COMPOSED_LABELS = {"ci": "95% CI", "reference": "vs. reference"}


def column_labels() -> dict[str, str]:
    """Header label of every column: the registry's (leaderboard/columns.yaml), the metrics' own
    (metrics.yaml) and each tier's (the manifests)."""
    labels = {**fixed_labels(), **COMPOSED_LABELS, **metric_labels()}
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                for tier in group.tiers:
                    labels[f"{group.name}/{tier}"] = pretty(tier, group.label_of(tier))
            for name in release_tier_columns(task):  # a divided hidden split's parts
                labels[name] = f"{name.split('/', 1)[1].capitalize()} part"
    return labels


def suite_title(name: str) -> str:
    suite = all_suites().get(name)
    return suite.title if suite else name
