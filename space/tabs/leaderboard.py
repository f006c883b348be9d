"""The Leaderboard tab: one suite's task, ranked with rank groups from 95% intervals; filters, search,
column chooser, header sorting (in the browser), downloads, plots of the shown rows.

Deep links: `/?suite=S&task=T&setting=X&highlight=<submission id>` opens that view (the status of a
finished submission links here with its row highlighted); `&revision=<sha or release>` opens an older
version of the leaderboard (the Version selector: "latest", every release, recent revisions).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.board import UNKNOWN, ranked_board
from leaderboard.store import StoreError, StoreUnavailable
from space.board_view import DEFAULT_COLUMNS, OPTIONAL_COLUMNS, SORT_JS, render_board
from space.choices import ALL, setting_choices, suite_choices, task_choices, tier_choices
from space.data import (
    LATEST,
    LATEST_LABEL,
    board_inputs,
    default_view,
    manifest_tier_order,
    version_choices,
)
from space.plots import MAX_SERIES

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
DEFAULT_COMPARED = 3  # results in the per-tier plot until the reader picks others


@dataclass
class LeaderboardTab:
    follow: Callable  # follow(component holding a submission id): on change, show its task, its row outlined


def download_links(suite, task, setting, tier, revision=None) -> str:
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
        links.append(
            f'<a class="pb-download" href="{html.escape(url)}" download="leaderboard.{fmt}">{fmt.upper()}</a>'
        )
    return "Download this table (full precision): " + " · ".join(links)


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
        table = render_board(shown, cells, columns)
        if highlight and (shown["submission_id"] == highlight).any():
            table = table.replace(
                f'data-id="{html.escape(highlight)}"',
                f'data-id="{html.escape(highlight)}" '
                'style="outline:3px solid #f59e0b" aria-current="true"',
                1,
            )
        if version:  # an older version: say so above it, so no one takes it for the current board
            table = (
                f'<p class="pb-version-note" id="version-note">Showing the leaderboard as of '
                f"<code>{html.escape(str(version))}</code>, not the newest.</p>"
            ) + table
        return table, download_links(suite, task, setting, tier, version), board

    def versions_update(current=None):
        """The Version selector's choices (releases and recent revisions), keeping the reader's choice."""
        try:
            choices = version_choices(services)
        except StoreError:
            return gr.skip()  # the store unreachable for now: keep what is offered
        values = {value for _, value in choices}
        if (
            current and current not in values
        ):  # a deep link's revision, or one that left the recent list
            choices.append((current, current))
        return gr.update(choices=choices, value=current or LATEST)

    def refresh_choices(board):
        if board is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        compared = [
            (f"{m} ({s})", i)
            for m, s, i in zip(board["model_name"], board["setting"], board["submission_id"])
        ]
        return (
            *(gr.update(choices=fact_choices(board, c)) for c in ("model_type", "size", "license")),
            gr.update(choices=compared, value=[i for _, i in compared[:DEFAULT_COMPARED]]),
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
        return (
            f'<div class="pb-plots"><img id="plot-tiers" alt="per-tier scores with 95% intervals of the chosen results" '
            f'src="/plots/tiers.svg?{html.escape(tiers)}">'
            f'<img id="plot-settings" alt="totals by setting, per model" src="/plots/settings.svg?{html.escape(urlencode(where))}">'
            f'<img id="plot-size" alt="total against model size" src="/plots/size.svg?{html.escape(urlencode(where))}"></div>'
            "<style>.pb-plots img{max-width:100%;height:auto;display:block;margin:8px 0}</style>"
        )

    def on_suite(suite):
        tasks = task_choices(suite)
        first = default_view(services, suite)[1] or (tasks[0][1] if tasks else None)
        return (
            gr.update(choices=tasks, value=first),
            gr.update(choices=[ALL, *setting_choices(suite)], value=ALL),
            gr.update(choices=[NO_TIER, *tier_choices(suite, first)], value=NO_TIER),
        )

    def on_task(suite, task):
        return gr.update(choices=[NO_TIER, *tier_choices(suite, task)], value=NO_TIER)

    def on_finished(submission_id):
        """A submission of this page finished: show its suite and task with its row outlined."""
        found = services.submission(submission_id)
        if found is None or found.suite not in all_suites():
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return (
            gr.update(value=found.suite),
            gr.update(choices=task_choices(found.suite), value=found.task),
            gr.update(choices=[ALL, *setting_choices(found.suite)], value=ALL),
            gr.update(choices=[NO_TIER, *tier_choices(found.suite, found.task)], value=NO_TIER),
            found.id,
            versions_update(),
        )  # its result is in the newest version

    def on_load(request: gr.Request):
        """The default view (the first suite with verified results), or the one a deep link names."""
        params = dict(request.query_params) if request else {}
        suite, task = default_view(services)
        if params.get("suite") in all_suites():
            suite = params["suite"]
            task = (
                params.get("task")
                if params.get("task") in all_suites()[suite].tasks
                else default_view(services, suite)[1]
            )
        setting = (
            params.get("setting")
            if suite and params.get("setting") in setting_choices(suite)
            else ALL
        )
        return (
            gr.update(choices=suite_choices(), value=suite),
            gr.update(choices=task_choices(suite), value=task),
            gr.update(choices=[ALL, *setting_choices(suite)], value=setting),
            gr.update(choices=[NO_TIER, *tier_choices(suite, task)], value=NO_TIER),
            params.get("highlight") or "",
            versions_update((params.get("revision") or "")[:100] or None),
        )

    with gr.Tab("Leaderboard", id="leaderboard"):
        with gr.Row():
            f_suite = gr.Dropdown(suite_choices(), label="Suite", elem_id="filter-suite")
            f_task = gr.Dropdown([], label="Task", elem_id="filter-task")
            f_setting = gr.Dropdown([ALL], value=ALL, label="Setting", elem_id="filter-setting")
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
            refresh = gr.Button(
                "Refresh", size="sm", scale=0, min_width=110, elem_id="refresh-leaderboard"
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
            plots_html = gr.HTML(elem_id="plots")
        highlight = gr.Textbox(visible=False, elem_id="leaderboard-highlight")
        board_state = gr.State(None)

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
            .then(refresh_choices, board_state, [f_type, f_size, f_license, compare])
            .then(show_plots, [f_suite, f_task, f_setting, compare, f_version], plots_html)
        )

    # .input (the reader's own choices), not .change: the page's own updates must not cascade.
    redraw(f_suite.input(on_suite, f_suite, [f_task, f_setting, f_tier]).then)
    redraw(f_task.input(on_task, [f_suite, f_task], f_tier).then)
    # always_last: a change made while the board is being drawn is drawn after it, never dropped
    for control in (f_setting, f_tier, f_type, f_size, f_license, f_columns):
        control.input(show, view, outputs, trigger_mode="always_last")
    f_search.change(show, view, outputs, show_progress="hidden", trigger_mode="always_last")
    compare.input(
        show_plots,
        [f_suite, f_task, f_setting, compare, f_version],
        plots_html,
        trigger_mode="always_last",
    )
    redraw(f_version.input)
    redraw(refresh.click(versions_update, f_version, f_version).then)
    redraw(ui.load(on_load, None, [f_suite, f_task, f_setting, f_tier, highlight, f_version]).then)

    def follow(source: gr.Textbox):
        redraw(
            source.change(
                on_finished, source, [f_suite, f_task, f_setting, f_tier, highlight, f_version]
            ).then
        )

    return LeaderboardTab(follow=follow)
