"""Endpoint registry (no secret stored), label log-probs from top tokens, request pacing.

The backend against a real OpenAI-compatible server is tests/test_endpoint_server.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from evaluator.backends.openai_endpoint import RequestPacer, label_logprobs
from evaluator.endpoints import EndpointConfig, EndpointError, EndpointRegistry
from evaluator.models import ModelError, ModelRegistry, resolve_model
from evaluator.protocols import default_protocol


def test_label_logprobs_merge_spellings_and_missing_labels():
    top = [
        {"token": " A", "logprob": -1.0},
        {"token": "A", "logprob": -2.0},
        {"token": "B", "logprob": -0.5},
        {"token": "Sure", "logprob": -0.1},
    ]
    a, b, c = label_logprobs(top, ["A", "B", "C"])
    assert a == pytest.approx(math.log(math.exp(-1.0) + math.exp(-2.0)))
    assert b == -0.5 and c == -math.inf


def test_pacer_spaces_request_starts():
    now = [100.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    pacer = RequestPacer(
        requests_per_minute=120, clock=lambda: now[0], sleep=sleep
    )  # one every 0.5 s
    for _ in range(3):
        pacer.wait()
    assert slept == pytest.approx([0.5, 0.5])


def test_registry_keeps_the_key_name_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PB_TEST_ENDPOINT_KEY", "sk-very-secret")
    registry = EndpointRegistry(tmp_path)
    registry.add(
        EndpointConfig(
            name="hosted",
            base_url="http://127.0.0.1:9/v1",
            model="m-1",
            api_key_env="PB_TEST_ENDPOINT_KEY",
            price_input_per_million=2.0,
        )
    )
    stored = (tmp_path / "endpoints.json").read_text()
    assert "sk-very-secret" not in stored and "PB_TEST_ENDPOINT_KEY" in stored
    assert registry.get("hosted").api_key() == "sk-very-secret"
    monkeypatch.delenv("PB_TEST_ENDPOINT_KEY")
    with pytest.raises(EndpointError, match="PB_TEST_ENDPOINT_KEY"):
        registry.get("hosted").api_key()
    with pytest.raises(EndpointError, match="credentials"):
        registry.add(EndpointConfig(name="x", base_url="http://user:pw@host/v1", model="m"))
    with pytest.raises(EndpointError, match="environment variable"):
        registry.add(
            EndpointConfig(name="x", base_url="http://host/v1", model="m", api_key_env="sk-abc")
        )


def test_endpoint_resolves_as_a_generative_model_without_logprob_protocols(tmp_path):
    EndpointRegistry(tmp_path).add(
        EndpointConfig(name="plain", base_url="http://127.0.0.1:9/v1", model="m-2", logprobs=False)
    )
    resolved = resolve_model("plain", None, "auto", ModelRegistry(tmp_path))
    assert (resolved.source, resolved.revision, resolved.model_type) == (
        "endpoint",
        "endpoint:m-2",
        "generative",
    )
    assert resolved.extra == {"served_model": "m-2", "logprobs": False}
    assert "base_url" not in json.dumps(resolved.as_dict()) and "127.0.0.1" not in json.dumps(
        resolved.as_dict()
    )
    with pytest.raises(ModelError, match="generative"):
        resolve_model("plain", None, "reward", ModelRegistry(tmp_path))


class _Task:
    model = {"default_protocol": "choice_logprobs"}
    model_protocols = ["choice_logprobs", "generate_parse"]


def test_default_protocol_falls_back_to_generation_without_logprobs():
    assert default_protocol(_Task, "generative") == "choice_logprobs"
    assert default_protocol(_Task, "generative", logprobs=False) == "generate_parse"
    assert default_protocol(_Task, "reward") == "reward"


def test_a_request_with_no_readable_label_gets_no_answer():
    from evaluator.protocols import ChoiceRequest, choose_by_logprobs

    class Fake:
        def token_id(self, label):
            return label

        def render(self, messages):
            return messages

        def choice_logprobs(self, prompts, ids, progress=None):
            return np.array([[-1.0, -math.inf], [-math.inf, -math.inf]])

    requests = [
        ChoiceRequest("a", [{"role": "user", "content": "x"}], ("A", "B")),
        ChoiceRequest("b", [{"role": "user", "content": "y"}], ("A", "B")),
    ]
    first, second = choose_by_logprobs(Fake(), requests)
    assert first.answer == "A" and second.answer is None


def _api_error(status: int, body: dict):
    """The exception the openai client raises for an error reply (built from a real httpx response)."""
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    response = httpx.Response(status, json=body, request=request)
    return openai.OpenAI(
        api_key="x", base_url="http://127.0.0.1:1/v1"
    )._make_status_error_from_response(response)


def test_context_length_refusals_are_told_apart_from_other_errors():
    from evaluator.backends.openai_endpoint import is_context_length_error

    over = [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 2048 tokens. However, you requested 3519 tokens",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),  # OpenAI, llama-cpp-python
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            },
        ),  # llama.cpp's own server
        (
            400,
            {
                "object": "error",
                "message": "This model's maximum context length is 8192 tokens. However, you "
                "requested 9000 tokens (8990 in the messages, 10 in the completion).",
                "code": 400,
            },
        ),  # vLLM
    ]
    for status, body in over:
        assert is_context_length_error(_api_error(status, body)), body
    for status, body in [
        (400, {"error": {"message": "model 'x' not found", "code": "model_not_found"}}),
        (
            500,
            {"error": {"message": "maximum context length is 2048 tokens"}},
        ),  # a crash: retried, fails
        (401, {"error": {"message": "invalid api key"}}),
    ]:
        assert not is_context_length_error(_api_error(status, body)), body


def test_an_over_the_window_prompt_is_not_applicable_not_a_wrong_answer():
    from evaluator.protocols import ChoiceRequest, choose_by_generation, choose_by_logprobs

    class Fake:
        marks_refused_prompts = True  # as EndpointBackend

        def token_id(self, label):
            return label

        def render(self, messages):
            return messages

        def choice_logprobs(self, prompts, ids, progress=None):
            return np.array(
                [[math.nan, math.nan], [-math.inf, -math.inf]]
            )  # refused; no label readable

        def generate(self, prompts, max_new_tokens, progress=None):
            return [None, "B"]

    requests = [
        ChoiceRequest("a", [{"role": "user", "content": "x"}], ("A", "B")),
        ChoiceRequest("b", [{"role": "user", "content": "y"}], ("A", "B")),
    ]
    refused, unreadable = choose_by_logprobs(Fake(), requests)
    assert refused.not_applicable and refused.answer is None
    assert not unreadable.not_applicable and unreadable.answer is None  # wrong, not n/a
    refused, answered = choose_by_generation(Fake(), requests, 4, lambda text: text.strip() or None)
    assert refused.not_applicable and not answered.not_applicable and answered.answer == "B"

    class Broken(Fake):  # a local model whose log-probs are NaN is broken: wrong, not silently n/a
        marks_refused_prompts = False

    broken, _ = choose_by_logprobs(Broken(), requests)
    assert not broken.not_applicable and broken.answer is None
