"""The transformers backend: the same protocol as vLLM, on CPU or CUDA.

Speed comes from three things, all exact (no approximation of the model's outputs):
- prompts are batched by length, and a batch's padding is capped (MAX_PADDING_SHARE, per device);
- only the last position's hidden state goes through the LM head (a full-vocabulary projection of
  every prompt position would cost more than the model itself for a small model);
- prompts that share a long token prefix (a persona profile, a few-shot block) compute that prefix's
  KV cache once and reuse it for every prompt of the group. The prefix is held once (batch 1) and
  given to each layer's attention as a broadcast view, never copied per prompt into a cache; the
  batch budget counts every token a batch attends to (its rows' prefix and suffix), so memory stays
  that of the same tokens run without reuse. A prefix too short to pay is not reused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

from evaluator.backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    ModelSpec,
    Progress,
)

log = logging.getLogger(__name__)

MIN_SHARED_PREFIX = 48  # tokens; shorter shared prefixes are not worth a separate pass
# A prefix is reused only when it is at least this share of its members' mean length: below it the
# saving is small (PrefEval's shared system prompt saves <1 % of tokens) and splitting the prompts
# into prefix groups costs batch size.
MIN_PREFIX_SHARE = 0.2
# Most padding a length batch may carry, as a share of the tokens it computes (rows x longest). On
# CPU a pad token costs as much as a real one and batching a prefill buys almost nothing (one
# prompt's own matrices already fill the cores), so padding is near pure loss: PrefEval batches
# under the token budget alone carried 25-30 % of it (service 1.32x the unpadded floor). On CUDA a
# bigger batch is what keeps the GPU busy, so more padding pays for itself there. Scoring passes
# only (log-probs, reward scores): generation batches by the token budget alone (see generate).
MAX_PADDING_SHARE = {"cpu": 0.05, "cuda": 0.25}


@dataclass
class PrefixGroup:
    prefix: list[int]
    members: list[int]  # indices into the prompt list


def group_by_shared_prefix(
    prompts: list[list[int]],
    min_prefix: int = MIN_SHARED_PREFIX,
    min_share: float = MIN_PREFIX_SHARE,
) -> list[PrefixGroup]:
    """Group prompts that share at least `min_prefix` leading tokens (sorted order makes sharers adjacent).

    Every group's prefix stops one token short of its shortest member, so each member keeps at
    least one token of its own (the last prompt position must be computed to read its logits).
    """
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    groups: list[PrefixGroup] = []
    current: list[int] = []
    shared = 0

    def lcp(a: list[int], b: list[int]) -> int:
        n = min(len(a), len(b))
        i = 0
        while i < n and a[i] == b[i]:
            i += 1
        return i

    def close() -> None:
        if not current:
            return
        shortest = min(len(prompts[i]) for i in current)
        length = min(shared, shortest - 1) if len(current) > 1 else 0
        mean_length = sum(len(prompts[i]) for i in current) / len(current)
        pays = length >= min_prefix and length >= min_share * mean_length
        groups.append(PrefixGroup(prompts[current[0]][:length] if pays else [], list(current)))

    for index in order:
        if current:
            common = lcp(prompts[current[0]], prompts[index])
            candidate = min(shared, common)
            if candidate >= min_prefix:
                current.append(index)
                shared = candidate
                continue
            close()
        current, shared = [index], len(prompts[index])
    close()
    # Prompts left without a useful prefix are pooled so they still batch together.
    pooled = [i for g in groups if not g.prefix for i in g.members]
    return [g for g in groups if g.prefix] + ([PrefixGroup([], pooled)] if pooled else [])


class SharedPrefixLayer(DynamicLayer):
    """One layer's KV for a batch behind a shared prefix: the prefix is stored once (batch 1) and
    each forward pass gets it as a broadcast view joined to the batch's own keys and values. Nothing
    is stored per row, so the cache never grows to batch x (prefix + suffix) for every layer at once;
    only the layer running holds that join."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, batch_size: int):
        super().__init__()
        self.lazy_initialization(keys, values)
        self.keys, self.values, self.batch_size = keys, values, batch_size

    def update(self, key_states, value_states, *args, **kwargs):
        b = self.batch_size
        assert self.keys is not None and self.values is not None  # set in __init__
        return (
            torch.cat([self.keys.expand(b, -1, -1, -1), key_states], dim=-2),
            torch.cat([self.values.expand(b, -1, -1, -1), value_states], dim=-2),
        )


class SharedPrefixCache(DynamicCache):
    def __init__(self, prefix_layers: list[tuple[torch.Tensor, torch.Tensor]], batch_size: int):
        Cache.__init__(self, layers=[SharedPrefixLayer(k, v, batch_size) for k, v in prefix_layers])


def length_batches(
    indices: list[int],
    lengths: Sequence[int],
    max_batch_tokens: int,
    max_batch_size: int,
    max_padding: float = 1.0,
) -> list[list[int]]:
    """Split indices, sorted by length, into batches whose padded size stays under the token budget
    and whose padding stays at most `max_padding` of the padded size."""
    ordered = sorted(indices, key=lambda i: lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    real = 0  # tokens of the batch's own prompts
    for i in ordered:
        longest = lengths[i]  # ordered ascending: the newcomer is the longest
        padded = longest * (len(batch) + 1)
        if batch and (
            padded > max_batch_tokens
            or len(batch) >= max_batch_size
            or padded - real - longest > max_padding * padded
        ):
            batches.append(batch)
            batch, real = [], 0
        batch.append(i)
        real += longest
    if batch:
        batches.append(batch)
    return batches


class TransformersBackend(Backend):
    name = "transformers"

    def __init__(
        self,
        spec: ModelSpec,
        device: str | None = None,
        max_batch_tokens: int | None = None,
        max_batch_size: int = 64,
        reuse_prefix: bool = True,
    ):
        import transformers
        from transformers import (
            AutoModelForCausalLM,
            AutoModelForSequenceClassification,
            AutoTokenizer,
        )

        self.spec = spec
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        # gguf_file=None is transformers' own default (a folder of safetensors); passed by name, as
        # transformers 5.25 types from_pretrained's keywords and a splatted dict no longer checks
        self.tokenizer = AutoTokenizer.from_pretrained(spec.path, gguf_file=spec.gguf_file or None)
        model_class = (
            AutoModelForSequenceClassification
            if spec.model_type == "reward"
            else AutoModelForCausalLM
        )
        self.model = (
            model_class.from_pretrained(spec.path, dtype=dtype, gguf_file=spec.gguf_file or None)
            .to(self.device)  # type: ignore[arg-type]  # transformers types .to as a wrapper
            .eval()
        )
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pad_id = self.tokenizer.pad_token_id
        if spec.model_type == "reward" and self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = (
                self.pad_id
            )  # the classifier finds the last token through it
        self.max_batch_tokens = max_batch_tokens or (65536 if self.device.type == "cuda" else 4096)
        self.max_batch_size = max_batch_size
        self.max_padding = MAX_PADDING_SHARE.get(self.device.type, MAX_PADDING_SHARE["cuda"])
        self.reuse_prefix = reuse_prefix
        self.version = transformers.__version__

    @classmethod
    def around(
        cls,
        model,
        spec: ModelSpec,
        pad_id: int,
        max_batch_tokens: int | None = None,
        max_batch_size: int = 64,
        reuse_prefix: bool = True,
    ) -> "TransformersBackend":
        """The backend around a model already on its device (bench/bench_gpu.py builds random
        weights there): token-id primitives only, there is no tokenizer to render with."""
        import transformers

        self = cls.__new__(cls)
        self.spec, self.model, self.tokenizer, self.pad_id = spec, model.eval(), None, pad_id
        self.device = next(model.parameters()).device
        self.max_batch_tokens = max_batch_tokens or (65536 if self.device.type == "cuda" else 4096)
        self.max_batch_size, self.reuse_prefix, self.version = (
            max_batch_size,
            reuse_prefix,
            transformers.__version__,
        )
        self.max_padding = MAX_PADDING_SHARE.get(self.device.type, MAX_PADDING_SHARE["cuda"])
        return self

    def context_window(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def memory_bytes(self) -> int:
        tensors = [*self.model.parameters(), *self.model.buffers()]
        return sum(t.numel() * t.element_size() for t in tensors)

    def describe(self) -> BackendDescription:
        return {
            **super().describe(),
            "backend_version": self.version,
            "device": self.device.type,
            "dtype": str(self.model.dtype).removeprefix("torch."),
        }

    # -- shared machinery ---------------------------------------------------------------------
    def _last_hidden(
        self, prompts: list[list[int]], progress: Progress | None
    ) -> tuple[list[int], torch.Tensor]:
        """Final-layer hidden state at each prompt's last position, in prompt order: (n, hidden)."""
        base = (
            self.model.get_decoder()
            if hasattr(self.model, "get_decoder")
            else self.model.base_model
        )
        hidden_out: list[torch.Tensor | None] = [None] * len(prompts)
        groups = (
            group_by_shared_prefix(prompts)
            if self.reuse_prefix
            else [PrefixGroup([], list(range(len(prompts))))]
        )
        with torch.inference_mode():
            for group in groups:
                cache_layers = None
                p = len(group.prefix)
                if p:
                    prefix_ids = torch.tensor([group.prefix], device=self.device)
                    out = base(input_ids=prefix_ids, use_cache=True)
                    cache_layers = [
                        (layer.keys, layer.values) for layer in out.past_key_values.layers
                    ]
                suffix_lengths = [len(prompts[i]) - p for i in range(len(prompts))]
                # Budget: every token a batch holds at once, the prefix each row attends to included.
                held = [p + n for n in suffix_lengths]
                for batch in length_batches(
                    group.members,
                    held,
                    self.max_batch_tokens,
                    self.max_batch_size,
                    self.max_padding,
                ):
                    longest = max(suffix_lengths[i] for i in batch)
                    ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                    for row, i in enumerate(batch):
                        suffix = prompts[i][p:]
                        ids[row, : len(suffix)] = torch.tensor(suffix)
                    kwargs: dict[str, Any] = {}
                    if cache_layers is not None:
                        b = len(batch)
                        kwargs["past_key_values"] = SharedPrefixCache(cache_layers, b)
                        kwargs["position_ids"] = (
                            torch.arange(p, p + longest, device=self.device)
                            .unsqueeze(0)
                            .expand(b, -1)
                        )
                    # Right padding under a causal mask: a real position only sees earlier positions,
                    # all real (the shared prefix, then its own suffix), so the padding needs no mask.
                    # Without one, attention takes the plain causal kernel (no materialised mask): exact, faster.
                    out = base(
                        input_ids=ids.to(self.device), use_cache=cache_layers is not None, **kwargs
                    )
                    last = torch.tensor([suffix_lengths[i] - 1 for i in batch], device=self.device)
                    rows = out.last_hidden_state[torch.arange(len(batch), device=self.device), last]
                    for row, i in enumerate(batch):
                        hidden_out[i] = rows[row]
                    if progress:
                        progress(len(batch), sum(suffix_lengths[i] for i in batch))
        return [len(x) for x in prompts], torch.stack(hidden_out)  # type: ignore[arg-type]

    # -- primitives ---------------------------------------------------------------------------
    def choice_logprobs(self, prompts, choice_ids, progress=None) -> np.ndarray:
        if self.spec.model_type != "generative":
            raise BackendError("choice log-probabilities need a generative model")
        if not prompts:
            return np.zeros((0, len(choice_ids)))
        _, hidden = self._last_hidden(prompts, progress)
        with torch.inference_mode():
            logits = self.model.get_output_embeddings()(hidden).float()
            logprobs = torch.log_softmax(logits, dim=-1)[:, choice_ids]
        return logprobs.cpu().numpy()

    def generate(self, prompts, max_new_tokens, progress=None) -> list[str]:
        if self.spec.model_type != "generative":
            raise BackendError("generation needs a generative model")
        outputs: list[str] = [""] * len(prompts)
        lengths = [len(p) for p in prompts]
        budget = max(self.max_batch_tokens // 2, 1)
        with torch.inference_mode():
            # No padding cap here: each decode step reads all the weights whatever the batch size, so
            # one more batch costs max_new_tokens more passes over them, far more than its padding
            # (16 PrefEval first replies, 5 tokens, CPU: 1 batch 2.7-3.0 s, capped to 5 batches 4.5-4.7 s).
            for batch in length_batches(
                list(range(len(prompts))),
                [n + max_new_tokens for n in lengths],
                budget,
                self.max_batch_size,
            ):
                longest = max(lengths[i] for i in batch)
                ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(
                    batch
                ):  # left padding: generation continues at the right edge
                    ids[row, longest - lengths[i] :] = torch.tensor(prompts[i])
                    mask[row, longest - lengths[i] :] = 1
                generated = self.model.generate(
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=self.pad_id,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                )
                for row, i in enumerate(batch):
                    outputs[i] = self.decode(generated[row, longest:].tolist())
                if progress:
                    progress(len(batch), sum(lengths[i] for i in batch))
        return outputs

    def reward_scores(self, prompts, progress=None) -> np.ndarray:
        if self.spec.model_type != "reward":
            raise BackendError("reward scores need a classifier reward model")
        scores = np.zeros(len(prompts), dtype=np.float64)
        lengths = [len(p) for p in prompts]
        with torch.inference_mode():
            for batch in length_batches(
                list(range(len(prompts))),
                lengths,
                self.max_batch_tokens,
                self.max_batch_size,
                self.max_padding,
            ):
                longest = max(lengths[i] for i in batch)
                ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, : lengths[i]] = torch.tensor(prompts[i])
                    mask[row, : lengths[i]] = 1
                logits = self.model(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
                ).logits.float()
                # Right padding: the classifier's pooled token is each row's last non-pad token.
                for row, i in enumerate(batch):
                    scores[i] = float(logits[row, 0])
                if progress:
                    progress(len(batch), sum(lengths[i] for i in batch))
        return scores
