"""The Submit predictions tab: pick suite/task/setting, download the public inputs, upload a JSONL
file of predictions, watch its status.

The handlers are plain functions from the controls' values and the services to what the tab shows
(`TaskView`, `SubmitView`); the builder only lays out the components and wires the events to them.
Every refusal is the intake's (submissions/intake.py): the tab shows its message, and the submit
event's `refusal` output carries its status, message and problems as the API's body does.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import gradio as gr

from evaluator.registry import all_suites
from evaluator.splits import install_command
from space.choices import setting_choices, suite_choices, task_choices, task_setting_choices
from space.formats import format_help
from space.identity import build_identity_row, ui_identity
from space.my_submissions import identity_field, remember
from space.status_text import TERMINAL_STATES, awaiting_board, format_error, format_status
from space.uploads import discard_upload, uploaded_file
from submissions.intake import SubmissionError, SubmissionForm
from submissions.service import Services


def _task_of(suite, task):
    """The task the controls name, or None (nothing chosen yet, or a value no suite declares)."""
    found = all_suites().get(suite) if suite else None
    return found.tasks.get(task) if found is not None and task else None


def inputs_link(suite, task) -> str:
    found = _task_of(suite, task)
    if found is None:
        return ""
    title = html.escape(found.suite.title)
    if not found.split_available():
        return (
            f'<p class="pb-not-installed">The hidden split of {title} is not installed on this '
            "server: its inputs cannot be downloaded and predictions for it cannot be scored "
            "here yet. Choose another suite, or ask the operator to install it with "
            f"<code>{html.escape(install_command(found.suite))}</code>.</p>"
        )
    url = f"/api/v1/suites/{suite}/tasks/{task}/inputs"
    name = f"{html.escape(suite)}/{html.escape(task)}"
    return (
        f'<a class="pb-inputs" href="{html.escape(url)}" '
        f'download="{html.escape(suite)}-{html.escape(task)}-inputs.jsonl">'
        f"Download public inputs</a> of {name} (JSONL, one item a line, "
        f"no gold answers): run your model on these and upload one prediction per item."
        f'<br><small class="pb-visibility">This split is '
        f"{html.escape(found.suite.split_status()['visibility_note'])}.</small>"
    )


def setting_info(suite, setting) -> str:
    found = all_suites().get(suite) if suite else None
    described = found.settings.get(setting, "") if found is not None and setting else ""
    return f"**{html.escape(setting)}**: {html.escape(described)}" if described else ""


def task_help(suite, task) -> str:
    found = _task_of(suite, task)
    return format_help(found) if found is not None else ""


@dataclass(frozen=True)
class TaskView:
    """What the tab shows for a chosen task: its settings, the inputs' link, the file format, and
    whether the upload box and the button show (only where the split is installed; else the
    link's note says why, with the operator's command)."""

    settings: list[str]
    setting: str | None
    inputs_link: str
    setting_info: str
    format_help: str
    open: bool


def task_view(suite, task) -> TaskView:
    settings = task_setting_choices(suite, task) if suite in all_suites() else []
    setting = settings[0] if settings else None
    found = _task_of(suite, task)
    return TaskView(
        settings,
        setting,
        inputs_link(suite, task),
        setting_info(suite, setting),
        task_help(suite, task),
        bool(found is not None and found.split_available()),
    )


def suite_view(suite) -> tuple[list[tuple[str, str]], str | None, TaskView]:
    """The suite's tasks, the first one chosen, and what the tab shows for it."""
    tasks = task_choices(suite) if suite in all_suites() else []
    task = tasks[0][1] if tasks else None
    return tasks, task, task_view(suite, task)


@dataclass(frozen=True)
class SubmitView:
    """The status text; the submission's id (None: refused) and whether to poll it; the refusal as
    data: the intake's status, message and problems (None when accepted); whether the uploaded
    file is gone from the server (the tab's file box is cleared: its link would lead nowhere)."""

    status: str
    submission_id: str | None = None
    polling: bool = False
    refusal: dict | None = field(default=None)
    upload_gone: bool = False


def refused(exc: SubmissionError) -> SubmitView:
    return SubmitView(format_error(exc), refusal=exc.answer())


def submit(services: Services, upload, form: SubmissionForm, token, profile=None) -> SubmitView:
    """Admit `upload` (the path Gradio's upload route stored, None without a file) with `form` as
    the identity of `token` (or the signed-in `profile`): the intake answers, as to the API."""
    path = None
    try:
        submitter = services.submitter(ui_identity(services.identities, token, profile))
        path = uploaded_file(upload) if upload else None  # a path the client named is refused
        if path is None:
            submission = services.submit_predictions(form, None, "", submitter)
        else:
            with open(path, "rb") as stream:
                submission = services.submit_predictions(form, stream, Path(path).name, submitter)
    except SubmissionError as exc:
        if path is not None and 400 <= exc.status < 500:
            # refused for good (invalid, duplicate, quota): the file goes now, not at the sweep; a
            # 5xx (store or queue down) may be retried with the same file. Identity refusals come
            # before `path` is set: that file stays for a submit with the right identity.
            discard_upload(path)
            view = refused(exc)
            note = "\n\n(The file was not kept: choose it again to submit.)"
            return replace(view, status=view.status + note, upload_gone=True)
        return refused(exc)
    if path is not None:
        discard_upload(path)  # the service stored its own copy
    status = services.submission_status(submission)
    return SubmitView(
        format_status(status),
        submission.id,
        status["state"] not in TERMINAL_STATES,
        None,
        upload_gone=path is not None,
    )


def poll(
    services: Services, submission_id, now: datetime | None = None
) -> tuple[str, bool, str | None] | None:
    """The status text, whether to keep polling, and the id once it finished and its result is
    on the leaderboard (the board then redraws with it); None: unknown id."""
    found = services.submission(submission_id)
    if not found:
        return None
    status = services.submission_status(found)
    polling = status["state"] not in TERMINAL_STATES
    finished = found.id if status["state"] == "finished" else None
    if finished and awaiting_board(found, now):
        polling, finished = True, None  # not on the board yet: the next tick looks again
    return format_status(status), polling, finished


# -- the Gradio tab: layout, and events mapped to the handlers above ------------------------------


def _task_updates(view: TaskView) -> tuple:
    shown = gr.update(visible=view.open)
    return (
        gr.update(choices=view.settings, value=view.setting),
        view.inputs_link,
        view.setting_info,
        view.format_help,
        shown,
        shown,
    )


def _on_suite(suite):
    tasks, task, view = suite_view(suite)
    return (gr.update(choices=tasks, value=task), *_task_updates(view))


def _on_task(suite, task):
    return _task_updates(task_view(suite, task))


def _layout(first_suite: str | None) -> dict:
    """The tab's components by name (the custom values: the intake, not the dropdown, refuses
    what no suite declares, with the answer every entry point gives)."""
    c: dict = {}
    with gr.Row():
        c["suite"] = gr.Dropdown(
            suite_choices(mark_unavailable=True),
            value=first_suite,
            label="Suite",
            elem_id="submit-suite",
            allow_custom_value=True,
        )
        c["task"] = gr.Dropdown(
            task_choices(first_suite),
            label="Task",
            elem_id="submit-task",
            allow_custom_value=True,
        )
        c["setting"] = gr.Dropdown(
            setting_choices(first_suite),
            label="Setting you ran",
            elem_id="submit-setting",
            allow_custom_value=True,
        )
    c["setting_info"] = gr.Markdown(elem_id="submit-setting-info")
    c["inputs_link"] = gr.HTML(elem_id="inputs-link")
    c["format"] = gr.Markdown(elem_id="submit-format")
    c["file"] = gr.File(
        label="Predictions file (JSONL)",
        file_types=[".jsonl", ".json", ".txt"],
        type="filepath",
        elem_id="submit-file",
    )
    with gr.Row():
        c["model"] = gr.Textbox(label="Model name", elem_id="submit-model")
        c["link"] = gr.Textbox(label="Link (optional)", elem_id="submit-link")
    c["description"] = gr.Textbox(
        label="Description (optional)", lines=2, elem_id="submit-description"
    )
    c["button"] = gr.Button("Submit", variant="primary", elem_id="submit-button")
    c["status"] = gr.Markdown(elem_id="submit-status")
    c["refusal"] = gr.JSON(visible=False, elem_id="submit-refusal")
    c["current"] = gr.State(None)
    c["timer"] = gr.Timer(1.0, active=False)
    return c


def build_submit_predictions_tab(
    ui: gr.Blocks,
    services,
    first_suite: str | None,
    finished: gr.Textbox,
    mine: gr.BrowserState,
    shared_token: gr.State,
):
    """`finished` receives the id of this page's submission when it finishes (the leaderboard redraws)."""

    def on_submit(
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
        form = SubmissionForm(
            suite or "", task or "", setting or "", model_name or "", link or "", description or ""
        )
        view = submit(services, file_path, form, token_value, profile)
        timer = gr.Timer(active=view.polling)
        # a file the server no longer holds leaves the box (its link led nowhere, and a second
        # submit needed the box's X first); one kept (a 5xx, an identity refusal) stays chosen
        file_box = None if view.upload_gone else gr.skip()
        return view.status, view.submission_id, timer, view.refusal, file_box

    def on_poll(submission_id):
        """Every second while a submission of this page is in flight; stops at a terminal state."""
        shown = poll(services, submission_id)
        if shown is None:
            return gr.skip(), gr.Timer(active=False), gr.skip()
        status, polling, done = shown
        return status, gr.Timer(active=polling), done if done is not None else gr.skip()

    with gr.Tab("Submit predictions", id="submit"):
        token = identity_field(build_identity_row("api-token"), shared_token)
        c = _layout(first_suite)
    per_task = [c[k] for k in ("setting", "inputs_link", "setting_info", "format", "file")]
    per_task.append(c["button"])
    ui.load(_on_suite, c["suite"], [c["task"], *per_task])
    c["suite"].input(_on_suite, c["suite"], [c["task"], *per_task])
    c["setting"].change(setting_info, [c["suite"], c["setting"]], c["setting_info"])
    c["task"].input(_on_task, [c["suite"], c["task"]], per_task)
    inputs = [c[k] for k in ("file", "suite", "task", "setting", "model", "link", "description")]
    c["button"].click(
        on_submit,
        [*inputs, token],
        [c["status"], c["current"], c["timer"], c["refusal"], c["file"]],
        api_name="submit",
    ).then(remember, [c["current"], mine], mine)
    c["timer"].tick(
        on_poll, c["current"], [c["status"], c["timer"], finished], show_progress="hidden"
    )
    return token
