"""What a model run keeps of each item besides its answer, for the per-item details of a public
split (submissions/details.py): the prompt as sent, the raw output, the rule that read the answer
(or `unparsed`), the label log-probabilities, and for a judge-scored task the judge's prompts and
replies. Kept in the run's private checkpoint (evaluator/model_eval.py) and the judge's transcript
(evaluator/judge.py), published only where a task's items may be shown.

Sizes are bounded: a text (a generation, a judge reply, one message of a prompt) keeps its first
TEXT_CHARS characters and says how many it had (`raw_chars`; a cut text ends with a note), and a
prompt over PROMPT_CHARS characters or PROMPT_MESSAGES messages keeps its first and last messages
with one note message (role `elided`) between them naming what was left out (PrefEval's
distractor turns). `prompt_messages`, `prompt_chars` and `prompt_sha256` describe the whole prompt
as sent.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Required, TypedDict

TEXT_CHARS = 4000  # a generation, a judge reply or one prompt message, stored up to this length
# A prompt longer than PROMPT_CHARS characters, or of more than PROMPT_MESSAGES messages, is stored
# elided in the middle: its first messages (the system prompt, the preference or the revealing
# conversation) and its last ones (the question), each end up to half the budget and to
# PROMPT_HEAD / PROMPT_TAIL messages; PrefEval's distractor turns are what goes.
PROMPT_CHARS = 6000
PROMPT_MESSAGES = 24
PROMPT_HEAD, PROMPT_TAIL = 16, 6
ELIDED_ROLE = "elided"  # the role of the note message that stands for the messages left out


class PromptFields(TypedDict):
    """A prompt as a checkpoint keeps it (prompt_fields)."""

    messages: list[dict[str, str]]  # role and content, capped and elided
    prompt_messages: int  # of the whole prompt as sent
    prompt_chars: int
    prompt_sha256: str


class CheckpointEntry(TypedDict, total=False):
    """One request's line in a model run's checkpoint (checkpoint_entry): what scoring and a
    resumed run read, then what the per-item details show, each only where the protocol has it."""

    id: Required[str]  # the item's id (`item::order` for a request of several orders)
    answer: Required[Any]  # the answer read (None: none could be read)
    prompt_tokens: Required[int | None]
    rule: str  # the rule that read the answer, or `unparsed`
    raw: str  # the generation, capped at TEXT_CHARS
    raw_chars: int  # its whole length
    logprobs: dict[str, float]  # label -> log-probability
    messages: list[dict[str, str]]  # PromptFields'
    prompt_messages: int
    prompt_chars: int
    prompt_sha256: str


class Judgment(TypedDict, total=False):
    """One verdict of a rating judge on one conversation (RealPref's judge_by_score and
    judge_by_logprobs): the score (None: none could be read, after a retry), the judge's
    rationale, how many times it was asked, and its reply or its label probabilities."""

    score: Required[float | None]
    rationale: Required[str]
    attempts: Required[int]
    reply: str  # judge_score: the judge's last reply
    probabilities: dict[str, float]  # rating_logprobs: label -> probability


class JudgeCall(TypedDict, total=False):
    """One line of a judge's transcript (evaluator/judge.py Judge.keep): the item, the prompt as
    sent (capped: capped_messages) and what came back, then, in the per-item details
    (submissions/details.py), one entry of the item's `judge` column, without the id (the row is
    the item). PrefEval's checks write `check`, the reply as `output` and the <answer> text the
    rule read as `parsed` (None: none); RealPref's rubrics write `rubric` and their Judgment's
    fields (a test keeps the two alike)."""

    id: str
    prompt: Required[list[dict[str, str]]]
    check: str  # PrefEval
    output: str
    parsed: str | None
    rubric: str  # RealPref, with its Judgment's fields
    score: float | None
    rationale: str
    attempts: int
    reply: str
    probabilities: dict[str, float]


def cap_text(text: str, limit: int = TEXT_CHARS) -> str:
    """`text` up to `limit` characters; a longer one ends with a note saying how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" […cut: {len(text) - limit} more characters of {len(text)}]"


def _fitting(messages: list[dict[str, str]], most: int) -> int:
    """How many of `messages`, from the first, fit half the budget (at least one)."""
    count, chars = 0, 0
    for message in messages[:most]:
        chars += len(message["content"])
        if count and chars > PROMPT_CHARS // 2:
            break
        count += 1
    return count


def capped_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The chat as stored: each message's content capped, the middle elided past the budget."""
    kept = [
        {"role": str(m.get("role", "")), "content": cap_text(str(m.get("content", "")))}
        for m in messages
    ]
    if len(kept) <= PROMPT_MESSAGES and sum(len(m["content"]) for m in kept) <= PROMPT_CHARS:
        return kept
    tail = _fitting(kept[::-1], PROMPT_TAIL)
    head = min(_fitting(kept, PROMPT_HEAD), len(kept) - tail)
    left = messages[head : len(messages) - tail]
    if not left:  # two long messages: each is capped, nothing to elide
        return kept
    chars = sum(len(str(m.get("content", ""))) for m in left)
    note = {
        "role": ELIDED_ROLE,
        "content": f"{len(left)} messages ({chars} characters) left out here",
    }
    return [*kept[:head], note, *kept[len(kept) - tail :]]


def prompt_fields(messages: list[dict[str, Any]]) -> PromptFields:
    """A prompt's stored form and what describes the whole of it."""
    whole = json.dumps(messages, ensure_ascii=False, sort_keys=True)
    return {
        "messages": capped_messages(messages),
        "prompt_messages": len(messages),
        "prompt_chars": sum(len(str(m.get("content", ""))) for m in messages),
        "prompt_sha256": hashlib.sha256(whole.encode()).hexdigest(),
    }


def checkpoint_entry(decision: Any) -> CheckpointEntry:
    """One decision as the checkpoint keeps it: id, answer and prompt tokens (what scoring and a
    resumed run read), then what the details show, each only where the protocol has it."""
    entry: CheckpointEntry = {
        "id": decision.id,
        "answer": decision.answer,
        "prompt_tokens": decision.prompt_tokens,
    }
    if decision.rule is not None:
        entry["rule"] = decision.rule
    if decision.raw is not None:
        entry["raw"] = cap_text(decision.raw)
        entry["raw_chars"] = len(decision.raw)
    if decision.scores:
        entry["logprobs"] = {k: float(v) for k, v in decision.scores.items()}
    if decision.messages:
        entry.update(prompt_fields(decision.messages))
    return entry
