"""The Overview tab: every model across suites, one column per suite/task (leaderboard/overview.py
decides what counts and what is ranked; this file only draws it). Read through the same read path
as the API's /api/v1/overview, so the page and its downloads show the same table.

Every text from a record is escaped here before it is shown.
"""

from __future__ import annotations

import html
from urllib.parse import quote, urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.overview import OVERVIEW_NOTE
from leaderboard.readpath import OVERVIEW, Filters
from leaderboard.store import StoreError, StoreUnavailable
from space.choices import ALL
from space.display import format_interval, format_value, metric_label

STYLE = """<style>
.pb-ov-wrap{overflow-x:auto;max-height:75vh;overflow-y:auto;border:1px solid var(--border-color-primary,#ddd);border-radius:6px}
table.pb-ov{border-collapse:separate;border-spacing:0;font-size:14px;width:max-content}
table.pb-ov th,table.pb-ov td{padding:4px 10px;border-bottom:1px solid var(--border-color-primary,#eee);white-space:nowrap;text-align:right;background:var(--background-fill-primary,#fff);vertical-align:top}
table.pb-ov thead th{position:sticky;top:0;z-index:3;background:var(--background-fill-secondary,#f6f6f6);white-space:normal;min-width:8em;max-width:16em;text-align:center}
table.pb-ov .pb-ov-model{position:sticky;left:0;z-index:2;text-align:left;min-width:12em;max-width:20em;overflow:hidden;text-overflow:ellipsis}
table.pb-ov thead .pb-ov-model{z-index:4}
table.pb-ov .pb-ov-ci{display:block;color:#6b7280;font-size:11px}
table.pb-ov .pb-ov-rank{display:inline-block;margin-left:4px;padding:0 5px;border-radius:8px;background:#e0e7ff;color:#3730a3;font-size:11px}
table.pb-ov .pb-ov-unranked{display:inline-block;margin-left:4px;color:#b45309;font-size:11px}
table.pb-ov .pb-ov-sub{display:block;font-weight:400;color:#6b7280;font-size:11px}
@media (max-width:600px){table.pb-ov{font-size:13px} table.pb-ov .pb-ov-model{min-width:8em;max-width:8em} table.pb-ov thead th{max-width:12em}}
</style>"""


def overview_frame(services, suite=None, search=None, revision=None) -> pd.DataFrame:
    filters = Filters(None if suite in (None, "", ALL) else suite, None, None, None, OVERVIEW)
    filters = filters._replace(search=(search or "").strip() or None)
    return services.board.table(revision).view(filters)


def column_title(column: dict) -> str:
    suite_name, task_name = column["column"].split("/", 1)
    suite = all_suites().get(suite_name)
    task = suite.tasks.get(task_name) if suite else None
    title = f"{suite.title if suite else suite_name} · {task.title if task else task_name}"
    under = f"{metric_label(column['metric'])}, {column['setting']}"
    return (
        f'<th scope="col" data-col="{html.escape(column["column"])}" '
        f'title="{html.escape(column["column"])}: {html.escape(under)}">{html.escape(title)}'
        f'<span class="pb-ov-sub">{html.escape(under)}</span></th>'
    )


def _cell(row: dict, column: dict) -> str:
    key, metric = column["column"], column["metric"]
    value = row.get(key)
    if value is None or pd.isna(value):
        return '<td role="gridcell"></td>'
    interval = format_interval(row.get(f"{key} ci_low"), row.get(f"{key} ci_high"), metric)
    rank, note = row.get(f"{key} rank"), row.get(f"{key} note") or ""
    badge = (
        f'<span class="pb-ov-rank" title="rank among the rows of this column that ran the same '
        f'items">#{int(rank)}</span>'
        if rank is not None and not pd.isna(rank)
        else f'<span class="pb-ov-unranked" title="{html.escape(note)}">unranked</span>'
    )
    n = row.get(f"{key} n")
    title = f"{interval} (95% CI), {int(n)} items" if n is not None and not pd.isna(n) else interval
    sid = html.escape(str(row.get(f"{key} submission_id") or ""))
    return (
        f'<td role="gridcell" data-id="{sid}" title="{html.escape(title)}">'
        f"{html.escape(format_value(value, metric))}{badge}"
        f'<span class="pb-ov-ci">{html.escape(interval)}</span></td>'
    )


def render_overview(frame: pd.DataFrame) -> str:
    if frame.empty:
        return (
            STYLE + '<p class="pb-empty"><em>No verified results under the suites\' default '
            "settings yet: the Leaderboard tab lists every row, papers' numbers and partial runs "
            "included.</em></p>"
        )
    columns = frame.attrs["columns"]
    head = '<th scope="col" class="pb-ov-model">Model</th>' + "".join(map(column_title, columns))
    rows = []
    for row in frame.to_dict(orient="records"):
        name = str(row["model_name"])
        link = f'<a href="/model/{quote(name, safe="")}">{html.escape(name)}</a>'
        cells = "".join(_cell(row, c) for c in columns)
        rows.append(
            f'<tr role="row"><th scope="row" class="pb-ov-model" title="{html.escape(name)}">'
            f"{link}</th>{cells}</tr>"
        )
    return (
        STYLE + '<div class="pb-ov-wrap"><table class="pb-ov" role="grid">'
        f'<thead><tr role="row">{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def download_links(suite, search) -> str:
    params = {
        k: v
        for k, v in {"suite": suite, "search": (search or "").strip()}.items()
        if v and v != ALL
    }
    links = []
    for fmt in ("csv", "json", "parquet"):
        extra = {"complete": "true"} if fmt == "json" else {}
        url = "/api/v1/overview?" + urlencode({**params, "format": fmt, **extra})
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download>{fmt.upper()}</a>')
    return "Download this overview (full precision, every column's interval, rank and note): " + (
        " · ".join(links)
    )


def build_overview_tab(ui: gr.Blocks, services) -> None:
    suites = [(ALL, ALL)] + [(s.title, name) for name, s in all_suites().items()]

    def show(suite, search):
        try:
            frame = overview_frame(services, suite, search)
        except StoreUnavailable:
            return (
                "<p><em>The results store cannot be reached right now; try again shortly.</em></p>",
                "",
            )
        except StoreError as exc:
            return f"<p><em>{html.escape(str(exc))}</em></p>", ""
        return render_overview(frame), download_links(suite, search)

    with gr.Tab("Overview", id="overview"):
        gr.Markdown("**Across suites.** " + OVERVIEW_NOTE, elem_id="overview-note")
        with gr.Row():
            suite = gr.Dropdown(suites, value=ALL, label="Suite", scale=1, elem_id="overview-suite")
            search = gr.Textbox(label="Model", placeholder="part of a model name", scale=2)
        table = gr.HTML(elem_id="overview-table")
        links = gr.HTML(elem_id="overview-downloads")
    for event in (suite.change, search.submit, ui.load):
        event(show, [suite, search], [table, links])
