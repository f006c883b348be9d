"""RealPref open-ended: the response is scored 1-5 by a judge model on three rubrics (Appendix B.2).

The judge is the operator's (evaluator/judge.py; the manifest's `judge:` block marks this task as
judge-scored): without one, this task refuses submissions (files and model runs) with a message
saying so. Each (response, rubric) is one judge call carrying the preference, the query and the
rubric; the score is the judge's expected rating over the labels 1-5 (rating_logprobs, one forward
pass, deterministic). The judge's name and revision go into the result's provenance and are shown
as part of the row.
"""

from __future__ import annotations

import numpy as np

from evaluator.predictions import PredictionProblem
from evaluator.suites.realpref.common import (  # noqa: F401 - the task's hooks
    build_items,
    build_requests,
    fit_model,
    prompts,
    public_companion,
)

RUBRICS = ("awareness", "alignment", "quality")
MAX_RESPONSE_CHARS = 20000


def parse_prediction(record: dict) -> str:
    if "response" not in record:
        raise PredictionProblem("response", "missing")
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


def judge_messages(rubric: str, preference: str, query: str, response: str) -> list[dict[str, str]]:
    p = prompts()
    r = p["rubrics"][rubric]
    content = p["judge_prompt"].format(
        dimension=r["name"],
        dimension_description=r["description"],
        preference=preference,
        query=query,
        response=response,
        rubric=r["text"],
    )
    return [{"role": "system", "content": p["judge_system"]}, {"role": "user", "content": content}]


def item_arrays(task, items, answers, judge) -> dict[str, np.ndarray]:
    from evaluator.protocols import ChoiceRequest, choose_by_logprobs, expected_rating

    backend = judge.backend
    labels = ("1", "2", "3", "4", "5")
    requests, owners = [], []
    unanswered = set()
    for index, item in enumerate(items):
        response = answers.get(item.id)
        if not response:
            unanswered.add(index)  # a model run that produced no text: every rubric scores 1
            continue
        for rubric in RUBRICS:
            requests.append(
                ChoiceRequest(
                    f"{item.id}::{rubric}",
                    judge_messages(rubric, item.gold["preference"], item.gold["query"], response),
                    labels,
                )
            )
            owners.append((index, rubric))
    arrays = {rubric: np.ones(len(items), dtype=float) for rubric in RUBRICS}
    for start in range(0, len(requests), 32):
        for (index, rubric), decision in zip(
            owners[start : start + 32], choose_by_logprobs(backend, requests[start : start + 32])
        ):
            arrays[rubric][index] = expected_rating(decision)
    return arrays
