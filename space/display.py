"""How scores look: column labels and one number format per metric, read from the manifests.

The UI only rounds for display; the API and the downloads keep full precision.
"""
from __future__ import annotations

import pandas as pd

from evaluator.metrics import metric_labels, metric_scale
from evaluator.registry import all_suites
from leaderboard.table import TOTAL
from space.choices import pretty

ROW_KINDS = {"computed": "verified", "reported": "reported (paper)", "partial": "partial run (not ranked)",
             "reference": "reference line (chance / majority)"}


def column_labels() -> dict[str, str]:
    labels = {TOTAL: "Total", "model_name": "Model", "suite": "Suite", "task": "Task", "setting": "Setting",
              "source": "Source", "row_kind": "Kind", "n_items": "Items", "submitted_at": "Submitted",
              "metric": "Metric", **metric_labels()}
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                for tier in group.tiers:
                    labels[f"{group.name}/{tier}"] = pretty(tier, group.label_of(tier))
    return labels


def _scale(metric: str) -> int:
    return metric_scale(metric)


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Shares as percentages (x100), correlations and ratings as they are; labelled columns,
    reported rows marked. Full precision is kept (the Styler rounds for display only)."""
    shown = frame.drop(columns=["total_ci_low", "total_ci_high", "submission_id", "model_link"], errors="ignore").copy()
    ci = frame.get("total_ci_low"), frame.get("total_ci_high")
    # `total` and tier columns are in each row's primary metric; metric columns in their own
    row_scale = frame["metric"].map(lambda m: _scale(m) if isinstance(m, str) else 100) if "metric" in frame else 100
    for column in [c for c in shown.columns if c == TOTAL or "/" in c]:
        shown[column] = pd.to_numeric(shown[column], errors="coerce") * row_scale
    for column in [c for c in shown.columns if c in metric_labels()]:
        shown[column] = pd.to_numeric(shown[column], errors="coerce") * _scale(column)
    if ci[0] is not None and TOTAL in shown:
        scales = row_scale if isinstance(row_scale, pd.Series) else pd.Series(100, index=frame.index)
        shown.insert(shown.columns.get_loc(TOTAL) + 1, "95% CI",
                     [_interval(lo, hi, k) for lo, hi, k in zip(ci[0], ci[1], scales)])
    if "metric" in shown:
        shown["metric"] = shown["metric"].map(metric_labels()).fillna(shown["metric"])
    if "n_items" in shown:  # a reported row whose paper gives no item count: blank, not 0
        shown["n_items"] = pd.to_numeric(shown["n_items"], errors="coerce").where(lambda n: n > 0)
    if "row_kind" in shown:
        shown["row_kind"] = shown["row_kind"].map(ROW_KINDS).fillna(shown["row_kind"])
    if "suite" in shown:
        titles = {name: suite.title for name, suite in all_suites().items()}
        shown["suite"] = shown["suite"].map(titles).fillna(shown["suite"])
    if "submitted_at" in shown:
        shown["submitted_at"] = shown["submitted_at"].astype(str).str.slice(0, 16).str.replace("T", " ")
    # Scores right after the model (visible without scrolling), the descriptive columns after them.
    first = [c for c in ("model_name", "row_kind", "setting", TOTAL, "95% CI") if c in shown.columns]
    last = [c for c in ("source", "suite", "task", "metric", "n_items", "submitted_at") if c in shown.columns]
    middle = [c for c in shown.columns if c not in first and c not in last]
    return shown[first + middle + last].rename(columns=column_labels())


def _interval(low, high, scale: int) -> str:
    if pd.isna(low) or pd.isna(high):
        return ""
    return f"{low * scale:.1f}-{high * scale:.1f}" if scale == 100 else f"{low:.3f}-{high:.3f}"


def display_table(frame: pd.DataFrame):
    """The table as shown: a Styler, so numbers stay numbers (sortable) but show one decimal,
    and reported (paper) rows are greyed and italic so they never read as verified scores."""
    shown = display_frame(frame)
    labels = column_labels()
    score_labels = [labels.get(c, c) for c in frame.columns if c == TOTAL or "/" in c and not c.startswith("total_")]
    score_labels = [c for c in score_labels if c in shown.columns]
    metric_columns = [labels[c] for c in frame.columns if c in metric_labels() and labels[c] in shown.columns]
    kind = labels["row_kind"]

    def mark_reported(row):
        style = "color: #6b7280; font-style: italic" if row.get(kind) == ROW_KINDS["reported"] else ""
        return [style] * len(row)

    # one decimal for percentages; three significant digits where a column holds correlations or ratings
    styler = shown.style
    for column in [c for c in frame.columns if c == TOTAL or "/" in c and not c.startswith("total_")]:
        if labels.get(column, column) not in score_labels:
            continue
        used = frame.loc[frame[column].notna(), "metric"] if "metric" in frame else pd.Series(dtype=object)
        percent = all(_scale(m) == 100 for m in used.dropna())
        styler = styler.format("{:.1f}" if percent else "{:.3g}", subset=[labels.get(column, column)], na_rep="")
    for name in metric_columns:
        percent = _scale(next(k for k, v in metric_labels().items() if v == name)) == 100
        styler = styler.format("{:.1f}" if percent else "{:.3f}", subset=[name], na_rep="")
    if labels["n_items"] in shown.columns:
        styler = styler.format("{:.0f}", subset=[labels["n_items"]], na_rep="")
    if len(shown):
        styler = styler.apply(mark_reported, axis=1)
    return styler
