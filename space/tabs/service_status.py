"""The service's state, live: a one-line summary above the tabs (results revision, what the workers
are doing, submissions waiting, results waiting to publish) and the Service tab with the operator's
details (each worker's name, hardware queues, heartbeat, current submission). Both are redrawn by a
timer every few seconds, so nobody has to click to see a worker go busy or a publish land (the same
facts as /api/v1/health and /api/v1/workers)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlencode

import gradio as gr

from space.status_text import inert

HEARTBEAT_STALE_S = 60
STATUS_REFRESH_S = 3.0  # a worker's state change or a publish shows within this


@dataclass
class ServiceState:
    """What the line and the tab show, read once per tick."""

    kind: str  # "Hub dataset" or "local dataset"
    head: str | None  # results revision, None while the store cannot be reached
    backlog: int  # results waiting to publish
    waiting: int | None  # submissions queued (None: the queue is unreachable)
    workers: list[dict] | None  # None: the queue is unreachable


def read_state(services) -> ServiceState:
    workers = waiting = None
    try:
        workers = services.workers()
        waiting = queued_count(services.redis)
    except Exception:  # noqa: BLE001 - the queue being down must not break the page
        pass
    return ServiceState(
        kind="Hub dataset" if services.results.kind == "hub" else "local dataset",
        head=services.results_head(),
        backlog=services.outbox.backlog(),
        waiting=waiting,
        workers=workers,
    )


def queued_count(redis) -> int:
    from rq import Queue

    from submissions.hardware import ALL_QUEUES

    return sum(Queue(name, connection=redis).count for name in ALL_QUEUES)


def submission_link(submission_id: str) -> str:
    """A submission id as a link to its status (the Submission status tab, opened by the URL)."""
    href = "/?" + urlencode({"status": submission_id})
    return f'<a class="pb-submission" href="{html.escape(href)}">{html.escape(submission_id)}</a>'


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def status_line(state: ServiceState) -> str:
    """The one line above the tabs (HTML; every value from Redis or the store is escaped)."""
    parts = [
        f'Results: <span id="status-revision">{html.escape(state.head[:12])}</span>'
        if state.head
        else f"Results: {state.kind} unreachable right now"
    ]
    if state.workers is None:
        parts.append('<span id="status-workers">workers: queue unreachable</span>')
    else:
        busy = [w for w in state.workers if w.get("current_submission")]
        idle = len(state.workers) - len(busy)
        if not state.workers:
            workers = "no worker running: submissions wait"
        elif busy:
            runs = ", ".join(submission_link(w["current_submission"]) for w in busy)
            workers = (
                "worker" if len(busy) == 1 else f"{len(busy)} workers"
            ) + f" busy with {runs}"
            workers += f" ({idle} idle)" if idle else ""
        else:
            workers = f"{_plural(idle, 'worker')} idle"
        parts.append(f'<span id="status-workers">{workers}</span>')
    if state.waiting is not None:
        parts.append(
            f'<span id="status-waiting">{_plural(state.waiting, "submission")} waiting</span>'
        )
    if state.backlog:
        parts.append(
            f'<strong id="status-backlog">{_plural(state.backlog, "result")} waiting to publish'
            "</strong>"
        )
    return '<div class="pb-status-line">' + " · ".join(parts) + "</div>"


def status_markdown(services) -> str:
    """The Service tab: the summary, then one line per worker (names and hosts: for operators)."""
    state = read_state(services)
    lines = [
        f"- Results store: {state.kind}, revision `{state.head}`"
        if state.head
        else f"- Results store: {state.kind}, unreachable right now",
        f"- Results waiting to publish: {state.backlog}",
        "- Submissions waiting: "
        + ("queue unreachable" if state.waiting is None else str(state.waiting)),
        "",
        f"**Workers** ({'queue unreachable' if state.workers is None else len(state.workers)}):",
    ]
    for worker in state.workers or []:
        lines.append(f"- {worker_line(worker)}")
    return "\n".join(lines)


def worker_line(worker: dict) -> str:
    hardware = ", ".join(q.split(":", 1)[1] if ":" in q else "web node" for q in worker["queues"])
    seen = ""
    if worker.get("last_heartbeat"):
        age = (
            datetime.now(timezone.utc)
            - datetime.fromisoformat(worker["last_heartbeat"]).replace(tzinfo=timezone.utc)
        ).total_seconds()
        seen = f", heartbeat {age:.0f} s ago" + (" (stale)" if age > HEARTBEAT_STALE_S else "")
    running = (
        f", running {inert(worker['current_submission'])}"
        if worker.get("current_submission")
        else ""
    )
    # Not in a code span: inert() writes '-' as &#45;, which a code span would show literally.
    return f"**{inert(worker['name'])}** ({hardware}): {worker['state']}{running}{seen}"


def build_status_line(ui: gr.Blocks, services) -> gr.Timer:
    """The line above the tabs, redrawn by its own timer (always on: it is on every tab)."""
    line = gr.HTML(elem_id="service-status")
    timer = gr.Timer(STATUS_REFRESH_S)
    draw = lambda: status_line(read_state(services))  # noqa: E731
    ui.load(draw, None, line)
    timer.tick(draw, None, line, show_progress="hidden")
    return timer


SERVICE_TAB = "Service"


def build_service_tab(ui: gr.Blocks, services) -> gr.Timer:
    """Operators' details; its timer runs only while the tab is open (build_ui switches it)."""
    with gr.Tab(SERVICE_TAB, id="service") as tab:
        gr.Markdown(
            f"The workers that run model submissions, and the results store; redrawn every "
            f"{STATUS_REFRESH_S:g} s while this tab is open."
        )
        box = gr.Markdown(elem_id="service-details")
        timer = gr.Timer(STATUS_REFRESH_S, active=False)
    draw = lambda: status_markdown(services)  # noqa: E731
    tab.select(draw, None, box, show_progress="hidden")
    timer.tick(draw, None, box, show_progress="hidden")
    return timer
