"""The Submission status tab: look a submission up by its id, or pick one of those made from this
browser (kept in its localStorage, so they survive a reload and a closed tab)."""

from __future__ import annotations

import gradio as gr

from space.my_submissions import remembered_ids
from space.status_text import format_status, inert


def build_status_tab(ui: gr.Blocks, services, mine: gr.BrowserState) -> None:
    def lookup(submission_id):
        found = services.submission((submission_id or "").strip())
        if not found:
            return f"No submission with id {inert(submission_id or '')}."
        return format_status(services.submission_status(found))

    def my_choices(stored):
        """One choice per remembered submission this server knows: "model (suite/task, setting): state"."""
        choices = []
        for found in filter(None, (services.submission(i) for i in remembered_ids(stored))):
            choices.append(
                (
                    f"{found.model_name} ({found.suite}/{found.task}, {found.setting}): {found.state}",
                    found.id,
                )
            )
        return gr.update(choices=choices, value=None, visible=bool(choices))

    def pick(submission_id):
        return (submission_id, lookup(submission_id)) if submission_id else (gr.skip(), gr.skip())

    with gr.Tab("Submission status", id="status"):
        q_mine = gr.Dropdown(
            [], label="Submitted from this browser", visible=False, elem_id="status-mine"
        )
        q_id = gr.Textbox(label="Submission id", elem_id="status-id")
        q_button = gr.Button("Look up", elem_id="status-button")
        q_status = gr.Markdown(elem_id="status-result")
    q_button.click(lookup, q_id, q_status)

    def from_link(request: gr.Request):
        """`/?status=<id>` (the queue's and the status line's links): that submission, looked up."""
        wanted = (dict(request.query_params).get("status") or "")[:100] if request else ""
        return (wanted, lookup(wanted)) if wanted else (gr.skip(), gr.skip())

    ui.load(from_link, None, [q_id, q_status])
    ui.load(my_choices, mine, q_mine)
    mine.change(my_choices, mine, q_mine)
    q_mine.input(pick, q_mine, [q_id, q_status])
