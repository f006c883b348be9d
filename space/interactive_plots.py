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

Every plot draws the board's reference line (the best of chance and majority, as the table's
"vs." column): a vertical line with its name on a bar plot of totals, a horizontal one against model
size, and in the per-tier bars a mark per tier at that tier's own line. The title sits below the
band Plotly's mode bar (its toolbar, top right) takes, so the toolbar never covers it, at 390 px
neither. The backgrounds are transparent and the text takes the page's colour (DRAW_JS), so a plot
reads on a dark page (Gradio follows the OS's dark mode) as on a light one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from evaluator.registry import all_suites
from leaderboard.board import best_line
from leaderboard.columns import TOTAL_CI_HIGH, TOTAL_CI_LOW
from leaderboard.result_record import KIND_PARTIAL
from leaderboard.table import TOTAL
from space.display import (
    MIN_CELL_ITEMS,
    column_labels,
    format_value,
    metric_format,
    metric_label,
)
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
# the band at the top of a figure that Plotly's mode bar takes (about 26 px high): the title
# starts below it, the plot below the title
MODEBAR_PX = 32
TITLE_LINE_PX = 20
# reference lines and marks: a grey that reads on a light page and on a dark one
REFERENCE_COLOUR = "#8a8f98"
REFERENCE_NOTE = "grey marks: chance/majority line"  # short: a 390 px phone shows it whole
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
    top = MODEBAR_PX + TITLE_LINE_PX * (3 if note else 1) + 8
    height = 100 + top + max(1, categories) * per_category + 30 * math.ceil(series / 2)
    return {
        # the metric goes in the title, not an axis title (which the legend below would overlap);
        # the title starts below the mode bar's band (pad), so the toolbar never covers it
        "title": {
            "text": f"{title} · {axis_title}" + (f"<br><sup>{note}</sup>" if note else ""),
            "font": {"size": 14},
            "x": 0,
            "xanchor": "left",
            "xref": "container",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            # Plotly lifts a title of two lines (the note) by its second line: pad that back
            "pad": {"t": MODEBAR_PX + (TITLE_LINE_PX if note else 0)},
        },
        "barmode": "group",
        "height": min(height, 2400),
        "margin": {"l": 10, "r": 10, "t": top, "b": 10},
        # transparent: the page's background shows through, light or dark (DRAW_JS sets the ink)
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
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


def _reference(board: pd.DataFrame, column: str) -> dict | None:
    """The board's reference line in `column` (the best of its chance and majority rows, as the
    table's "vs." column): from the board's reference rows, else the line it was ranked against."""
    found = best_line(board, column) if column in board and "row_kind" in board else None
    line = board.attrs.get("reference_line")
    if found is None and line and line.get("column", column) == column:
        found = line
    return found


def reference_marks(
    board: pd.DataFrame, columns: list[str], ticks: list[str], scale: float, size: int
) -> list[dict]:
    """Per-tier bars: a vertical mark across each tier's bars at that tier's own reference line
    (`customdata` names each tier's line); none where no tier has a line."""
    lines = [_reference(board, column) for column in columns]
    if not any(lines):
        return []
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "reference line (chance / majority)",
            "y": ticks,
            "x": [None if line is None else line["value"] * scale for line in lines],
            "customdata": [line["name"] if line else "" for line in lines],
            "marker": {
                "symbol": "line-ns",
                "size": size,
                "color": REFERENCE_COLOUR,
                "line": {"width": 2, "color": REFERENCE_COLOUR},
            },
            "cliponaxis": False,
            "showlegend": False,  # the title's note names the marks: the legend names results
            # no hover: a mark would take the pointer from the bar under it (its value, interval)
            "hoverinfo": "skip",
        }
    ]


def reference_shapes(
    line: dict | None, metric, scale: float, axis: str, high: float | None = None
) -> list[dict]:
    """The board's reference line across a plot of totals, labelled with its name and value: a
    vertical line where the values run along x (bars; `high`, the largest bar: a line past its
    middle has its label on its left, inside the plot), a horizontal one where they run along y."""
    if not line:
        return []
    value = line["value"] * scale
    # "Majority: 29.3", not "Majority (always C): 29.3": a phone's plot is about 220 px wide
    short = str(line["name"]).split(" (", 1)[0]
    label = {"text": f"{short}: {format_value(line['value'], metric)}", "textangle": 0}
    label["font"] = {"size": 11}
    if axis == "x":
        where = {"xref": "x", "x0": value, "x1": value, "yref": "paper", "y0": 0, "y1": 1}
        side = "right" if high and value > high / 2 else "left"
        label.update(textposition="end", xanchor=side, yanchor="top")
    else:
        where = {"xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": value, "y1": value}
        label.update(textposition="end", xanchor="right", yanchor="bottom")
    return [
        {
            "type": "line",
            **where,
            "line": {"color": REFERENCE_COLOUR, "width": 1.5, "dash": "dash"},
            "layer": "above",
            "label": label,
        }
    ]


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
                if row.get("row_kind") == KIND_PARTIAL and n and n < MIN_CELL_ITEMS:
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
            name = f"{heading} ({p + 1} of {len(parts)})" if len(parts) > 1 else heading
            columns = [shown[k] for k in part]
            most = max(len(lines[keep.index(k)]) for k in part)
            figure = _piece(board, data, part, columns, name, _axis_title(metric), scale, most)
            if len(parts) > 1:
                # the pieces of a group share the value axis and the left margin (the longest
                # label's; automargin only widens it), so their bars line up and read alike
                layout = figure["layout"]
                layout["xaxis"]["range"] = _span(data, keep, _reference_values(board, shown, scale))
                longest = max(len(line) for label in lines for line in label)
                layout["margin"]["l"] = 10 + math.ceil(CHAR_PX * longest)
            figures.append(figure)
    return figures


def _piece(
    board: pd.DataFrame,
    data: list[dict],
    part: list[int],
    columns: list[str],
    name: str,
    axis_title: str,
    scale: float,
    lines: int,
) -> dict:
    """One figure of a tier group: every series at the tiers `part`, and each tier's reference
    line as a grey mark across its bars, named in the title's note (the legend names results)."""
    piece = [_slice(d, part) for d in data]  # every series in each piece: one legend
    marks = reference_marks(board, columns, piece[0]["y"], scale, len(data) * BAR_PX)
    note = REFERENCE_NOTE if marks else ""
    layout = _layout(name, axis_title, len(part), len(data), note=note, lines=lines)
    return {"data": piece + marks, "layout": layout}


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


def _reference_values(board: pd.DataFrame, columns: list[str], scale: float) -> list[float]:
    return [line["value"] * scale for c in columns if (line := _reference(board, c))]


def _span(data: list[dict], keep: list[int], extra: Sequence[float] = ()) -> list[float]:
    """The value axis's range over every bar and interval at `keep` and the `extra` values (the
    reference lines), zero included, 5% spare."""
    ends = [0.0, *extra]
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
    layout = _layout(title, _axis_title(metric), len(models), len(data), note=shown)
    high = max((x for d in data for x in d["x"] if x is not None), default=None)
    layout["shapes"] = reference_shapes(_reference(board, TOTAL), metric, scale, "x", high)
    return [{"data": data, "layout": layout}]


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
        shapes=reference_shapes(_reference(board, TOTAL), metric, scale, "y"),
    )
    return [{"data": data, "layout": layout}]


# Draws every `.pb-plot[data-src]` under a root once it comes into view: fetches its figures
# (JSON) and plots each with Plotly, loaded from the app with the first plot drawn. The board's plots
# lie below its table (a phone sees them after scrolling) and a hidden tab's are never seen: a view
# that shows no plot costs no Plotly (~0.65 s of a page load's script time) and no figure request.
# Used by the Leaderboard tab (re-run as its HTML changes) and by the model page.
DRAW_JS = """
// the page's own text colour for a figure's text, and a faint one for its grid: on a dark page
// (Gradio follows the OS's dark mode) the text is light, as the rest of the page's
window.pbInked = window.pbInked || ((layout, box) => {
  const ink = getComputedStyle(box).color;
  const faint = ink.replace(/^rgba?\\(([^,]+),([^,]+),([^,)]+).*$/, 'rgba($1,$2,$3,0.25)');
  const axis = (a) => ({...(a || {}), gridcolor: faint, zerolinecolor: faint, linecolor: faint});
  return {...layout, font: {...(layout.font || {}), color: ink},
    xaxis: axis(layout.xaxis), yaxis: axis(layout.yaxis)};
});
window.pbPlotly = window.pbPlotly || (() => window.pbPlotlyLoaded || (window.pbPlotlyLoaded =
  window.Plotly ? Promise.resolve() : new Promise((done, fail) => {
    const s = document.createElement('script');
    s.src = '/plots/plotly.min.js'; s.dataset.pbPlotly = '1';
    s.onload = done; document.head.appendChild(s);
    s.onerror = (e) => { window.pbPlotlyLoaded = null; s.remove(); fail(e); };  // the next plot tries again
  })));
window.pbDrawBox = window.pbDrawBox || (async (box) => {
  const [answer] = await Promise.all([fetch(box.dataset.src), window.pbPlotly()]);
  const figures = answer.ok ? (await answer.json()).figures : [];
  box.innerHTML = '';
  if (!figures.length) {
    box.innerHTML = '<p class="pb-plot-empty"><em>' + (box.dataset.empty || 'Nothing to plot.') + '</em></p>';
  }
  for (const figure of figures) {
    const div = document.createElement('div');
    div.className = 'pb-figure';
    box.appendChild(div);
    await window.Plotly.newPlot(div, figure.data, window.pbInked(figure.layout, box),
      {responsive: true, displaylogo: false, modeBarButtonsToRemove: ['lasso2d', 'select2d']});
  }
  box.dataset.done = '1';
});
// a box is drawn (once) as it comes into view; one on a hidden tab waits
window.pbNearView = window.pbNearView || new IntersectionObserver((entries, watch) => {
  for (const entry of entries) {
    if (entry.isIntersecting) { watch.unobserve(entry.target); window.pbDrawBox(entry.target); }
  }
}, {rootMargin: '0px'});
window.pbDrawPlots = window.pbDrawPlots || ((root) => {
  for (const box of root.querySelectorAll('.pb-plot[data-src]:not([data-watched])')) {
    box.dataset.watched = '1';
    window.pbNearView.observe(box);
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
