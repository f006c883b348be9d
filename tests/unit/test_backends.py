"""The transformers backend against plain, unbatched transformers calls on tiny random models,
and the vLLM adapter against objects shaped like vLLM's outputs.

Every primitive must give what a plain forward pass / plain greedy generation gives: batching,
padding and prefix reuse are speed only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.backends import BackendError, ModelSpec, load_backend  # noqa: E402
from evaluator.backends.hf_transformers import (
    MAX_PADDING_SHARE,
    group_by_shared_prefix,
    length_batches,
)  # noqa: E402
from evaluator.backends.vllm_backend import VLLMBackend  # noqa: E402

CHOICES = ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "generative": build_tiny_model(root / "gen", "generative", seed=1),
        "reward": build_tiny_model(root / "rew", "reward", seed=2),
    }


@pytest.fixture(scope="module")
def gen(folders):
    return load_backend(
        ModelSpec("tiny-gen", str(folders["generative"]), "generative"), device="cpu"
    )


@pytest.fixture(scope="module")
def rew(folders):
    return load_backend(ModelSpec("tiny-rew", str(folders["reward"]), "reward"), device="cpu")


def random_ids(rng: np.random.Generator, n: int, vocab: int) -> list[int]:
    return [int(x) for x in rng.integers(3, vocab, size=n)]  # 0-2 are the special tokens


@pytest.fixture(scope="module")
def prompts(gen):
    """Two groups sharing a 100+ token prefix (members of different lengths), plus unrelated prompts."""
    vocab = gen.model.config.vocab_size
    rng = np.random.default_rng(7)
    shared_a = random_ids(rng, 130, vocab)
    shared_b = random_ids(rng, 105, vocab)
    out = [shared_a + random_ids(rng, n, vocab) for n in (1, 3, 17, 40, 9)]
    out += [shared_b + random_ids(rng, n, vocab) for n in (2, 25, 60)]
    out += [random_ids(rng, n, vocab) for n in (5, 33, 120, 77, 1)]
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def reference_logprobs(model, prompt: list[int], ids: list[int]) -> np.ndarray:
    with torch.inference_mode():
        logits = model(torch.tensor([prompt])).logits[0, -1].float()
    return logits.log_softmax(-1)[ids].numpy()


# -- prefix grouping and batching ------------------------------------------------------------------


def test_group_by_shared_prefix_covers_each_index_once_with_short_prefixes(prompts):
    groups = group_by_shared_prefix(prompts)
    members = sorted(i for g in groups for i in g.members)
    assert members == list(range(len(prompts)))
    with_prefix = [g for g in groups if g.prefix]
    assert len(with_prefix) == 2  # the two shared-prefix families
    assert sorted(len(g.members) for g in with_prefix) == [3, 5]
    for group in with_prefix:
        assert len(group.prefix) >= 100
        for i in group.members:
            assert prompts[i][: len(group.prefix)] == group.prefix
            assert len(group.prefix) < len(prompts[i])  # every member keeps a token of its own


def test_group_by_shared_prefix_single_and_unrelated_prompts():
    assert [g.members for g in group_by_shared_prefix([[1, 2, 3]])] == [[0]]
    groups = group_by_shared_prefix([[5] * 60, [5] * 60 + [6], [7] * 10])
    assert sorted(i for g in groups for i in g.members) == [0, 1, 2]
    grouped = next(g for g in groups if g.prefix)
    assert (
        sorted(grouped.members) == [0, 1] and len(grouped.prefix) == 59
    )  # one short of the shortest


@pytest.mark.parametrize("budget,size", [(100, 64), (64, 3), (10_000, 2), (1, 64)])
def test_length_batches_respects_budget_and_covers_each_index_once(budget, size):
    lengths = [5, 50, 3, 20, 20, 7, 64, 1, 33, 12]
    indices = [0, 2, 3, 4, 6, 7, 9]
    batches = length_batches(indices, lengths, budget, size)
    assert sorted(i for b in batches for i in b) == sorted(indices)
    for batch in batches:
        assert len(batch) <= size
        if len(batch) > 1:  # a single prompt longer than the budget still runs, alone
            assert max(lengths[i] for i in batch) * len(batch) <= budget


@pytest.mark.parametrize("cap", [0.0, 0.05, 0.3])
def test_length_batches_cap_their_padding(cap):
    lengths = [282, 300, 310, 355, 420, 431, 560, 700, 702, 705, 900, 1248, 1250, 40, 41, 2000]
    batches = length_batches(list(range(len(lengths))), lengths, 100_000, 64, max_padding=cap)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        padded = max(lengths[i] for i in batch) * len(batch)
        assert padded - sum(lengths[i] for i in batch) <= cap * padded, (
            cap,
            [lengths[i] for i in batch],
        )
    # the cap splits only where it must: equal lengths still share a batch under a zero cap
    assert length_batches([0, 1, 2], [7, 7, 7], 100, 64, max_padding=0.0) == [[0, 1, 2]]
    # without a cap (the old rule) these lengths pad far beyond 5 % in one batch
    loose = length_batches(list(range(len(lengths))), lengths, 100_000, 64)
    assert len(loose) == 1


def test_transformers_backend_runs_capped_batches_on_cpu(folders, prompts):
    backend = load_backend(
        ModelSpec("tiny-gen", str(folders["generative"]), "generative"),
        device="cpu",
        reuse_prefix=False,
    )
    assert backend.max_padding == MAX_PADDING_SHARE["cpu"] <= 0.05
    lengths = [len(p) for p in prompts]
    ran = []  # (prompts, real tokens) per forward batch, as the backend reports them
    backend.choice_logprobs(
        prompts, [backend.token_id(c) for c in CHOICES], progress=lambda n, t: ran.append((n, t))
    )
    order = sorted(lengths)
    start = 0
    for (
        n,
        real,
    ) in ran:  # batches run in ascending length order: rebuild each from the sorted lengths
        batch = order[start : start + n]
        start += n
        assert sum(batch) == real
        assert max(batch) * n - real <= 0.05 * max(batch) * n, batch
    assert start == len(prompts)
    uncapped = length_batches(
        list(range(len(prompts))), lengths, backend.max_batch_tokens, backend.max_batch_size
    )
    assert len(ran) > len(uncapped)  # the cap is what split them


def test_generation_batches_are_not_split_by_the_padding_cap(gen):
    """Decode steps read all the weights whatever the batch: splitting a generation batch to save
    padding costs more than the padding (see TransformersBackend.generate)."""
    vocab = gen.model.config.vocab_size
    rng = np.random.default_rng(3)
    prompts = [
        random_ids(rng, n, vocab) for n in (5, 9, 14, 30)
    ]  # far more than 5 % padding together
    batches = []
    gen.generate(prompts, 3, progress=lambda n, t: batches.append(n))
    assert batches == [4]


# -- choice log-probabilities ----------------------------------------------------------------------


@pytest.mark.parametrize("reuse_prefix", [True, False])
@pytest.mark.parametrize("max_batch_tokens", [4096, 150])
def test_choice_logprobs_equal_plain_forward_pass(folders, prompts, reuse_prefix, max_batch_tokens):
    backend = load_backend(
        ModelSpec("tiny-gen", str(folders["generative"]), "generative"),
        device="cpu",
        reuse_prefix=reuse_prefix,
        max_batch_tokens=max_batch_tokens,
    )
    ids = [backend.token_id(c) for c in CHOICES]
    seen = []
    got = backend.choice_logprobs(prompts, ids, progress=lambda n, t: seen.append((n, t)))
    assert got.shape == (len(prompts), len(ids))
    for row, prompt in enumerate(prompts):
        np.testing.assert_allclose(
            got[row], reference_logprobs(backend.model, prompt, ids), atol=1e-4, rtol=0
        )
    assert sum(n for n, _ in seen) == len(prompts)


def test_choice_logprobs_rendered_prompts_sharing_a_long_profile(gen):
    profile = "I am vegan and I never eat meat or fish; recommend plant based food only. " * 6
    prompts = [
        gen.render([{"role": "system", "content": profile}, {"role": "user", "content": q}])
        for q in ("What should I cook?", "Any restaurant tips for tonight?", "Snack ideas?")
    ]
    assert group_by_shared_prefix(prompts)[0].prefix, (
        "the rendered prompts should share a long prefix"
    )
    ids = [gen.token_id(c) for c in CHOICES]
    got = gen.choice_logprobs(prompts, ids)
    for row, prompt in enumerate(prompts):
        np.testing.assert_allclose(
            got[row], reference_logprobs(gen.model, prompt, ids), atol=1e-4, rtol=0
        )


# -- generation ------------------------------------------------------------------------------------


def test_generate_left_padded_batch_equals_unbatched_greedy(gen, prompts):
    subset = prompts[:6]
    batched = gen.generate(subset, max_new_tokens=8)
    assert len(batched) == len(subset)
    for prompt, text in zip(subset, batched):
        with torch.inference_mode():
            out = gen.model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=8,
                do_sample=False,
                pad_token_id=gen.pad_id,
            )
        assert text == gen.decode(out[0, len(prompt) :].tolist())
    assert any(batched), "a random model should produce some text"


# -- reward scores ---------------------------------------------------------------------------------


def test_reward_scores_equal_unbatched_logits(rew, prompts):
    got = rew.reward_scores(prompts)
    assert got.shape == (len(prompts),)
    expected = []
    with torch.inference_mode():
        for prompt in prompts:
            expected.append(float(rew.model(torch.tensor([prompt])).logits[0, 0]))
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    assert len(set(np.round(got, 6))) > 1  # not a constant (e.g. every row read at a pad position)


def test_primitives_refuse_the_wrong_model_type(gen, rew):
    with pytest.raises(BackendError):
        rew.choice_logprobs([[5, 6, 7]], [gen.token_id("A")])
    with pytest.raises(BackendError):
        gen.reward_scores([[5, 6, 7]])
    with pytest.raises(BackendError):
        rew.generate([[5, 6, 7]], 2)


# -- labels, context window ----------------------------------------------------------------------


@pytest.mark.parametrize("label", ["AB", " option", "ABCD"])
def test_token_id_refuses_multi_token_labels(gen, label):
    assert len(gen.tokenizer.encode(label, add_special_tokens=False)) > 1  # the premise
    with pytest.raises(BackendError, match="not one"):
        gen.token_id(label)


def test_token_id_single_letters(gen):
    ids = [gen.token_id(c) for c in CHOICES]
    assert len(set(ids)) == 4
    assert [gen.decode([i]) for i in ids] == CHOICES


def test_prompt_longer_than_context_window_is_refused(folders):
    backend = load_backend(
        ModelSpec("tiny-gen", str(folders["generative"]), "generative"), device="cpu"
    )
    backend.model.config.max_position_embeddings = 64
    assert backend.context_window() == 64
    short = backend.render([{"role": "user", "content": "hi"}])
    assert len(short) <= 64
    with pytest.raises(BackendError, match="never truncated"):
        backend.render([{"role": "user", "content": "a long question about food " * 40}])
    with pytest.raises(BackendError):
        backend.checked(list(range(65)))
    assert backend.checked(list(range(64))) == list(range(64))


# -- vLLM adapter ----------------------------------------------------------------------------------


class FakeLLM:
    """Shaped like vllm.LLM: get_tokenizer, generate(prompts, params, use_tqdm), classify(...)."""

    def __init__(self, tokenizer, logprobs=None, texts=None, scores=None, max_model_len=None):
        self.tokenizer = tokenizer
        self.logprobs = logprobs or {}
        self.texts = texts or {}
        self.scores = scores or {}
        self.calls: list[tuple] = []
        if max_model_len:
            self.llm_engine = SimpleNamespace(
                model_config=SimpleNamespace(max_model_len=max_model_len)
            )

    def get_tokenizer(self):
        return self.tokenizer

    @staticmethod
    def _ids(prompt):
        return tuple(
            prompt["prompt_token_ids"] if isinstance(prompt, dict) else prompt.prompt_token_ids
        )

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append(("generate", prompts, params, use_tqdm))
        outputs = []
        for prompt in prompts:
            key = self._ids(prompt)
            step = {t: SimpleNamespace(logprob=lp) for t, lp in self.logprobs.get(key, {}).items()}
            outputs.append(
                SimpleNamespace(
                    outputs=[SimpleNamespace(logprobs=[step], text=self.texts.get(key, ""))]
                )
            )
        return outputs

    def classify(self, prompts, pooling_params=None, use_tqdm=True):
        self.calls.append(("classify", prompts, pooling_params, use_tqdm))
        return [
            SimpleNamespace(outputs=SimpleNamespace(probs=[self.scores[self._ids(p)]]))
            for p in prompts
        ]


@pytest.fixture(scope="module")
def hf_tokenizer(gen):
    return gen.tokenizer


def test_vllm_choice_logprobs_passes_token_ids_and_maps_in_order(hf_tokenizer):
    prompts = [[10, 11, 12], [20, 21], [30]]
    ids = [hf_tokenizer.encode(c, add_special_tokens=False)[0] for c in CHOICES]
    table = {
        tuple(p): {t: -float(r * 10 + c + 1) for c, t in enumerate(ids)}
        for r, p in enumerate(prompts)
    }
    llm = FakeLLM(hf_tokenizer, logprobs=table)
    backend = VLLMBackend(ModelSpec("fake", "/nowhere", "generative"), llm=llm)
    assert [backend.token_id(c) for c in CHOICES] == ids
    seen = []
    got = backend.choice_logprobs(prompts, ids, progress=lambda n, t: seen.append((n, t)))
    ((kind, sent, params, use_tqdm),) = llm.calls
    assert kind == "generate" and use_tqdm is False
    assert [FakeLLM._ids(p) for p in sent] == [tuple(p) for p in prompts]  # token ids, not text
    assert all(isinstance(p, dict) or hasattr(p, "prompt_token_ids") for p in sent)
    assert params.max_tokens == 1 and params.temperature == 0.0
    assert list(params.logprob_token_ids) == ids
    expected = np.array([[-(r * 10 + c + 1) for c in range(4)] for r in range(3)], dtype=float)
    np.testing.assert_array_equal(got, expected)
    assert seen == [(3, 6)]


def test_vllm_missing_token_logprob_is_an_error(hf_tokenizer):
    ids = [hf_tokenizer.encode(c, add_special_tokens=False)[0] for c in CHOICES]
    llm = FakeLLM(hf_tokenizer, logprobs={(1, 2): {t: -1.0 for t in ids[:3]}})
    backend = VLLMBackend(ModelSpec("fake", "/nowhere", "generative"), llm=llm)
    with pytest.raises(BackendError, match=str(ids[3])):
        backend.choice_logprobs([[1, 2]], ids)


def test_vllm_generate_and_reward_scores(hf_tokenizer):
    llm = FakeLLM(
        hf_tokenizer,
        texts={(1,): "<choice>B</choice>", (2, 3): "hello"},
        scores={(1,): 0.5, (2, 3): -2.25},
    )
    backend = VLLMBackend(ModelSpec("fake", "/nowhere", "generative"), llm=llm)
    assert backend.generate([[2, 3], [1]], max_new_tokens=5) == ["hello", "<choice>B</choice>"]
    _, sent, params, _ = llm.calls[-1]
    assert params.max_tokens == 5 and params.temperature == 0.0
    assert [FakeLLM._ids(p) for p in sent] == [(2, 3), (1,)]
    reward = VLLMBackend(ModelSpec("fake-rm", "/nowhere", "reward"), llm=llm)
    np.testing.assert_array_equal(reward.reward_scores([[1], [2, 3]]), [0.5, -2.25])
    kind, sent, pooling, use_tqdm = llm.calls[-1]
    assert kind == "classify" and pooling.use_activation is False and use_tqdm is False
    assert [FakeLLM._ids(p) for p in sent] == [(1,), (2, 3)]


def test_vllm_renders_with_the_chat_template_and_checks_the_window(hf_tokenizer, gen):
    llm = FakeLLM(hf_tokenizer, max_model_len=32)
    backend = VLLMBackend(ModelSpec("fake", "/nowhere", "generative"), llm=llm)
    messages = [{"role": "user", "content": "hi"}]
    assert backend.render(messages) == gen.render(messages)
    assert backend.context_window() == 32
    with pytest.raises(BackendError, match="context window"):
        backend.render([{"role": "user", "content": "a long question about food " * 20}])
    with pytest.raises(BackendError):
        backend.token_id("AB")
