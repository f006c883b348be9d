"""RealPref open-ended: the response is scored 1-5 by a judge model on three rubrics (Appendix B.2).

The judge is a model the operator registered (`personaboard models add NAME PATH`) and names in
PERSONABOARD_JUDGE_MODEL; without one, this task refuses submissions (files and model runs) with a
message saying so. Each (response, rubric) is one judge call carrying the preference, the query and
the rubric; the score is the judge's expected rating over the labels 1-5 (rating_logprobs, one forward
pass, deterministic). The judge's name and revision go into the result's provenance and are shown as
part of the row (see scoring_provenance).
"""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from evaluator.backends.base import BackendError
from evaluator.predictions import PredictionProblem
from evaluator.suites.realpref.common import build_items, build_requests, fit_model, prompts  # noqa: F401

JUDGE_ENV = "PERSONABOARD_JUDGE_MODEL"
RUBRICS = ("awareness", "alignment", "quality")
MAX_RESPONSE_CHARS = 20000


def judge_name() -> str | None:
    return (os.environ.get(JUDGE_ENV) or "").strip() or None


def unavailable_reason(task, setting: str) -> str | None:
    """Why submissions to this task are refused on this server now (None: accepted)."""
    if judge_name() is None:
        return (f"{task.key} is scored by an LLM judge and no judge model is configured on this server; "
                f"the operator registers one (`personaboard models add NAME PATH`) and sets {JUDGE_ENV}=NAME")
    return None


def parse_prediction(record: dict) -> str:
    if "response" not in record:
        raise PredictionProblem("response", "missing")
    value = record["response"]
    if not isinstance(value, str) or not value.strip():
        raise PredictionProblem("response", "must be a non-empty string (the model's answer to the query)")
    if len(value) > MAX_RESPONSE_CHARS:
        raise PredictionProblem("response", f"longer than {MAX_RESPONSE_CHARS} characters")
    return value


def parse_answer(text: str) -> str | None:
    return text.strip() or None


@lru_cache(maxsize=1)
def _judge(name: str):
    from backend.settings import load_settings
    from evaluator.backends import ModelSpec, load_backend
    from submissions.models import ModelRegistry

    entry = ModelRegistry(load_settings().data_dir).get(name)
    if entry is None or entry.get("model_type") != "generative":
        raise BackendError(f"judge model {name!r} ({JUDGE_ENV}) is not a registered generative model on this server")
    backend = load_backend(ModelSpec(name, entry["path"], "generative", entry["revision"]),
                           os.environ.get("PERSONABOARD_BACKEND", "transformers"))
    return backend, entry["revision"]


def scoring_provenance(task) -> dict:
    name = judge_name()
    if name is None:
        return {}
    _, revision = _judge(name)
    return {"judge": {"model": name, "revision": revision, "rubrics": "RealPref Appendix B.2",
                      "protocol": "rating_logprobs (expected 1-5 rating)"}}


def judge_messages(rubric: str, preference: str, query: str, response: str) -> list[dict[str, str]]:
    p = prompts()
    r = p["rubrics"][rubric]
    content = p["judge_prompt"].format(dimension=r["name"], dimension_description=r["description"],
                                       preference=preference, query=query, response=response, rubric=r["text"])
    return [{"role": "system", "content": p["judge_system"]}, {"role": "user", "content": content}]


def item_arrays(task, items, answers) -> dict[str, np.ndarray]:
    from evaluator.protocols import ChoiceRequest, choose_by_logprobs, expected_rating

    name = judge_name()
    if name is None:
        raise BackendError(unavailable_reason(task, ""))
    backend, _ = _judge(name)
    labels = ("1", "2", "3", "4", "5")
    requests, owners = [], []
    unanswered = set()
    for index, item in enumerate(items):
        response = answers.get(item.id)
        if not response:
            unanswered.add(index)  # a model run that produced no text: every rubric scores 1
            continue
        for rubric in RUBRICS:
            requests.append(ChoiceRequest(f"{item.id}::{rubric}",
                                          judge_messages(rubric, item.gold["preference"], item.gold["query"], response),
                                          labels))
            owners.append((index, rubric))
    arrays = {rubric: np.ones(len(items), dtype=float) for rubric in RUBRICS}
    for start in range(0, len(requests), 32):
        for (index, rubric), decision in zip(owners[start:start + 32], choose_by_logprobs(backend, requests[start:start + 32])):
            arrays[rubric][index] = expected_rating(decision)
    return arrays
