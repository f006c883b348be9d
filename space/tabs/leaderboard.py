"""The Leaderboard tab: one suite's task, ranked with rank groups from 95% intervals; filters, search,
column chooser, header sorting (in the browser), downloads, plots of the shown rows.

Deep links: `/?suite=S&task=T&setting=X&highlight=<submission id>` opens that view (the status of a
finished submission links here with its row highlighted); `&revision=<sha or release>` opens an older
version of the leaderboard (the Version selector: "latest", every release, recent revisions).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import all_suites
from evaluator.splits import install_command
from leaderboard.board import UNKNOWN, ranked_board
from leaderboard.store import StoreError, StoreUnavailable
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
from space.url_state import FIRST_TAB, tab_params, url_writer_js
from space.versions import older_version_note
from space.versions import versions_update as version_selector

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


@dataclass
class LeaderboardTab:
    follow: Callable  # follow(component holding a submission id): on change, show its task, its row outlined


def download_name(suite, task, setting, tier, revision, fmt: str) -> str:
    """`prefeval-mcq-zero_shot-3f2a9c1d.csv`: what the file holds, and at which results revision."""
    parts = [suite, task, setting if setting not in (None, "", ALL) else "all-settings"]
    if tier not in (None, "", NO_TIER):
        parts.append("by-" + tier.replace("/", "-"))
    if revision:
        parts.append(str(revision)[:12])
    return "-".join(re.sub(r"[^A-Za-z0-9_.+-]", "_", str(p)) for p in parts) + f".{fmt}"


def download_links(suite, task, setting, tier, revision=None, shown_revision="") -> str:
    params = {
        k: v
        for k, v in {
            "suite": suite,
            "task": task,
            "setting": setting,
            "tier": tier,
            "revision": revision,
        }.items()
        if v and v not in (ALL, NO_TIER)
    }
    links = []
    for fmt in ("csv", "json", "parquet"):
        # the API pages its JSON; a download is the whole table
        url = "/api/v1/leaderboard?" + urlencode(
            {**params, "format": fmt, **({"complete": "true"} if fmt == "json" else {})}
        )
        name = download_name(suite, task, setting, tier, revision or shown_revision, fmt)
        links.append(
            f'<a class="pb-download" href="{html.escape(url)}" download="{html.escape(name)}">'
            f"{fmt.upper()}</a>"
        )
    return "Download this table (full precision): " + " · ".join(links)


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


def no_verified_note(suite: str, task: str) -> str:
    """Above a board holding only papers' numbers (or partial runs): why nothing is ranked."""
    found = all_suites().get(suite)
    if found and task in found.tasks and not found.tasks[task].split_available():
        why = (
            f"the hidden split is not installed on this server (the operator's command: "
            f"<code>{html.escape(install_command(found))}</code>)"
        )
    else:
        why = "nobody has submitted a full run yet (the Submit tabs say how)"
    return (
        '<p class="pb-empty" id="board-no-verified"><em>No verified results for this task: '
        f"{why}. The rows below are the papers' own numbers or partial runs, not ranked.</em></p>"
    )


def _keep(frame: pd.DataFrame, column: str, wanted) -> pd.DataFrame:
    return frame if not wanted or wanted == ALL else frame[frame[column] == wanted]


def filter_board(board: pd.DataFrame, model_type, size, license_, search) -> pd.DataFrame:
    """The fact filters and the model-name search (case-insensitive substring) on a ranked board;
    ranks are those of the whole task view, so a filtered row keeps its place among all models."""
    shown = _keep(_keep(_keep(board, "model_type", model_type), "size", size), "license", license_)
    needle = (search or "").strip().lower()
    if needle:
        shown = shown[shown["model_name"].astype(str).str.lower().str.contains(needle, regex=False)]
    shown.attrs.update(board.attrs)
    return shown


def build_leaderboard_tab(ui: gr.Blocks, services) -> LeaderboardTab:
    def fact_choices(board: pd.DataFrame, column: str) -> list[str]:
        return (
            [ALL, *sorted({str(v) for v in board[column].dropna()} - {UNKNOWN}), UNKNOWN]
            if len(board)
            else [ALL]
        )

    def show(
        suite,
        task,
        setting,
        tier,
        model_type,
        size,
        license_,
        search,
        columns,
        highlight=None,
        version=None,
    ):
        if not suite or not task:
            return '<p class="pb-empty"><em>Choose a suite and a task.</em></p>', "", None
        version = None if version in (None, "", LATEST) else version
        try:
            scores, facts = board_inputs(services, version)
        except StoreUnavailable:
            return (
                '<p class="pb-empty"><em>The results store cannot be reached right now; try again shortly.</em></p>',
                "",
                None,
            )
        except StoreError:
            return (
                f'<p class="pb-empty" id="version-missing"><em>There is no leaderboard version '
                f"{html.escape(version)}; choose another.</em></p>",
                "",
                None,
            )
        board, cells = ranked_board(
            scores,
            facts,
            suite,
            task,
            None if setting in (None, "", ALL) else setting,
            None if tier in (None, "", NO_TIER) else tier,
            tier_order=manifest_tier_order(),
        )
        shown = filter_board(board, model_type, size, license_, search)
        table = render_board(shown, cells, columns, empty=empty_reason(suite, task, board))
        if not board.empty and not (board["row_kind"] == "computed").any():
            table = no_verified_note(suite, task) + table
        if highlight and (shown["submission_id"] == highlight).any():
            table = table.replace(
                f'data-id="{html.escape(highlight)}"',
                f'data-id="{html.escape(highlight)}" '
                'style="outline:3px solid #f59e0b" aria-current="true"',
                1,
            )
        if version:
            table = older_version_note(version, "leaderboard", "version-note") + table
        shown_revision = version or services.results_head() or ""
        return (
            table,
            download_links(suite, task, setting, tier, version, shown_revision),
            board,
        )

    def versions_update(current=None):
        return version_selector(services, current)

    def refresh_choices(board):
        if board is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        names = row_labels(board)  # distinct: two rows of one model never read the same
        compared = [(names[str(i)], i) for i in board["submission_id"]]
        worth = [
            i for i, kind in zip(board["submission_id"], board["row_kind"]) if kind != "reference"
        ]
        return (
            *(gr.update(choices=fact_choices(board, c)) for c in ("model_type", "size", "license")),
            gr.update(choices=compared, value=worth[:DEFAULT_COMPARED]),
        )

    def show_plots(suite, task, setting, chosen, version=None):
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
        # drawn in the browser by interactive_plots.TAB_JS (Plotly): hover, zoom, legend toggles
        return (
            '<div class="pb-plots">'
            + "".join(
                f'<div class="pb-plot" id="{name}" data-src="{html.escape(src)}" '
                f'data-empty="{html.escape(empty)}"></div>'
                for name, src, empty in boxes
            )
            + "</div>"
        )

    def setting_update(suite, task, value):
        """The task's own settings (no form offers one the task refuses), and all of them."""
        return gr.update(
            choices=[(ALL_SETTINGS, ALL), *task_setting_choices(suite, task)], value=value
        )

    def on_suite(suite):
        _, task, setting = default_board(services, suite)
        return (
            gr.update(choices=task_choices(suite), value=task),
            setting_update(suite, task, setting or ALL),
            gr.update(choices=[NO_TIER, *tier_choices(suite, task)], value=NO_TIER),
        )

    def on_task(suite, task):
        setting = default_board(services, suite, task)[2]
        return (
            setting_update(suite, task, setting or ALL),
            gr.update(choices=[NO_TIER, *tier_choices(suite, task)], value=NO_TIER),
        )

    def on_finished(submission_id):
        """A submission of this page finished: show its suite and task with its row outlined."""
        found = services.submission(submission_id)
        if found is None or found.suite not in all_suites():
            return (gr.skip(),) * 6
        return (
            gr.update(value=found.suite),
            gr.update(choices=task_choices(found.suite), value=found.task),
            setting_update(found.suite, found.task, found.setting),
            gr.update(choices=[NO_TIER, *tier_choices(found.suite, found.task)], value=NO_TIER),
            found.id,
            versions_update(),
        )  # its result is in the newest version

    def on_load(request: gr.Request):
        """The view the URL names (every control's value: a reloaded or shared link opens the same
        view), else the first screen: the task with the most verified rows, in one setting."""
        params = tab_params(request, FIRST_TAB)
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
        tier = params.get("tier") if params.get("tier") in tiers else NO_TIER

        def fact(name):  # the fact filters' choices come with the board; take the link's value
            value = (params.get(name) or ALL)[:100]
            return gr.update(choices=[ALL, *([value] if value != ALL else [])], value=value)

        columns = params.get("columns")
        chosen = (
            DEFAULT_COLUMNS
            if columns is None
            else [c for c in columns.split(",") if c in OPTIONAL_COLUMNS]
        )
        return (
            gr.update(choices=suite_choices(), value=suite),
            gr.update(choices=task_choices(suite), value=task),
            setting_update(suite, task, setting or ALL),
            gr.update(choices=[NO_TIER, *tier_choices(suite, task)], value=tier),
            fact("type"),
            fact("size"),
            fact("license"),
            (params.get("q") or "")[:200],
            chosen,
            params.get("highlight") or "",
            versions_update((params.get("revision") or "")[:100] or None),
        )

    with gr.Tab("Leaderboard", id="leaderboard"):
        gr.HTML(FILTER_STYLE, elem_id="leaderboard-style", padding=False)
        with gr.Row():
            f_suite = gr.Dropdown(suite_choices(), label="Suite", elem_id="filter-suite")
            f_task = gr.Dropdown([], label="Task", elem_id="filter-task")
            f_setting = gr.Dropdown(
                [(ALL_SETTINGS, ALL)], value=ALL, label="Setting", elem_id="filter-setting"
            )
            f_tier = gr.Dropdown(
                [NO_TIER], value=NO_TIER, label="Tier (rank by it)", elem_id="filter-tier"
            )
        with gr.Row():
            f_type = gr.Dropdown([ALL], value=ALL, label="Model type", elem_id="filter-type")
            f_size = gr.Dropdown([ALL], value=ALL, label="Size (parameters)", elem_id="filter-size")
            f_license = gr.Dropdown([ALL], value=ALL, label="License", elem_id="filter-license")
            f_search = gr.Textbox(
                label="Search models", placeholder="model name…", elem_id="filter-search"
            )
        with gr.Row(equal_height=True):
            f_columns = gr.CheckboxGroup(
                [(label, key) for key, label in OPTIONAL_COLUMNS.items()],
                value=DEFAULT_COLUMNS,
                label="Columns",
                elem_id="column-chooser",
                scale=4,
            )
            f_version = gr.Dropdown(
                [(LATEST_LABEL, LATEST)],
                value=LATEST,
                label="Version",
                elem_id="filter-version",
                scale=2,
                info="the newest, a release, or an earlier revision",
            )
        board_html = gr.HTML(elem_id="leaderboard-table", js_on_load=SORT_JS)
        gr.Markdown(RANKING_HELP, elem_id="leaderboard-help")
        downloads = gr.HTML(elem_id="leaderboard-downloads")
        with gr.Accordion("Plots", open=True, elem_id="leaderboard-plots"):
            compare = gr.Dropdown(
                [],
                multiselect=True,
                max_choices=MAX_SERIES,
                label="Results to compare (per-tier bars)",
                elem_id="plot-choice",
            )
            plots_html = gr.HTML(elem_id="plots", js_on_load=PLOTS_JS)
        highlight = gr.Textbox(visible=False, elem_id="leaderboard-highlight")
        board_state = gr.State(None)
        # The board follows the results live: a timer notes the head revision, and a move redraws.
        seen_head = gr.State(None)
        moved_head = gr.Textbox(visible=False, elem_id="leaderboard-head")
        head_timer = gr.Timer(HEAD_POLL_S)

    view = [
        f_suite,
        f_task,
        f_setting,
        f_tier,
        f_type,
        f_size,
        f_license,
        f_search,
        f_columns,
        highlight,
        f_version,
    ]
    outputs = [board_html, downloads, board_state]

    def redraw(trigger):
        return (
            trigger(show, view, outputs)
            .then(None, view, None, js=URL_JS)
            .then(refresh_choices, board_state, [f_type, f_size, f_license, compare])
            .then(show_plots, [f_suite, f_task, f_setting, compare, f_version], plots_html)
        )

    # .input (the reader's own choices), not .change: the page's own updates must not cascade.
    redraw(f_suite.input(on_suite, f_suite, [f_task, f_setting, f_tier]).then)
    redraw(f_task.input(on_task, [f_suite, f_task], [f_setting, f_tier]).then)
    # always_last: a change made while the board is being drawn is drawn after it, never dropped
    for control in (f_setting, f_tier, f_type, f_size, f_license, f_columns):
        control.input(show, view, outputs, trigger_mode="always_last").then(
            None, view, None, js=URL_JS
        )
    f_search.change(show, view, outputs, show_progress="hidden", trigger_mode="always_last").then(
        None, view, None, js=URL_JS
    )
    compare.input(
        show_plots,
        [f_suite, f_task, f_setting, compare, f_version],
        plots_html,
        trigger_mode="always_last",
    )
    redraw(f_version.input)
    redraw(
        ui.load(
            on_load,
            None,
            [
                f_suite,
                f_task,
                f_setting,
                f_tier,
                f_type,
                f_size,
                f_license,
                f_search,
                f_columns,
                highlight,
                f_version,
            ],
        ).then
    )

    def head_moved(seen):
        """(the head now, the head again where it moved since the last tick, else skip)."""
        head = services.results_head()
        if head is None or head == seen:
            return gr.skip(), gr.skip()
        return head, (head if seen is not None else gr.skip())

    head_timer.tick(head_moved, seen_head, [seen_head, moved_head], show_progress="hidden")
    redraw(moved_head.change(versions_update, f_version, f_version, show_progress="hidden").then)

    def follow(source: gr.Textbox):
        redraw(
            source.change(
                on_finished, source, [f_suite, f_task, f_setting, f_tier, highlight, f_version]
            ).then
        )

    return LeaderboardTab(follow=follow)
