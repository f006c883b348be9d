"""The Submit a model tab: the service runs a registered or Hub model itself, one run per setting."""

from __future__ import annotations

import gradio as gr

from evaluator.protocols import default_protocol, setting_problem
from evaluator.registry import get_task
from space.choices import (
    protocol_choices,
    setting_choices,
    suite_choices,
    task_choices,
    task_setting_choices,
)
from space.identity import build_identity_row, ui_identity
from space.my_submissions import identity_field, remember
from space.status_text import TERMINAL_STATES, format_error, format_status, inert
from submissions.intake import ModelForm, SubmissionError


def build_submit_model_tab(
    ui: gr.Blocks,
    services,
    first_suite: str | None,
    finished: gr.Textbox,
    mine: gr.BrowserState,
    shared_token: gr.State,
):
    """`finished` receives the id of each of this page's runs as it finishes (the leaderboard redraws)."""

    def model_choices():
        return sorted(services.registered_models())

    def runnable_settings(suite, task, protocol) -> list[str]:
        """The suite's settings this protocol can honour (`cot` needs one that lets the model reason)."""
        if not suite or not task:
            return setting_choices(suite)
        found = get_task(suite, task)
        chosen = (
            default_protocol(found, "generative") if protocol in (None, "", "default") else protocol
        )
        return [
            s for s in task_setting_choices(suite, task) if not setting_problem(found, s, chosen)
        ]

    def on_suite(suite):
        tasks = [
            (title, name)
            for title, name in task_choices(suite)
            if get_task(suite, name).model_protocols
        ]
        task = tasks[0][1] if tasks else None
        settings = runnable_settings(suite, task, "default")
        return (
            gr.update(choices=tasks, value=task),
            gr.update(choices=settings, value=settings[:1]),
            gr.update(choices=protocol_choices(suite, task), value="default"),
        )

    def on_task(suite, task):
        settings = runnable_settings(suite, task, "default")
        return gr.update(choices=protocol_choices(suite, task), value="default"), gr.update(
            choices=settings, value=settings[:1]
        )

    def on_protocol(suite, task, protocol, chosen):
        settings = runnable_settings(suite, task, protocol)
        return gr.update(
            choices=settings, value=[s for s in chosen or [] if s in settings] or settings[:1]
        )

    def submit_model(
        model,
        revision,
        model_type,
        suite,
        task,
        settings,
        protocol,
        limit,
        description,
        token_value,
        profile: gr.OAuthProfile | None,
    ):
        """One submission per chosen setting; each is resolved, deduplicated and queued on its own."""
        if not settings:
            return "**Error:** choose at least one setting.", {}, gr.Timer(active=False)
        try:
            submitter = services.submitter(ui_identity(services.identities, token_value, profile))
        except SubmissionError as exc:
            return format_error(exc), {}, gr.Timer(active=False)
        accepted, messages = [], []
        for setting in settings:
            form = ModelForm(
                model=model or "",
                suite=suite or "",
                task=task or "",
                setting=setting,
                revision=(revision or "").strip() or None,
                model_type=model_type or "auto",
                protocol=None if protocol in (None, "", "default") else protocol,
                limit=int(limit) if limit else None,
                description=description or "",
            )
            try:
                accepted.append(services.submit_model(form, submitter).id)
            except SubmissionError as exc:
                messages.append(
                    f"**Error ({inert(setting)}):** "
                    + format_error(exc).removeprefix("**Error:** ")
                )
        # The state keeps the refusals too, so the 1 s poll does not wipe them while the others run.
        return (
            statuses(accepted, messages),
            {"ids": accepted, "messages": messages},
            gr.Timer(active=bool(accepted)),
        )

    def statuses(ids, messages=()):
        parts = (
            ["\n\n".join(messages)] if messages else []
        )  # the refusals together, then one block a run
        for found in filter(None, (services.submission(i) for i in ids)):
            parts.append(format_status(services.submission_status(found)))
        return "\n\n---\n\n".join(parts)

    def poll(current):
        """Every second while a run of this page is in flight; stops when all are finished or failed."""
        ids = (current or {}).get("ids") or []
        if not ids:
            return gr.skip(), gr.Timer(active=False), gr.skip()
        found = [s for s in (services.submission(i) for i in ids) if s]
        running = any(s.state not in TERMINAL_STATES for s in found)
        done = [s for s in found if s.state == "finished"]
        newest = max(done, key=lambda s: s.finished_at or "").id if done else gr.skip()
        return statuses(ids, current.get("messages") or ()), gr.Timer(active=running), newest

    with gr.Tab("Submit a model", id="submit-model-tab"):
        token = identity_field(build_identity_row("api-token-model"), shared_token)
        gr.Markdown(
            "The service runs the model itself on the hidden split. Give a Hugging Face Hub id "
            "(pinned to a commit before it is queued) or the name of a model the operator registered. "
            "Each chosen setting is its own run."
        )
        with gr.Row():
            m_model = gr.Dropdown(
                model_choices(),
                allow_custom_value=True,
                label="Model (registered name or Hub id)",
                elem_id="model-name",
            )
            m_revision = gr.Textbox(
                label="Revision (optional: branch, tag or commit)", elem_id="model-revision"
            )
            m_type = gr.Radio(
                ["auto", "generative", "reward"],
                value="auto",
                label="Model type",
                elem_id="model-type",
            )
        with gr.Row():
            m_suite = gr.Dropdown(
                suite_choices(), value=first_suite, label="Suite", elem_id="model-suite"
            )
            m_task = gr.Dropdown([], label="Task", elem_id="model-task")
            m_protocol = gr.Dropdown(
                ["default"], value="default", label="Protocol", elem_id="model-protocol"
            )
        m_settings = gr.CheckboxGroup(
            setting_choices(first_suite),
            label="Settings",
            elem_id="model-settings",
            info="`cot` is offered only where the protocol lets the model reason before "
            "answering (it generates, with room to): a log-prob protocol reads the "
            "answer at once.",
        )
        with gr.Row():
            m_limit = gr.Number(
                label="Items (optional smoke run on N items: marked partial, not ranked; "
                "0 or empty = the whole split)",
                value=None,
                precision=0,
                elem_id="model-limit",
            )
            m_description = gr.Textbox(label="Description (optional)", elem_id="model-description")
        m_button = gr.Button("Evaluate", variant="primary", elem_id="model-submit")
        m_status = gr.Markdown(elem_id="model-status")
        m_current = gr.State({})
        m_timer = gr.Timer(1.0, active=False)

    ui.load(on_suite, m_suite, [m_task, m_settings, m_protocol])
    ui.load(lambda: gr.update(choices=model_choices()), None, m_model)
    m_suite.input(on_suite, m_suite, [m_task, m_settings, m_protocol])
    m_task.input(on_task, [m_suite, m_task], [m_protocol, m_settings])
    m_protocol.input(on_protocol, [m_suite, m_task, m_protocol, m_settings], m_settings)
    m_button.click(
        submit_model,
        [
            m_model,
            m_revision,
            m_type,
            m_suite,
            m_task,
            m_settings,
            m_protocol,
            m_limit,
            m_description,
            token,
        ],
        [m_status, m_current, m_timer],
    ).then(remember, [m_current, mine], mine)
    m_timer.tick(poll, m_current, [m_status, m_timer, finished], show_progress="hidden")
    return token
