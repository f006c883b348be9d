"""The Items tab: a published result on a public split, item by item (inputs, gold, the answer,
right or wrong, and for a model run the prompt as sent, the raw output, the rule that read the
answer and the judge's calls: conversations and options formatted), filtered by tier and outcome, with the same table as a download (the API's
/api/v1/submissions/{id}/details). submissions/details.py decides what may be shown: on a hidden
split nothing per item is, to anyone.

The view lives in the URL (`?tab=items&submission=...&tier=...&outcome=...&pg=...`,
space/url_state.py): a reloaded or shared link opens the same items. A link's id is checked like
a chosen one: an unknown or hidden-split result says so and shows nothing per item.

Every text of an item or an answer is escaped here before it is shown.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from evaluator.item_records import ELIDED_ROLE
from evaluator.registry import UnknownSuiteError, get_task
from space.choices import ALL, tier_choices
from space.item_links import (
    ITEMS_TAB,
    PAGE_ITEMS,
    PAGE_PARAM,
    RESULT_PARAM,
    can_turn,
    page_count,
    page_label,
    turned_page,
)
from space.url_state import tab_params, url_writer_js
from submissions.details import (
    details_allowed,
    filter_details,
    published_split,
    published_submission,
    result_details,
)
from submissions.intake import SubmissionError

if TYPE_CHECKING:
    from submissions.service import Services

TAB = ITEMS_TAB
# the view's URL parameters, in the order of the controls the writer is given (space/url_state.py).
# The page is `pg`: Gradio's own page route reads `page` (a multi-page app's), and answers 500 to
# a page it does not have. It is a number in the browser, so its default is one too (the writer
# compares them as they are).
URL_FIELDS = [(RESULT_PARAM, None), ("tier", ALL), ("outcome", ALL), (PAGE_PARAM, 1)]

SHOWN_CHARS = 160  # an input field longer than this is cut in the cell; the whole text unfolds
OUTCOMES = [("all", ALL), ("right", "right"), ("wrong", "wrong")]
RESULTS_LISTED = 200
MAX_PAGE = 10**6  # a link's page beyond this is read as the first

# On a phone (under 600 px) six columns do not fit: each item becomes a card, its id on top, then
# gold, answer and outcome side by side (each labelled by CSS), then the input and the run.
STYLE = """<style>
.pb-items-wrap{--pb-muted:#5b6472;--pb-right:#15803d;--pb-wrong:#b91c1c}
.dark .pb-items-wrap{--pb-muted:#a7b0bd;--pb-right:#86efac;--pb-wrong:#fca5a5}
.pb-items-wrap{overflow-x:auto;max-height:75vh;overflow-y:auto;border:1px solid var(--border-color-primary,#ddd);border-radius:6px}
table.pb-items{border-collapse:separate;border-spacing:0;font-size:13px;width:100%}
table.pb-items th,table.pb-items td{padding:4px 8px;border-bottom:1px solid var(--border-color-primary,#eee);text-align:left;vertical-align:top;background:var(--background-fill-primary,#fff)}
table.pb-items thead th{position:sticky;top:0;z-index:2;background:var(--background-fill-secondary,#f6f6f6)}
table.pb-items .pb-item-input{min-width:18em;max-width:48em;overflow-wrap:anywhere}
table.pb-items .pb-item-field{display:block;margin-bottom:2px}
table.pb-items .pb-item-key{color:var(--pb-muted);font-size:11px;margin-right:4px}
table.pb-items .pb-right{color:var(--pb-right);font-weight:600}
table.pb-items .pb-wrong{color:var(--pb-wrong);font-weight:600}
table.pb-items .pb-mono{font-family:var(--font-mono,monospace);overflow-wrap:anywhere;max-width:16em}
table.pb-items .pb-item-id{min-width:11em;max-width:16em;overflow-wrap:break-word;font-size:12px}
table.pb-items .pb-item-run{min-width:20em;max-width:40em;overflow-wrap:anywhere}
table.pb-items .pb-msg{margin:2px 0 4px;padding-left:6px;border-left:3px solid #c7d2fe}
table.pb-items .pb-msg-assistant{border-left-color:#86efac}
table.pb-items .pb-msg-system{border-left-color:#d1d5db}
table.pb-items .pb-msg-elided{color:var(--pb-muted);font-style:italic;border-left:3px dashed #d1d5db;padding-left:6px}
table.pb-items .pb-msg-text{white-space:pre-wrap;overflow-wrap:anywhere}
table.pb-items .pb-raw{font-family:var(--font-mono,monospace);font-size:12px;background:var(--background-fill-secondary,#f6f6f6);padding:2px 4px;max-height:16em;overflow-y:auto}
table.pb-items .pb-option{display:block}
table.pb-items .pb-rule{font-family:inherit;font-size:11px;color:var(--pb-muted)}
table.pb-items .pb-no-answer{color:var(--pb-wrong)}
table.pb-items .pb-judge-call{margin:4px 0}
#items-result input[role=combobox],#items-tier input[role=combobox]{padding-right:28px;text-overflow:ellipsis}
#items-pager{align-items:center;gap:8px}
#items-pager #items-page-label{flex:0 0 auto !important;width:auto !important;white-space:nowrap}
@media (max-width:600px){
 #items-table table.pb-items{font-size:12px;border:none;margin:0;padding:0}
 #items-table table.pb-items,#items-table table.pb-items tbody{display:block;width:100%}
 #items-table table.pb-items thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
 #items-table table.pb-items tbody tr{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));border:none;border-bottom:2px solid var(--border-color-primary,#ddd);margin:0;padding:4px 0}
 #items-table table.pb-items tbody td{border:none;margin:0;padding:3px 8px;min-width:0;max-width:none}
 #items-table table.pb-items td.pb-item-id,#items-table table.pb-items td.pb-item-input,#items-table table.pb-items td.pb-item-run{grid-column:1/-1}
 #items-table table.pb-items td.pb-gold{order:1} #items-table table.pb-items td.pb-answer{order:2} #items-table table.pb-items td.pb-outcome{order:3}
 #items-table table.pb-items td.pb-item-input{order:4} #items-table table.pb-items td.pb-item-run{order:5}
 #items-table table.pb-items td[data-label]::before{content:attr(data-label);display:block;color:var(--pb-muted);font-size:11px;font-weight:400;font-family:var(--font,sans-serif)}
}
</style>"""


def result_choices(services: Services) -> list[tuple[str, str]]:
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


def _is_chat(value) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


def _is_options(value) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(isinstance(v, str) and len(k) <= 3 for k, v in value.items())
    )


def conversation_html(messages: list[dict]) -> str:
    """A chat as turns: each message's role, then its text as written (line breaks kept)."""
    turns = []
    for m in messages:
        role = str(m.get("role", ""))
        text = str(m.get("content", ""))
        if role == ELIDED_ROLE:  # what the stored prompt left out (evaluator/item_records.py)
            turns.append(f'<div class="pb-msg pb-msg-elided">… {html.escape(text)} …</div>')
            continue
        turns.append(
            f'<div class="pb-msg pb-msg-{html.escape(role)}"><span class="pb-item-key">'
            f'{html.escape(role)}</span><div class="pb-msg-text">{html.escape(text)}</div></div>'
        )
    return f'<div class="pb-chat">{"".join(turns)}</div>'


def _field(key: str, value) -> str:
    """One public field of an item: a conversation as turns, options as lettered lines (folded
    when long), anything else as text."""
    key_html = f'<span class="pb-item-key">{html.escape(key)}:</span> '
    if _is_chat(value):
        chars = sum(len(str(m["content"])) for m in value)
        body = conversation_html(value)
        if len(value) <= 2 and chars <= SHOWN_CHARS:
            return f'<div class="pb-item-field">{key_html}{body}</div>'
        return (
            f'<details class="pb-item-field"><summary>{key_html}{len(value)} messages, '
            f"{chars} characters</summary>{body}</details>"
        )
    if _is_options(value):
        lines = "".join(
            f'<span class="pb-option"><b>{html.escape(k)}.</b> {html.escape(v)}</span>'
            for k, v in value.items()
        )
        return f'<div class="pb-item-field">{key_html}<div class="pb-options">{lines}</div></div>'
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= SHOWN_CHARS:
        return f'<span class="pb-item-field">{key_html}{html.escape(text)}</span>'
    return (
        f'<details class="pb-item-field"><summary>{key_html}{html.escape(text[:SHOWN_CHARS])}…'
        f'</summary><div class="pb-msg-text">{html.escape(text)}</div></details>'
    )


def _present(value) -> bool:
    """A recorded value (a details file holds null, NaN from an older file or pandas' NA for a
    count, where none was)."""
    if value is None or isinstance(value, (list, dict)):
        return value is not None
    return not bool(pd.isna(value))


def _by_order(row: dict, column: str, orders: list[str]) -> dict[str, Any]:
    """A run column's value per order: {"": value} for an item asked once (text as it is, or
    parsed JSON for prompt and logprobs), {order: value} for one asked in several orders."""
    value: Any = row.get(column)
    if not _present(value):
        return {}
    parse = orders or column in ("prompt", "logprobs")
    try:
        parsed = json.loads(str(value)) if parse else value
    except (TypeError, ValueError):
        parsed = value
    if orders and isinstance(parsed, dict):
        return {o: parsed.get(o) for o in orders if parsed.get(o) is not None}
    return {"": parsed}


def _logprobs_html(scores) -> str:
    if not isinstance(scores, dict):
        return ""
    cells = " · ".join(
        f"{html.escape(str(k))} {float(v):.2f}" for k, v in scores.items() if v is not None
    )
    return f'<span class="pb-item-field"><span class="pb-item-key">log-probabilities:</span> {cells}</span>'


def run_html(row: dict) -> str:
    """What the model was sent and wrote for this item (a model run's details), readable: the
    prompt as a conversation (folded), the raw output, its log-probabilities; each order of an
    item asked in several. Empty where nothing was recorded (an uploaded file)."""
    orders = [o for o in str(row.get("orders") or "").split(",") if o]
    if not _present(row.get("orders")):
        orders = []
    prompts, raws = _by_order(row, "prompt", orders), _by_order(row, "raw", orders)
    logprobs = _by_order(row, "logprobs", orders)
    parts = []
    for order in orders or [""]:
        label = f'<span class="pb-item-key">order {html.escape(order)}:</span> ' if order else ""
        prompt = prompts.get(order)
        if isinstance(prompt, list):
            tokens: Any = row.get("prompt_tokens")
            size = f", {int(tokens)} tokens" if _present(tokens) and not orders else ""
            parts.append(
                f'<details class="pb-item-field pb-prompt"><summary>{label}prompt as sent: '
                f"{len(prompt)} messages{size}</summary>{conversation_html(prompt)}</details>"
            )
        if order in raws:
            parts.append(
                f'<div class="pb-item-field">{label}<span class="pb-item-key">output:</span>'
                f'<div class="pb-msg-text pb-raw">{html.escape(str(raws[order]))}</div></div>'
            )
        if order in logprobs:
            parts.append(_logprobs_html(logprobs[order]))
    return "".join(parts) + judge_html(row.get("judge"))


def judge_html(value) -> str:
    """The judge's calls on the item: each check's (or rubric's) reading and reply, its prompt
    folded."""
    if not _present(value):
        return ""
    try:
        calls = json.loads(value)
    except (TypeError, ValueError):
        return ""
    shown = []
    for call in calls if isinstance(calls, list) else []:
        name = call.get("check") or call.get("rubric") or "judge"
        read = call.get("parsed", call.get("score"))
        verdict = "unparsed" if read is None else str(read)
        reply = call.get("output") or call.get("reply") or call.get("rationale") or ""
        prompt = call.get("prompt")
        folded = (
            f"<details><summary>judge prompt</summary>{conversation_html(prompt)}</details>"
            if _is_chat(prompt)
            else ""
        )
        shown.append(
            f'<div class="pb-judge-call"><span class="pb-item-key">{html.escape(str(name))}:'
            f"</span> {html.escape(verdict)}"
            f'<div class="pb-msg-text pb-raw">{html.escape(str(reply))}</div>{folded}</div>'
        )
    return (
        f'<details class="pb-item-field pb-judge"><summary>judge: {len(shown)} calls</summary>'
        f"{''.join(shown)}</details>"
        if shown
        else ""
    )


def answer_html(row: dict) -> str:
    """The answer (or that none could be read) and the rule that read it."""
    answer = row.get("answer")
    shown = (
        html.escape(str(answer)) if _present(answer) else '<em class="pb-no-answer">no answer</em>'
    )
    rule = row.get("rule")
    if _present(rule):
        shown += f'<span class="pb-item-field pb-rule"><span class="pb-item-key">read by:</span> {html.escape(str(rule))}</span>'
    return shown


def render_items(frame: pd.DataFrame, groups: list[str], offset: int, total: int) -> str:
    if frame.empty and total:  # a page past the last (a link's, or one typed)
        last = (total + PAGE_ITEMS - 1) // PAGE_ITEMS
        return (
            STYLE + f'<p class="pb-empty" id="items-empty"><em>Page {offset // PAGE_ITEMS + 1} is '
            f"past the last: these filters keep {total} items, on pages 1–{last}.</em></p>"
        )
    if frame.empty:
        return (
            STYLE
            + '<p class="pb-empty" id="items-empty"><em>No items match these filters.</em></p>'
        )
    # a model run's prompt and output, in a column of their own where the page has any (an
    # uploaded file has none)
    runs = [run_html(row) for row in frame.to_dict(orient="records")]
    shown_runs = any(runs)
    head = "".join(
        f'<th scope="col">{html.escape(c)}</th>'
        for c in ["Item", "Input", "Gold", "Answer", "Outcome"]
        + (["Prompt and output"] if shown_runs else [])
    )
    rows = []
    for row, run in zip(frame.to_dict(orient="records"), runs):
        inputs = "".join(_field(k, v) for k, v in json.loads(row["input"] or "{}").items())
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
            f'<td class="pb-mono pb-gold" data-label="Gold">{html.escape(row["gold"])}</td>'
            f'<td class="pb-mono pb-answer" data-label="Answer">{answer_html(row)}</td>'
            f'<td class="pb-outcome {css}" data-label="Outcome">{html.escape(outcome)}</td>'
            + (
                f'<td class="pb-item-run" data-label="Prompt and output">{run}</td>'
                if shown_runs
                else ""
            )
            + "</tr>"
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
        # every item (the API's JSON is otherwise a page); the file named by the API
        query = urlencode(
            {**params, "format": fmt, **({"complete": "true"} if fmt == "json" else {})}
        )
        url = f"/api/v1/submissions/{submission_id}/details?{query}"
        links.append(f'<a class="pb-download" href="{html.escape(url)}" download>{fmt.upper()}</a>')
    return "Download these items (the details file of this result): " + " · ".join(links)


def tier_options(services: Services, submission_id) -> list[tuple[str, str]]:
    """The Tier filter's choices: the tiers of the result's task, where its items may be shown
    (published_submission's rule: an unknown or hidden result names no task here)."""
    tiers = [("all tiers", ALL)]
    if submission_id:
        try:
            submission, _ = published_submission(services.records, submission_id)
        except SubmissionError:
            return tiers
        tiers += tier_choices(submission.suite, submission.task)
    return tiers


def link_view(services: Services, params: dict[str, str]) -> tuple[str, str, str, int, str]:
    """The view a link names (result, tier, outcome, page): the id as given (it is checked when the
    items are read), the rest kept only where it is one of the control's own values; and a note
    (HTML, the link's text escaped) naming what the link asked for and did not get, else ""."""
    submission_id = (params.get(RESULT_PARAM) or "").strip()[:100]
    ignored = []
    tier = params.get("tier") or ALL
    if tier not in {value for _, value in tier_options(services, submission_id)}:
        ignored.append(f"tier “{tier[:80]}” is not a tier of this result's task")
        tier = ALL
    outcome = params.get("outcome") or ALL
    if outcome not in {value for _, value in OUTCOMES}:
        allowed = " or ".join(value for _, value in OUTCOMES if value != ALL)
        ignored.append(f"answer “{outcome[:80]}” is not {allowed}")
        outcome = ALL
    page = params.get(PAGE_PARAM) or ""
    wellformed = page.isascii() and page.isdigit() and len(page) <= 7
    number = int(page) if wellformed and 1 <= int(page) <= MAX_PAGE else 1
    note = (
        '<p class="pb-empty" id="items-link-note"><em>This link\'s '
        + html.escape("; its ".join(ignored))
        + ": showing all instead.</em></p>"
        if ignored
        else ""
    )
    return submission_id, tier, outcome, number, note


# -- handlers: the controls' values and the services in, view data out (tests/unit/test_tab_handlers.py)


@dataclass
class ItemsView:
    """What the tab shows for a result, a tier, an answer and a page: the items (HTML) and the
    download links of the same table."""

    table: str
    downloads: str = ""
    page: int = 1
    pages: int = 0  # under the filters; none where no items are shown


def items_view(services: Services, submission_id, tier, outcome, page) -> ItemsView:
    """One page of the result's items under the filters; a result whose items may not be shown (an
    unknown id, a hidden split, another split version) says why and shows none."""
    if not submission_id:
        return ItemsView(  # STYLE in every answer: it also keeps the boxes' text off their arrows
            STYLE + "<p><em>Choose a result: finished results on public splits (PrefEval) are "
            "listed. Hidden splits show no items, to anyone.</em></p>"
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
        return ItemsView(
            STYLE + '<p class="pb-empty" id="items-refused"><strong>No items to show.</strong> '
            f"<em>{html.escape(str(exc))}</em></p>"
        )
    offset = max(0, (min(int(page or 1), MAX_PAGE) - 1) * PAGE_ITEMS)
    groups = [g.name for g in task.tier_groups]
    body = render_items(frame.iloc[offset : offset + PAGE_ITEMS], groups, offset, len(frame))
    number = offset // PAGE_ITEMS + 1
    return ItemsView(
        body, download_links(submission.id, tier, outcome), number, page_count(len(frame))
    )


def turned_view(services: Services, submission_id, tier, outcome, page, pages, step) -> ItemsView:
    """The previous (step -1) or next (+1) page of what is shown, kept within its pages."""
    return items_view(services, submission_id, tier, outcome, turned_page(page, pages, step))


def pager(view: ItemsView) -> tuple[str, bool, bool]:
    """The pager's label ("page k of n") and whether previous and next may be pressed."""
    label = page_label(view.page, view.pages)
    shown = f'<span class="pb-page-label">{html.escape(label)}</span>' if label else ""
    return (shown, *can_turn(view.page, view.pages))


@dataclass
class PickedResult:
    """Another result chosen: its tiers (the filter reset to all of them), its first page."""

    submission_id: str
    tiers: list[tuple[str, str]]
    view: ItemsView


def picked_result(services: Services, submission_id, shown, outcome) -> PickedResult | None:
    """The result the reader chose or pasted, on its first page (the outcome filter kept); None
    where it is the one shown already (a pasted id comes with the box's blur, which also fires
    when nothing changed)."""
    submission_id = (submission_id or "").strip()
    if submission_id == (shown or ""):
        return None
    return PickedResult(
        submission_id,
        tier_options(services, submission_id),
        items_view(services, submission_id, ALL, outcome, 1),
    )


# -- the Gradio side: the layout, the events, updates from the handlers' data ---------------------


def _layout() -> tuple[list[Any], list[Any]]:
    """The controls (result, tier, answer, page) and what they show: the table, its links, the
    pager's label, previous and next."""
    gr.Markdown(
        "**Item explorer.** A published result on a public split, item by item: the inputs, "
        "the gold answer, the submission's answer and whether it was right; for a model run, "
        "the prompt as sent, the raw output and the rule that read the answer. Hidden splits "
        "show nothing per item, to anyone, the submitter included (their gold never leaves "
        "the scorer).",
        elem_id="items-note",
    )
    with gr.Row():
        # min widths: on a phone the result and tier take a line each (their labels are
        # long) and the three answers stay on one; on a desktop all three share one line
        result = gr.Dropdown(
            [],
            label="Result (or paste a submission id)",
            scale=3,
            min_width=280,
            elem_id="items-result",
            allow_custom_value=True,  # choices come at page load; any id is checked anyway
        )
        tier = gr.Dropdown(
            [("all tiers", ALL)],
            value=ALL,
            label="Tier",
            scale=2,
            min_width=240,
            elem_id="items-tier",
        )
        outcome = gr.Radio(
            OUTCOMES, value=ALL, label="Answer", scale=2, min_width=240, elem_id="items-outcome"
        )
    # the pager on one line, at a phone's width too: previous, the page (typed to jump), "page k
    # of n", next
    with gr.Row(elem_id="items-pager"):
        back = gr.Button(
            "‹ Previous", size="sm", scale=0, min_width=76, interactive=False, elem_id="items-prev"
        )
        page = gr.Number(
            value=1,
            minimum=1,
            precision=0,
            label="Page",
            show_label=False,
            container=False,
            scale=0,
            min_width=56,
            elem_id="items-page",
        )
        label = gr.HTML(elem_id="items-page-label", min_width=96, scale=0)
        forward = gr.Button(
            "Next ›", size="sm", scale=0, min_width=64, interactive=False, elem_id="items-next"
        )
    table, links = gr.HTML(elem_id="items-table"), gr.HTML(elem_id="items-downloads")
    return [result, tier, outcome, page], [table, links, label, back, forward]


def _shown(found: ItemsView, note: str = "") -> tuple:
    """The outputs of a redraw: the table (under a link's note), its links, the pager."""
    label, back, forward = pager(found)
    return (
        note + found.table,
        found.downloads,
        label,
        gr.update(interactive=back),
        gr.update(interactive=forward),
        found.pages,
    )


def build_explorer_tab(ui: gr.Blocks, services: Services) -> None:
    def show(submission_id, tier, outcome, page):
        return _shown(items_view(services, submission_id, tier, outcome, page))

    def turn(step: int):
        def turned(submission_id, tier, outcome, page, pages):
            found = turned_view(services, submission_id, tier, outcome, page, pages, step)
            return (found.page, *_shown(found))

        return turned

    def pick(submission_id, shown, outcome):
        found = picked_result(services, submission_id, shown, outcome)
        if found is None:
            return (gr.skip(),) * 9
        tiers = gr.update(choices=found.tiers, value=ALL)
        return (tiers, 1, *_shown(found.view), found.submission_id)

    def on_load(request: gr.Request):
        """The listed results, and the view a link to this tab names, else the defaults."""
        submission_id, tier, outcome, page, note = link_view(services, tab_params(request, TAB))
        return (
            gr.update(choices=result_choices(services), value=submission_id or None),
            gr.update(choices=tier_options(services, submission_id), value=tier),
            outcome,
            page,
            submission_id,
            note,
        )

    def show_linked(submission_id, tier, outcome, page, note):
        """The linked view, under the note on what the link asked for and did not get (the next
        redraw, by the reader's own choice, drops it)."""
        found = items_view(services, submission_id, tier, outcome, page)
        return _shown(found, note)

    with gr.Tab("Items", id=TAB):
        view, shows = _layout()
        shown = gr.State("")  # the result whose items are shown
        link_note = gr.State("")  # what a link asked for and did not get (shown once)
        pages = gr.State(0)  # the pages of what is shown: previous and next stay within them
    result, tier, outcome, page = view
    _, _, _, back, forward = shows
    outputs = [*shows, pages]
    url_js = url_writer_js(TAB, URL_FIELDS)

    # .input (the reader's own choices), not .change: the load's own updates (a link's view) must
    # not cascade into a reset of the tier and page. A typed id is taken on blur (no .input then).
    for event in (result.input, result.blur):
        event(pick, [result, shown, outcome], [tier, page, *outputs, shown]).then(
            None, view, None, js=url_js
        )
    for control in (tier, outcome, page):
        control.input(show, view, outputs, trigger_mode="always_last").then(
            None, view, None, js=url_js
        )
    for button, step in ((back, -1), (forward, 1)):
        button.click(turn(step), [*view, pages], [page, *outputs]).then(None, view, None, js=url_js)
    load = ui.load(on_load, None, [*view, shown, link_note])
    load.then(show_linked, [*view, link_note], outputs).then(None, view, None, js=url_js)
