"""The Queue tab: everyone's recent submissions, live (state, position, progress, time left, owner,
failure reason), redrawn every few seconds while the tab is open."""

from __future__ import annotations

import html

import gradio as gr

from space.status_text import PHASE_WORDS, duration
from space.tabs.service_status import submission_link
from submissions.service import SubmissionStatus

QUEUE_LIMIT = 100  # newest submissions shown
REFRESH_S = 2.0
QUEUE_TAB = "Queue"
HEADERS = [
    "Submitted",
    "Id",
    "Model",
    "Suite / task",
    "Setting",
    "State",
    "Position",
    "Progress",
    "Speed",
    "Time left",
    "Owner",
    "Reason",
]


def _row(status: SubmissionStatus) -> list[str]:
    progress = status.get("progress") or {}
    total = progress.get("total") or 0
    position = status.get("queue_position")
    rate = progress.get("tokens_per_s")
    eta = progress.get("eta_s")
    running = status["state"] == "running"
    return [
        (status.get("created_at") or "")[:19].replace("T", " "),
        status["id"],
        status["model_name"],
        f"{status['suite']} / {status['task']}",
        status["setting"],
        status["state"],
        queue_place(status["state"], position),
        progress_cell(progress, running) if total else "",
        f"{rate:.0f} tok/s" if running and rate else "",
        duration(eta) if running and eta is not None else "",
        status.get("owner") or "",
        status.get("error") or "",
    ]


def progress_cell(progress, running: bool = True) -> str:
    """Items done of all, or what a running model run does before its first item (its phase)."""
    done, total = progress.get("done") or 0, progress.get("total") or 0
    doing = PHASE_WORDS.get(str(progress.get("phase"))) if running else None
    return f"{doing} ({done} / {total})" if doing else f"{done} / {total}"


def queue_place(state: str, position: int | None) -> str:
    """The Position column: its place in its hardware's queue (1 = next), or what it is doing."""
    if state == "queued":
        return "waiting" if position is None else str(position + 1)
    return "running now" if state == "running" else "–"


def render_queue(statuses: list[SubmissionStatus]) -> str:
    if not statuses:
        return "<p><em>No submissions yet.</em></p>"
    head = "".join(f'<th role="columnheader">{h}</th>' for h in HEADERS)
    rows = []
    for status in statuses:
        values = [html.escape(str(v)) for v in _row(status)]
        values[1] = submission_link(status["id"])  # the id opens its status
        cells = "".join(f'<td role="gridcell">{v}</td>' for v in values)
        rows.append(
            f'<tr role="row" class="pb-state-{html.escape(status["state"])}" data-id="{html.escape(status["id"])}">{cells}</tr>'
        )
    return (
        "<style>#queue-table table{border-collapse:collapse;font-size:13px;width:max-content}"
        "#queue-table th,#queue-table td{padding:3px 8px;border-bottom:1px solid #e5e7eb;white-space:nowrap;text-align:left}"
        "#queue-table .pb-state-failed td{color:#b91c1c}#queue-table .pb-state-running td{background:#eff6ff}</style>"
        f'<div style="overflow-x:auto"><table role="grid"><thead><tr role="row">{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def build_queue_tab(ui: gr.Blocks, services) -> gr.Timer:
    def show():
        recent = services.recent_submissions(QUEUE_LIMIT)  # hidden rows stay out
        return render_queue([services.submission_status(s) for s in recent])

    with gr.Tab(QUEUE_TAB, id="queue") as tab:
        gr.Markdown(
            f"Everyone's {QUEUE_LIMIT} most recent submissions, newest first; redrawn every "
            f"{REFRESH_S:g} s while this tab is open."
        )
        table = gr.HTML(elem_id="queue-table", js_on_load=None)
        timer = gr.Timer(REFRESH_S, active=False)
    # Poll only while someone looks at the queue: build_ui switches the timer on with this tab, off with the others.
    tab.select(show, None, table)
    timer.tick(show, None, table, show_progress="hidden")
    ui.load(show, None, table)
    return timer
