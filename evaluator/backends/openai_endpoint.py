"""A model behind an OpenAI-compatible chat endpoint, as a backend the protocols can use.

The endpoint applies its own chat template, so a "rendered prompt" here is the message list
itself and a choice "token" is the label text. The primitives:
- choice_logprobs: one completion of one token with top log-probabilities; a label's log-prob is
  the log-sum of the top tokens that are that label once stripped (" A" and "A" are both A); a
  label outside the top ones is -inf, and a request where no label is among them gets no answer.
- generate: greedy (temperature 0) completion of at most max_new_tokens tokens.
Requests go out in parallel up to the endpoint's max_concurrency, no faster than its
requests_per_minute; the client library (openai) retries 429/5xx/connection errors with
exponential backoff, honouring Retry-After. Token counts come from the endpoint's `usage` and,
with the registered prices, give the cost recorded on the row.

A prompt the server refuses as longer than its context window (a context-length error) is not a
failed run: that prompt's result is a marker (a row of NaN log-probs, a None text) and run_model
makes its item n/a, as fit_model does for a window known in advance. Never truncated.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from evaluator.backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    Messages,
    ModelSpec,
    Progress,
)
from evaluator.endpoints import EndpointConfig

log = logging.getLogger(__name__)

TOP_LOGPROBS = 20  # the most the OpenAI API returns
# How servers say a prompt is over the window: OpenAI and llama-cpp-python's server answer 400 with
# code context_length_exceeded, llama.cpp's own server exceed_context_size_error, vLLM 400 "This
# model's maximum context length is N tokens", Anthropic's compatible API "prompt is too long".
CONTEXT_LENGTH_CODES = {"context_length_exceeded", "exceed_context_size_error"}
CONTEXT_LENGTH_WORDS = re.compile(
    r"context[ _](length|window|size)|maximum context|prompt is too long|too many tokens", re.I
)


class PromptTooLong(BackendError):
    """The endpoint refused a prompt as longer than its context window."""


def is_context_length_error(exc: Exception) -> bool:
    if getattr(exc, "status_code", None) not in (400, 413, 422):
        return False
    body = getattr(exc, "body", None)
    code = getattr(exc, "code", None) or (body.get("code") if isinstance(body, dict) else None)
    return code in CONTEXT_LENGTH_CODES or bool(CONTEXT_LENGTH_WORDS.search(str(exc)))


class RequestPacer:
    """Spaces request starts at least 60 / requests_per_minute seconds apart (thread-safe)."""

    def __init__(
        self,
        requests_per_minute: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.interval = 60.0 / requests_per_minute
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            self._sleep(start - now)


class EndpointBackend(Backend):
    name = "openai-endpoint"
    chat_only = True  # the server renders the chat template: no prefill (evaluator/protocols.py)
    marks_refused_prompts = (
        True  # NaN log-prob rows / None texts: prompts the server refused as over its window
    )

    def __init__(self, config: EndpointConfig, client=None):
        from openai import OpenAI

        self.config = config
        self.spec = ModelSpec(config.name, "", "generative", revision=f"endpoint:{config.model}")
        self.tokenizer = None
        self.client = client or OpenAI(
            base_url=config.base_url,
            api_key=config.api_key(),
            max_retries=config.max_retries,
            timeout=config.timeout_s,
        )
        self.pacer = RequestPacer(config.requests_per_minute)
        self._usage_lock = threading.Lock()
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self.served_models: set[str] = set()
        self.fingerprints: set[str] = set()
        self.refused_too_long = (
            0  # prompts the server refused as over its window (their items are n/a)
        )
        self.refusal_message = ""  # the server's own words, once (for the row's provenance)

    # -- prompts: the endpoint renders its own chat template ---------------------------------
    def render(
        self, messages: Messages, add_generation_prompt: bool = True
    ) -> list[dict[str, str]]:
        if not add_generation_prompt:
            raise BackendError(
                "an OpenAI-compatible endpoint only continues a chat; it cannot score a finished one"
            )
        if messages and messages[-1].get("role") == "assistant":
            # A prefill (generate_parse_prefill) must start the assistant's turn inside the rendered
            # template. The chat route renders the template itself, and a trailing assistant
            # message is not a standard way to ask it to continue one (servers close it, reject it
            # or ignore it); this backend has no completions route with the template rendered here.
            raise BackendError(
                f"endpoint {self.config.name!r} is a chat endpoint: it cannot start the model's answer "
                f"with a prefill ({messages[-1]['content']!r}), so generate_parse_prefill cannot run on "
                "it; use generate_parse (upstream's unprefilled path)"
            )
        return [dict(m) for m in messages]

    def token_id(self, text: str) -> str:  # type: ignore[override]
        return text  # labels are matched by their text in the endpoint's top log-probs

    def decode(self, token_ids) -> str:
        raise BackendError("an OpenAI-compatible endpoint returns text, not token ids")

    @property
    def supports_logprobs(self) -> bool:
        return self.config.logprobs

    def context_window(self) -> int | None:
        return self.config.context_window

    # -- calls ----------------------------------------------------------------------------------
    def _complete(self, messages: list[Any], **options: Any):
        from openai import APIError

        self.pacer.wait()
        try:
            response = self.client.chat.completions.create(
                model=self.config.model, messages=messages, temperature=0, **options
            )
        except APIError as exc:
            # the library's message names the status and the server's words; never the key
            if is_context_length_error(exc):
                with self._usage_lock:
                    self.refused_too_long += 1
                    self.refusal_message = self.refusal_message or str(exc)[:300]
                raise PromptTooLong(
                    f"endpoint {self.config.name!r} refused a prompt as longer than its context window: "
                    f"{str(exc)[:300]}"
                ) from None
            raise BackendError(
                f"endpoint {self.config.name!r} failed after {self.config.max_retries} retries: "
                f"{type(exc).__name__}: {str(exc)[:300]}"
            ) from None
        usage = getattr(response, "usage", None)
        with self._usage_lock:
            self.usage["requests"] += 1
            if usage is not None:
                self.usage["prompt_tokens"] += int(usage.prompt_tokens or 0)
                self.usage["completion_tokens"] += int(usage.completion_tokens or 0)
            if getattr(response, "model", None):
                self.served_models.add(response.model)
            if fingerprint := getattr(response, "system_fingerprint", None):
                self.fingerprints.add(fingerprint)
        return response

    def _map(self, function, prompts: list, progress: Progress | None) -> list:
        results: list = [None] * len(prompts)

        def run(index: int) -> None:
            results[index] = function(prompts[index])
            if progress:
                progress(1, 0)

        with ThreadPoolExecutor(max_workers=self.config.max_concurrency) as pool:
            list(pool.map(run, range(len(prompts))))
        return results

    def choice_logprobs(
        self, prompts: list, choice_ids: list, progress: Progress | None = None
    ) -> np.ndarray:
        if not self.config.logprobs:
            raise BackendError(
                f"endpoint {self.config.name!r} does not return log-probabilities; "
                "run it with generate_parse"
            )
        labels = [str(label) for label in choice_ids]

        def one(messages) -> list[float]:
            try:
                response = self._complete(
                    messages, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS
                )
            except PromptTooLong:
                return [math.nan] * len(
                    labels
                )  # n/a (not -inf: that is "no label among the top tokens")
            content = (
                getattr(response.choices[0].logprobs, "content", None)
                if response.choices[0].logprobs
                else None
            )
            if not content:
                raise BackendError(
                    f"endpoint {self.config.name!r} returned no log-probabilities although "
                    "registered with logprobs; register it with --no-logprobs"
                )
            return label_logprobs(content[0].top_logprobs, labels)

        return np.array(self._map(one, prompts, progress), dtype=float).reshape(
            len(prompts), len(labels)
        )

    def generate(
        self, prompts: list, max_new_tokens: int, progress: Progress | None = None
    ) -> list[str | None]:
        def one(messages) -> str | None:
            try:
                response = self._complete(messages, max_tokens=max_new_tokens)
            except PromptTooLong:
                return None  # n/a: over the window
            return response.choices[0].message.content or ""

        return self._map(one, prompts, progress)

    def reward_scores(self, prompts, progress: Progress | None = None) -> np.ndarray:
        raise BackendError("an OpenAI-compatible chat endpoint is not a reward model")

    def cost_usd(self) -> float:
        return (
            self.usage["prompt_tokens"] * self.config.price_input_per_million
            + self.usage["completion_tokens"] * self.config.price_output_per_million
        ) / 1e6

    def describe(self) -> BackendDescription:
        described: BackendDescription = {
            "backend": self.name,
            "model": self.config.name,
            "revision": self.spec.revision,
            **self.config.public(),
            "served_model_ids": sorted(self.served_models),
            "system_fingerprints": sorted(self.fingerprints),
            "endpoint_usage": {
                **self.usage,
                "cost_usd": round(self.cost_usd(), 6),
                "prices_per_million": [
                    self.config.price_input_per_million,
                    self.config.price_output_per_million,
                ],
            },
        }
        if self.refused_too_long:
            described["prompts_refused_too_long"] = self.refused_too_long
            described["refusal"] = self.refusal_message
        return described


def label_logprobs(top_logprobs, labels: list[str]) -> list[float]:
    """Each label's log-probability from one position's top tokens (objects or dicts with token, logprob)."""
    found: dict[str, float] = {label: -math.inf for label in labels}
    for candidate in top_logprobs or []:
        token = candidate["token"] if isinstance(candidate, dict) else candidate.token
        value = candidate["logprob"] if isinstance(candidate, dict) else candidate.logprob
        text = (token or "").strip()
        if text in found and value is not None:
            found[text] = float(np.logaddexp(found[text], value))
    return [found[label] for label in labels]
