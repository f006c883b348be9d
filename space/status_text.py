"""Submission status and refusals as Markdown (user text escaped)."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from urllib.parse import urlencode

from space.display import format_interval, format_value
from submissions.intake import SubmissionError
from submissions.service import SubmissionStatus

TERMINAL_STATES = ("finished", "failed", "cancelled")
# A finished result goes out through the outbox: when another process holds the publisher (a board
# refresh), the job ends before its result is on the board. A page that redraws the board on finish
# waits for the revision that holds it this long at most (a hidden split's result the Ladder keeps
# back is never published).
UNPUBLISHED_WAIT_S = 60.0


def awaiting_board(submission, now: datetime | None = None) -> bool:
    """Whether a finished submission's result is not on the leaderboard yet (no revision) and may
    still come (finished less than UNPUBLISHED_WAIT_S ago)."""
    if submission.state != "finished" or submission.revision or not submission.finished_at:
        return False
    since = (now or datetime.now(timezone.utc)) - datetime.fromisoformat(submission.finished_at)
    return since.total_seconds() < UNPUBLISHED_WAIT_S


# What a model run does before it answers items (evaluator/phases.py), as the status says it
PHASE_WORDS = {
    "downloading": "downloading the model",
    "loading": "loading the model",
    "warming": "preparing the first items",
}


def inert(text: object) -> str:
    """User-supplied text for a Markdown component: shown as typed, never markup.

    html.escape alone is not enough in Markdown: `[x](javascript:...)`, `![](https://...)`, bare
    URLs (autolinks) and emphasis would still make elements. Every character but letters, digits
    and spaces becomes a numeric character reference, which Markdown renders as that character
    and never parses as syntax.
    """
    return "".join(c if c.isalnum() or c == " " else f"&#{ord(c)};" for c in str(text))


def format_status(status: SubmissionStatus) -> str:
    lines = [
        f"**Submission {inert(status['id'])}**: {inert(status['model_name'])} on "
        f"{inert(status['suite'])}/{inert(status['task'])} ({inert(status['setting'])})",
        f"State: **{inert(status['state'])}**",
    ]
    if status.get("owner"):
        lines.append(f"Submitted by {inert(status['owner'])}")
    if status.get("visibility", "public") != "public":
        lines.append(
            f"**This submission was {inert(status['visibility'])} by an operator**; it is in no table or download."
        )
    if status.get("flag"):
        lines.append(f"**Flagged by an operator:** {inert(status['flag'])}")
    for entry in status.get("history") or []:  # the row's operator actions, oldest first
        lines.append(
            f"- {inert(entry['at'][:16].replace('T', ' '))} {inert(entry['actor'])}: {inert(entry['action'])}"
            + (f" ({inert(entry['reason'])})" if entry.get("reason") else "")
        )
    position = status.get("queue_position")
    if status["state"] == "queued" and position is not None:
        lines.append(f"Position in queue: {position + 1}")
    progress = status.get("progress") or {}
    if status["state"] == "running" and progress.get("total"):
        line = f"Progress: {progress['done']} of {progress['total']} items"
        if doing := PHASE_WORDS.get(str(progress.get("phase"))):  # before the first item
            line = f"Progress: {doing} ({progress['done']} of {progress['total']} items done)"
        if progress.get("tokens_per_s"):
            line += f", {progress['tokens_per_s']:.0f} tokens/s"
        if (eta_s := progress.get("eta_s")) is not None:
            line += f", about {duration(eta_s)} left"
        lines.append(line)
    if status.get("error"):
        lines.append(f"Reason: {inert(status['error'])}")
    result = status.get("result") or {}
    if status["state"] == "finished" and result.get("released") is False:
        lines.append(f"Result: {inert(result['message'])}")  # hidden split, the Ladder withheld it
    elif status["state"] == "finished" and result:
        total = result["total"]
        for metric, stats in total.items():
            low, high = stats.get("ci95") or (None, None)
            lines.append(
                f"{metric}: **{format_value(stats['value'], metric)}** "
                f"(95% CI {format_interval(low, high, metric)}, n={stats['n']})"
            )
        lines.append(f"Published in results revision `{(status.get('revision') or '')[:12]}`")
        board = "/?" + urlencode(
            {"suite": status["suite"], "task": status["task"], "highlight": status["id"]}
        )
        lines.append(
            f'<a class="pb-row-link" href="{html.escape(board)}" target="_blank">See its row on the leaderboard</a>'
            f' · <a class="pb-result-link" href="/result/{html.escape(status["id"])}" target="_blank">Result page</a>'
        )
    return "\n\n".join(lines)


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def format_error(exc: SubmissionError) -> str:
    """A rejected submission: the message, then one bullet per problem (line and field named)."""
    problems = exc.detail.get("problems") or []
    if not problems or (
        " rejected:" not in str(exc) and all(p.get("line") is None for p in problems)
    ):
        return "**Error:** " + inert(exc)
    head = str(exc).split(":", 1)[0] if " rejected:" in str(exc) else "Submission rejected"
    lines = [f"**Error:** {inert(head)}. Nothing was queued; fix the file and submit again."]
    for p in problems:
        where = f"line {p['line']}" if p.get("line") is not None else "file"
        if (p.get("count") or 1) > 1:  # one problem repeated on many lines, said once
            shown = ", ".join(str(n) for n in p.get("lines") or ())
            where = f"{p['count']} lines ({shown}{', ...' if p['count'] > len(p['lines']) else ''})"
        if p.get("field"):
            where += f", field {inert(p['field'])}"
        lines.append(f"- {where}: {inert(p.get('message', ''))}")
    listed = sum(p.get("count") or 1 for p in problems)  # a repeated problem counts its lines
    extra = exc.detail.get("problem_count", listed) - listed
    if extra > 0:
        lines.append(f"- ... and {extra} more")
    return "\n".join(lines)
