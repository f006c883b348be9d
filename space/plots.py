"""Plots as SVG images (matplotlib, text kept as text so a reader can copy it and a test can read the
series): per-tier bars with 95% intervals for chosen results, the setting comparison of one task,
and score against model size. Numbers use the display schema's format per metric.
"""

from __future__ import annotations

import functools
import io
import math
import threading

import matplotlib

matplotlib.use("Agg")  # no display on a server
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from space.display import column_labels, metric_format, metric_label  # noqa: E402

plt.rcParams.update(
    {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}
)
MAX_SERIES = 8  # bars per group beyond this stop being readable
# pyplot's figure registry and mathtext's parser are not thread-safe: plots requested together (the
# board's three images load at once, in the server's thread pool) broke each other's tick labels
_DRAWING = threading.RLock()


def one_at_a_time(draw):
    """Draws under the lock, with mathtext off: model names and settings are users' text, and a name
    like `m$\\frac$` would otherwise be parsed as TeX (and fail the whole image)."""

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with _DRAWING, plt.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return drawn


def _svg(figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="svg")
    plt.close(figure)
    return buffer.getvalue()


def _empty(message: str) -> bytes:
    figure, axis = plt.subplots(figsize=(6, 1.2))
    axis.axis("off")
    axis.text(0.5, 0.5, message, ha="center", va="center")
    return _svg(figure)


def _errors(values, lows, highs, scale):
    """matplotlib's yerr (distances below and above), 0 where a row has no interval."""
    below = [
        (v - lo) * scale if not (pd.isna(lo) or pd.isna(v)) else 0 for v, lo in zip(values, lows)
    ]
    above = [
        (hi - v) * scale if not (pd.isna(hi) or pd.isna(v)) else 0 for v, hi in zip(values, highs)
    ]
    return [below, above]


@one_at_a_time
def grouped_bars(
    groups: list[str],
    series: dict[str, list[tuple[float, float, float]]],
    metric: str,
    title: str,
    xlabel: str = "",
) -> bytes:
    """Bars per group for each series (value, low, high), with 95% interval whiskers."""
    if not series or not groups:
        return _empty("No results to plot for this choice.")
    spec = metric_format(metric)
    names = list(series)[:MAX_SERIES]
    width = 0.8 / len(names)
    figure, axis = plt.subplots(figsize=(max(6, 0.9 * len(groups) * max(1, len(names) / 2)), 3.6))
    for i, name in enumerate(names):
        points = series[name]
        values = [p[0] for p in points]
        positions = [g + (i - (len(names) - 1) / 2) * width for g in range(len(groups))]
        shown = [v * spec.scale if not pd.isna(v) else 0 for v in values]
        axis.bar(
            positions,
            shown,
            width,
            label=name,
            yerr=_errors(values, [p[1] for p in points], [p[2] for p in points], spec.scale),
            capsize=2,
        )
    axis.set_xticks(
        range(len(groups)),
        groups,
        rotation=30 if len(groups) > 4 else 0,
        ha="right" if len(groups) > 4 else "center",
    )
    axis.set_ylabel(f"{metric_label(metric)}{' (%)' if spec.scale == 100 else ''}")
    axis.set_xlabel(xlabel)
    axis.set_title(title)
    axis.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return _svg(figure)


@one_at_a_time
def tier_bars(
    board: pd.DataFrame, cells: pd.DataFrame, submission_ids: list[str], title: str
) -> bytes:
    """Per-tier bars (with the total) for the chosen results of one task's board."""
    chosen = board[board["submission_id"].isin(submission_ids)].head(MAX_SERIES)
    if chosen.empty:
        return _empty("Choose results to compare.")
    labels = column_labels()
    columns = ["total", *[c for c in board.columns if "/" in c]]
    stats = cells.set_index(["submission_id", "column"])
    series = {}
    for _, row in chosen.iterrows():
        points = []
        for column in columns:
            key = (row["submission_id"], column)
            low, high = (
                (stats.loc[key, "ci_low"], stats.loc[key, "ci_high"])
                if key in stats.index
                else (math.nan, math.nan)
            )
            points.append((row.get(column, math.nan), low, high))
        series[_series_name(row)] = points
    metric = chosen["metric"].iloc[0]
    return grouped_bars([labels.get(c, c) for c in columns], series, metric, title)


def _series_name(row) -> str:
    return f"{row['model_name']} ({row['setting']})"


@one_at_a_time
def setting_comparison(board: pd.DataFrame, title: str) -> bytes:
    """One group per model, one bar per setting (the totals with their intervals): what a persona,
    retrieval or nothing does for each model (PersonaFeedback's Figure 3 kind)."""
    rows = board[board["total"].notna()]
    if rows.empty:
        return _empty("No results to plot for this task.")
    settings = list(dict.fromkeys(rows["setting"]))
    models = list(dict.fromkeys(rows["model_name"]))[:12]
    series = {}
    for setting in settings:
        points = []
        for model in models:
            found = rows[(rows["model_name"] == model) & (rows["setting"] == setting)]
            if found.empty:
                points.append((math.nan, math.nan, math.nan))
            else:
                best = found.iloc[0]
                points.append(
                    (
                        best["total"],
                        best.get("total_ci_low", math.nan),
                        best.get("total_ci_high", math.nan),
                    )
                )
        series[setting] = points
    return grouped_bars(models, series, rows["metric"].iloc[0], title, xlabel="model")


@one_at_a_time
def score_vs_size(board: pd.DataFrame, title: str) -> bytes:
    """Total against parameter count (log scale), one point per result with its interval; results
    whose size is unknown (uploaded predictions, papers) are left out and counted in the caption."""
    known = (
        board[board["parameters"].notna() & board["total"].notna()]
        if "parameters" in board
        else board.iloc[0:0]
    )
    if known.empty:
        return _empty("No result with a known model size for this choice.")
    metric = known["metric"].iloc[0]
    spec = metric_format(metric)
    figure, axis = plt.subplots(figsize=(6, 3.6))
    for setting, rows in known.groupby("setting", sort=False):
        values = rows["total"].astype(float)
        axis.errorbar(
            rows["parameters"].astype(float),
            values * spec.scale,
            fmt="o",
            capsize=2,
            label=str(setting),
            yerr=_errors(values, rows["total_ci_low"], rows["total_ci_high"], spec.scale),
        )
        for x, y, name in zip(
            rows["parameters"].astype(float), values * spec.scale, rows["model_name"]
        ):
            axis.annotate(str(name), (x, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
    axis.set_xscale("log")
    axis.set_xlabel("parameters (log scale)")
    axis.set_ylabel(f"{metric_label(metric)}{' (%)' if spec.scale == 100 else ''}")
    left_out = len(board) - len(known)
    axis.set_title(title + (f"  ({left_out} of unknown size not shown)" if left_out else ""))
    axis.legend(title="setting", fontsize=8, frameon=False)
    return _svg(figure)
