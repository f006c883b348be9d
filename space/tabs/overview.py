"""The Overview tab: every model across suites, one column per suite/task (leaderboard/overview.py
decides what counts, what is ranked, which results are one model, and what the filters keep; this
file only draws it). Read through the same read path as the API's /api/v1/overview, so the page
and its downloads show the same table.

Filters like the Leaderboard's (suite, task, model type, size, license, name) and a Version
selector; header clicks sort. The view lives in the URL (`?tab=overview&...`, space/url_state.py):
a reloaded or shared link opens the same overview.

Every text from a record is escaped here before it is shown.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.overview import (
    OVERVIEW_NOTE,
    SIZE_CHOICES,
    TYPE_CHOICES,
    filter_overview,
    overview_stem,
    overview_table,
)
from leaderboard.readpath import OVERVIEW, Filters, UnknownFilter, check_license
from leaderboard.store import StoreError, StoreUnavailable
from leaderboard.table import UNKNOWN
from space.board_view import sort_js
from space.choices import ALL, task_choices
from space.data import LATEST, LATEST_LABEL
from space.display import format_interval, format_value, metric_label
from space.labels import distinctions
from space.url_state import ignored_params, link_notice, tab_params, url_writer_js
from space.versions import older_version_note, versions_update

if TYPE_CHECKING:
    from submissions.service import Services

TAB = "overview"
# the view's URL parameters, in the order of the controls the writer is given (space/url_state.py)
URL_FIELDS = [
    ("suite", ALL),
    ("task", ALL),
    ("type", ALL),
    ("size", ALL),
    ("license", ALL),
    ("q", None),
    ("revision", LATEST),
]

STYLE = """<style>
.pb-ov-wrap{--pb-muted:#5b6472;--pb-rank-bg:#e0e7ff;--pb-rank-ink:#3730a3;--pb-warn:#92400e}
.dark .pb-ov-wrap{--pb-muted:#a7b0bd;--pb-rank-bg:#312e81;--pb-rank-ink:#e0e7ff;--pb-warn:#fbbf24}
.pb-ov-wrap{overflow-x:auto;max-height:75vh;overflow-y:auto;border:1px solid var(--border-color-primary,#ddd);border-radius:6px}
table.pb-ov{border-collapse:separate;border-spacing:0;font-size:14px;width:max-content}
table.pb-ov th,table.pb-ov td{padding:4px 10px;border-bottom:1px solid var(--border-color-primary,#eee);white-space:nowrap;text-align:right;background:var(--background-fill-primary,#fff);vertical-align:top}
table.pb-ov thead th{position:sticky;top:0;z-index:3;padding-right:16px;background:var(--background-fill-secondary,#f6f6f6);white-space:normal;min-width:8em;max-width:16em;text-align:center;cursor:pointer;user-select:none}
table.pb-ov thead th[aria-sort]::after{position:absolute;top:4px;right:3px;font-size:11px}
table.pb-ov thead th[aria-sort=ascending]::after{content:"\\25B2"}
table.pb-ov thead th[aria-sort=descending]::after{content:"\\25BC"}
table.pb-ov .pb-ov-model{position:sticky;left:0;z-index:2;text-align:left;min-width:12em;max-width:20em;overflow:hidden;text-overflow:ellipsis}
table.pb-ov thead .pb-ov-model{z-index:4}
table.pb-ov .pb-ov-ci{display:block;color:var(--pb-muted);font-size:11px}
table.pb-ov .pb-ov-rank{display:inline-block;margin-left:4px;padding:0 5px;border-radius:8px;background:var(--pb-rank-bg);color:var(--pb-rank-ink);font-size:11px}
table.pb-ov .pb-ov-unranked{display:inline-block;margin-left:4px;color:var(--pb-warn);font-size:11px}
table.pb-ov .pb-ov-sub{display:block;font-weight:400;color:var(--pb-muted);font-size:11px}
table.pb-ov .pb-distinct{display:block;font-size:11px;font-weight:400;color:var(--pb-muted);overflow:hidden;text-overflow:ellipsis}
@media (max-width:600px){table.pb-ov{font-size:13px} table.pb-ov .pb-ov-model{min-width:8em;max-width:8em;white-space:normal;overflow-wrap:anywhere} table.pb-ov thead th{max-width:12em}}
</style>"""


def chosen(value) -> str | None:
    """A control's value as a filter: None for "(all)" and empty."""
    return None if value in (None, "", ALL) else str(value)


def overview_filters(suite=None, task=None, model_type=None, size=None, license_=None, search=None):
    return Filters(
        chosen(suite),
        chosen(task) if chosen(suite) else None,  # a task is chosen within its suite
        view=OVERVIEW,
        search=(search or "").strip() or None,
        model_type=chosen(model_type),
        size=chosen(size),
        license=chosen(license_),
    )


def overview_frame(services: Services, filters: Filters, version=None) -> pd.DataFrame:
    """The overview these filters keep, at `version` (LATEST: the newest). An older version is
    shown without the results an operator withdrew since (as the Leaderboard tab shows it): built
    here from that version's rows less those, ranked without them."""
    revision = None if version in (None, "", LATEST) else version
    table = services.board.table(revision)
    if revision is None:
        return table.view(filters)
    rows = table.all_rows()
    withdrawn = rows["submission_id"].isin(set(services.records.withdrawn_ids()))
    if not withdrawn.any():
        return table.view(filters)
    base = overview_table(rows[~withdrawn], filters.suite, filters.task)
    check_license(base, filters.license)
    return filter_overview(base, filters.model_type, filters.size, filters.license, filters.search)


def column_title(column: dict) -> str:
    suite_name, task_name = column["column"].split("/", 1)
    suite = all_suites().get(suite_name)
    task = suite.tasks.get(task_name) if suite else None
    title = f"{suite.title if suite else suite_name} · {task.title if task else task_name}"
    under = f"{metric_label(column['metric'])}, {column['setting']}"
    return (
        f'<th scope="col" data-col="{html.escape(column["column"])}" data-type="num" '
        f'title="{html.escape(column["column"])}: {html.escape(under)}. Click to sort.">'
        f'{html.escape(title)}<span class="pb-ov-sub">{html.escape(under)}</span></th>'
    )


def _cell(row: dict, column: dict) -> str:
    key, metric = column["column"], column["metric"]
    value = row.get(key)
    if value is None or pd.isna(value):
        return '<td role="gridcell" data-sort=""></td>'
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
        f'<td role="gridcell" data-id="{sid}" data-sort="{float(value)!r}" '
        f'title="{html.escape(title)}">'
        f"{html.escape(format_value(value, metric))}{badge}"
        f'<span class="pb-ov-ci">{html.escape(interval)}</span></td>'
    )


def _model_cell(row: dict, extra: str) -> str:
    """The model's name (a link to its page) and, where another row has the same name, what tells
    them apart (how its results were produced, its link), as the boards' model cells do."""
    name = str(row["model_name"])
    title = f"{name} ({extra})" if extra else name
    link = f'<a href="/model/{quote(name, safe="")}">{html.escape(name)}</a>'
    if extra:
        link += f'<span class="pb-distinct">{html.escape(extra)}</span>'
    return (
        f'<th scope="row" class="pb-ov-model" title="{html.escape(title)}" '
        f'data-sort="{html.escape(title.casefold())}">{link}</th>'
    )


def render_overview(frame: pd.DataFrame, empty: str = "") -> str:
    if frame.empty:
        return STYLE + (
            f'<p class="pb-empty" id="overview-empty"><em>{empty}</em></p>'
            if empty
            else '<p class="pb-empty" id="overview-empty"><em>No verified results under the '
            "suites' default settings yet: the Leaderboard tab lists every row, papers' numbers "
            "and partial runs included.</em></p>"
        )
    columns = frame.attrs["columns"]
    head = (
        '<th scope="col" class="pb-ov-model" data-col="model_name" data-type="text" '
        'title="Sort by model">Model</th>' + "".join(map(column_title, columns))
    )
    distinct = distinctions(frame, by=("source", "model_link"), key="model_key")
    rows = []
    for row in frame.to_dict(orient="records"):
        cells = "".join(_cell(row, c) for c in columns)
        key = html.escape(str(row["model_key"]))
        rows.append(
            f'<tr role="row" data-model="{key}">'
            f"{_model_cell(row, distinct.get(str(row['model_key']), ''))}{cells}</tr>"
        )
    return (
        STYLE + '<div class="pb-ov-wrap"><table class="pb-ov" role="grid">'
        f'<thead><tr role="row">{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def download_name(filters: Filters, revision: str, fmt: str) -> str:
    """`overview-prefeval-generative-3f2a9c1d4e5f.csv`: the API's own name for the same file."""
    return f"{overview_stem(filters, revision)}.{fmt}"


def download_links(filters: Filters, version=None, shown_revision: str = "") -> str:
    params = {
        "suite": filters.suite,
        "task": filters.task,
        "type": filters.model_type,
        "size": filters.size,
        "license": filters.license,
        "search": filters.search,
        "revision": None if version in (None, "", LATEST) else version,
    }
    params = {k: v for k, v in params.items() if v}
    links = []
    for fmt in ("csv", "json", "parquet"):
        extra = {"complete": "true"} if fmt == "json" else {}
        url = "/api/v1/overview?" + urlencode({**params, "format": fmt, **extra})
        name = download_name(filters, params.get("revision") or shown_revision, fmt)
        links.append(
            f'<a class="pb-download" href="{html.escape(url)}" download="{html.escape(name)}">'
            f"{fmt.upper()}</a>"
        )
    return "Download this overview (full precision, every column's interval, rank and note): " + (
        " · ".join(links)
    )


def license_choices(services: Services, filters: Filters, version=None) -> list[str]:
    """The licenses of the models in this suite/task's overview (the filter's choices)."""
    try:
        base = overview_frame(services, filters.overview_base, version)
    except StoreError:
        return [ALL]
    found = {str(v) for v in base["license"].dropna()} - {UNKNOWN}
    return [ALL, *sorted(found), *([UNKNOWN] if UNKNOWN in set(base["license"]) else [])]


# -- handlers: the controls' values and the services in, view data out (tests/unit/test_tab_handlers.py)


@dataclass(frozen=True)
class OverviewControls:
    """The value of every control of the tab, in the order of its URL_FIELDS (and components)."""

    suite: str | None = ALL
    task: str | None = ALL
    model_type: str | None = ALL
    size: str | None = ALL
    license: str | None = ALL
    search: str | None = ""
    version: str | None = LATEST

    @property
    def filters(self) -> Filters:
        return overview_filters(
            self.suite, self.task, self.model_type, self.size, self.license, self.search
        )

    @property
    def revision(self) -> str | None:
        """The version as the store reads it: None for the newest."""
        return None if self.version in (None, "", LATEST) else self.version


@dataclass
class OverviewView:
    """What the tab shows: the table (HTML), its download links, and the License filter's choices
    (None: keep those offered, as while the store cannot be read)."""

    table: str
    downloads: str = ""
    licenses: list[str] | None = None


def suite_options() -> list[tuple[str, str]]:
    return [(ALL, ALL)] + [(s.title, name) for name, s in all_suites().items()]


def task_options(suite) -> list[tuple[str, str]]:
    """The Task filter's choices: every task of the suite, or all of them together."""
    return [(ALL, ALL), *task_choices(chosen(suite))]


def link_controls(params: dict[str, str]) -> OverviewControls:
    """The view a link to this tab names, each value kept only where it is one of its control's
    (the license is checked against the table when it is drawn), else the defaults."""

    def pick(name, allowed):
        value = params.get(name)
        return value if value in allowed else ALL

    suite = pick("suite", set(all_suites()))
    return OverviewControls(
        suite,
        pick("task", {name for _, name in task_choices(chosen(suite))}),
        pick("type", set(TYPE_CHOICES)),
        pick("size", set(SIZE_CHOICES)),
        (params.get("license") or ALL)[:200],
        (params.get("q") or "")[:200],
        (params.get("revision") or "")[:100] or LATEST,
    )


def link_note(services: Services, params: dict[str, str], c: OverviewControls) -> str:
    """A visible note naming each of the link's parameters the overview could not take (a suite,
    task, model type or size the server does not offer, a version that does not exist), with what
    is shown instead, as the Leaderboard tab's; empty for a link without any."""
    shown = {"suite": c.suite, "task": c.task, "type": c.model_type, "size": c.size}

    def exists(revision: str) -> bool:
        try:
            return revision == LATEST or bool(services.results.resolve_revision(revision))
        except StoreError:
            return False

    return link_notice(ignored_params(params, shown, exists), "overview-link-notice")


def overview_view(services: Services, controls: OverviewControls) -> OverviewView:
    """The overview the controls choose, with its downloads and its models' licenses."""
    filters, version = controls.filters, controls.revision
    licenses = [
        *license_choices(services, filters, version),
        *([filters.license] if filters.license else []),
    ]
    try:
        frame = overview_frame(services, filters, version)
    except StoreUnavailable:
        return OverviewView(
            '<p class="pb-empty"><em>The results store cannot be reached right now; try '
            "again shortly.</em></p>"
        )
    except UnknownFilter as exc:  # a link's license no model of this view has
        return OverviewView(
            STYLE + f'<p class="pb-empty" id="overview-empty"><em>No model here has that '
            f"{html.escape(exc.parameter)} ({html.escape(exc.value)}); the models here have: "
            f"{html.escape(', '.join(exc.allowed))}.</em></p>",
            licenses=licenses,
        )
    except StoreError:
        return OverviewView(
            f'<p class="pb-empty" id="version-missing"><em>There is no leaderboard version '
            f"{html.escape(str(version))}; choose another.</em></p>"
        )
    narrowed = any((filters.model_type, filters.size, filters.license, filters.search))
    table = render_overview(
        frame,
        "No model matches these filters; widen them (Type, Size, License, Model)."
        if narrowed
        else "",
    )
    if version:
        table = older_version_note(version, "overview", "overview-version-note") + table
    shown_revision = version or services.results_head() or ""
    return OverviewView(table, download_links(filters, version, shown_revision), licenses)


# -- the Gradio side: the layout, the events, updates from the handlers' data ---------------------


def _layout() -> list[Any]:
    """The controls (in OverviewControls' order), the table and its links."""
    gr.Markdown("**Across suites.** " + OVERVIEW_NOTE, elem_id="overview-note")
    with gr.Row():
        suite = gr.Dropdown(suite_options(), value=ALL, label="Suite", elem_id="overview-suite")
        task = gr.Dropdown([(ALL, ALL)], value=ALL, label="Task", elem_id="overview-task")
        version = gr.Dropdown(
            [(LATEST_LABEL, LATEST)],
            value=LATEST,
            label="Version",
            elem_id="overview-version",
            info="the newest, a release, or an earlier revision",
        )
    with gr.Row():
        model_type = gr.Dropdown(
            [ALL, *TYPE_CHOICES], value=ALL, label="Model type", elem_id="overview-type"
        )
        size = gr.Dropdown(
            [ALL, *SIZE_CHOICES], value=ALL, label="Size (parameters)", elem_id="overview-size"
        )
        license_ = gr.Dropdown([ALL], value=ALL, label="License", elem_id="overview-license")
        search = gr.Textbox(
            label="Model", placeholder="part of a model name", elem_id="overview-search"
        )
    note = gr.HTML(elem_id="overview-link-note", padding=False)  # a link's wrong names
    table = gr.HTML(elem_id="overview-table", js_on_load=sort_js(TAB))
    links = gr.HTML(elem_id="overview-downloads")
    return [suite, task, model_type, size, license_, search, version, note, table, links]


def build_overview_tab(ui: gr.Blocks, services: Services) -> None:
    def show(*values):
        found = overview_view(services, OverviewControls(*values))
        licenses = gr.skip() if found.licenses is None else gr.update(choices=found.licenses)
        return found.table, found.downloads, licenses

    def on_suite(suite):
        return gr.update(choices=task_options(suite), value=ALL)

    def on_load(request: gr.Request):
        params = tab_params(request, TAB)
        c = link_controls(params)
        return (
            gr.update(value=c.suite),
            gr.update(choices=task_options(c.suite), value=c.task),
            gr.update(value=c.model_type),
            gr.update(value=c.size),
            # the license choices come with the table; take the link's value meanwhile
            gr.update(choices=[ALL, *([c.license] if c.license != ALL else [])], value=c.license),
            c.search,
            versions_update(services, c.revision),
            link_note(services, params, c),
        )

    with gr.Tab("Overview", id=TAB):
        *view, note, table, links = _layout()
    suite, task, model_type, size, license_, search, version = view
    outputs = [table, links, license_]  # the License filter's choices come with the table
    url_js = url_writer_js(TAB, URL_FIELDS)

    def redraw(trigger, **options):
        return trigger(show, view, outputs, **options).then(None, view, None, js=url_js)

    # .input (the reader's own choices), not .change: the page's own updates must not cascade;
    # always_last: a change made while the table is drawn is drawn after it, never dropped
    redraw(suite.input(on_suite, suite, task).then)
    for control in (task, model_type, size, license_, version):
        redraw(control.input, trigger_mode="always_last")
    redraw(search.input, trigger_mode="always_last", show_progress="hidden")
    load = ui.load(on_load, None, [*view, note])
    load.then(show, view, outputs).then(None, view, None, js=url_js)
