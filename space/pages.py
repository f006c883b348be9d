"""Shareable pages beside the Gradio app: one per model (`/model/{name}`), one per result
(`/result/{id}`), the plots' figures (`/plots/...`: JSON the interactive plots draw in the
browser, and PrefEval's accuracy against turns as SVG) and example prediction files
(`/examples/{suite}/{task}.jsonl`). Server-rendered HTML: every value from a record is escaped.

The model page also holds the paired comparison (a plain GET form: pick another result of the same
suite/task/setting; the numbers come from `services.compare`, the code GET /api/v1/compare runs) and,
for PrefEval mcq_turns results, accuracy against distractor turns (leaderboard/turns_plot.py).
"""

from __future__ import annotations

import html
import io
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

import pandas as pd
from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from evaluator.metrics import get_metric
from evaluator.registry import all_suites
from leaderboard.board import ranked_board
from leaderboard.result_record import (
    KIND_COMPUTED,
    KIND_PARTIAL,
    KIND_REFERENCE,
    ResultRecord,
    provenance_of,
)
from leaderboard.store import StoreError, StoreUnavailable
from leaderboard.turns_plot import TURNS_TASK, accuracy_by_turns, plot_accuracy_by_turns
from space import interactive_plots, plots
from space.data import (
    board_inputs,
    manifest_tier_order,
    per_head,
    result_records,
    result_summaries,
)
from space.display import (
    ROW_KINDS,
    column_labels,
    format_interval,
    format_value,
    metric_label,
    suite_title,
)
from space.item_links import has_item_details, items_link
from space.reproduce import reproduce_section

if TYPE_CHECKING:
    from space.session import SessionReader
    from submissions.service import Services

SVG = "image/svg+xml"
MAX_IDS = plots.MAX_SERIES
EXAMPLE_LINES = 3
PUBLISHED = re.compile(r"Add result (\S+) ")
HUB_URL = "https://huggingface.co/"
COMPARABLE_KINDS = (
    "computed",
    "partial",
)  # rows with answers kept by the service (not papers', not reference lines)

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title} · PersonaBoard</title>
<style>
body{{font-family:system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px 16px;line-height:1.4;color:#111}}
table{{border-collapse:collapse;margin:8px 0 16px;font-size:14px}} th,td{{border-bottom:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}}
td.num{{text-align:right;white-space:nowrap}} .scroll{{overflow-x:auto}} code,pre{{background:#f3f4f6;padding:2px 4px;border-radius:4px}}
pre{{padding:8px;white-space:pre-wrap;word-break:break-all}} img.plot{{max-width:100%;height:auto;border:1px solid #eee}}
table.history td,table.history th{{white-space:nowrap}} .none{{color:#9ca3af}}
.pb-plot{{max-width:100%;overflow:hidden}} .kind-partial{{background:#fffbeb}} .kind-reported{{color:#6b7280;font-style:italic}} nav a{{margin-right:12px}}
form.pb-compare{{margin:4px 0 10px}} form.pb-compare select{{max-width:36em}} .pb-error{{color:#b91c1c}} .pb-note{{color:#6b7280;font-size:13px}}
</style></head><body><nav><a href="/">← Leaderboard</a></nav>{body}</body></html>"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(PAGE.format(title=html.escape(title), body=body), status_code=status)


def _not_found(what: str) -> HTMLResponse:
    return _page("Not found", f"<h1>Not found</h1><p>{html.escape(what)}</p>", status=404)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _kind(record: ResultRecord) -> str:
    """A row kind as readers know it ("verified", "reported (paper)")."""
    return ROW_KINDS.get(record.row_kind, record.row_kind)


def _interval(low_high, metric: str | None) -> str:
    """A stats' "ci95" pair as text ("" where there is none)."""
    low, high = low_high or (None, None)
    return format_interval(low, high, metric)


def _chip(value: str) -> str:
    """A revision in a code chip; a missing one is a dash (an empty chip reads as a glitch)."""
    return f"<code>{_e(value)}</code>" if value else '<span class="none">–</span>'


def plot_box(src: str, label: str) -> str:
    """An interactive plot (space/interactive_plots.py): drawn in the browser from `src`'s figures."""
    return (
        f'<div class="pb-plot" role="img" aria-label="{_e(label)}" data-src="{_e(src)}"></div>'
        f"<script data-pb>{interactive_plots.DRAW_JS}window.pbDrawPlots(document);</script>"
    )


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested provenance as (dotted key, leaf value) pairs, in the record's order."""
    if isinstance(value, dict):
        pairs = []
        for key, inner in value.items():
            pairs.extend(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return pairs
    if isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        return [(prefix, json.dumps(value, sort_keys=True))]
    return [(prefix, value)]


def _published(services: Services) -> dict[str, tuple[str, str]]:
    """submission id -> (results revision that published it, when), read once per head: it reads
    every version's message (`git log` over all commits, a page's largest cost as results grow)."""

    def build() -> dict[str, tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for version in services.results.versions():
            match = PUBLISHED.match(version.message)
            if match:
                found.setdefault(match.group(1), (version.revision, version.created_at))
        return found

    return per_head(services, "published", build)


def hub_link(record: ResultRecord) -> str | None:
    model = provenance_of(record).get("model") or {}
    if model.get("source") == "hub" and model.get("name"):
        return HUB_URL + quote(str(model["name"]), safe="/")
    return None


def _score_rows(record: ResultRecord) -> str:
    """Total and every tier: value, 95% interval, item count, in the task's labels and formats."""
    metrics = record.metrics
    primary = metrics.metric
    labels = column_labels()
    suite = all_suites().get(record.suite)
    task = suite.tasks.get(record.task) if suite else None
    rows = []
    for metric, stats in metrics.total.items():
        rows.append(
            ("Total" if metric == primary else f"Total · {metric_label(metric)}", metric, stats)
        )
    for group, tiers in metrics.tiers.items():
        group_label = (
            task.tier_group(group).label
            if task and group in {g.name for g in task.tier_groups}
            else group
        )
        for tier, values in tiers.items():
            if primary is not None and primary in values:
                rows.append(
                    (
                        f"{group_label}: {labels.get(f'{group}/{tier}', tier)}",
                        primary,
                        values[primary],
                    )
                )
    body = "".join(
        f"<tr><td>{_e(name)}</td><td>{_e(metric_label(metric))}</td><td class=num>{format_value(s.value, metric)}</td>"
        f"<td class=num>{_interval(s.ci95, metric)}</td><td class=num>{_e(s.n or '')}</td></tr>"
        for name, metric, s in rows
    )
    return (
        "<div class=scroll><table class=scores><thead><tr><th>Score</th><th>Metric</th><th>Value</th><th>95% CI</th>"
        f"<th>Items</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def _links(record: ResultRecord) -> str:
    links = []
    if hub := hub_link(record):
        links.append(
            f'<a class="hub-link" href="{_e(hub)}" rel="noopener nofollow">Model on the Hugging Face Hub</a>'
        )
    link = record.model_link
    if link.startswith(("https://", "http://")):
        links.append(
            f'<a class="submitter-link" href="{_e(link)}" rel="noopener nofollow ugc">Submitter\'s link</a>'
        )
    return " · ".join(links)


def format_p_value(p) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def format_difference(value, metric: str | None) -> str:
    """A signed difference in the metric's own format (percentage points for shares)."""
    text = format_value(value, metric)
    return f"+{text}" if text and float(value) > 0 else text


def _comparable(suite: str, task: str) -> str | None:
    """Why results of suite/task have no paired comparison here (the API's rule), or None."""
    found = all_suites().get(suite)
    spec = found.tasks.get(task) if found else None
    if spec is None:
        return "unknown task"
    if spec.judge:
        return "scored by a judge model: compared by their intervals only"
    if get_metric(spec.metric).kind == "statistic":
        return f"its metric ({metric_label(spec.metric)}) is not a mean over items"
    return None


def _result_label(summary: dict) -> str:
    """A result as a list of results names it (`summary`: a leaderboard/table.py result_summaries row)."""
    kind = " · partial" if summary["row_kind"] == KIND_PARTIAL else ""
    return (
        f"{summary['model_name']} · {format_value(summary['value'], summary['metric'])}{kind}"
        f" · {(summary['submitted_at'] or '')[:16].replace('T', ' ')} · {summary['submission_id']}"
    )


def _comparison_forms(
    name: str, mine: list[ResultRecord], every: pd.DataFrame, chosen: tuple[str, str] | None
) -> str:
    """One form per result of this model: compare it with another result of the same suite/task/setting
    (`every`: one row per published result, leaderboard/table.py result_summaries)."""
    parts = []
    for record in mine:
        if record.row_kind not in COMPARABLE_KINDS:
            continue
        sid = record.submission_id
        where = f"{suite_title(record.suite)} / {record.task} · {record.setting}"
        why_not = _comparable(record.suite, record.task)
        if why_not:
            parts.append(f"<p>{_e(where)}: no paired comparison ({_e(why_not)}).</p>")
            continue
        others = every[
            (every["suite"] == record.suite)
            & (every["task"] == record.task)
            & (every["setting"] == record.setting)
            & (every["submission_id"] != sid)
            & every["row_kind"].isin(COMPARABLE_KINDS)
        ].to_dict("records")
        if not others:
            parts.append(
                f"<p>{_e(where)} ({_e(sid)}): no other result of this suite, task and "
                "setting to compare with yet.</p>"
            )
            continue
        options = "".join(
            f'<option value="{_e(r["submission_id"])}"{" selected" if chosen == (sid, r["submission_id"]) else ""}>'
            f"{_e(_result_label(r))}</option>"
            for r in others
        )
        hidden = _split_hidden(record.suite)
        parts.append(
            # a hidden split's comparison is metered per identity: the token goes in a POST body,
            # never in the page's address (history, logs, Referer)
            f'<form class="pb-compare" method="{"post" if hidden else "get"}" '
            f'action="/model/{_e(quote(name, safe=""))}#comparison" '
            f'data-a="{_e(sid)}"><input type="hidden" name="a" value="{_e(sid)}">'
            f"<label>{_e(where)} · this result ({_e(sid)}) against "
            f'<select name="b" aria-label="result to compare with">{options}</select></label> '
            + (_hidden_compare_fields() if hidden else "")
            + '<button type="submit">Compare</button></form>'
        )
    return (
        "".join(parts)
        or "<p>No result of this model has answers kept here to compare (papers' rows, reference lines).</p>"
    )


def _split_hidden(suite: str) -> bool:
    found = all_suites().get(suite)
    return bool(found and found.split_hidden)


HIDDEN_COMPARE_TOKEN = (
    '<label>API token <input type="password" name="token" autocomplete="off" required '
    'aria-label="API token (a comparison on a hidden split needs one)"></label> '
    '<span class="pb-note">a hidden split: the comparison needs your API token and counts against '
    "your daily comparisons on the suite; it shows only the difference of the released scores</span> "
)


HIDDEN_COMPARE_SIGNED_IN = (  # on a Space: a Hugging Face account has no API token
    '<label>API token (unless signed in with Hugging Face) <input type="password" name="token" '
    'autocomplete="off" aria-label="API token (a comparison on a hidden split needs an identity)">'
    '</label> <span class="pb-note">a hidden split: the comparison needs you signed in with Hugging '
    "Face on the leaderboard (or your API token) and counts against your daily comparisons on the "
    "suite; it shows only the difference of the released scores</span> "
)


def _hidden_compare_fields() -> str:
    from space.identity import hf_oauth_enabled

    return HIDDEN_COMPARE_SIGNED_IN if hf_oauth_enabled() else HIDDEN_COMPARE_TOKEN


def _comparison_result(
    services: Services, a: str, b: str, token: str | None = None, username: str | None = None
) -> str:
    """The paired comparison of results a and b, from services.compare (GET /api/v1/compare's
    code), as the account signed in on the Space (`username`, from a verified session cookie:
    space/session.py) or the identity whose API token was typed into the form (a hidden split
    needs one); the sign-in policy applies as to a submission."""
    from space.session import request_identity
    from submissions.intake import SubmissionError

    try:
        identity = request_identity(services.identities, username, token)
        result = services.compare(a, b, identity)
    except SubmissionError as exc:
        return f'<div id="comparison"><p class="pb-error">No comparison: {_e(exc.detail["message"])}</p></div>'
    metric = result.get("metric")
    if result.get("difference") is None:
        return '<div id="comparison"><p class="pb-error">No comparison: the two results share no scored item.</p></div>'
    unit = str(result.get("unit") or "item").replace("_", " ")
    rows = [
        (
            "A",
            f"{_e(result['a']['model_name'])} ({_e(result['a']['setting'])}) · {_e(result['a']['submission_id'])}",
        ),
        (
            "B",
            f"{_e(result['b']['model_name'])} ({_e(result['b']['setting'])}) · {_e(result['b']['submission_id'])}",
        ),
        (
            f"{metric_label(metric or '')}: A, B",
            f"{format_value(result.get('a_mean'), metric)}, {format_value(result.get('b_mean'), metric)}",
        ),
        ("Difference (A − B)", format_difference(result["difference"], metric)),
    ]
    if result.get("paired", True):
        rows += [
            ("95% CI of the difference", _e(_interval(result["ci95"], metric))),
            ("p-value", format_p_value(result.get("p_value"))),
            ("Items both answered", _e(result["n"])),
            (f"Units ({unit}s, resampled together)", _e(result["n_units"])),
        ]
    else:  # a hidden split: its interval, p-value and counts would read hidden labels (never sent)
        rows.append(("Interval, p-value, item counts", "withheld on a hidden split"))
    rows.append(("Test", _e(result.get("test", ""))))
    note = (result.get("release") or {}).get("note")
    return (
        '<div id="comparison"><h3>Paired comparison</h3><table class="comparison">'
        + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows)
        + "</table>"
        + (f"<p>{_e(note)}</p>" if note else "")
        + "<p>On the items both results answered: the difference of the means, its 95% interval from a bootstrap "
        "over the suite's independent units, and a two-sided sign-flip permutation p-value over those units "
        f"(the same numbers as <code>GET /api/v1/compare?a={_e(a)}&amp;b={_e(b)}</code>).</p></div>"
    )


def _turns_section(name: str, mine: list[ResultRecord]) -> str:
    """PrefEval mcq_turns: accuracy against distractor turns, as an image and as a table (n/a counts
    are absent from the series: never drawn as zero)."""
    series = accuracy_by_turns(mine)
    if not series:
        return ""
    task = all_suites()[TURNS_TASK[0]].tasks[TURNS_TASK[1]]
    counts = list(task.tier_group("turns").tiers)
    head = "".join(f"<th>{_e(c)} turns</th>" for c in counts)
    by_id = {r.submission_id: r for r in mine}
    body = ""
    for line in series:
        points = {str(p["turns"]): p for p in line["points"]}
        skipped = by_id[line["submission_id"]].provenance.get("not_applicable") or {}
        cells = "".join(
            f'<td class=num title="95% CI {_e(_interval(points[c]["ci95"], line["metric"]))}; {_e(points[c]["n"])} items">'
            f"{format_value(points[c]['value'], line['metric'])}</td>"
            if c in points
            else f'<td class=num title="{_e(skipped.get(c, "not run"))}">n/a</td>'
            for c in counts
        )
        body += f"<tr><td>{_e(line['setting'])} · {_e(line['submission_id'])}</td>{cells}</tr>"
    ids = ",".join(line["submission_id"] for line in series[:MAX_IDS])
    return (
        "<h2>Accuracy against distractor turns</h2><p>PrefEval mcq_turns: the preference stated, then this many "
        "unrelated conversation turns, then the question. n/a: the model's context window is too short for those "
        "prompts (never truncated).</p>"
        f'<img class="plot" id="turns-plot" alt="accuracy of {_e(name)} against distractor turns" '
        f'src="/plots/turns.svg?{_e(urlencode({"ids": ids}))}">'
        f"<div class=scroll><table class=turns><thead><tr><th>Result</th>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


# -- the pages: the services and the request's values in, the page out (tests/unit/test_tab_handlers.py)


def find_record(services: Services, submission_id: str) -> ResultRecord | None:
    found = result_records(services, [submission_id])
    return found[0] if found else None


def result_page(services: Services, submission_id: str) -> HTMLResponse:
    """One published result: its facts, scores, per-tier plot, reproduce command, provenance."""
    record = find_record(services, submission_id)
    if record is None:
        return _not_found(f"No published result with id {submission_id!r}.")
    published = _published(services).get(submission_id)
    provenance = _flatten(record.provenance) + _flatten(record.timings or {}, "timings")
    name = record.model_name
    facts = [
        ("Model", f'<a href="/model/{quote(name, safe="")}">{_e(name)}</a>'),
        ("Suite / task", f"{_e(suite_title(record.suite))} / {_e(record.task)}"),
        ("Setting", _e(record.setting)),
        ("Kind", _e(_kind(record))),
        ("Source", _e(record.source)),
        ("Submitted", _e(record.submitted_at)),
        ("Items", _e(record.n_items)),
        ("Description", _e(record.description)),
        ("Published in results revision", _e(published[0] if published else "")),
        ("Published at", _e(published[1] if published else "")),
    ]
    where = {"suite": record.suite, "task": record.task}
    board = "/?" + urlencode({**where, "highlight": submission_id})
    body = (
        f"<h1>Result {_e(submission_id)}</h1><p>{_links(record)}</p>"
        f'<p><a class="board-link" href="{_e(board)}">Its row on the leaderboard</a>'
        + _items_of(record, " · ", "Its answers item by item")
        + "</p>"
        "<table class=facts>"
        + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in facts)
        + "</table>"
        "<h2>Scores</h2>"
        + _score_rows(record)
        + "<h2>Per tier</h2>"
        + plot_box(
            "/plots/tiers.json?" + urlencode({**where, "ids": submission_id}),
            "per-tier scores with 95% intervals",
        )
        + reproduce_section(record)  # space/reproduce.py: the command and what it must match
        + "<h2>Provenance</h2><div class=scroll><table class=provenance>"
        + "".join(f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>" for k, v in provenance)
        + "</table></div>"
    )
    return _page(f"Result {submission_id}", body)


def _history_row(r: ResultRecord, published: dict[str, tuple[str, str]]) -> str:
    """A result in the model page's history: when, where, its score and interval, the model
    revision it ran at and the results revision that published it."""
    metric = r.metrics.metric
    total = r.metrics.total.get(metric) if metric else None
    revision = str((provenance_of(r).get("model") or {}).get("revision", ""))
    return (
        f'<tr class="kind-{_e(r.row_kind)}">'
        f"<td>{_e(r.submitted_at[:16].replace('T', ' '))}</td>"
        f"<td>{_e(suite_title(r.suite))} / {_e(r.task)}</td><td>{_e(r.setting)}</td>"
        f"<td>{_e(_kind(r))}</td>"
        f"<td class=num>{format_value(total.value if total else None, metric)}</td>"
        f"<td class=num>{_interval(total.ci95 if total else None, metric)}</td>"
        f"<td class=num>{_e(r.n_items)}</td>"
        f"<td>{_chip(revision[:16])}</td>"
        f"<td>{_chip(published.get(r.submission_id, ('',))[0][:12])}</td>"
        f'<td><a href="/result/{_e(r.submission_id)}">result</a>{_items_of(r, " · ")}</td></tr>'
    )


def _items_of(record: ResultRecord, before: str, text: str = "items") -> str:
    """A link to the result's items in the Items tab, where it has any (space/item_links.py)."""
    if not has_item_details(record.row_kind, record.suite, record.task):
        return ""
    return before + items_link(record.submission_id, text)


def _tier_plots(name: str, mine: list[ResultRecord]) -> str:
    """One per-tier plot per suite/task the model has results of, with all of them."""
    parts = []
    for suite, task in dict.fromkeys((r.suite, r.task) for r in mine):
        ids = ",".join(r.submission_id for r in mine if (r.suite, r.task) == (suite, task))
        src = "/plots/tiers.json?" + urlencode({"suite": suite, "task": task, "ids": ids[:2000]})
        parts.append(
            f"<h3>{_e(suite_title(suite))} / {_e(task)}</h3>"
            + plot_box(src, f"per-tier scores of {name} on {suite}/{task}")
        )
    return "".join(parts)


def model_page(
    services: Services,
    name: str,
    a: str | None,
    b: str | None,
    token: str | None = None,
    username: str | None = None,
) -> HTMLResponse:
    """Every published result of a model, oldest first, with its history, turns plot, the paired
    comparison form (and, with `a` and `b`, their comparison) and per-tier plots."""
    every = result_summaries(services)
    mine = sorted(
        result_records(services, every.loc[every["model_name"] == name, "submission_id"]),
        key=lambda r: (r.submitted_at, r.submission_id),
    )
    if not mine:
        return _not_found(f"No published result for a model named {name!r}.")
    published = _published(services)
    links = " · ".join(dict.fromkeys(filter(None, (_links(r) for r in mine))))
    history = "".join(_history_row(r, published) for r in mine)
    body = (
        f"<h1>{_e(name)}</h1><p>{links}</p>"
        "<h2>Results and history</h2><p>Every published result of this model, oldest first: the model revision "
        "it ran at and the results revision that published it.</p><div class=scroll><table class=history>"
        "<thead><tr><th>Submitted</th><th>Suite / task</th><th>Setting</th><th>Kind</th><th>Score</th><th>95% CI</th>"
        "<th>Items</th><th>Model revision</th><th>Results revision</th><th></th></tr></thead>"
        f"<tbody>{history}</tbody></table></div>"
        + _turns_section(name, mine)
        + "<h2>Compare with another result</h2><p>A paired comparison on the items both results answered: is "
        "the difference real? Pick a result of the same suite, task and setting.</p>"
        + _comparison_forms(name, mine, every, (a, b) if a and b else None)
        + (_comparison_result(services, a, b, token, username) if a and b else "")
        + f"<h2>Per-tier scores</h2>{_tier_plots(name, mine)}"
    )
    return _page(name, body)


def board_of(services: Services, suite: str, task: str, revision: str | None = None):
    """The ranked board a plot draws: the newest, or the version the board shows; an unknown
    task or version is a 404, a store out of reach a 503."""
    if suite not in all_suites() or task not in all_suites()[suite].tasks:
        raise HTTPException(404, f"unknown suite/task {suite!r}/{task!r}")
    try:
        scores, facts = board_inputs(services, revision)
    except StoreUnavailable:
        raise HTTPException(503, "the results store cannot be reached right now") from None
    except StoreError:
        raise HTTPException(404, "unknown results revision") from None
    return ranked_board(scores, facts, suite, task, tier_order=manifest_tier_order())


def turns_svg(services: Services, ids: str) -> bytes:
    """PrefEval mcq_turns: the chosen results' accuracy against distractor turns (SVG)."""
    chosen = set([i for i in ids.split(",") if i][:MAX_IDS])
    series = accuracy_by_turns(result_records(services, sorted(chosen)))
    if not series:
        return plots._empty("No PrefEval mcq_turns result chosen.")
    buffer = io.BytesIO()
    plots.one_at_a_time(plot_accuracy_by_turns)(  # pyplot: one drawing at a time (space/plots.py)
        series, buffer, title="PrefEval mcq_turns: accuracy (95% intervals) against turns"
    )
    return buffer.getvalue()


def example_file(suite: str, task: str) -> Response:
    from space.formats import example_predictions

    if suite not in all_suites() or task not in all_suites()[suite].tasks:
        raise HTTPException(404, f"unknown suite/task {suite!r}/{task!r}")
    body = example_predictions(all_suites()[suite].tasks[task], EXAMPLE_LINES)
    return Response(
        body,
        media_type="application/jsonl",
        headers={"Content-Disposition": f'attachment; filename="{suite}-{task}-example.jsonl"'},
    )


# -- the routes -----------------------------------------------------------------------------------


def build_pages(services: Services, sessions: SessionReader | None = None) -> APIRouter:
    """`sessions`: Gradio's session cookie, read by the comparison form on a Space."""
    router = APIRouter(include_in_schema=False)
    _page_routes(router, services, sessions)
    _plot_routes(router, services)
    router.get("/examples/{suite}/{task}.jsonl")(example_file)
    return router


def _page_routes(
    router: APIRouter, services: Services, sessions: SessionReader | None = None
) -> None:
    @router.get("/result/{submission_id}", response_class=HTMLResponse)
    def result(submission_id: str):
        return result_page(services, submission_id)

    @router.post("/model/{name:path}", response_class=HTMLResponse)
    def model_compared(
        request: Request,
        name: str,
        a: str = Form(..., max_length=64),
        b: str = Form(..., max_length=64),
        token: str = Form("", max_length=200),
    ):
        """The compare form of a hidden split: the API token comes in the body (not the URL), or
        on a Space the signed-in account from Gradio's session cookie (verified; forged: no one)."""
        username = sessions.username_in(request.cookies) if sessions is not None else None
        return model_page(services, name, a, b, token.strip() or None, username)

    @router.get("/model/{name:path}", response_class=HTMLResponse)
    def model(
        name: str,
        a: str | None = Query(None, max_length=64),
        b: str | None = Query(None, max_length=64),
    ):
        return model_page(services, name, a, b)


def _plot_routes(router: APIRouter, services: Services) -> None:
    @router.get("/plots/plotly.min.js")
    def plotly_js():
        # the plotly package's own bundle: the interactive plots work offline
        return FileResponse(
            interactive_plots.plotly_js_path(),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    @router.get("/plots/tiers.json")
    def tiers_figures(
        suite: str = Query(..., max_length=100),
        task: str = Query(..., max_length=100),
        ids: str = Query("", max_length=2000),
        revision: str | None = Query(None, max_length=100),
    ):
        board, cells = board_of(services, suite, task, revision)
        chosen = [i for i in ids.split(",") if i][:MAX_IDS]
        title = f"{suite_title(suite)} / {task}"
        return {"figures": interactive_plots.tier_figures(board, cells, chosen, title)}

    @router.get("/plots/settings.json")
    def settings_figures(
        suite: str = Query(..., max_length=100),
        task: str = Query(..., max_length=100),
        revision: str | None = Query(None, max_length=100),
    ):
        board, _ = board_of(services, suite, task, revision)
        board = board[~board["row_kind"].isin([KIND_PARTIAL, KIND_REFERENCE])]
        return {"figures": interactive_plots.setting_figure(board, "Total by setting")}

    @router.get("/plots/size.json")
    def size_figures(
        suite: str = Query(..., max_length=100),
        task: str = Query(..., max_length=100),
        revision: str | None = Query(None, max_length=100),
    ):
        board, _ = board_of(services, suite, task, revision)
        board = board[board["row_kind"] == KIND_COMPUTED]
        return {"figures": interactive_plots.size_figure(board, "Total against model size")}

    @router.get("/plots/turns.svg")
    def turns_plot(ids: str = Query("", max_length=2000)):
        return Response(turns_svg(services, ids), media_type=SVG)
