"""The Submit predictions tab: pick suite/task/setting, download the public inputs, upload a JSONL
file of predictions, watch its status."""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr

from evaluator.registry import all_suites
from evaluator.splits import install_command
from space.choices import setting_choices, suite_choices, task_choices, task_setting_choices
from space.formats import format_help
from space.identity import build_identity_row, ui_identity
from space.my_submissions import identity_field, remember
from space.status_text import TERMINAL_STATES, format_error, format_status
from space.uploads import NotAnUpload, discard_upload, uploaded_file
from submissions.intake import SubmissionError, SubmissionForm


def inputs_link(suite, task) -> str:
    if not suite or not task or suite not in all_suites() or task not in all_suites()[suite].tasks:
        return ""
    if not all_suites()[suite].tasks[task].split_available():
        return (
            f'<p class="pb-not-installed">The hidden split of {html.escape(all_suites()[suite].title)} is not '
            "installed on this server: its inputs cannot be downloaded and predictions for it cannot be scored "
            "here yet. Choose another suite, or ask the operator to install it with "
            f"<code>{html.escape(install_command(all_suites()[suite]))}</code>.</p>"
        )
    url = f"/api/v1/suites/{suite}/tasks/{task}/inputs"
    return (
        f'<a class="pb-inputs" href="{html.escape(url)}" download="{html.escape(suite)}-{html.escape(task)}-inputs.jsonl">'
        f"Download public inputs</a> of {html.escape(suite)}/{html.escape(task)} (JSONL, one item a line, "
        f"no gold answers): run your model on these and upload one prediction per item."
        f'<br><small class="pb-visibility">This split is '
        f"{html.escape(all_suites()[suite].split_status()['visibility_note'])}.</small>"
    )


def setting_info(suite, setting) -> str:
    if not suite or not setting or suite not in all_suites():
        return ""
    described = all_suites()[suite].settings.get(setting, "")
    return f"**{html.escape(setting)}**: {html.escape(described)}" if described else ""


def build_submit_predictions_tab(
    ui: gr.Blocks,
    services,
    first_suite: str | None,
    finished: gr.Textbox,
    mine: gr.BrowserState,
    shared_token: gr.State,
):
    """`finished` receives the id of this page's submission when it finishes (the leaderboard redraws)."""

    def on_suite(suite):
        tasks = task_choices(suite)
        task = tasks[0][1] if tasks else None
        return (gr.update(choices=tasks, value=task), *on_task(suite, task))

    def open_for(suite, task) -> bool:
        found = all_suites().get(suite)
        return bool(found and task in found.tasks and found.tasks[task].split_available())

    def on_task(suite, task):
        """The task's own settings; the upload box and the button only where it takes submissions
        (else the one note of inputs_link says why, and the operator's command)."""
        settings = task_setting_choices(suite, task)
        setting = settings[0] if settings else None
        shown = gr.update(visible=open_for(suite, task))
        return (
            gr.update(choices=settings, value=setting),
            inputs_link(suite, task),
            setting_info(suite, setting),
            task_help(suite, task),
            shown,
            shown,
        )

    def task_help(suite, task):
        if (
            not suite
            or not task
            or suite not in all_suites()
            or task not in all_suites()[suite].tasks
        ):
            return ""
        return format_help(all_suites()[suite].tasks[task])

    def submit(
        file_path,
        suite,
        task,
        setting,
        model_name,
        link,
        description,
        token_value,
        profile: gr.OAuthProfile | None,
    ):
        if (
            suite in all_suites()
            and task in all_suites()[suite].tasks
            and not all_suites()[suite].tasks[task].split_available()
        ):
            return (
                f"**Not accepted:** the hidden split of {html.escape(all_suites()[suite].title)} is not installed on "
                "this server, so it cannot score predictions for it yet. Nothing was queued.",
                None,
                gr.Timer(active=False),
            )
        if not file_path:
            return (
                "**Error:** choose a predictions file (JSONL) first.",
                None,
                gr.Timer(active=False),
            )
        form = SubmissionForm(
            suite or "", task or "", setting or "", model_name or "", link or "", description or ""
        )
        try:
            file_path = uploaded_file(
                file_path
            )  # a path the client named, not one it uploaded: refused
        except NotAnUpload as refused:
            return f"**Error:** {refused}.", None, gr.Timer(active=False)
        try:
            submitter = services.submitter(ui_identity(services.identities, token_value, profile))
            with open(file_path, "rb") as stream:
                submission = services.submit_predictions(
                    form, stream, Path(file_path).name, submitter
                )
        except SubmissionError as exc:
            return format_error(exc), None, gr.Timer(active=False)
        discard_upload(file_path)  # the service stored its own copy
        status = services.submission_status(submission)
        return (
            format_status(status),
            submission.id,
            gr.Timer(active=status["state"] not in TERMINAL_STATES),
        )

    def poll(submission_id):
        """Every second while a submission of this page is in flight; stops at a terminal state."""
        found = services.submission(submission_id)
        if not found:
            return gr.skip(), gr.Timer(active=False), gr.skip()
        status = services.submission_status(found)
        return (
            format_status(status),
            gr.Timer(active=status["state"] not in TERMINAL_STATES),
            found.id if status["state"] == "finished" else gr.skip(),
        )

    with gr.Tab("Submit predictions", id="submit"):
        token = identity_field(build_identity_row("api-token"), shared_token)
        with gr.Row():
            s_suite = gr.Dropdown(
                suite_choices(mark_unavailable=True),
                value=first_suite,
                label="Suite",
                elem_id="submit-suite",
            )
            s_task = gr.Dropdown(task_choices(first_suite), label="Task", elem_id="submit-task")
            s_setting = gr.Dropdown(
                setting_choices(first_suite), label="Setting you ran", elem_id="submit-setting"
            )
        s_setting_info = gr.Markdown(elem_id="submit-setting-info")
        s_inputs_link = gr.HTML(elem_id="inputs-link")
        s_format = gr.Markdown(elem_id="submit-format")
        s_file = gr.File(
            label="Predictions file (JSONL)",
            file_types=[".jsonl", ".json", ".txt"],
            type="filepath",
            elem_id="submit-file",
        )
        with gr.Row():
            s_model = gr.Textbox(label="Model name", elem_id="submit-model")
            s_link = gr.Textbox(label="Link (optional)", elem_id="submit-link")
        s_description = gr.Textbox(
            label="Description (optional)", lines=2, elem_id="submit-description"
        )
        s_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
        s_status = gr.Markdown(elem_id="submit-status")
        current = gr.State(None)
        timer = gr.Timer(1.0, active=False)

    per_task = [s_setting, s_inputs_link, s_setting_info, s_format, s_file, s_button]
    ui.load(on_suite, s_suite, [s_task, *per_task])
    s_suite.input(on_suite, s_suite, [s_task, *per_task])
    s_setting.change(setting_info, [s_suite, s_setting], s_setting_info)
    s_task.input(on_task, [s_suite, s_task], per_task)
    s_button.click(
        submit,
        [s_file, s_suite, s_task, s_setting, s_model, s_link, s_description, token],
        [s_status, current, timer],
    ).then(remember, [current, mine], mine)
    timer.tick(poll, current, [s_status, timer, finished], show_progress="hidden")
    return token
