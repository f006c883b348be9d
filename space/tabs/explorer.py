"""The Items tab: a published result on a public split, item by item (inputs, gold, the answer,
right or wrong), filtered by tier and outcome, with the same table as a download (the API's
/api/v1/submissions/{id}/details). submissions/details.py decides what may be shown: on a hidden
split nothing per item is, to anyone.

Every text of an item or an answer is escaped here before it is shown.
"""

from __future__ import annotations

import html
import json
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from evaluator.registry import UnknownSuiteError, get_task
from space.choices import ALL, tier_choices
from submissions.details import (
    details_allowed,
    filter_details,
    published_split,
    result_details,
)
from submissions.intake import SubmissionError

PAGE_ITEMS = 50
SHOWN_CHARS = 160  # an input field longer than this is cut in the cell; the whole text unfolds
OUTCOMES = [("all", ALL), ("right", "right"), ("wrong", "wrong")]
RESULTS_LISTED = 200

STYLE = """<style>
.pb-items-wrap{overflow-x:auto;max-height:75vh;overflow-y:auto;border:1px solid var(--border-color-primary,#ddd);border-radius:6px}
table.pb-items{border-collapse:separate;border-spacing:0;font-size:13px;width:100%}
table.pb-items th,table.pb-items td{padding:4px 8px;border-bottom:1px solid var(--border-color-primary,#eee);text-align:left;vertical-align:top;background:var(--background-fill-primary,#fff)}
table.pb-items thead th{position:sticky;top:0;z-index:2;background:var(--background-fill-secondary,#f6f6f6)}
table.pb-items .pb-item-input{min-width:18em;max-width:48em;overflow-wrap:anywhere}
table.pb-items .pb-item-field{display:block;margin-bottom:2px}
table.pb-items .pb-item-key{color:#6b7280;font-size:11px;margin-right:4px}
table.pb-items .pb-right{color:#15803d;font-weight:600}
table.pb-items .pb-wrong{color:#b91c1c;font-weight:600}
table.pb-items .pb-mono{font-family:var(--font-mono,monospace);overflow-wrap:anywhere;max-width:16em}
table.pb-items .pb-item-id{min-width:11em;max-width:16em;overflow-wrap:break-word;font-size:12px}
@media (max-width:600px){table.pb-items{font-size:12px} table.pb-items .pb-item-input{min-width:14em} table.pb-items .pb-item-id{min-width:9em}}
</style>"""


def result_choices(services) -> list[tuple[str, str]]:
    """Finished, published public results whose split is public: those the explorer can open."""
    choices = []
    for s in services.records.list(("finished",), limit=RESULTS_LISTED, public_only=True):
        if not s.revision or (s.result or {}).get("released") is False:
            continue
        try:
            if not details_allowed(get_task(s.suite, s.task)):
                continue
        except UnknownSuiteError:
            continue
        choices.append((f"{s.model_name} · {s.suite}/{s.task} · {s.setting} · {s.id}", s.id))
    return choices


def _field(key: str, value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    key_html = f'<span class="pb-item-key">{html.escape(key)}:</span> '
    if len(text) <= SHOWN_CHARS:
        return f'<span class="pb-item-field">{key_html}{html.escape(text)}</span>'
    return (
        f'<details class="pb-item-field"><summary>{key_html}{html.escape(text[:SHOWN_CHARS])}…'
        f"</summary>{html.escape(text)}</details>"
    )


def render_items(frame: pd.DataFrame, groups: list[str], offset: int, total: int) -> str:
    if frame.empty:
        return STYLE + "<p><em>No items match these filters.</em></p>"
    head = "".join(
        f'<th scope="col">{html.escape(c)}</th>'
        for c in ["Item", "Input", "Gold", "Answer", "Outcome"]
    )
    rows = []
    for row in frame.to_dict(orient="records"):
        inputs = "".join(_field(k, v) for k, v in json.loads(row["input"]).items())
        outcome = row["outcome"] or "—"
        css = {"right": "pb-right", "wrong": "pb-wrong"}.get(row["outcome"], "")
        # the item's tiers under its id, not in columns of their own: a phone has no room for them
        tiers = "".join(
            f'<span class="pb-item-field"><span class="pb-item-key">{html.escape(g)}:</span> '
            f"{html.escape(str(row[g]))}</span>"
            for g in groups
        )
        rows.append(
            f'<tr role="row" data-outcome="{html.escape(row["outcome"])}">'
            f'<td class="pb-item-id"><span class="pb-item-field">{html.escape(row["item_id"])}'
            f"</span>{tiers}</td>"
            f'<td class="pb-item-input">{inputs}</td>'
            f'<td class="pb-mono">{html.escape(row["gold"])}</td>'
            f'<td class="pb-mono">{html.escape(row["answer"])}</td>'
            f'<td class="{css}">{html.escape(outcome)}</td></tr>'
        )
    shown = f"Items {offset + 1}–{offset + len(frame)} of {total}"
    return (
        STYLE + f'<p class="pb-items-count">{shown}</p><div class="pb-items-wrap">'
        f'<table class="pb-items" role="grid"><thead><tr role="row">{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def download_links(submission_id: str, tier, outcome) -> str:
    params = {"tier": tier, "outcome": outcome}
    params = {k: v for k, v in params.items() if v and v != ALL}
    links = []
    for fmt in ("csv", "json", "parquet"):
        query = urlencode({**params, "format": fmt, **({"limit": 1000} if fmt == "json" else {})})
        url = f"/api/v1/submissions/{submission_id}/details?{query}"
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download>{fmt.upper()}</a>')
    return "Download these items (the details file of this result): " + " · ".join(links)


def build_explorer_tab(ui: gr.Blocks, services) -> None:
    def pick(submission_id):
        submission = services.submission(submission_id) if submission_id else None
        tiers = [("all tiers", ALL)]
        if submission is not None:
            tiers += tier_choices(submission.suite, submission.task)
        return gr.update(choices=tiers, value=ALL), 1

    def show(submission_id, tier, outcome, page):
        if not submission_id:
            return (
                "<p><em>Choose a result: finished results on public splits (PrefEval) are "
                "listed. Hidden splits show no items, to anyone.</em></p>",
                "",
            )
        try:
            submission, frame = result_details(
                services.records, submission_id, published_split(services.board)
            )
            task = get_task(submission.suite, submission.task)
            frame = filter_details(
                frame, task, None if tier == ALL else tier, None if outcome == ALL else outcome
            )
        except (SubmissionError, ValueError) as exc:
            return f"<p><em>{html.escape(str(exc))}</em></p>", ""
        offset = max(0, (int(page or 1) - 1) * PAGE_ITEMS)
        groups = [g.name for g in task.tier_groups]
        body = render_items(frame.iloc[offset : offset + PAGE_ITEMS], groups, offset, len(frame))
        return body, download_links(submission.id, tier, outcome)

    with gr.Tab("Items", id="items"):
        gr.Markdown(
            "**Item explorer.** A published result on a public split, item by item: the inputs, "
            "the gold answer, the submission's answer and whether it was right. Hidden splits "
            "show nothing per item, to anyone, the submitter included (their gold never leaves "
            "the scorer).",
            elem_id="items-note",
        )
        with gr.Row():
            result = gr.Dropdown(
                [],
                label="Result (or paste a submission id)",
                scale=3,
                elem_id="items-result",
                allow_custom_value=True,  # choices come at page load; any id is checked anyway
            )
            tier = gr.Dropdown([("all tiers", ALL)], value=ALL, label="Tier", scale=2)
            outcome = gr.Radio(
                OUTCOMES, value=ALL, label="Answer", scale=1, elem_id="items-outcome"
            )
            page = gr.Number(value=1, minimum=1, precision=0, label="Page", scale=1)
        table = gr.HTML(elem_id="items-table")
        links = gr.HTML(elem_id="items-downloads")
    ui.load(lambda: gr.update(choices=result_choices(services)), None, result)
    result.change(pick, result, [tier, page]).then(
        show, [result, tier, outcome, page], [table, links]
    )
    for event in (tier.change, outcome.change, page.submit):
        event(show, [result, tier, outcome, page], [table, links])
