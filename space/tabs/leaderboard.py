"""The Leaderboard tab: one suite's task, ranked with rank groups from 95% intervals; filters, search,
column chooser, header sorting (in the browser), downloads, plots of the shown rows.

Deep links: `/?suite=S&task=T&setting=X&highlight=<submission id>` opens that view (the status of a
finished submission links here with its row highlighted); `&revision=<sha or release>` opens an older
version of the leaderboard (the Version selector: "latest", every release, recent revisions).
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import all_suites
from evaluator.splits import install_command
from leaderboard.board import UNKNOWN, ranked_board
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL, KIND_REFERENCE, KIND_REPORTED
from leaderboard.store import StoreError, StoreUnavailable
from leaderboard.view_query import columns_text, keep_rows
from space.board_view import DEFAULT_COLUMNS, OPTIONAL_COLUMNS, SORT_JS, render_board
from space.choices import ALL, suite_choices, task_choices, task_setting_choices, tier_choices
from space.data import (
    LATEST,
    LATEST_LABEL,
    board_inputs,
    default_board,
    manifest_tier_order,
)
from space.interactive_plots import MAX_SERIES
from space.interactive_plots import TAB_JS as PLOTS_JS
from space.labels import row_labels
from space.url_state import (
    FIRST_TAB,
    PRELUDE,
    ignored_params,
    link_notice,
    tab_params,
    url_writer_js,
)
from space.versions import older_version_note, versions_update

if TYPE_CHECKING:
    from submissions.service import Services

RANKING_HELP = (
    "**Rank**: verified rows only (full runs scored here on the hidden split). A row's rank is 1 + the number of "
    "rows whose 95% interval lies entirely above its own (Chatbot Arena's rule): rows whose intervals overlap "
    "share a rank, so ranks can repeat and skip (1, 1, 3); the bar at the left of the rank marks each rank group. "
    "Partial runs (amber, item counts per cell; cells under 10 items hidden) and the papers' own numbers (grey) "
    "are listed below, never ranked. Click a header to sort (within each section). "
    "Shares are in percent with one decimal, correlations with three decimals, ratings with two; hover a cell "
    "for its 95% interval and item count. Downloads keep full precision."
)
NO_TIER = "(rank by total)"
ALL_SETTINGS = "(all settings, ranked together)"
# After each redraw the view goes into the page's URL (space/url_state.py: defaults left out), so a
# reload or a shared link opens the same view; the table's header sort is kept there too.
URL_JS = url_writer_js(
    FIRST_TAB,
    [
        ("suite", None),
        ("task", None),
        ("setting", None),
        ("tier", NO_TIER),
        ("type", ALL),
        ("size", ALL),
        ("license", ALL),
        ("q", None),
        ("columns", ",".join(DEFAULT_COLUMNS)),
        ("highlight", None),
        ("revision", LATEST),
    ],
)
# A long choice ("Multiple choice behind distractor turns (0-300)") is cut with an ellipsis before the
# dropdown's arrow, which Gradio lays over the input's right end (24 px of it); the open list shows
# it whole. The Task gets twice a filter's width, so at 1,400 px its longest title is whole; on a
# phone the Task, the Tier and the Version take a line each (half of 390 px holds 12 characters).
FILTERS = ("suite", "task", "setting", "tier", "type", "size", "license", "version")
FILTER_STYLE = (
    "<style>#leaderboard-style{display:none}"
    + ",".join(f"#filter-{name} input" for name in FILTERS)
    + "{text-overflow:ellipsis;overflow:hidden;white-space:nowrap;"
    "padding-right:calc(var(--size-5, 20px) + var(--size-2, 8px))!important}"
    "#filter-task{flex-grow:2!important}"
    "@media (max-width:640px){#filter-task,#filter-tier,#filter-version{min-width:100%!important}}"
    "</style>"
)
HEAD_POLL_S = 3.0  # a publish shows on the board within this (when the newest version is shown)
DEFAULT_COMPARED = 3  # results in the per-tier plot until the reader picks others


STORE_DOWN = '<p class="pb-empty"><em>The results store cannot be reached right now; try again shortly.</em></p>'


@dataclass
class LeaderboardTab:
    follow: Callable  # follow(component holding a submission id): on change, show its task, its row outlined


def download_name(c: BoardControls, revision: str | None, fmt: str) -> str:
    """`prefeval-mcq-zero_shot-3f2a9c1d.csv`: what the file holds (the reader's filters too:
    `-generative-q-llama`), and at which results revision."""
    parts = [c.suite, c.task, c.setting if c.setting not in (None, "", ALL) else "all-settings"]
    if c.tier not in (None, "", NO_TIER):
        parts.append("by-" + str(c.tier).replace("/", "-"))
    parts += [v for v in (c.model_type, c.size, c.license) if v and v != ALL]
    if (c.search or "").strip():
        parts.append("q-" + str(c.search).strip()[:40])
    if revision:
        parts.append(str(revision)[:12])
    return "-".join(re.sub(r"[^A-Za-z0-9_.+-]", "_", str(p)) for p in parts) + f".{fmt}"


def download_params(c: BoardControls, sort: str | None = None) -> dict[str, str]:
    """GET /api/v1/leaderboard's parameters for the view on screen: every filter, the chosen
    columns, the header sort (`column:desc`, kept in the browser: DOWNLOAD_JS puts it in at the
    click) and the version; so the download holds the rows and columns the board shows."""
    given = {
        "suite": c.suite,
        "task": c.task,
        "setting": c.setting,
        "tier": c.tier,
        "search": (c.search or "").strip(),
        "type": c.model_type,
        "size": c.size,
        "license": c.license,
        "columns": columns_text(None if c.columns is None else list(c.columns)),
        "sort": sort,
        "revision": c.revision,
    }
    return {k: str(v) for k, v in given.items() if v and v not in (ALL, NO_TIER)}


def download_links(c: BoardControls, shown_revision: str = "", sort: str | None = None) -> str:
    """The board's CSV, JSON and parquet links: the API's answer for exactly this view."""
    params = download_params(c, sort)
    links = []
    for fmt in ("csv", "json", "parquet"):
        # the API pages its JSON; a download is the whole table
        url = "/api/v1/leaderboard?" + urlencode(
            {**params, "format": fmt, **({"complete": "true"} if fmt == "json" else {})}
        )
        name = download_name(c, c.revision or shown_revision, fmt)
        links.append(
            f'<a class="pb-download" href="{html.escape(url)}" download="{html.escape(name)}">'
            f"{fmt.upper()}</a>"
        )
    return "Download this table (full precision): " + " · ".join(links)


# The header sort lives in the browser (space/url_state.py): each download link gets the view's
# sort put in (or taken out) as the pointer or focus reaches it, before it is followed or copied;
# a sort by a column the table does not show (hidden since) sorts nothing there, nor here.
DOWNLOAD_JS = (
    PRELUDE
    + f"const TAB = {json.dumps(FIRST_TAB)};"
    + """
const withSort = (a) => {
  const url = new URL(a.getAttribute('href'), location.href);
  const sort = pbUrl.get(TAB, 'sort') || '';
  const col = sort.slice(0, sort.lastIndexOf(':'));
  const shown = col && document.querySelector(
    '#leaderboard-table th[data-col="' + CSS.escape(col) + '"]');
  if (shown) url.searchParams.set('sort', sort); else url.searchParams.delete('sort');
  a.setAttribute('href', url.pathname + url.search);
};
for (const type of ['pointerover', 'focusin', 'pointerdown', 'click', 'auxclick', 'contextmenu']) {
  element.addEventListener(type, (event) => {
    const a = event.target.closest ? event.target.closest('a.pb-download') : null;
    if (a && element.contains(a)) withSort(a);
  }, true);
}
"""
)


def empty_reason(suite: str, task: str, board: pd.DataFrame) -> str:
    """What an empty board says: filters hid every row, the split is not installed here (with the
    operator's command), or nobody has submitted yet (and how to)."""
    if not board.empty:
        return "<em>No results match these filters; widen them (Setting, Type, Size, search).</em>"
    found = all_suites().get(suite)
    if found and task in found.tasks and not found.tasks[task].split_available():
        return (
            f"<em>No results yet: the hidden split of {html.escape(found.title)} is not installed on "
            "this server, so nothing can be scored here. The operator installs it with</em> "
            f"<code>{html.escape(install_command(found))}</code>"
        )
    return (
        "<em>No submissions for this task yet. Upload predictions in the <b>Submit predictions</b> "
        "tab, or have the service run a model in <b>Submit a model</b>.</em>"
    )


# what a board's unranked rows are, by row kind, in the order the board lists them
UNRANKED_KINDS = {
    KIND_REFERENCE: "reference lines (chance and majority)",
    KIND_PARTIAL: "partial runs",
    KIND_REPORTED: "the papers' own numbers",
}


def no_verified_note(suite: str, task: str, kinds: Iterable[str]) -> str:
    """Above a board holding no verified row: why nothing is ranked, and what the rows below are
    (`kinds`: the board's row kinds)."""
    found = all_suites().get(suite)
    if found and task in found.tasks and not found.tasks[task].split_available():
        why = (
            f"the hidden split is not installed on this server (the operator's command: "
            f"<code>{html.escape(install_command(found))}</code>)"
        )
    else:
        why = "nobody has submitted a full run yet (the Submit tabs say how)"
    shown = [name for kind, name in UNRANKED_KINDS.items() if kind in set(kinds)] or ["results"]
    rows = ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]
    return (
        '<p class="pb-empty" id="board-no-verified"><em>No verified results for this task: '
        f"{why}. The rows below are {rows}, not ranked.</em></p>"
    )


def filter_board(board: pd.DataFrame, model_type, size, license_, search) -> pd.DataFrame:
    """The fact filters and the model-name search (case-insensitive substring) on a ranked board;
    ranks are those of the whole task view, so a filtered row keeps its place among all models.
    The API's downloads narrow rows with the same function (leaderboard/view_query.py)."""
    model_type, size, license_ = (
        None if v in (None, "", ALL) else v for v in (model_type, size, license_)
    )
    return keep_rows(board, model_type, size, license_, search)


# -- handlers: the controls' values and the services in, view data out (tests/unit/test_tab_handlers.py)


@dataclass(frozen=True)
class BoardControls:
    """The value of every control of the tab, in the order of the builder's `view` components:
    what a link names, what the first screen shows, and what the board is drawn from."""

    suite: str | None
    task: str | None
    setting: str | None = ALL
    tier: str | None = NO_TIER
    model_type: str | None = ALL
    size: str | None = ALL
    license: str | None = ALL
    search: str | None = ""
    columns: Sequence[str] | None = tuple(DEFAULT_COLUMNS)
    highlight: str | None = ""
    version: str | None = LATEST

    @property
    def revision(self) -> str | None:
        """The version as the store reads it: None for the newest."""
        return None if self.version in (None, "", LATEST) else self.version


@dataclass(frozen=True)
class TaskControls:
    """The dropdowns that follow the suite and the task: each one's choices and value."""

    tasks: list[tuple[str, str]]
    task: str | None
    settings: list[tuple[str, str] | str]
    setting: str
    tiers: list[tuple[str, str] | str]
    tier: str


@dataclass
class BoardView:
    """What the tab shows for one set of controls: the table (HTML), its download links, and the
    ranked board before the fact filters (None when nothing was ranked), which the filters' and
    the plot's choices follow."""

    table: str
    downloads: str = ""
    board: pd.DataFrame | None = None


@dataclass(frozen=True)
class BoardChoices:
    """The choices that come with a drawn board: its models' facts, and its rows for the plot."""

    model_types: list[str]
    sizes: list[str]
    licenses: list[str]
    compared: list[tuple[str, str]] = field(default_factory=list)  # (distinct label, result id)
    default_compared: list[str] = field(default_factory=list)


def task_controls(
    suite: str | None, task: str | None, setting: str | None = None, tier: str | None = NO_TIER
) -> TaskControls:
    """The task's own settings (no form offers one the task refuses), and all of them; its tiers."""
    return TaskControls(
        tasks=task_choices(suite),
        task=task,
        settings=[(ALL_SETTINGS, ALL), *task_setting_choices(suite, task)],
        setting=setting or ALL,
        tiers=[NO_TIER, *tier_choices(suite, task)],
        tier=tier or NO_TIER,
    )


def chosen_suite(services: Services, suite: str | None) -> TaskControls:
    """The reader chose a suite: its task and setting with the most verified rows."""
    _, task, setting = default_board(services, suite)
    return task_controls(suite, task, setting)


def chosen_task(services: Services, suite: str | None, task: str | None) -> TaskControls:
    """The reader chose a task: its setting with the most verified rows."""
    return task_controls(suite, task, default_board(services, suite, task)[2])


def link_controls(services: Services, params: dict[str, str]) -> BoardControls:
    """The view the link's parameters name (every control's value: a reloaded or shared link opens
    the same view), each kept only where it is one of the control's values; else the first
    screen: the task with the most verified rows, in one setting."""
    suite, task, setting = default_board(services)
    if params.get("suite") in all_suites():
        suite = params["suite"]
        task = params.get("task")
        if task not in all_suites()[suite].tasks:
            task = default_board(services, suite)[1]
        setting = default_board(services, suite, task)[2]
    wanted = params.get("setting")
    if suite and (wanted == ALL or wanted in task_setting_choices(suite, task)):
        setting = wanted
    tiers = [value for _, value in tier_choices(suite, task)]
    columns = params.get("columns")
    fact = {name: (params.get(name) or ALL)[:100] for name in ("type", "size", "license")}
    return BoardControls(
        suite,
        task,
        setting or ALL,
        params["tier"] if params.get("tier") in tiers else NO_TIER,
        # the fact filters' choices come with the board: the link's value is taken as it is
        model_type=fact["type"],
        size=fact["size"],
        license=fact["license"],
        search=(params.get("q") or "")[:200],
        columns=tuple(
            DEFAULT_COLUMNS
            if columns is None
            else [c for c in columns.split(",") if c in OPTIONAL_COLUMNS]
        ),
        highlight=params.get("highlight") or "",
        version=(params.get("revision") or "")[:100] or LATEST,
    )


def link_note(services: Services, params: dict[str, str], c: BoardControls) -> str:
    """A visible note naming each of the link's parameters the view could not take (a suite, task,
    setting or tier the board does not have, a version that does not exist), with what is shown
    instead; empty for a link without any."""
    shown = {"suite": c.suite, "task": c.task, "setting": c.setting, "tier": c.tier}

    def exists(revision: str) -> bool:
        try:
            return revision == LATEST or bool(services.results.resolve_revision(revision))
        except StoreError:
            return False

    return link_notice(ignored_params(params, shown, exists), "link-notice")


def first_controls(services: Services) -> BoardControls:
    """The first screen, as the Blocks are built, so the boxes show it from the first render (a
    page's load then applies its link, and the default again as the results stand by then). A
    store that cannot be read yet leaves the first suite's first task."""
    try:
        return link_controls(services, {})
    except StoreError:
        suite = next((name for _, name in suite_choices()), None)
        return BoardControls(suite, next((name for _, name in task_choices(suite)), None))


def finished_controls(services: Services, submission_id: str) -> BoardControls | None:
    """A submission of this page finished: its suite, task and setting, its row outlined, at the
    newest version (which holds its result); None for one the board cannot show."""
    found = services.submission(submission_id)
    if found is None or found.suite not in all_suites():
        return None
    return BoardControls(found.suite, found.task, found.setting, highlight=found.id)


_RANKED: OrderedDict[tuple, tuple] = OrderedDict()
_RANKED_LOCK = threading.Lock()
RANKED_KEPT = 16


def ranked_view(scores, facts, suite, task, setting, tier) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ranked_board, kept for the same inputs: board_inputs gives the same frames until the head
    moves, and every page load (and its first paint, space/first_paint.py) draws a view again.
    Read only by its users (filtered into new frames, rendered)."""
    key = (id(scores), id(facts), suite, task, setting, tier)
    with _RANKED_LOCK:
        hit = _RANKED.get(key)
    if hit is not None and hit[0] is scores and hit[1] is facts:
        return hit[2]
    found = ranked_board(
        scores, facts, suite, task, setting, tier, tier_order=manifest_tier_order()
    )
    with _RANKED_LOCK:
        _RANKED[key] = (scores, facts, found)  # the frames held: their ids are not reused
        while len(_RANKED) > RANKED_KEPT:
            _RANKED.popitem(last=False)
    return found


def board_view(services: Services, controls: BoardControls) -> BoardView:
    """The ranked board the controls choose, filtered, with its downloads."""
    c = controls
    if not c.suite or not c.task:
        return BoardView('<p class="pb-empty"><em>Choose a suite and a task.</em></p>')
    try:
        scores, facts = board_inputs(services, c.revision)
    except StoreUnavailable:
        return BoardView(STORE_DOWN)
    except StoreError:
        return BoardView(
            f'<p class="pb-empty" id="version-missing"><em>There is no leaderboard version '
            f"{html.escape(str(c.revision))}; choose another.</em></p>"
        )
    board, cells = ranked_view(
        scores,
        facts,
        c.suite,
        c.task,
        None if c.setting in (None, "", ALL) else c.setting,
        None if c.tier in (None, "", NO_TIER) else c.tier,
    )
    table = board_table(board, cells, c)
    if c.revision:
        table = older_version_note(c.revision, "leaderboard", "version-note") + table
    shown_revision = c.revision or services.results_head() or ""
    links = download_links(c, shown_revision)
    return BoardView(table, links, board)


def board_table(board: pd.DataFrame, cells: pd.DataFrame, c: BoardControls) -> str:
    """The ranked board as HTML, under the fact filters and the search, with the highlighted row
    outlined; a board of papers' numbers only says why nothing is ranked."""
    assert c.suite and c.task  # board_view draws no board without them
    shown = filter_board(board, c.model_type, c.size, c.license, c.search)
    columns = None if c.columns is None else list(c.columns)
    table = render_board(shown, cells, columns, empty=empty_reason(c.suite, c.task, board))
    if not board.empty and not (board["row_kind"] == KIND_COMPUTED).any():
        table = no_verified_note(c.suite, c.task, board["row_kind"].unique()) + table
    if c.highlight and (shown["submission_id"] == c.highlight).any():
        table = table.replace(
            f'data-id="{html.escape(c.highlight)}"',
            f'data-id="{html.escape(c.highlight)}" '
            'style="outline:3px solid #f59e0b" aria-current="true"',
            1,
        )
    return table


def fact_choices(board: pd.DataFrame, column: str) -> list[str]:
    """A fact filter's choices: the board's values, sorted, "unknown" last."""
    if not len(board):
        return [ALL]
    return [ALL, *sorted({str(v) for v in board[column].dropna()} - {UNKNOWN}), UNKNOWN]


def board_choices(board: pd.DataFrame) -> BoardChoices:
    """The fact filters' choices, and the rows the plot may compare (distinct labels: two rows of
    one model never read the same), the first few results (no reference line) chosen."""
    names = row_labels(board)
    worth = [
        i for i, kind in zip(board["submission_id"], board["row_kind"]) if kind != KIND_REFERENCE
    ]
    return BoardChoices(
        model_types=fact_choices(board, "model_type"),
        sizes=fact_choices(board, "size"),
        licenses=fact_choices(board, "license"),
        compared=[(names[str(i)], i) for i in board["submission_id"]],
        default_compared=worth[:DEFAULT_COMPARED],
    )


def plots_html(suite, task, setting, chosen, version=None) -> str:
    """The plot boxes of the view: drawn in the browser by interactive_plots.TAB_JS (Plotly: hover,
    zoom, legend toggles) from the figures each box's data-src names."""
    if not suite or not task:
        return ""
    where = {
        "suite": suite,
        "task": task,
        **({"revision": version} if version not in (None, "", LATEST) else {}),
    }
    tiers = urlencode({**where, "ids": ",".join((chosen or [])[:MAX_SERIES])})
    boxes = [
        ("plot-tiers", f"/plots/tiers.json?{tiers}", "Choose results to compare above."),
        ("plot-settings", f"/plots/settings.json?{urlencode(where)}", "No totals to plot."),
        ("plot-size", f"/plots/size.json?{urlencode(where)}", "No result of known size."),
    ]
    return (
        '<div class="pb-plots">'
        + "".join(
            f'<div class="pb-plot" id="{name}" data-src="{html.escape(src)}" '
            f'data-empty="{html.escape(empty)}"></div>'
            for name, src, empty in boxes
        )
        + "</div>"
    )


def head_moved(services: Services, seen: str | None) -> tuple[str | None, str | None]:
    """(the head now, to remember; the head again where it moved since the last tick, to redraw):
    None where nothing changes (no head, the same head, or the first tick)."""
    head = services.results_head()
    if head is None or head == seen:
        return None, None
    return head, (head if seen is not None else None)


# -- the Gradio side: updates from the handlers' data, the layout, the events ---------------------


def _task_updates(c: TaskControls) -> tuple[Any, Any, Any]:
    return (
        gr.update(choices=c.tasks, value=c.task),
        gr.update(choices=c.settings, value=c.setting),
        gr.update(choices=c.tiers, value=c.tier),
    )


def _fact_update(value) -> Any:
    return gr.update(choices=[ALL, *([value] if value != ALL else [])], value=value)


def _control_updates(services: Services, c: BoardControls) -> tuple:
    """Every control of `view` set to `c` (the fact filters offer `c`'s value until the board's own
    choices come)."""
    return (
        gr.update(choices=suite_choices(), value=c.suite),
        *_task_updates(task_controls(c.suite, c.task, c.setting, c.tier)),
        *map(_fact_update, (c.model_type, c.size, c.license)),
        c.search,
        list(c.columns or []),
        c.highlight,
        versions_update(services, c.revision),
    )


def _skip(value):
    return gr.skip() if value is None else value


def _choice_updates(board: pd.DataFrame | None) -> tuple:
    if board is None:
        return (gr.skip(),) * 4
    found = board_choices(board)
    return (
        *(gr.update(choices=c) for c in (found.model_types, found.sizes, found.licenses)),
        gr.update(choices=found.compared, value=found.default_compared),
    )


@dataclass
class _Components:
    """The tab's components: the controls first, named as BoardControls' fields."""

    suite: gr.Dropdown
    task: gr.Dropdown
    setting: gr.Dropdown
    tier: gr.Dropdown
    model_type: gr.Dropdown
    size: gr.Dropdown
    license: gr.Dropdown
    search: gr.Textbox
    columns: gr.CheckboxGroup
    highlight: gr.Textbox
    version: gr.Dropdown
    table: gr.HTML
    downloads: gr.HTML
    compare: gr.Dropdown
    note: gr.HTML
    plots: gr.HTML
    board_state: gr.State
    seen_head: gr.State
    moved_head: gr.Textbox
    head_timer: gr.Timer

    @property
    def view(self) -> list[Any]:
        """The controls, in BoardControls' order (the inputs of every redraw)."""
        return [getattr(self, f.name) for f in fields(BoardControls)]

    @property
    def plot_inputs(self) -> list[Any]:
        return [self.suite, self.task, self.setting, self.compare, self.version]


def _filters(first: BoardControls) -> dict[str, Any]:
    """The filter rows, showing the first screen from the first render: the controls by name."""
    tasks = task_controls(first.suite, first.task, first.setting)
    with gr.Row():
        suite = gr.Dropdown(
            suite_choices(), value=first.suite, label="Suite", elem_id="filter-suite"
        )
        task = gr.Dropdown(tasks.tasks, value=tasks.task, label="Task", elem_id="filter-task")
        setting = gr.Dropdown(
            tasks.settings, value=tasks.setting, label="Setting", elem_id="filter-setting"
        )
        tier = gr.Dropdown(
            tasks.tiers, value=NO_TIER, label="Tier (rank by it)", elem_id="filter-tier"
        )
    with gr.Row():
        model_type = gr.Dropdown([ALL], value=ALL, label="Model type", elem_id="filter-type")
        size = gr.Dropdown([ALL], value=ALL, label="Size (parameters)", elem_id="filter-size")
        license_ = gr.Dropdown([ALL], value=ALL, label="License", elem_id="filter-license")
        search = gr.Textbox(
            label="Search models", placeholder="model name…", elem_id="filter-search"
        )
    with gr.Row(equal_height=True):
        columns = gr.CheckboxGroup(
            [(label, key) for key, label in OPTIONAL_COLUMNS.items()],
            value=DEFAULT_COLUMNS,
            label="Columns",
            elem_id="column-chooser",
            scale=4,
        )
        version = gr.Dropdown(
            [(LATEST_LABEL, LATEST)],
            value=LATEST,
            label="Version",
            elem_id="filter-version",
            scale=2,
            info="the newest, a release, or an earlier revision",
        )
    highlight = gr.Textbox(visible=False, elem_id="leaderboard-highlight")
    return {
        "suite": suite,
        "task": task,
        "setting": setting,
        "tier": tier,
        "model_type": model_type,
        "size": size,
        "license": license_,
        "search": search,
        "columns": columns,
        "highlight": highlight,
        "version": version,
    }


def _layout(first: BoardControls) -> _Components:
    with gr.Tab("Leaderboard", id="leaderboard"):
        gr.HTML(FILTER_STYLE, elem_id="leaderboard-style", padding=False)
        controls = _filters(first)
        note = gr.HTML(elem_id="leaderboard-link-note", padding=False)  # a link's wrong names
        table = gr.HTML(elem_id="leaderboard-table", js_on_load=SORT_JS)
        gr.Markdown(RANKING_HELP, elem_id="leaderboard-help")
        downloads = gr.HTML(elem_id="leaderboard-downloads", js_on_load=DOWNLOAD_JS)
        with gr.Accordion("Plots", open=True, elem_id="leaderboard-plots"):
            compare = gr.Dropdown(
                [],
                multiselect=True,
                max_choices=MAX_SERIES,
                label="Results to compare (per-tier bars)",
                elem_id="plot-choice",
            )
            plots = gr.HTML(elem_id="plots", js_on_load=PLOTS_JS)
        # The board follows the results live: a timer notes the head revision, and a move redraws.
        return _Components(
            **controls,
            table=table,
            downloads=downloads,
            compare=compare,
            note=note,
            plots=plots,
            board_state=gr.State(None),
            seen_head=gr.State(None),
            moved_head=gr.Textbox(visible=False, elem_id="leaderboard-head"),
            head_timer=gr.Timer(HEAD_POLL_S),
        )


def build_leaderboard_tab(ui: gr.Blocks, services: Services) -> LeaderboardTab:
    tab = _layout(first_controls(services))

    def show(*values):
        found = board_view(services, BoardControls(*values))
        return found.table, found.downloads, found.board

    def on_suite(suite):
        return _task_updates(chosen_suite(services, suite))

    def on_task(suite, task):
        return _task_updates(chosen_task(services, suite, task))[1:]  # the setting and the tier

    def on_load(request: gr.Request):
        params = tab_params(request, FIRST_TAB)
        found = link_controls(services, params)
        return *_control_updates(services, found), link_note(services, params, found)

    def on_finished(submission_id):
        found = finished_controls(services, submission_id)
        if found is None:
            return (gr.skip(),) * 6
        tasks = _task_updates(task_controls(found.suite, found.task, found.setting))
        return (gr.update(value=found.suite), *tasks, found.highlight, versions_update(services))

    def on_tick(seen):
        return tuple(map(_skip, head_moved(services, seen)))

    def on_moved(current):
        return versions_update(services, current)  # the newest version's choices, the reader's kept

    redraw = _wire(tab, show)
    redraw(tab.suite.input(on_suite, tab.suite, [tab.task, tab.setting, tab.tier]).then)
    redraw(tab.task.input(on_task, [tab.suite, tab.task], [tab.setting, tab.tier]).then)
    redraw(tab.version.input)
    redraw(ui.load(on_load, None, [*tab.view, tab.note]).then)
    tab.head_timer.tick(
        on_tick, tab.seen_head, [tab.seen_head, tab.moved_head], show_progress="hidden"
    )
    redraw(tab.moved_head.change(on_moved, tab.version, tab.version, show_progress="hidden").then)

    def follow(source: gr.Textbox):
        followed = [tab.suite, tab.task, tab.setting, tab.tier, tab.highlight, tab.version]
        redraw(source.change(on_finished, source, followed).then)

    return LeaderboardTab(follow=follow)


def _wire(tab: _Components, show: Callable) -> Callable:
    """Wires the controls that redraw the board alone; returns redraw(trigger): the board, the
    URL, the choices that follow the board, and the plots, after `trigger`."""
    outputs = [tab.table, tab.downloads, tab.board_state]
    facts = [tab.model_type, tab.size, tab.license, tab.compare]

    def redraw(trigger):
        return (
            trigger(show, tab.view, outputs)
            .then(None, tab.view, None, js=URL_JS)
            .then(_choice_updates, tab.board_state, facts)
            .then(plots_html, tab.plot_inputs, tab.plots)
        )

    # .input (the reader's own choices), not .change: the page's own updates must not cascade.
    # One event for all of them, always_last: a change made while the board is being drawn is
    # drawn after it with every control's latest value. (One event per control let a slower draw
    # of an earlier change land last: CI saw the search's board, with the Kind column, arrive
    # after the column chooser's, the URL already without it.)
    controls = (tab.setting, tab.tier, tab.model_type, tab.size, tab.license, tab.columns)
    gr.on(
        [control.input for control in controls] + [tab.search.change],
        show,
        tab.view,
        outputs,
        show_progress="hidden",
        trigger_mode="always_last",
    ).then(None, tab.view, None, js=URL_JS)
    tab.compare.input(plots_html, tab.plot_inputs, tab.plots, trigger_mode="always_last")
    return redraw
