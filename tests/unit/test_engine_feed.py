"""The warm engine pool and the engine feed, against an object shaped like vllm.LLM (it counts its
calls and keeps what each held) and against the tiny transformers model.

- a second job for the same model and revision reuses the engine (one LLM built), another revision
  or a full memory budget gets a new one;
- a run submits big chunks, the next chunk's first-reply generation riding in the same
  llm.generate as this chunk's scoring (PrefEval's explicit form), one call per chunk plus one;
- answers and log-probabilities equal the plain path (hooks + protocol straight on the backend).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.backends import ModelSpec, load_backend  # noqa: E402
from evaluator.backends.pool import EnginePool  # noqa: E402
from evaluator.backends.vllm_backend import VLLMBackend  # noqa: E402
from evaluator.model_eval import Checkpoint, ModelTools, _FedBackend, run_model, select_items  # noqa: E402
from evaluator.protocols import choose_by_logprobs  # noqa: E402
from evaluator.registry import get_task  # noqa: E402

GiB = 2**30


class RecordingLLM:
    """Shaped like vllm.LLM. Log-probs are a fixed function of the prompt's token ids (so any
    batching must give the same numbers); generation returns a fixed reply. Every call is kept."""

    built = 0

    def __init__(self, tokenizer, reserved_memory_bytes: int = 10 * GiB):
        RecordingLLM.built += 1
        self.tokenizer, self.reserved_memory_bytes = tokenizer, reserved_memory_bytes
        self.calls: list[
            list[tuple[tuple[int, ...], int]]
        ] = []  # per call: (prompt ids, max_tokens) per request

    def get_tokenizer(self):
        return self.tokenizer

    def generate(self, prompts, params, use_tqdm=True):
        per_prompt = params if isinstance(params, list) else [params] * len(prompts)
        assert len(per_prompt) == len(prompts)
        ids = [
            tuple(p["prompt_token_ids"] if isinstance(p, dict) else p.prompt_token_ids)
            for p in prompts
        ]
        self.calls.append([(i, sp.max_tokens) for i, sp in zip(ids, per_prompt)])
        outputs = []
        for key, sp in zip(ids, per_prompt):
            wanted = getattr(sp, "logprob_token_ids", None) or []
            step = {
                t: SimpleNamespace(logprob=-0.1 - ((hash(key) + 7 * t) % 97) / 10) for t in wanted
            }
            outputs.append(
                SimpleNamespace(outputs=[SimpleNamespace(logprobs=[step], text="Sure, noted.")])
            )
        return outputs


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "gen", "generative", seed=5)


@pytest.fixture(scope="module")
def tokenizer(tiny_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_folder)


@pytest.fixture
def pool(tokenizer):
    def loader(spec, backend, **options):
        assert backend == "vllm"
        return VLLMBackend(
            spec,
            llm=RecordingLLM(tokenizer, reserved_memory_bytes=spec.extra.get("reserve", 10 * GiB)),
        )

    return EnginePool(budget_bytes=24 * GiB, loader=loader)


@pytest.fixture(scope="module")
def task():
    return get_task("prefeval", "mcq")


def plain_answers(backend, task, items, setting="zero_shot"):
    """The plain path: the suite's hooks and the protocol straight on the backend, all at once."""
    requests = task.hooks.build_requests(
        task, [i.public for i in items], setting, ModelTools(backend, "choice_logprobs")
    )
    return {d.id: d for d in choose_by_logprobs(backend, requests)}


def test_a_second_job_for_the_same_model_reuses_the_engine(pool, task, tmp_path):
    spec = ModelSpec("org/model", "/models/org-model", "generative", revision="abc123")
    built = RecordingLLM.built
    first, warm_first = pool.acquire(spec, "vllm")
    run_model(task, "zero_shot", first, limit=6, checkpoint=Checkpoint(tmp_path / "job1.jsonl"))
    second, warm_second = pool.acquire(spec, "vllm")
    run_model(task, "zero_shot", second, limit=6, checkpoint=Checkpoint(tmp_path / "job2.jsonl"))
    assert (warm_first, warm_second) == (False, True)
    assert (
        second is first and RecordingLLM.built == built + 1
    )  # one engine: its prefix cache with it
    assert len(first.llm.calls) >= 2  # both jobs ran on it
    other, warm_other = pool.acquire(
        ModelSpec("org/model", "/models/org-model", "generative", revision="def456"), "vllm"
    )
    assert other is not first and warm_other is False and RecordingLLM.built == built + 2
    assert len(pool.loaded()) == 2


def test_engines_are_evicted_by_memory(pool):
    a = ModelSpec("a", "/m/a", "generative", extra={"reserve": 20 * GiB})
    b = ModelSpec("b", "/m/b", "generative", extra={"reserve": 20 * GiB})
    pool.acquire(a, "vllm")
    pool.acquire(b, "vllm")  # 20 + 20 GiB > 24 GiB: a goes
    assert [key[1] for key in pool.loaded()] == ["b"]
    _, warm = pool.acquire(a, "vllm")
    assert warm is False and [key[1] for key in pool.loaded()] == ["a"]


def test_first_replies_ride_with_the_previous_chunks_scoring(tokenizer, task):
    backend = VLLMBackend(ModelSpec("m", "/m", "generative"), llm=RecordingLLM(tokenizer))
    llm = backend.llm
    # the feed of scoring (max_tokens 1) and first replies belongs to choice_logprobs, which is no
    # longer mcq's default (the official generate-and-parse is): name it
    run = run_model(task, "zero_shot", backend, protocol="choice_logprobs", limit=30, batch_items=4)
    items = (
        run.split.items
    )  # explicit items first (split order): chunks 1-3 hold the 10 explicit ones
    chunks = [items[i : i + 4] for i in range(0, 30, 4)]
    explicit = [sum(1 for i in c if i.tiers["form"] == "explicit") for c in chunks] + [0]
    assert explicit[:4] == [4, 4, 2, 0]
    # call 1 = chunk 1's first replies; then ONE llm.generate per chunk: its scoring (max_tokens 1)
    # plus the next chunk's first replies (max_tokens 5). Not a separate small call per chunk.
    assert len(llm.calls) == 1 + len(chunks)
    assert [n for _, n in llm.calls[0]] == [5] * explicit[0]
    for k, chunk in enumerate(chunks):
        held = [n for _, n in llm.calls[k + 1]]
        assert held.count(1) == len(chunk) and held.count(5) == explicit[k + 1], (k, held)
    # exactness: the same decisions as the plain path
    plain_backend = VLLMBackend(ModelSpec("m", "/m", "generative"), llm=RecordingLLM(tokenizer))
    plain = plain_answers(plain_backend, task, items)
    assert run.answers == {i: d.answer for i, d in plain.items()}


def test_fed_run_equals_the_plain_path_on_transformers(tiny_folder, task, tmp_path):
    backend = load_backend(ModelSpec("tiny", str(tiny_folder), "generative"), device="cpu")
    seen = []

    def keep(report):
        if not report.get(
            "in_flight"
        ):  # chunk ends (reports inside a chunk come from the engine thread)
            seen.append(report["done"])

    run = run_model(
        task,
        "zero_shot",
        backend,
        protocol="choice_logprobs",
        limit=9,
        batch_items=3,
        on_progress=keep,
        checkpoint=Checkpoint(tmp_path / "ck.jsonl"),
    )
    plain = plain_answers(backend, task, select_items(task.load_split(), 9).items)
    assert run.answers == {i: d.answer for i, d in plain.items()}
    assert seen == [3, 6, 9]  # progress from the writer thread, in order
    recorded = Checkpoint(tmp_path / "ck.jsonl").load()
    assert set(recorded) == set(plain)
    # log-probabilities: the fed path's scores equal the plain path's within 1e-4
    items = select_items(task.load_split(), 9).items
    requests = task.hooks.build_requests(
        task, [i.public for i in items], "zero_shot", ModelTools(backend, "choice_logprobs")
    )
    rendered = {id(r.messages): backend.render(r.messages) for r in requests}
    fed = {d.id: d for d in choose_by_logprobs(_FedBackend(backend, rendered, []), requests)}
    for item_id, decision in plain.items():
        np.testing.assert_allclose(
            list(fed[item_id].scores.values()), list(decision.scores.values()), atol=1e-4
        )


def test_progress_reports_are_delivered_in_order_on_one_thread(
    tiny_folder, task, tmp_path, monkeypatch
):
    """Reports inside a chunk (between the backend's batches, made on the engine thread) and chunk
    ends (after the checkpoint append) all reach on_progress through the writer's queue, in the
    order they were made: progress never goes backwards."""
    import threading

    from evaluator import model_eval

    monkeypatch.setattr(model_eval, "PROGRESS_EVERY_S", 0.0)  # report after every backend batch
    # one prompt per forward batch: many reports inside each chunk
    backend = load_backend(
        ModelSpec("tiny", str(tiny_folder), "generative"), device="cpu", max_batch_tokens=1
    )
    seen = []
    run_model(
        task,
        "zero_shot",
        backend,
        limit=12,
        batch_items=4,
        checkpoint=Checkpoint(tmp_path / "ck.jsonl"),
        on_progress=lambda r: seen.append(
            (threading.current_thread().name, r["done"], r["in_flight"])
        ),
    )
    assert {name for name, _, _ in seen} == {"checkpoint-writer"}
    assert any(in_flight for _, _, in_flight in seen)  # reports inside chunks were made
    done = [d for _, d, _ in seen]
    assert done == sorted(done), done  # monotone
    assert [d for _, d, in_flight in seen if not in_flight] == [4, 8, 12]
    assert all(d < 12 for _, d, in_flight in seen if in_flight)  # never ahead of what is written
