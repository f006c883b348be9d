"""A one-line service status above the tabs: the results revision on screen, the publish backlog
("n results waiting to publish" while the Hub is unreachable), and the workers with their
hardware, heartbeat and current submission (the same facts as /api/v1/health and /api/v1/workers)."""

from __future__ import annotations

from datetime import datetime, timezone

import gradio as gr

from space.status_text import inert

HEARTBEAT_STALE_S = 60


def status_markdown(services) -> str:
    parts = []
    head = services.results_head()
    kind = "Hub dataset" if services.results.kind == "hub" else "local dataset"
    parts.append(
        f"Results: {kind} revision `{head[:12]}`"
        if head
        else f"Results: {kind} unreachable right now"
    )
    backlog = services.outbox.backlog()
    if backlog:
        parts.append(f"**{backlog} result{'s' if backlog != 1 else ''} waiting to publish**")
    try:
        workers = services.workers()
    except Exception:  # noqa: BLE001 - the queue being down must not break the page
        workers = None
    if workers is None:
        parts.append("workers: queue unreachable")
    else:
        parts.append(f"{len(workers)} worker{'s' if len(workers) != 1 else ''}")
    lines = [" · ".join(parts)]
    for worker in workers or []:
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


def build_service_status(ui: gr.Blocks, services) -> gr.Markdown:
    with gr.Row():
        box = gr.Markdown(elem_id="service-status")
        refresh = gr.Button("↻", size="sm", scale=0, min_width=40, elem_id="service-status-refresh")
    ui.load(lambda: status_markdown(services), None, box)
    refresh.click(lambda: status_markdown(services), None, box)
    return box
