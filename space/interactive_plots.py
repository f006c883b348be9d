"""Interactive plots (Plotly, drawn in the browser from figure JSON the app serves; plotly.min.js comes
from the plotly package and is served by the app, so it works offline).

Readable at 1,400 and at 390 px: bars are horizontal (labels never rotated, Plotly's automargin keeps
them whole), one figure per tier group (PrefEval's 3 forms one figure, its 20 topics another, not
23 bars in a row), a group of more than TIERS_PER_FIGURE tiers cut into pieces ("Topic (1 of 2)",
each with every series in its colour and one value axis), the legend below the plot, and every
series named by a distinct label (two GPT-4.1 rows from Tables 3 and 7 are two legend entries,
space/labels.py). Values follow the display schema (percent for shares); a partial run's cell
under the minimum item count is left out, as in the table. Hovering a bar gives its value, 95% interval
and item count.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from evaluator.registry import all_suites
from leaderboard.columns import TOTAL_CI_HIGH, TOTAL_CI_LOW
from leaderboard.table import TOTAL
from space.display import MIN_CELL_ITEMS, column_labels, metric_format, metric_label
from space.labels import row_labels

MAX_SERIES = 8
# tiers (bar groups) in one figure: PrefEval's 20 topics as one figure are 20 x 3 bars, taller than a
# phone's screen, so a longer group is cut into pieces of about equal size (20 -> 10 + 10)
TIERS_PER_FIGURE = 12
BAR_PX = 18  # height of one bar; a figure's height follows its bars
LINE_PX = 16  # height of one line of a tick label
# a longer tier label is wrapped at spaces: "Professional work location style" on one line leaves a
# 390 px phone about 100 px for the bars
WRAP_AT = 18
CHAR_PX = 6.5  # about the width of one character of a 12 px label (the pieces' shared left margin)
PALETTE = [
    "#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#0ea5e9", "#a855f7", "#84cc16", "#f97316",
    "#64748b", "#ec4899", "#14b8a6", "#eab308",
]  # fmt: skip


def plotly_js_path() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _layout(
    title: str,
    axis_title: str,
    categories: int,
    series: int,
    note: str = "",
    lines: int = 1,
    **extra,
) -> dict:
    """`lines`: the most lines a category's label takes (a wrapped label needs room beside its bars)."""
    per_category = max(max(1, series) * BAR_PX, lines * LINE_PX)
    height = 140 + max(1, categories) * per_category + 30 * math.ceil(series / 2)
    return {
        # the metric goes in the title, not an axis title (which the legend below would overlap)
        "title": {
            "text": f"{title} · {axis_title}" + (f"<br><sup>{note}</sup>" if note else ""),
            "font": {"size": 14},
            "x": 0,
            "xanchor": "left",
        },
        "barmode": "group",
        "height": min(height, 2400),
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "xaxis": {"automargin": True, "zeroline": True},
        "yaxis": {"automargin": True, "autorange": "reversed", "tickfont": {"size": 12}},
        "legend": {"orientation": "h", "y": -0.08, "yanchor": "top", "x": 0, "font": {"size": 12}},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        **extra,
    }


def _axis_title(metric: str | None) -> str:
    spec = metric_format(metric)
    return f"{metric_label(metric or '')}{' (%)' if spec.scale == 100 else ''}"


def _bar(name: str, labels: list[str], points: list[tuple], scale: float, colour: str) -> dict:
    """One horizontal bar series: points are (value, low, high, n) per label (None: left out)."""
    xs, lows, highs, hover = [], [], [], []
    for value, low, high, n in points:
        value = _number(value)
        xs.append(None if value is None else value * scale)
        low, high = _number(low), _number(high)
        interval = ""
        if value is not None and low is not None and high is not None:
            lows.append((value - low) * scale)
            highs.append((high - value) * scale)
            interval = f"<br>95% CI {low * scale:.1f}–{high * scale:.1f}"
        else:
            lows.append(0)
            highs.append(0)
        hover.append(f"{interval}<br>{int(n)} items" if n else interval)
    return {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "y": labels,
        "x": xs,
        "marker": {"color": colour},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": highs,
            "arrayminus": lows,
            "thickness": 1.2,
            "width": 3,
        },
        "customdata": hover,
        "hovertemplate": "%{y}: <b>%{x:.1f}</b>%{customdata}<extra>" + name + "</extra>",
    }


def _stats(cells: pd.DataFrame) -> dict:
    return {
        (s, c): (lo, hi, n)
        for s, c, lo, hi, n in zip(
            cells["submission_id"], cells["column"], cells["ci_low"], cells["ci_high"], cells["n"]
        )
    }


def tier_figures(
    board: pd.DataFrame, cells: pd.DataFrame, submission_ids: list[str], title: str
) -> list[dict]:
    """Per tier group one figure, a group of more than TIERS_PER_FIGURE tiers in pieces (pieces()):
    the chosen results' scores per tier (and the total, in the first)."""
    chosen = board[board["submission_id"].isin(submission_ids)].head(MAX_SERIES)
    if chosen.empty:
        return []
    labels, names = column_labels(), row_labels(chosen)
    stats = _stats(cells)
    metric = chosen["metric"].dropna().iloc[0] if chosen["metric"].notna().any() else None
    scale = metric_format(metric).scale
    columns = [c for c in board.columns if "/" in c]
    groups: dict[str, list[str]] = {}
    for column in columns:
        groups.setdefault(column.split("/", 1)[0], []).append(column)
    group_titles = _group_titles(chosen)
    figures = []
    for i, (group, tier_columns) in enumerate(list(groups.items()) or [("", [])]):
        shown = ([TOTAL] if i == 0 else []) + tier_columns  # the total goes with the first group
        data = []
        for j, (_, row) in enumerate(chosen.iterrows()):
            points = []
            for column in shown:
                low, high, n = stats.get((row["submission_id"], column), (None, None, 0))
                value = row.get(column)
                if row.get("row_kind") == "partial" and n and n < MIN_CELL_ITEMS:
                    value = None  # too few items to show, as in the table
                points.append((value, low, high, n))
            ticks = [wrap(labels.get(c, c)) if c != TOTAL else "Total" for c in shown]
            data.append(
                _bar(names[str(row["submission_id"])], ticks, points, scale, PALETTE[j % 12])
            )
        # tiers no chosen result has a value for are left out; a group with none is no figure
        keep = [k for k in range(len(shown)) if any(d["x"][k] is not None for d in data)]
        if not keep:
            continue
        # short: the page above names the suite and task, and a phone has 390 px for it
        heading = group_titles.get(group, group) if group else "Total"
        parts = pieces(keep)
        lines = [data[0]["y"][k].split("<br>") for k in keep]
        for p, part in enumerate(parts):
            piece = [_slice(d, part) for d in data]  # every series in each piece: one legend
            name = f"{heading} ({p + 1} of {len(parts)})" if len(parts) > 1 else heading
            layout = _layout(
                name,
                _axis_title(metric),
                len(part),
                len(piece),
                lines=max(len(lines[keep.index(k)]) for k in part),
            )
            if len(parts) > 1:
                # the pieces of a group share the value axis and the left margin (the longest
                # label's; automargin only widens it), so their bars line up and read alike
                layout["xaxis"]["range"] = _span(data, keep)
                longest = max(len(line) for label in lines for line in label)
                layout["margin"]["l"] = 10 + math.ceil(CHAR_PX * longest)
            figures.append({"data": piece, "layout": layout})
    return figures


def wrap(label: str, width: int = WRAP_AT) -> str:
    """`label` in lines of at most `width` characters, broken at spaces (a longer word stays whole),
    joined by Plotly's <br>."""
    lines: list[str] = []
    for word in label.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def pieces(items: list, limit: int = TIERS_PER_FIGURE) -> list[list]:
    """`items` in order, cut into the fewest pieces of at most `limit` whose sizes differ by at most
    one (45 -> 12, 11, 11, 11; 13 -> 7, 6 rather than 12 and a lone 1)."""
    count = max(1, math.ceil(len(items) / limit))
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for k in range(count):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def _slice(trace: dict, keep: list[int]) -> dict:
    """A bar series with only the categories at `keep` (its name and colour unchanged)."""
    trace = {**trace, "error_x": dict(trace["error_x"])}
    for key in ("y", "x", "customdata"):
        trace[key] = [trace[key][k] for k in keep]
    for key in ("array", "arrayminus"):
        trace["error_x"][key] = [trace["error_x"][key][k] for k in keep]
    return trace


def _span(data: list[dict], keep: list[int]) -> list[float]:
    """The value axis's range over every bar and interval at `keep`, zero included, 5% spare."""
    ends = [0.0]
    for d in data:
        for k in keep:
            if d["x"][k] is not None:
                ends += [
                    d["x"][k],
                    d["x"][k] - d["error_x"]["arrayminus"][k],
                    d["x"][k] + d["error_x"]["array"][k],
                ]
    low, high = min(ends), max(ends)
    spare = 0.05 * ((high - low) or 1.0)
    return [low - spare if low < 0 else 0.0, high + spare]


def _group_titles(board: pd.DataFrame) -> dict[str, str]:
    titles: dict[str, str] = {}
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                titles.setdefault(group.name, group.label)
    return titles


def setting_figure(board: pd.DataFrame, title: str, limit: int = 15) -> list[dict]:
    """Totals per model (rows) and setting (series): what a persona, retrieval or nothing does for
    each model. A name that comes from several sources (a paper's two tables) is split by source."""
    rows = board[board["total"].notna()]
    if rows.empty:
        return []
    source = rows["source"].astype(str).str.removeprefix("reported (paper), ")
    several = rows.groupby("model_name")["source"].transform("nunique") > 1
    model = rows["model_name"].astype(str).where(~several, rows["model_name"] + " (" + source + ")")
    rows = rows.assign(_model=model)
    models = list(dict.fromkeys(rows["_model"]))[:limit]
    metric = rows["metric"].dropna().iloc[0] if rows["metric"].notna().any() else None
    scale = metric_format(metric).scale
    data = []
    for j, setting in enumerate(dict.fromkeys(rows["setting"])):
        points = []
        for name in models:
            found = rows[(rows["_model"] == name) & (rows["setting"] == setting)]
            if found.empty:
                points.append((None, None, None, 0))
            else:
                best = found.iloc[0]
                points.append(
                    (
                        best["total"],
                        best.get(TOTAL_CI_LOW),
                        best.get(TOTAL_CI_HIGH),
                        best.get("n_items"),
                    )
                )
        data.append(_bar(str(setting), models, points, scale, PALETTE[j % 12]))
    shown = (
        f"the first {limit} of {rows['_model'].nunique()} models"
        if len(models) < rows["_model"].nunique()
        else ""
    )
    return [
        {
            "data": data,
            "layout": _layout(title, _axis_title(metric), len(models), len(data), note=shown),
        }
    ]


def size_figure(board: pd.DataFrame, title: str) -> list[dict]:
    """Total against parameter count (log scale), one point per result with its interval."""
    known = (
        board[board["parameters"].notna() & board["total"].notna()]
        if "parameters" in board
        else board.iloc[0:0]
    )
    if known.empty:
        return []
    metric = known["metric"].dropna().iloc[0]
    scale = metric_format(metric).scale
    names = row_labels(known)
    data = []
    for j, (setting, rows) in enumerate(known.groupby("setting", sort=False)):
        values = rows["total"].astype(float)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": str(setting),
                "x": rows["parameters"].astype(float).tolist(),
                "y": (values * scale).tolist(),
                "text": [names[str(s)] for s in rows["submission_id"]],
                "marker": {"size": 9, "color": PALETTE[j % 12]},
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": ((rows[TOTAL_CI_HIGH].astype(float) - values) * scale).tolist(),
                    "arrayminus": ((values - rows[TOTAL_CI_LOW].astype(float)) * scale).tolist(),
                },
                "hovertemplate": "%{text}<br>%{x:.3s} parameters: <b>%{y:.1f}</b><extra></extra>",
            }
        )
    left_out = len(board) - len(known)
    note = f"{left_out} of unknown size not shown" if left_out else ""
    layout = _layout(title, _axis_title(metric), 0, len(data), note=note)
    layout.update(
        height=380,
        # one tick per power of ten: the 2 and 5 between them crowd a phone's axis
        xaxis={
            "title": {"text": "parameters (log scale)"},
            "type": "log",
            "dtick": 1,
            "automargin": True,
        },
        yaxis={"title": {"text": _axis_title(metric)}, "automargin": True},
    )
    return [{"data": data, "layout": layout}]


# Draws every `.pb-plot[data-src]` under a root: fetches its figures (JSON) and plots each with
# Plotly (loaded once from the app). Used by the Leaderboard tab (re-run as its HTML changes) and
# by the model page.
DRAW_JS = """
window.pbDrawPlots = window.pbDrawPlots || (async (root) => {
  if (!window.Plotly) {
    await new Promise((done, fail) => {
      const old = document.querySelector('script[data-pb-plotly]');
      if (old) { old.addEventListener('load', done); if (window.Plotly) done(); return; }
      const s = document.createElement('script');
      s.src = '/plots/plotly.min.js'; s.dataset.pbPlotly = '1';
      s.onload = done; s.onerror = fail; document.head.appendChild(s);
    });
  }
  for (const box of root.querySelectorAll('.pb-plot[data-src]:not([data-drawn])')) {
    box.dataset.drawn = '1';
    const answer = await fetch(box.dataset.src);
    const figures = answer.ok ? (await answer.json()).figures : [];
    box.innerHTML = '';
    if (!figures.length) {
      box.innerHTML = '<p class="pb-plot-empty"><em>' + (box.dataset.empty || 'Nothing to plot.') + '</em></p>';
    }
    for (const figure of figures) {
      const div = document.createElement('div');
      div.className = 'pb-figure';
      box.appendChild(div);
      await window.Plotly.newPlot(div, figure.data, figure.layout,
        {responsive: true, displaylogo: false, modeBarButtonsToRemove: ['lasso2d', 'select2d']});
    }
    box.dataset.done = '1';
  }
});
"""
# For gr.HTML(js_on_load=...): draw now and whenever the component's HTML is replaced.
TAB_JS = (
    DRAW_JS
    + """
window.pbDrawPlots(element);
new MutationObserver(() => window.pbDrawPlots(element)).observe(element, {childList: true, subtree: true});
"""
)
