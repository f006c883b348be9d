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
    top = [{"token": " A", "logprob": -1.0}, {"token": "A", "logprob": -2.0}, {"token": "B", "logprob": -0.5},
           {"token": "Sure", "logprob": -0.1}]
    a, b, c = label_logprobs(top, ["A", "B", "C"])
    assert a == pytest.approx(math.log(math.exp(-1.0) + math.exp(-2.0)))
    assert b == -0.5 and c == -math.inf


def test_pacer_spaces_request_starts():
    now = [100.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    pacer = RequestPacer(requests_per_minute=120, clock=lambda: now[0], sleep=sleep)  # one every 0.5 s
    for _ in range(3):
        pacer.wait()
    assert slept == pytest.approx([0.5, 0.5])


def test_registry_keeps_the_key_name_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PB_TEST_ENDPOINT_KEY", "sk-very-secret")
    registry = EndpointRegistry(tmp_path)
    registry.add(EndpointConfig(name="hosted", base_url="http://127.0.0.1:9/v1", model="m-1",
                                api_key_env="PB_TEST_ENDPOINT_KEY", price_input_per_million=2.0))
    stored = (tmp_path / "endpoints.json").read_text()
    assert "sk-very-secret" not in stored and "PB_TEST_ENDPOINT_KEY" in stored
    assert registry.get("hosted").api_key() == "sk-very-secret"
    monkeypatch.delenv("PB_TEST_ENDPOINT_KEY")
    with pytest.raises(EndpointError, match="PB_TEST_ENDPOINT_KEY"):
        registry.get("hosted").api_key()
    with pytest.raises(EndpointError, match="credentials"):
        registry.add(EndpointConfig(name="x", base_url="http://user:pw@host/v1", model="m"))
    with pytest.raises(EndpointError, match="environment variable"):
        registry.add(EndpointConfig(name="x", base_url="http://host/v1", model="m", api_key_env="sk-abc"))


def test_endpoint_resolves_as_a_generative_model_without_logprob_protocols(tmp_path):
    EndpointRegistry(tmp_path).add(EndpointConfig(name="plain", base_url="http://127.0.0.1:9/v1", model="m-2",
                                                  logprobs=False))
    resolved = resolve_model("plain", None, "auto", ModelRegistry(tmp_path))
    assert (resolved.source, resolved.revision, resolved.model_type) == ("endpoint", "endpoint:m-2", "generative")
    assert resolved.extra == {"served_model": "m-2", "logprobs": False}
    assert "base_url" not in json.dumps(resolved.as_dict()) and "127.0.0.1" not in json.dumps(resolved.as_dict())
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

    requests = [ChoiceRequest("a", [{"role": "user", "content": "x"}], ("A", "B")),
                ChoiceRequest("b", [{"role": "user", "content": "y"}], ("A", "B"))]
    first, second = choose_by_logprobs(Fake(), requests)
    assert first.answer == "A" and second.answer is None
