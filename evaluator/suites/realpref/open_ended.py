"""RealPref open-ended: the response is scored 1-5 by a judge model on three rubrics (Appendix B.2).

The judge is the operator's (evaluator/judge.py; the manifest's `judge:` block marks this task as
judge-scored): without one, this task refuses submissions (files and model runs) with a message
saying so. Each (response, rubric) is one judge call carrying the preference, the query and the
rubric. Two judge protocols (manifest `judge.protocols`):

- `judge_score` (default, the paper's): the judge writes "Score: N" and its rationale (greedy
  generation). A reply without a score from 1 to 5 is asked again once, after the judge's own
  reply; still none, the judgment FAILED: that rubric of that item is left out of the rubric's mean
  (its n says so) and counted in `judge_failures`, never scored as some number. Works with judges
  that expose no probabilities (an OpenAI-compatible endpoint).
- `rating_logprobs` (ours): the expected rating over the labels 1-5 from the judge's first-token
  probabilities (one forward pass); a judge whose probabilities hold none of them fails the same way.

What the judge wrote (score, rationale, attempts) is kept with the run's answers through
`Judge.keep` (a private file; never published, the items may be hidden). The judge's name,
revision and protocol go into the result's provenance and are shown as part of the row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re

import numpy as np

from evaluator.item_records import JudgeCall, Judgment, capped_messages
from evaluator.predictions import PredictionProblem, missing

# The hooks shared by the three tasks, re-exported as this task's (__all__ below keeps linters
# from dropping them as unused imports: the hooks binder reads them from this module).
from evaluator.suites.realpref.common import (
    build_items,
    build_requests,
    fit_model,
    prompts,
    public_companion,
)

log = logging.getLogger(__name__)

RUBRICS = ("awareness", "alignment", "quality")
LABELS = ("1", "2", "3", "4", "5")
MAX_RESPONSE_CHARS = 20000
MAX_RATIONALE_CHARS = 4000  # what the transcript keeps of a rationale
JUDGE_BATCH = 32
JUDGE_SCORE, RATING_LOGPROBS = "judge_score", "rating_logprobs"

# "Score: 4", "**Score:** 4", "- score = 4/5", "Score (1-5): 4", '{"score": 4': a line starting
# (after markup) with the word "score", a colon or "=" within the line, then a number.
_SCORE_LINE = re.compile(
    r"^[\W_]*score\b[^\n:=]{0,40}?[:=][\W_]*?(?P<number>-?\d+(?:\.\d+)?)(?P<rest>[^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
_BARE_SCORE = re.compile(r"^[\s\[(*]*(?P<number>\d+(?:\.\d+)?)[\s\])*.]*$")
_RATIONALE = re.compile(r"^[\W_]*rationale[\W_]*?:[\s*_]*", re.IGNORECASE | re.MULTILINE)


def parse_prediction(record: dict) -> str:
    if "response" not in record:
        raise missing("response", record)
    value = record["response"]
    if not isinstance(value, str) or not value.strip():
        raise PredictionProblem(
            "response", "must be a non-empty string (the model's answer to the query)"
        )
    if len(value) > MAX_RESPONSE_CHARS:
        raise PredictionProblem("response", f"longer than {MAX_RESPONSE_CHARS} characters")
    return value


def parse_answer(text: str) -> str | None:
    return text.strip() or None


# -- the judge's reply -----------------------------------------------------------------------------


def _whole_score(number: str) -> int | None:
    """A whole score 1-5 ("4", "4.0"), else None ("4.5", "0", "6", "10")."""
    value = float(number)
    return int(value) if value.is_integer() and 1 <= value <= 5 else None


def parse_judgment(text: str | None) -> tuple[int | None, str]:
    """The judge's score (a whole number 1-5, or None) and its rationale, from its reply.

    The score is the number on the first line labelled "Score" ("Score: 4", "**Score:** 4/5",
    "score = 4"); a reply that is only a number ("4") is its score. Anything else is no score: a
    number outside 1-5 or not whole, a labelled line without a number, a score only mentioned in
    prose ("I would give it a 4"), nothing at all. The rationale is the text after "Rationale:",
    else the reply without its score line."""
    text = (text or "").strip()
    if not text:
        return None, ""
    match = _SCORE_LINE.search(text)
    if match is None:
        bare = _BARE_SCORE.match(text)
        return (
            (_whole_score(bare.group("number")), "") if bare else (None, text[:MAX_RATIONALE_CHARS])
        )
    score = _whole_score(match.group("number"))
    if score is not None and re.match(r"\s*/\s*(?!5\b)\d", match.group("rest")):
        score = None  # "3/10": a score on another scale
    # the score line's own words after the number ("Score: 4. Good match") belong to the rationale
    rest = re.sub(r"^\s*/\s*\d+", "", match.group("rest")).strip(" \t.;,-")
    rationale = (text[: match.start()] + rest + text[match.end() :]).strip()
    labelled = _RATIONALE.search(rationale)
    if labelled:
        rationale = rationale[labelled.end() :].strip()
    return score, rationale[:MAX_RATIONALE_CHARS]


def judge_messages(
    rubric: str, preference: str, query: str, response: str, protocol: str = JUDGE_SCORE
) -> list[dict[str, str]]:
    p = prompts()
    r = p["rubrics"][rubric]
    content = p["judge_prompt"].format(
        dimension=r["name"],
        dimension_description=r["description"],
        preference=preference,
        query=query,
        response=response,
        rubric=r["text"].strip(),
    )
    answer = p["judge_answer_rating" if protocol == RATING_LOGPROBS else "judge_answer_score"]
    content += answer.format(dimension=r["name"])
    return [{"role": "system", "content": p["judge_system"]}, {"role": "user", "content": content}]


def judge_prompt_sha256() -> str:
    """Hash of the judge's texts (instruction, reply formats, retry, rubrics): on every judged row."""
    p = prompts()
    keys = (
        "judge_system",
        "judge_prompt",
        "judge_answer_score",
        "judge_answer_rating",
        "judge_retry",
        "judge_max_tokens",
        "rubrics",
    )
    return hashlib.sha256(json.dumps({k: p[k] for k in keys}, sort_keys=True).encode()).hexdigest()


# -- scoring ---------------------------------------------------------------------------------------


def _generate(backend, conversations: list[list[dict[str, str]]], limit: int) -> list[str]:
    replies: list[str] = []
    for start in range(0, len(conversations), JUDGE_BATCH):
        batch = conversations[start : start + JUDGE_BATCH]
        texts = backend.generate([backend.render(m) for m in batch], limit)
        replies.extend("" if t is None else t for t in texts)  # None: refused (over its window)
    return replies


def judge_by_score(backend, asks: list[list[dict[str, str]]]) -> list[Judgment]:
    """judge_score: one judgment per conversation: {score (1-5 or None), rationale, attempts}.
    A reply without a score is asked again once, the judge's reply and `judge_retry` appended."""
    p = prompts()
    limit = int(p["judge_max_tokens"])
    replies = _generate(backend, asks, limit)
    judgments: list[Judgment] = []
    for reply in replies:
        score, rationale = parse_judgment(reply)
        judgments.append({"score": score, "rationale": rationale, "attempts": 1, "reply": reply})
    again = [k for k, j in enumerate(judgments) if j["score"] is None]
    retried = _generate(
        backend,
        [
            [
                *asks[k],
                {"role": "assistant", "content": judgments[k]["reply"]},
                {"role": "user", "content": p["judge_retry"]},
            ]
            for k in again
        ],
        limit,
    )
    for k, reply in zip(again, retried):
        score, rationale = parse_judgment(reply)
        judgments[k].update({"score": score, "rationale": rationale, "attempts": 2, "reply": reply})
    return judgments


def judge_by_logprobs(backend, asks: list[list[dict[str, str]]]) -> list[Judgment]:
    """rating_logprobs: the expected rating under the judge's distribution over "1".."5"."""
    from evaluator.protocols import ChoiceRequest, choose_by_logprobs, expected_rating

    judgments: list[Judgment] = []
    for start in range(0, len(asks), JUDGE_BATCH):
        requests = [
            ChoiceRequest(str(k), messages, LABELS)
            for k, messages in enumerate(asks[start : start + JUDGE_BATCH])
        ]
        for decision in choose_by_logprobs(backend, requests):
            rating = expected_rating(decision)
            judgments.append(
                {
                    "score": None if np.isnan(rating) else rating,
                    "rationale": "",
                    "attempts": 1,
                    "probabilities": {
                        k: round(float(np.exp(v)), 6) for k, v in decision.scores.items()
                    },
                }
            )
    return judgments


def item_arrays(task, items, answers, judge) -> dict[str, np.ndarray]:
    """The three rubric scores per item (NaN where the judgment failed) and `judge_failed` (1 for
    an item with a failed judgment on any rubric). An item without a response (a model run that
    wrote nothing) scores 1 on every rubric, as the rubrics' level 1 says, without a judge call."""
    protocol = judge.protocol_for(task)
    asks, owners = [], []
    for index, item in enumerate(items):
        response = answers.get(item.id)
        if not response:
            continue
        for rubric in RUBRICS:
            asks.append(
                judge_messages(
                    rubric, item.gold["preference"], item.gold["query"], response, protocol
                )
            )
            owners.append((index, rubric))
    run = judge_by_logprobs if protocol == RATING_LOGPROBS else judge_by_score
    judgments = run(judge.backend, asks) if asks else []
    arrays = {rubric: np.ones(len(items), dtype=float) for rubric in RUBRICS}
    arrays["judge_failed"] = np.zeros(len(items), dtype=float)
    transcript: list[JudgeCall] = []
    for (index, rubric), judgment, prompt in zip(owners, judgments, asks):
        score = judgment["score"]
        arrays[rubric][index] = float("nan") if score is None else float(score)
        if score is None:
            arrays["judge_failed"][index] = 1.0
        transcript.append(
            {"id": items[index].id, "rubric": rubric, "prompt": capped_messages(prompt), **judgment}
        )
    failed = int(sum(1 for j in judgments if j["score"] is None))
    judge.tally(len(judgments), failed)
    if failed:
        log.warning(
            "%s: %d of %d judgments without a score after a retry (left out of the rubric means, "
            "counted in judge_failures)",
            task.key,
            failed,
            len(judgments),
        )
    judge.keep(transcript)
    return arrays


__all__ = [
    "build_items",
    "build_requests",
    "fit_model",
    "public_companion",
    "parse_prediction",
    "parse_answer",
    "item_arrays",
    "judge_prompt_sha256",
]
