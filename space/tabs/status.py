"""The Submission status tab: look a submission up by its id."""
from __future__ import annotations

import gradio as gr

from space.status_text import format_status, inert


def build_status_tab(ui: gr.Blocks, services) -> None:
    def lookup(submission_id):
        found = services.submission((submission_id or "").strip())
        if not found:
            return f"No submission with id {inert(submission_id or '')}."
        return format_status(services.submission_status(found))

    with gr.Tab("Submission status", id="status"):
        q_id = gr.Textbox(label="Submission id", elem_id="status-id")
        q_button = gr.Button("Look up", elem_id="status-button")
        q_status = gr.Markdown(elem_id="status-result")
    q_button.click(lookup, q_id, q_status)
