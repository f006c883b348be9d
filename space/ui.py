"""The Gradio front end: one builder per tab (space/tabs/), over the same services as the API.

Everything shown is driven by the suites' manifests (tasks, tiers, settings, labels); the UI only
rounds for display (space/display.py), the API keeps full precision.

A tab is two parts: handlers, plain functions from the controls' values (and a link's query) and
the services to what the tab shows (a dataclass, or HTML), tested in process
(tests/unit/test_tab_handlers.py); and a thin builder that lays out the components and wires their
events to those handlers (the browser tests check the layout and the round trip). No function in
space/ is over 80 lines (tests/unit/test_space_functions.py).
"""

from __future__ import annotations

import gradio as gr

from space.choices import ready_suites, suite_choices
from space.my_submissions import browser_submissions
from space.status_text import format_error, format_status, inert  # noqa: F401  (space.ui's public helpers)
from space.tabs.about import build_about_tab
from space.tabs.explorer import build_explorer_tab
from space.tabs.leaderboard import build_leaderboard_tab
from space.tabs.overview import build_overview_tab
from space.tabs.queue import QUEUE_TAB, build_queue_tab
from space.tabs.service_status import SERVICE_TAB, build_service_tab, build_status_line
from space.tabs.status import build_status_tab, follow_with_tabs
from space.tabs.submit_model import build_submit_model_tab
from space.tabs.submit_predictions import build_submit_predictions_tab
from space.url_state import FIRST_TAB, query_params, tab_switch_js, url_tab
from submissions.service import Services

INTRO = (
    "# PersonaBoard\nA leaderboard for LLM personalization benchmarks. "
    "Rows marked *verified* were scored here on the hidden test split; "
    "*reported (paper)* rows are the papers' own numbers and are never ranked among them."
)


def _on_tab(event: gr.SelectData) -> tuple[gr.Timer, gr.Timer, str]:
    """The Queue and Service tabs poll only while open; the opened tab's id goes to the URL
    writer (space/url_state.py: the URL shows the open tab's view)."""
    opened = (event._data or {}).get("id") or ""
    return (
        gr.Timer(active=event.value == QUEUE_TAB),
        gr.Timer(active=event.value == SERVICE_TAB),
        str(opened),
    )


def _opened_tab(tabs: gr.Tabs):
    """The tab a link names opens (`?tab=<id>`; `/?status=<id>`, the queue's and status line's
    links, the Submission status tab)."""
    known = {str(tab_id) for child in tabs.children if (tab_id := getattr(child, "id", None))}

    def opened(request: gr.Request):
        wanted = url_tab(query_params(request))
        return gr.Tabs(selected=wanted) if wanted != FIRST_TAB and wanted in known else gr.skip()

    return opened


def build_ui(services: Services) -> gr.Blocks:
    # Default the submit tabs to a suite that takes submissions here (its split is installed).
    ready = ready_suites()
    first_suite = ready[0] if ready else next((name for _, name in suite_choices()), None)
    with gr.Blocks(title="PersonaBoard") as ui:
        gr.Markdown(INTRO)
        build_status_line(ui, services)  # results revision, workers busy or idle, backlog: live
        # The id of a submission made on this page, set when it finishes: the board redraws with its row outlined.
        finished = gr.Textbox(visible=False, elem_id="finished-submission")
        mine = browser_submissions()  # the ids submitted from this browser, for the status tab
        token = gr.State("")  # the API token typed in either submit tab (space/my_submissions.py)
        # wrap: on a phone every tab stays on screen (Gradio's default "menu" hid 7 of 9 behind "...")
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            board = build_leaderboard_tab(ui, services)
            build_overview_tab(ui, services)
            build_explorer_tab(ui, services)
            build_submit_predictions_tab(ui, services, first_suite, finished, mine, token)
            build_submit_model_tab(ui, services, first_suite, finished, mine, token)
            status_timer, followed = build_status_tab(ui, services, mine)
            queue_timer = build_queue_tab(ui, services)
            service_timer = build_service_tab(ui, services)
            build_about_tab(ui, services)
        board.follow(finished)
        opened = gr.Textbox(visible=False, elem_id="opened-tab")
        tabs.select(_on_tab, None, [queue_timer, service_timer, opened]).then(
            None, opened, None, js=tab_switch_js()
        )
        follow_with_tabs(tabs, status_timer, followed)  # its timer too runs only while open
        ui.load(_opened_tab(tabs), None, tabs)
    return ui
