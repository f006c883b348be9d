"""Evaluation protocols: how a model's decision is read, independent of the backend.

A suite's hooks turn items into requests (chat messages plus the labels to choose from); a
protocol turns requests into decisions with the backend's primitives. Backends differ only in
speed, never in what a protocol computes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from evaluator.backends.base import Backend, BackendError, Messages, Progress

PROTOCOL_VERSION = "1"


@dataclass
class ChoiceRequest:
    """Pick one of `labels` after `messages`. `responses` (label -> text) is for reward models,
    which score each candidate response instead of reading a label."""

    id: str
    messages: Messages
    labels: tuple[str, ...]
    responses: dict[str, str] = field(default_factory=dict)


@dataclass
class Decision:
    id: str
    answer: str | None  # None: no parsable answer (counts as wrong)
    scores: dict[str, float] = field(default_factory=dict)  # label -> renormalised log-prob or reward
    raw: str | None = None  # generated text, for generate-and-parse
    prompt_tokens: int = 0


def choose_by_logprobs(backend: Backend, requests: list[ChoiceRequest], progress: Progress | None = None) -> list[Decision]:
    """One forward pass per prompt: the label whose token is most likely next wins.

    Log-probs are renormalised over the labels, so `scores` is the model's distribution over the
    choices. Every label must be exactly one token: otherwise this is an error, never a guess.
    """
    if not requests:
        return []
    labels = requests[0].labels
    if any(r.labels != labels for r in requests):
        raise BackendError("all requests of one call must share their labels")
    label_ids = [backend.token_id(label) for label in labels]
    prompts = [backend.render(r.messages) for r in requests]
    logprobs = backend.choice_logprobs(prompts, label_ids, progress)
    with np.errstate(invalid="ignore"):  # a row of -inf (no readable label) becomes NaN: no answer, below
        normalised = logprobs - np.logaddexp.reduce(logprobs, axis=1, keepdims=True)
    decisions = []
    for request, prompt, row in zip(requests, prompts, normalised):
        if not np.isfinite(row).any():
            # no label among what the model's output showed (an endpoint's top log-probs): no answer
            decisions.append(Decision(request.id, None, {}, prompt_tokens=len(prompt)))
            continue
        best = int(np.argmax(row))
        decisions.append(Decision(request.id, labels[best], dict(zip(labels, map(float, row))), prompt_tokens=len(prompt)))
    return decisions


def choose_by_generation(
    backend: Backend, requests: list[ChoiceRequest], max_new_tokens: int, parse: Callable[[str], str | None],
    progress: Progress | None = None,
) -> list[Decision]:
    """Greedy generation, then the suite's parser; an unparsable answer is None (wrong)."""
    prompts = [backend.render(r.messages) for r in requests]
    texts = backend.generate(prompts, max_new_tokens, progress)
    return [Decision(r.id, parse(text), raw=text, prompt_tokens=len(p)) for r, text, p in zip(requests, texts, prompts)]


def choose_by_reward(backend: Backend, requests: list[ChoiceRequest], progress: Progress | None = None) -> list[Decision]:
    """A reward model scores each candidate response after the user turn; the strict best wins (a tie is no answer)."""
    flat, owners = [], []
    for index, request in enumerate(requests):
        for label in request.labels:
            conversation = [*request.messages, {"role": "assistant", "content": request.responses[label]}]
            flat.append(backend.render(conversation, add_generation_prompt=False))
            owners.append((index, label))
    scores = backend.reward_scores(flat, progress)
    per_request: list[dict[str, float]] = [{} for _ in requests]
    for (index, label), score in zip(owners, scores):
        per_request[index][label] = float(score)
    decisions = []
    for request, by_label in zip(requests, per_request):
        best = max(by_label.values())
        winners = [label for label, score in by_label.items() if score == best]
        decisions.append(Decision(request.id, winners[0] if len(winners) == 1 else None, by_label))
    return decisions


def pairwise_both_orders(backend: Backend, first: list[ChoiceRequest], swapped: list[ChoiceRequest],
                         progress: Progress | None = None) -> list[tuple[Decision, Decision]]:
    """Pairwise judging in both orders (position bias cancels): each pair is (A/B order, B/A order)."""
    decided = choose_by_logprobs(backend, first + swapped, progress)
    return list(zip(decided[: len(first)], decided[len(first):]))


def expected_rating(decision: Decision) -> float:
    """Mean of a 1-5 (or any numeric-label) rating under the model's distribution over the labels."""
    if not decision.scores:
        return float("nan")  # no label was readable (an endpoint's top log-probs held none): not scored
    weights = np.exp(np.array(list(decision.scores.values())))
    values = np.array([float(label) for label in decision.scores])
    return float((weights * values).sum() / weights.sum())


LOGPROB_PROTOCOLS = ("choice_logprobs", "pairwise_logprobs", "rating_logprobs")


def default_protocol(task, model_type: str, logprobs: bool = True) -> str | None:
    """The protocol a model runs with when the submitter names none: `reward` for a reward model;
    else the task's default, except that a model whose log-probabilities cannot be read (an
    endpoint that returns none) generates and is parsed when the task allows it."""
    if model_type == "reward":
        return "reward"
    chosen = task.model.get("default_protocol")
    if not logprobs and chosen in LOGPROB_PROTOCOLS and "generate_parse" in task.model_protocols:
        return "generate_parse"
    return chosen


CHOICE_TAG = re.compile(r"<choice>\s*([A-Z])", re.IGNORECASE)


def parse_choice_tag(text: str, labels: tuple[str, ...] = ("A", "B", "C", "D"), prefilled: bool = False) -> str | None:
    """PrefEval's answer format: `<choice>X</choice>`; with a prefilled `<choice>` the text starts at X."""
    match = CHOICE_TAG.search(("<choice>" if prefilled else "") + text)
    if match and match.group(1).upper() in labels:
        return match.group(1).upper()
    return None
