"""The Gradio front end: leaderboard, submission and status, over the same services as the API.

Everything shown here is driven by the suites' manifests (tasks, tiers, settings, labels); the UI
only rounds for display, the API keeps full precision.
"""
from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from backend.services import Services
from evaluator.registry import all_suites, get_task
from leaderboard.table import TOTAL
from submissions.intake import SubmissionError, SubmissionForm, accept_predictions

ALL = "(all)"
TERMINAL_STATES = ("finished", "failed")


def _suite_choices() -> list[tuple[str, str]]:
    return [(suite.title, name) for name, suite in all_suites().items()]


def _task_choices(suite: str | None) -> list[tuple[str, str]]:
    if not suite or suite == ALL:
        return []
    return [(task.title, name) for name, task in all_suites()[suite].tasks.items()]


def _setting_choices(suite: str | None) -> list[str]:
    if not suite or suite == ALL:
        return sorted({s for suite_ in all_suites().values() for s in suite_.settings})
    return list(all_suites()[suite].settings)


def _tier_choices(suite: str | None, task: str | None) -> list[tuple[str, str]]:
    choices = []
    for suite_name, suite_ in all_suites().items():
        if suite and suite != ALL and suite_name != suite:
            continue
        for task_name, task_ in suite_.tasks.items():
            if task and task != ALL and task_name != task:
                continue
            for group in task_.tier_groups:
                choices.extend((f"{group.label}: {group.label_of(t)}", f"{group.name}/{t}") for t in group.tiers)
    return list(dict.fromkeys(choices))


def _column_labels() -> dict[str, str]:
    labels = {TOTAL: "Total", "model_name": "Model", "suite": "Suite", "task": "Task", "setting": "Setting",
              "source": "Source", "row_kind": "Row", "n_items": "Items", "submitted_at": "Submitted"}
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                for tier in group.tiers:
                    labels[f"{group.name}/{tier}"] = group.label_of(tier)
    return labels


def display_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Percentages rounded to one decimal, labelled columns, reported rows marked."""
    shown = frame.drop(columns=["total_ci_low", "total_ci_high", "submission_id", "model_link"], errors="ignore").copy()
    ci = frame.get("total_ci_low"), frame.get("total_ci_high")
    score_columns = [c for c in shown.columns if c == TOTAL or "/" in c]
    for column in score_columns:
        shown[column] = (shown[column] * 100).round(1)
    if ci[0] is not None and len(frame):
        shown.insert(shown.columns.get_loc(TOTAL) + 1, "95% CI",
                     [f"{lo * 100:.1f}-{hi * 100:.1f}" if pd.notna(lo) else "" for lo, hi in zip(*ci)])
    shown["row_kind"] = shown["row_kind"].map({"computed": "verified", "reported": "reported (paper)"}).fillna(shown["row_kind"])
    if "submitted_at" in shown:
        shown["submitted_at"] = shown["submitted_at"].astype(str).str.slice(0, 16).str.replace("T", " ")
    return shown.rename(columns=_column_labels())


def _download_links(suite, task, setting, tier) -> str:
    params = {k: v for k, v in {"suite": suite, "task": task, "setting": setting, "tier": tier}.items() if v and v != ALL}
    links = []
    for fmt in ("csv", "json", "parquet"):
        url = "/api/v1/leaderboard?" + urlencode({**params, "format": fmt})
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download="leaderboard.{fmt}">{fmt.upper()}</a>')
    return "Download this table: " + " · ".join(links)


def format_status(status: dict) -> str:
    lines = [f"**Submission `{status['id']}`**: {status['model_name']} on {status['suite']}/{status['task']} "
             f"({status['setting']})", f"State: **{status['state']}**"]
    if status["state"] == "queued" and status.get("queue_position") is not None:
        lines.append(f"Position in queue: {status['queue_position'] + 1}")
    progress = status.get("progress") or {}
    if status["state"] == "running" and progress.get("total"):
        lines.append(f"Progress: {progress['done']} of {progress['total']} items")
    if status.get("error"):
        lines.append(f"Reason: {status['error']}")
    if status["state"] == "finished" and status.get("result"):
        total = status["result"]["total"]
        for metric, stats in total.items():
            lines.append(f"{metric}: **{stats['value'] * 100:.1f}** (95% CI {stats['ci95'][0] * 100:.1f}-{stats['ci95'][1] * 100:.1f}, n={stats['n']})")
        lines.append(f"Published in results revision `{(status.get('revision') or '')[:12]}`")
    return "\n\n".join(lines)


def build_ui(services: Services) -> gr.Blocks:
    def leaderboard_table(suite, task, setting, tier):
        frame = services.leaderboard(*(None if v in (None, "", ALL) else v for v in (suite, task, setting, tier)))
        return display_table(frame), _download_links(suite, task, setting, tier)

    def on_suite(suite):
        tasks = _task_choices(suite)
        return (gr.update(choices=[(ALL, ALL), *tasks], value=ALL),
                gr.update(choices=[ALL, *_setting_choices(suite)], value=ALL),
                gr.update(choices=[(ALL, ALL), *_tier_choices(suite, None)], value=ALL))

    def on_task(suite, task):
        return gr.update(choices=[(ALL, ALL), *_tier_choices(suite, task)], value=ALL)

    def submit_inputs_link(suite, task):
        if not suite or not task:
            return ""
        url = f"/api/v1/suites/{suite}/tasks/{task}/inputs"
        return (f'<a class="pb-inputs" href="{url}" download="{suite}-{task}-inputs.jsonl">'
                f"Download the public inputs of {html.escape(suite)}/{html.escape(task)} (JSONL)</a>")

    def on_submit_suite(suite):
        tasks = _task_choices(suite)
        task = tasks[0][1] if tasks else None
        settings = _setting_choices(suite)
        return (gr.update(choices=tasks, value=task), gr.update(choices=settings, value=settings[0] if settings else None),
                submit_inputs_link(suite, task))

    def submit(file_path, suite, task, setting, model_name, link, description):
        if not file_path:
            return "**Error:** choose a predictions file (JSONL) first.", None
        form = SubmissionForm(suite or "", task or "", setting or "", model_name or "", link or "", description or "")
        try:
            with open(file_path, "rb") as stream:
                submission = accept_predictions(
                    form, stream, Path(file_path).name, records=services.records,
                    uploads_dir=services.settings.uploads_dir, max_bytes=services.settings.max_upload_bytes,
                    redis=services.redis,
                )
        except SubmissionError as exc:
            return "**Error:** " + html.escape(str(exc)), None
        return format_status(services.submission_status(submission)), submission.id

    def poll(submission_id):
        if not submission_id:
            return gr.skip()
        found = services.records.get(submission_id)
        return format_status(services.submission_status(found)) if found else gr.skip()

    def lookup(submission_id):
        found = services.records.get((submission_id or "").strip())
        if not found:
            return f"No submission with id `{html.escape(submission_id or '')}`."
        return format_status(services.submission_status(found))

    suites = _suite_choices()
    first_suite = suites[0][1] if suites else None
    with gr.Blocks(title="PersonaBoard") as ui:
        gr.Markdown("# PersonaBoard\nA leaderboard for LLM personalization benchmarks. "
                    "Rows marked *verified* were scored here on the hidden test split; "
                    "*reported (paper)* rows are the papers' own numbers and are never ranked among them.")
        with gr.Tab("Leaderboard", id="leaderboard"):
            with gr.Row():
                f_suite = gr.Dropdown([(ALL, ALL), *suites], value=ALL, label="Suite", elem_id="filter-suite")
                f_task = gr.Dropdown([(ALL, ALL)], value=ALL, label="Task", elem_id="filter-task")
                f_setting = gr.Dropdown([ALL, *_setting_choices(None)], value=ALL, label="Setting", elem_id="filter-setting")
                f_tier = gr.Dropdown([(ALL, ALL), *_tier_choices(None, None)], value=ALL, label="Tier", elem_id="filter-tier")
            refresh = gr.Button("Refresh", size="sm", elem_id="refresh-leaderboard")
            table = gr.DataFrame(interactive=False, wrap=True, elem_id="leaderboard-table", show_search="filter")
            downloads = gr.HTML(elem_id="leaderboard-downloads")
        with gr.Tab("Submit predictions", id="submit"):
            with gr.Row():
                s_suite = gr.Dropdown(suites, value=first_suite, label="Suite", elem_id="submit-suite")
                s_task = gr.Dropdown(_task_choices(first_suite), label="Task", elem_id="submit-task")
                s_setting = gr.Dropdown(_setting_choices(first_suite), label="Setting you ran", elem_id="submit-setting")
            inputs_link = gr.HTML(elem_id="inputs-link")
            gr.Markdown('Predictions: one JSON line per item, `{"id": ..., "answer": "A"}`.')
            s_file = gr.File(label="Predictions file (JSONL)", file_types=[".jsonl", ".json", ".txt"], type="filepath", elem_id="submit-file")
            with gr.Row():
                s_model = gr.Textbox(label="Model name", elem_id="submit-model")
                s_link = gr.Textbox(label="Link (optional)", elem_id="submit-link")
            s_description = gr.Textbox(label="Description (optional)", lines=2, elem_id="submit-description")
            s_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
            s_status = gr.Markdown(elem_id="submit-status")
            current = gr.State(None)
            timer = gr.Timer(1.0)
        with gr.Tab("Submission status", id="status"):
            q_id = gr.Textbox(label="Submission id", elem_id="status-id")
            q_button = gr.Button("Look up", elem_id="status-button")
            q_status = gr.Markdown(elem_id="status-result")

        filters = [f_suite, f_task, f_setting, f_tier]
        f_suite.change(on_suite, f_suite, [f_task, f_setting, f_tier]).then(leaderboard_table, filters, [table, downloads])
        f_task.change(on_task, [f_suite, f_task], f_tier).then(leaderboard_table, filters, [table, downloads])
        for control in (f_setting, f_tier):
            control.change(leaderboard_table, filters, [table, downloads])
        refresh.click(leaderboard_table, filters, [table, downloads])
        ui.load(leaderboard_table, filters, [table, downloads])
        ui.load(on_submit_suite, s_suite, [s_task, s_setting, inputs_link])
        s_suite.change(on_submit_suite, s_suite, [s_task, s_setting, inputs_link])
        s_task.change(submit_inputs_link, [s_suite, s_task], inputs_link)
        s_button.click(submit, [s_file, s_suite, s_task, s_setting, s_model, s_link, s_description], [s_status, current])
        timer.tick(poll, current, s_status)
        q_button.click(lookup, q_id, q_status)
    return ui
