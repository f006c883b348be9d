"""The Submit a model tab: the service runs a registered or Hub model itself, one run per setting.

The handlers are plain functions from the controls' values and the services to what the tab shows
(`ModelChoices`, `RunsView`); the builder only lays out the components and wires the events to
them. Every refusal is the intake's (submissions/intake.py): the tab shows its message, and the
event's `refusals` output carries each one's status, message and problems as the API's body does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import gradio as gr

from evaluator.protocols import default_protocol, setting_problem
from evaluator.registry import all_suites
from space.choices import (
    protocol_choices,
    setting_choices,
    suite_choices,
    task_choices,
    task_setting_choices,
)
from space.identity import build_identity_row, ui_identity
from space.my_submissions import identity_field, remember
from space.status_text import (
    TERMINAL_STATES,
    awaiting_board,
    format_error,
    format_status,
    inert,
)
from submissions.intake import ModelForm, SubmissionError
from submissions.service import Services

DEFAULT = "default"  # the protocol choice that leaves it to the task's default


def _task_of(suite, task):
    found = all_suites().get(suite) if suite else None
    return found.tasks.get(task) if found is not None and task else None


def runnable_settings(suite, task, protocol) -> list[str]:
    """The suite's settings this protocol can honour (`cot` needs one that lets the model reason)
    and the task has a model prompt for (its `prompt_for_setting`, where it declares one: the
    intake refuses the others)."""
    found = _task_of(suite, task)
    if found is None:
        return setting_choices(suite) if suite in all_suites() else []
    chosen = default_protocol(found, "generative") if protocol in (None, "", DEFAULT) else protocol
    prompts = found.options.get("prompt_for_setting")
    return [
        s
        for s in task_setting_choices(suite, task)
        if not setting_problem(found, s, chosen) and (prompts is None or s in prompts)
    ]


def default_settings(suite, task, settings: list[str]) -> list[str]:
    """The setting preselected among `settings`, so a first click runs something: the first the
    task's manifest declares a model prompt for (its declared order), else the first offered."""
    found = _task_of(suite, task)
    declared = list((found.options.get("prompt_for_setting") or {}) if found else {})
    return [next((s for s in declared if s in settings), None) or settings[0]] if settings else []


@dataclass(frozen=True)
class ModelChoices:
    """The tab's choices for a suite and task: tasks a model can run, protocols, settings, and
    the settings preselected (the task's default)."""

    tasks: list[tuple[str, str]]
    task: str | None
    protocols: list[str]
    settings: list[str]
    chosen: list[str] = field(default_factory=list)


def suite_view(suite) -> ModelChoices:
    offered = task_choices(suite) if suite in all_suites() else []
    tasks = [(title, name) for title, name in offered if _task_of(suite, name).model_protocols]
    task = tasks[0][1] if tasks else None
    protocols, settings = task_view(suite, task)
    return ModelChoices(tasks, task, protocols, settings, default_settings(suite, task, settings))


def task_view(suite, task) -> tuple[list[str], list[str]]:
    """The protocols of the task and the settings its default protocol runs."""
    protocols = protocol_choices(suite, task) if _task_of(suite, task) else [DEFAULT]
    return protocols, runnable_settings(suite, task, DEFAULT)


def kept_settings(suite, task, protocol, chosen) -> tuple[list[str], list[str]]:
    """The settings `protocol` runs, and which of the `chosen` stay chosen (else the default)."""
    settings = runnable_settings(suite, task, protocol)
    kept = [s for s in chosen or [] if s in settings]
    return settings, kept or default_settings(suite, task, settings)


@dataclass(frozen=True)
class RunsView:
    """The status text; the runs' ids and the refusals' lines (kept, so the 1 s poll does not wipe
    them while the others run); whether to poll; the refusals as data: each the intake's status,
    message and problems, with the setting it refused."""

    status: str
    ids: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    polling: bool = False
    refusals: list[dict] = field(default_factory=list)


def submit_runs(services: Services, form: ModelForm, settings, token, profile=None) -> RunsView:
    """One submission per chosen setting (`form.setting` is replaced by each), each resolved,
    deduplicated and queued on its own, as the identity of `token` (or the signed-in `profile`).
    No setting chosen: the intake's refusal of a missing one."""
    try:
        submitter = services.submitter(ui_identity(services.identities, token, profile))
    except SubmissionError as exc:
        return RunsView(format_error(exc), refusals=[exc.answer()])
    ids, messages, refusals = [], [], []
    for setting in settings or [""]:
        try:
            ids.append(services.submit_model(replace(form, setting=setting), submitter).id)
        except SubmissionError as exc:
            where = f" ({inert(setting)})" if setting else ""
            messages.append(f"**Error{where}:** " + format_error(exc).removeprefix("**Error:** "))
            refusals.append({"setting": setting, **exc.answer()})
    return RunsView(statuses(services, ids, messages), ids, messages, bool(ids), refusals)


def statuses(services: Services, ids, messages=()) -> str:
    """The refusals together, then one block a run."""
    parts = ["\n\n".join(messages)] if messages else []
    for found in filter(None, (services.submission(i) for i in ids)):
        parts.append(format_status(services.submission_status(found)))
    return "\n\n---\n\n".join(parts)


def poll(services: Services, current) -> tuple[str, bool, str | None] | None:
    """The status text, whether any run is still in flight (or finished, its result not on the
    board yet), and the newest finished run's id whose result is (None: nothing to poll)."""
    ids = (current or {}).get("ids") or []
    if not ids:
        return None
    found = [s for s in (services.submission(i) for i in ids) if s]
    running = any(s.state not in TERMINAL_STATES or awaiting_board(s) for s in found)
    done = [s for s in found if s.state == "finished" and not awaiting_board(s)]
    newest = max(done, key=lambda s: s.finished_at or "").id if done else None
    return statuses(services, ids, current.get("messages") or ()), running, newest


def model_form(model, revision, model_type, suite, task, protocol, limit, description) -> ModelForm:
    """The controls' values as the intake's form (its setting set per run)."""
    return ModelForm(
        model=model or "",
        suite=suite or "",
        task=task or "",
        setting="",
        revision=(revision or "").strip() or None,
        model_type=model_type or "auto",
        protocol=None if protocol in (None, "", DEFAULT) else protocol,
        limit=int(limit) if limit else None,  # 0 or empty: the whole split
        description=description or "",
    )


# -- the Gradio tab: layout, and events mapped to the handlers above ------------------------------


def _on_suite(suite):
    view = suite_view(suite)
    return (
        gr.update(choices=view.tasks, value=view.task),
        gr.update(choices=view.settings, value=view.chosen),
        gr.update(choices=view.protocols, value=DEFAULT),
    )


def _on_task(suite, task):
    protocols, settings = task_view(suite, task)
    return (
        gr.update(choices=protocols, value=DEFAULT),
        gr.update(choices=settings, value=default_settings(suite, task, settings)),
    )


def _on_protocol(suite, task, protocol, chosen):
    settings, kept = kept_settings(suite, task, protocol, chosen)
    return gr.update(choices=settings, value=kept)


def _layout(services: Services, first_suite: str | None) -> dict:
    """The tab's components by name (custom values in the dropdowns: the intake, not the
    dropdown, refuses what is not there, with the answer every entry point gives)."""
    c: dict = {}
    first = suite_view(first_suite)  # rendered with the page: a click before its load runs it
    gr.Markdown(
        "The service runs the model itself on the hidden split. Give a Hugging Face Hub id "
        "(pinned to a commit before it is queued) or the name of a model the operator registered. "
        "Each chosen setting is its own run."
    )
    with gr.Row():
        c["model"] = gr.Dropdown(
            sorted(services.registered_models()),
            allow_custom_value=True,
            label="Model (registered name or Hub id)",
            elem_id="model-name",
        )
        c["revision"] = gr.Textbox(
            label="Revision (optional: branch, tag or commit)", elem_id="model-revision"
        )
        c["type"] = gr.Radio(
            ["auto", "generative", "reward"], value="auto", label="Model type", elem_id="model-type"
        )
    with gr.Row():
        c["suite"] = gr.Dropdown(
            suite_choices(),
            value=first_suite,
            label="Suite",
            elem_id="model-suite",
            allow_custom_value=True,
        )
        c["task"] = gr.Dropdown(
            first.tasks,
            value=first.task,
            label="Task",
            elem_id="model-task",
            allow_custom_value=True,
        )
        c["protocol"] = gr.Dropdown(
            first.protocols,
            value=DEFAULT,
            label="Protocol",
            elem_id="model-protocol",
            allow_custom_value=True,
        )
    # every suite's settings until the page's load narrows them to the suite's: the event then
    # takes any declared setting, and the intake, not the component, answers one of another suite;
    # the first suite's default task's default setting is chosen from the first render
    c["settings"] = gr.CheckboxGroup(
        setting_choices(None),
        value=first.chosen,
        label="Settings",
        elem_id="model-settings",
        info="`cot` is offered only where the protocol lets the model reason before "
        "answering (it generates, with room to): a log-prob protocol reads the "
        "answer at once.",
    )
    with gr.Row():
        c["limit"] = gr.Number(
            label="Items (optional smoke run on N items: marked partial, not ranked, counts its "
            "share of a model run in the daily quota; 0 or empty = the whole split)",
            value=None,
            precision=0,
            elem_id="model-limit",
        )
        c["description"] = gr.Textbox(label="Description (optional)", elem_id="model-description")
    c["button"] = gr.Button("Evaluate", variant="primary", elem_id="model-submit")
    c["status"] = gr.Markdown(elem_id="model-status")
    c["refusals"] = gr.JSON(visible=False, elem_id="model-refusals")
    c["current"] = gr.State({})
    c["timer"] = gr.Timer(1.0, active=False)
    return c


def build_submit_model_tab(
    ui: gr.Blocks,
    services,
    first_suite: str | None,
    finished: gr.Textbox,
    mine: gr.BrowserState,
    shared_token: gr.State,
):
    """`finished` receives the id of each of this page's runs as it finishes (the leaderboard redraws)."""

    def on_submit(
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
        form = model_form(model, revision, model_type, suite, task, protocol, limit, description)
        view = submit_runs(services, form, settings, token_value, profile)
        current = {"ids": view.ids, "messages": view.messages}
        return view.status, current, gr.Timer(active=view.polling), view.refusals

    def on_poll(current):
        """Every second while a run of this page is in flight; stops when all are finished or failed."""
        shown = poll(services, current)
        if shown is None:
            return gr.skip(), gr.Timer(active=False), gr.skip()
        status, running, newest = shown
        return status, gr.Timer(active=running), newest if newest is not None else gr.skip()

    with gr.Tab("Submit a model", id="submit-model-tab"):
        token = identity_field(build_identity_row("api-token-model"), shared_token)
        c = _layout(services, first_suite)
    ui.load(_on_suite, c["suite"], [c["task"], c["settings"], c["protocol"]])
    ui.load(lambda: gr.update(choices=sorted(services.registered_models())), None, c["model"])
    c["suite"].input(_on_suite, c["suite"], [c["task"], c["settings"], c["protocol"]])
    c["task"].input(_on_task, [c["suite"], c["task"]], [c["protocol"], c["settings"]])
    protocol_inputs = [c["suite"], c["task"], c["protocol"], c["settings"]]
    c["protocol"].input(_on_protocol, protocol_inputs, c["settings"])
    names = ("model", "revision", "type", "suite", "task", "settings", "protocol", "limit")
    c["button"].click(
        on_submit,
        [*(c[n] for n in names), c["description"], token],
        [c["status"], c["current"], c["timer"], c["refusals"]],
        api_name="submit_model",
    ).then(remember, [c["current"], mine], mine)
    c["timer"].tick(
        on_poll, c["current"], [c["status"], c["timer"], finished], show_progress="hidden"
    )
    return token
