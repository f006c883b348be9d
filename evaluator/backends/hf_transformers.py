"""The transformers backend: the same protocol as vLLM, on CPU or CUDA.

Speed comes from three things, all exact (no approximation of the model's outputs):
- prompts are batched by length, so little compute goes to padding;
- only the last position's hidden state goes through the LM head (a full-vocabulary projection of
  every prompt position would cost more than the model itself for a small model);
- prompts that share a long token prefix (a persona profile, a few-shot block) compute that prefix's
  KV cache once and reuse it for every prompt of the group.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from evaluator.backends.base import Backend, BackendError, ModelSpec, Progress

log = logging.getLogger(__name__)

MIN_SHARED_PREFIX = 48  # tokens; shorter shared prefixes are not worth a separate pass


@dataclass
class PrefixGroup:
    prefix: list[int]
    members: list[int]  # indices into the prompt list


def group_by_shared_prefix(prompts: list[list[int]], min_prefix: int = MIN_SHARED_PREFIX) -> list[PrefixGroup]:
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
        groups.append(PrefixGroup(prompts[current[0]][:length] if length >= min_prefix else [], list(current)))

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


def length_batches(indices: list[int], lengths: Sequence[int], max_batch_tokens: int, max_batch_size: int) -> list[list[int]]:
    """Split indices, sorted by length, into batches whose padded size stays under the token budget."""
    ordered = sorted(indices, key=lambda i: lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in ordered:
        longest = lengths[i]  # ordered ascending: the newcomer is the longest
        if batch and (longest * (len(batch) + 1) > max_batch_tokens or len(batch) >= max_batch_size):
            batches.append(batch)
            batch = []
        batch.append(i)
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
        from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

        self.spec = spec
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        kwargs = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(spec.path, **kwargs)
        model_class = AutoModelForSequenceClassification if spec.model_type == "reward" else AutoModelForCausalLM
        self.model = model_class.from_pretrained(spec.path, dtype=dtype, **kwargs).to(self.device).eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pad_id = self.tokenizer.pad_token_id
        if spec.model_type == "reward" and self.model.config.pad_token_id is None:
            self.model.config.pad_token_id = self.pad_id  # the classifier finds the last token through it
        self.max_batch_tokens = max_batch_tokens or (65536 if self.device.type == "cuda" else 4096)
        self.max_batch_size = max_batch_size
        self.reuse_prefix = reuse_prefix
        self.version = transformers.__version__

    def context_window(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def describe(self) -> dict:
        return {**super().describe(), "backend_version": self.version, "device": self.device.type,
                "dtype": str(self.model.dtype).removeprefix("torch.")}

    # -- shared machinery ---------------------------------------------------------------------
    def _last_hidden(self, prompts: list[list[int]], progress: Progress | None) -> tuple[list[int], torch.Tensor]:
        """Final-layer hidden state at each prompt's last position, in prompt order: (n, hidden)."""
        base = self.model.get_decoder() if hasattr(self.model, "get_decoder") else self.model.base_model
        hidden_out: list[torch.Tensor | None] = [None] * len(prompts)
        groups = group_by_shared_prefix(prompts) if self.reuse_prefix else [PrefixGroup([], list(range(len(prompts))))]
        with torch.inference_mode():
            for group in groups:
                cache_layers = None
                p = len(group.prefix)
                if p:
                    prefix_ids = torch.tensor([group.prefix], device=self.device)
                    out = base(input_ids=prefix_ids, use_cache=True)
                    cache_layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
                suffix_lengths = [len(prompts[i]) - p for i in range(len(prompts))]
                for batch in length_batches(group.members, suffix_lengths, self.max_batch_tokens, self.max_batch_size):
                    longest = max(suffix_lengths[i] for i in batch)
                    ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                    for row, i in enumerate(batch):
                        suffix = prompts[i][p:]
                        ids[row, : len(suffix)] = torch.tensor(suffix)
                    kwargs = {}
                    if cache_layers is not None:
                        from transformers import DynamicCache

                        b = len(batch)
                        kwargs["past_key_values"] = DynamicCache(
                            ddp_cache_data=[(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in cache_layers],
                            config=self.model.config,
                        )
                        kwargs["position_ids"] = torch.arange(p, p + longest, device=self.device).unsqueeze(0).expand(b, -1)
                    # Right padding under a causal mask: a real position only sees earlier positions,
                    # all real (the shared prefix, then its own suffix), so the padding needs no mask.
                    # Without one, attention takes the plain causal kernel (no materialised mask): exact, faster.
                    out = base(input_ids=ids.to(self.device), use_cache=cache_layers is not None, **kwargs)
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
            for batch in length_batches(list(range(len(prompts))), [n + max_new_tokens for n in lengths], budget, self.max_batch_size):
                longest = max(lengths[i] for i in batch)
                ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(batch):  # left padding: generation continues at the right edge
                    ids[row, longest - lengths[i]:] = torch.tensor(prompts[i])
                    mask[row, longest - lengths[i]:] = 1
                generated = self.model.generate(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device), max_new_tokens=max_new_tokens,
                    do_sample=False, pad_token_id=self.pad_id, temperature=None, top_p=None, top_k=None,
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
            for batch in length_batches(list(range(len(prompts))), lengths, self.max_batch_tokens, self.max_batch_size):
                longest = max(lengths[i] for i in batch)
                ids = torch.full((len(batch), longest), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), longest), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, : lengths[i]] = torch.tensor(prompts[i])
                    mask[row, : lengths[i]] = 1
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits.float()
                # Right padding: the classifier's pooled token is each row's last non-pad token.
                for row, i in enumerate(batch):
                    scores[i] = float(logits[row, 0])
                if progress:
                    progress(len(batch), sum(lengths[i] for i in batch))
        return scores
