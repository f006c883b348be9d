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
from evaluator.metrics import METRIC_LABELS, PERCENT_METRICS
from leaderboard.table import TOTAL
from submissions.intake import ModelForm, SubmissionError, SubmissionForm, accept_model, accept_predictions

ALL = "(all)"
TERMINAL_STATES = ("finished", "failed")
ROW_KINDS = {"computed": "verified", "reported": "reported (paper)", "partial": "partial run (not ranked)"}


def _pretty(name: str, label: str) -> str:
    """A manifest label; a bare identifier (`lifestyle_dietary`) is made readable (`Lifestyle dietary`)."""
    if label == name and "_" in name and " " not in name:
        words = name.replace("_", " ").strip()
        return words[:1].upper() + words[1:]
    return label


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
                choices.extend((f"{group.label}: {_pretty(t, group.label_of(t))}", f"{group.name}/{t}") for t in group.tiers)
    return list(dict.fromkeys(choices))


def _protocol_choices(suite: str | None, task: str | None) -> list[str]:
    if not suite or not task:
        return ["default"]
    return ["default", *get_task(suite, task).model_protocols]


def _column_labels() -> dict[str, str]:
    labels = {TOTAL: "Total", "model_name": "Model", "suite": "Suite", "task": "Task", "setting": "Setting",
              "source": "Source", "row_kind": "Kind", "n_items": "Items", "submitted_at": "Submitted",
              "metric": "Metric", **METRIC_LABELS}
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                for tier in group.tiers:
                    labels[f"{group.name}/{tier}"] = _pretty(tier, group.label_of(tier))
    return labels


def _scale(metric: str) -> int:
    return 100 if metric in PERCENT_METRICS else 1


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Shares as percentages (x100), correlations and ratings as they are; labelled columns,
    reported rows marked. Full precision is kept (the Styler rounds for display only)."""
    shown = frame.drop(columns=["total_ci_low", "total_ci_high", "submission_id", "model_link"], errors="ignore").copy()
    ci = frame.get("total_ci_low"), frame.get("total_ci_high")
    # `total` and tier columns are in each row's primary metric; metric columns in their own
    row_scale = frame["metric"].map(lambda m: _scale(m) if isinstance(m, str) else 100) if "metric" in frame else 100
    for column in [c for c in shown.columns if c == TOTAL or "/" in c]:
        shown[column] = pd.to_numeric(shown[column], errors="coerce") * row_scale
    for column in [c for c in shown.columns if c in METRIC_LABELS]:
        shown[column] = pd.to_numeric(shown[column], errors="coerce") * _scale(column)
    if ci[0] is not None and TOTAL in shown:
        scales = row_scale if isinstance(row_scale, pd.Series) else pd.Series(100, index=frame.index)
        shown.insert(shown.columns.get_loc(TOTAL) + 1, "95% CI",
                     [_interval(lo, hi, k) for lo, hi, k in zip(ci[0], ci[1], scales)])
    if "metric" in shown:
        shown["metric"] = shown["metric"].map(METRIC_LABELS).fillna(shown["metric"])
    if "n_items" in shown:  # a reported row whose paper gives no item count: blank, not 0
        shown["n_items"] = pd.to_numeric(shown["n_items"], errors="coerce").where(lambda n: n > 0)
    if "row_kind" in shown:
        shown["row_kind"] = shown["row_kind"].map(ROW_KINDS).fillna(shown["row_kind"])
    if "suite" in shown:
        titles = {name: suite.title for name, suite in all_suites().items()}
        shown["suite"] = shown["suite"].map(titles).fillna(shown["suite"])
    if "submitted_at" in shown:
        shown["submitted_at"] = shown["submitted_at"].astype(str).str.slice(0, 16).str.replace("T", " ")
    # Scores right after the model (visible without scrolling), the descriptive columns after them.
    first = [c for c in ("model_name", "row_kind", "setting", TOTAL, "95% CI") if c in shown.columns]
    last = [c for c in ("source", "suite", "task", "metric", "n_items", "submitted_at") if c in shown.columns]
    middle = [c for c in shown.columns if c not in first and c not in last]
    return shown[first + middle + last].rename(columns=_column_labels())


def _interval(low, high, scale: int) -> str:
    if pd.isna(low) or pd.isna(high):
        return ""
    return f"{low * scale:.1f}-{high * scale:.1f}" if scale == 100 else f"{low:.3f}-{high:.3f}"


def display_table(frame: pd.DataFrame):
    """The table as shown: a Styler, so numbers stay numbers (sortable) but show one decimal,
    and reported (paper) rows are greyed and italic so they never read as verified scores."""
    shown = display_frame(frame)
    labels = _column_labels()
    score_labels = [labels.get(c, c) for c in frame.columns if c == TOTAL or "/" in c and not c.startswith("total_")]
    score_labels = [c for c in score_labels if c in shown.columns]
    metric_labels = [labels[c] for c in frame.columns if c in METRIC_LABELS and labels[c] in shown.columns]
    kind = labels["row_kind"]

    def mark_reported(row):
        style = "color: #6b7280; font-style: italic" if row.get(kind) == ROW_KINDS["reported"] else ""
        return [style] * len(row)

    # one decimal for percentages; three significant digits where a column holds correlations or ratings
    styler = shown.style
    for column in [c for c in frame.columns if c == TOTAL or "/" in c and not c.startswith("total_")]:
        if labels.get(column, column) not in score_labels:
            continue
        used = frame.loc[frame[column].notna(), "metric"] if "metric" in frame else pd.Series(dtype=object)
        percent = all(_scale(m) == 100 for m in used.dropna())
        styler = styler.format("{:.1f}" if percent else "{:.3g}", subset=[labels.get(column, column)], na_rep="")
    for name in metric_labels:
        percent = _scale(next(k for k, v in METRIC_LABELS.items() if v == name)) == 100
        styler = styler.format("{:.1f}" if percent else "{:.3f}", subset=[name], na_rep="")
    if labels["n_items"] in shown.columns:
        styler = styler.format("{:.0f}", subset=[labels["n_items"]], na_rep="")
    if len(shown):
        styler = styler.apply(mark_reported, axis=1)
    return styler


def _download_links(suite, task, setting, tier) -> str:
    params = {k: v for k, v in {"suite": suite, "task": task, "setting": setting, "tier": tier}.items() if v and v != ALL}
    links = []
    for fmt in ("csv", "json", "parquet"):
        url = "/api/v1/leaderboard?" + urlencode({**params, "format": fmt})
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download="leaderboard.{fmt}">{fmt.upper()}</a>')
    return "Download this table (full precision): " + " · ".join(links)


def inert(text: object) -> str:
    """User-supplied text for a Markdown component: shown as typed, never markup.

    html.escape alone is not enough in Markdown: `[x](javascript:...)`, `![](https://...)`, bare
    URLs (autolinks) and emphasis would still make elements. Every character but letters, digits
    and spaces becomes a numeric character reference, which Markdown renders as that character
    and never parses as syntax.
    """
    return "".join(c if c.isalnum() or c == " " else f"&#{ord(c)};" for c in str(text))


def format_status(status: dict) -> str:
    lines = [f"**Submission {inert(status['id'])}**: {inert(status['model_name'])} on "
             f"{inert(status['suite'])}/{inert(status['task'])} ({inert(status['setting'])})",
             f"State: **{inert(status['state'])}**"]
    if status["state"] == "queued" and status.get("queue_position") is not None:
        lines.append(f"Position in queue: {status['queue_position'] + 1}")
    progress = status.get("progress") or {}
    if status["state"] == "running" and progress.get("total"):
        line = f"Progress: {progress['done']} of {progress['total']} items"
        if progress.get("tokens_per_s"):
            line += f", {progress['tokens_per_s']:.0f} tokens/s"
        if progress.get("eta_s") is not None:
            line += f", about {_duration(progress['eta_s'])} left"
        lines.append(line)
    if status.get("error"):
        lines.append(f"Reason: {inert(status['error'])}")
    if status["state"] == "finished" and status.get("result"):
        total = status["result"]["total"]
        for metric, stats in total.items():
            lines.append(f"{metric}: **{stats['value'] * 100:.1f}** (95% CI {stats['ci95'][0] * 100:.1f}-{stats['ci95'][1] * 100:.1f}, n={stats['n']})")
        lines.append(f"Published in results revision `{(status.get('revision') or '')[:12]}`")
    return "\n\n".join(lines)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def format_error(exc: SubmissionError) -> str:
    """A rejected submission: the message, then one bullet per problem (line and field named)."""
    problems = exc.detail.get("problems") or []
    if not problems or (" rejected:" not in str(exc) and all(p.get("line") is None for p in problems)):
        return "**Error:** " + inert(exc)
    head = str(exc).split(":", 1)[0] if " rejected:" in str(exc) else "Submission rejected"
    lines = [f"**Error:** {inert(head)}. Nothing was queued; fix the file and submit again."]
    for p in problems:
        where = f"line {p['line']}" if p.get("line") is not None else "file"
        if p.get("field"):
            where += f", field {inert(p['field'])}"
        lines.append(f"- {where}: {inert(p.get('message', ''))}")
    extra = exc.detail.get("problem_count", len(problems)) - len(problems)
    if extra > 0:
        lines.append(f"- ... and {extra} more")
    return "\n".join(lines)


def build_ui(services: Services) -> gr.Blocks:
    def leaderboard_table(suite, task, setting, tier):
        frame = services.leaderboard(*(None if v in (None, "", ALL) else v for v in (suite, task, setting, tier)))
        links = _download_links(suite, task, setting, tier)
        if frame.empty:
            links = "<p><em>No results match these filters yet.</em></p>" + links
        return display_table(frame), links

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
        return (f'<a class="pb-inputs" href="{html.escape(url)}" download="{html.escape(suite)}-{html.escape(task)}-inputs.jsonl">'
                f"Download public inputs</a> of {html.escape(suite)}/{html.escape(task)} (JSONL, one item a line, "
                f"no gold answers): run your model on these and upload one prediction per item.")

    def on_submit_suite(suite):
        tasks = _task_choices(suite)
        task = tasks[0][1] if tasks else None
        settings = _setting_choices(suite)
        setting = settings[0] if settings else None
        return (gr.update(choices=tasks, value=task), gr.update(choices=settings, value=setting),
                submit_inputs_link(suite, task), setting_info(suite, setting))

    def setting_info(suite, setting):
        if not suite or not setting or suite not in all_suites():
            return ""
        described = all_suites()[suite].settings.get(setting, "")
        return f"**{html.escape(setting)}**: {html.escape(described)}" if described else ""

    def submit(file_path, suite, task, setting, model_name, link, description):
        if not file_path:
            return "**Error:** choose a predictions file (JSONL) first.", None, gr.Timer(active=False)
        form = SubmissionForm(suite or "", task or "", setting or "", model_name or "", link or "", description or "")
        try:
            with open(file_path, "rb") as stream:
                submission = accept_predictions(
                    form, stream, Path(file_path).name, records=services.records,
                    uploads_dir=services.settings.uploads_dir, max_bytes=services.settings.max_upload_bytes,
                    redis=services.redis,
                )
        except SubmissionError as exc:
            return format_error(exc), None, gr.Timer(active=False)
        status = services.submission_status(submission)
        return format_status(status), submission.id, gr.Timer(active=status["state"] not in TERMINAL_STATES)

    def poll(submission_id):
        """Every second while a submission of this page is in flight; stops at a terminal state."""
        found = services.records.get(submission_id) if submission_id else None
        if not found:
            return gr.skip(), gr.Timer(active=False)
        status = services.submission_status(found)
        return format_status(status), gr.Timer(active=status["state"] not in TERMINAL_STATES)

    def model_choices():
        return sorted(services.models.all())

    def on_model_suite(suite):
        tasks = [(title, name) for title, name in _task_choices(suite) if get_task(suite, name).model_protocols]
        task = tasks[0][1] if tasks else None
        settings = _setting_choices(suite)
        return (gr.update(choices=tasks, value=task), gr.update(choices=settings, value=settings[:1]),
                gr.update(choices=_protocol_choices(suite, task), value="default"))

    def on_model_task(suite, task):
        return gr.update(choices=_protocol_choices(suite, task), value="default")

    def submit_model(model, revision, model_type, suite, task, settings, protocol, limit, description):
        """One submission per chosen setting; each is resolved, deduplicated and queued on its own."""
        if not settings:
            return "**Error:** choose at least one setting.", {}, gr.Timer(active=False)
        accepted, messages = [], []
        for setting in settings:
            form = ModelForm(model=model or "", suite=suite or "", task=task or "", setting=setting,
                             revision=(revision or "").strip() or None, model_type=model_type or "auto",
                             protocol=None if protocol in (None, "", "default") else protocol,
                             limit=int(limit) if limit else None, description=description or "")
            try:
                accepted.append(accept_model(form, records=services.records, registry=services.models,
                                             redis=services.redis).id)
            except SubmissionError as exc:
                messages.append(f"**Error ({inert(setting)}):** " + format_error(exc).removeprefix("**Error:** "))
        # The state keeps the refusals too, so the 1 s poll does not wipe them while the others run.
        return (_model_statuses(accepted, messages), {"ids": accepted, "messages": messages},
                gr.Timer(active=bool(accepted)))

    def _model_statuses(ids, messages=()):
        parts = ["\n\n".join(messages)] if messages else []  # the refusals together, then one block a run
        for found in filter(None, (services.records.get(i) for i in ids)):
            parts.append(format_status(services.submission_status(found)))
        return "\n\n---\n\n".join(parts)

    def poll_models(current):
        """Every second while a run of this page is in flight; stops when all are finished or failed."""
        ids = (current or {}).get("ids") or []
        if not ids:
            return gr.skip(), gr.Timer(active=False)
        running = any(s.state not in TERMINAL_STATES for s in filter(None, (services.records.get(i) for i in ids)))
        return _model_statuses(ids, current.get("messages") or ()), gr.Timer(active=running)

    def lookup(submission_id):
        found = services.records.get((submission_id or "").strip())
        if not found:
            return f"No submission with id {inert(submission_id or '')}."
        return format_status(services.submission_status(found))

    suites = _suite_choices()
    # Default the submit tabs to a suite that takes submissions here (its split is installed).
    ready = [name for _, name in suites if any(t.split_available() for t in all_suites()[name].tasks.values())]
    first_suite = ready[0] if ready else (suites[0][1] if suites else None)
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
            with gr.Row(equal_height=True):
                gr.Markdown("Shares (accuracy, precision, recall, F1, rates) in percent with one decimal; Spearman and "
                            "ratings as they are. Total and tier columns are in each row's Metric. Downloads keep full "
                            "precision. Pick a tier to rank by it.", elem_id="leaderboard-help")
                refresh = gr.Button("Refresh", size="sm", scale=0, min_width=110, elem_id="refresh-leaderboard")
            table = gr.DataFrame(interactive=False, wrap=False, elem_id="leaderboard-table", show_search="filter",
                                 pinned_columns=1, max_height=600)
            downloads = gr.HTML(elem_id="leaderboard-downloads")
        with gr.Tab("Submit predictions", id="submit"):
            with gr.Row():
                s_suite = gr.Dropdown(suites, value=first_suite, label="Suite", elem_id="submit-suite")
                s_task = gr.Dropdown(_task_choices(first_suite), label="Task", elem_id="submit-task")
                s_setting = gr.Dropdown(_setting_choices(first_suite), label="Setting you ran", elem_id="submit-setting")
            s_setting_info = gr.Markdown(elem_id="submit-setting-info")
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
            timer = gr.Timer(1.0, active=False)
        with gr.Tab("Submit a model", id="submit-model-tab"):
            gr.Markdown("The service runs the model itself on the hidden split. Give a Hugging Face Hub id "
                        "(pinned to a commit before it is queued) or the name of a model the operator registered. "
                        "Each chosen setting is its own run.")
            with gr.Row():
                m_model = gr.Dropdown(model_choices(), allow_custom_value=True, label="Model (registered name or Hub id)",
                                      elem_id="model-name")
                m_revision = gr.Textbox(label="Revision (optional: branch, tag or commit)", elem_id="model-revision")
                m_type = gr.Radio(["auto", "generative", "reward"], value="auto", label="Model type", elem_id="model-type")
            with gr.Row():
                m_suite = gr.Dropdown(suites, value=first_suite, label="Suite", elem_id="model-suite")
                m_task = gr.Dropdown([], label="Task", elem_id="model-task")
                m_protocol = gr.Dropdown(["default"], value="default", label="Protocol", elem_id="model-protocol")
            m_settings = gr.CheckboxGroup(_setting_choices(first_suite), label="Settings", elem_id="model-settings")
            with gr.Row():
                m_limit = gr.Number(label="Items (optional smoke run on N items: marked partial, not ranked; "
                                          "0 or empty = the whole split)", value=None, precision=0, elem_id="model-limit")
                m_description = gr.Textbox(label="Description (optional)", elem_id="model-description")
            m_button = gr.Button("Evaluate", variant="primary", elem_id="model-submit")
            m_status = gr.Markdown(elem_id="model-status")
            m_current = gr.State({})
            m_timer = gr.Timer(1.0, active=False)
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
        ui.load(on_submit_suite, s_suite, [s_task, s_setting, inputs_link, s_setting_info])
        s_suite.change(on_submit_suite, s_suite, [s_task, s_setting, inputs_link, s_setting_info])
        s_setting.change(setting_info, [s_suite, s_setting], s_setting_info)
        s_task.change(submit_inputs_link, [s_suite, s_task], inputs_link)
        s_button.click(submit, [s_file, s_suite, s_task, s_setting, s_model, s_link, s_description], [s_status, current, timer])
        timer.tick(poll, current, [s_status, timer], show_progress="hidden")
        q_button.click(lookup, q_id, q_status)
        ui.load(on_model_suite, m_suite, [m_task, m_settings, m_protocol])
        ui.load(lambda: gr.update(choices=model_choices()), None, m_model)
        m_suite.change(on_model_suite, m_suite, [m_task, m_settings, m_protocol])
        m_task.change(on_model_task, [m_suite, m_task], m_protocol)
        m_button.click(submit_model, [m_model, m_revision, m_type, m_suite, m_task, m_settings, m_protocol, m_limit,
                                      m_description], [m_status, m_current, m_timer])
        m_timer.tick(poll_models, m_current, [m_status, m_timer], show_progress="hidden")
    return ui
