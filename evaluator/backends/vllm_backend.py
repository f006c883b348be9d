"""The vLLM backend (GPU workers). vLLM is an optional extra: `pip install 'personaboard[vllm]'`.

Same primitives as the transformers backend:
- choice log-probabilities: one decoding step, `SamplingParams(max_tokens=1, temperature=0,
  logprob_token_ids=[...])`, which returns raw log-probs of exactly those tokens;
- reward scores: the pooling runner (`runner="pooling"`, `convert="classify"`) with
  `PoolingParams(use_activation=False)` for raw scores;
- prompts are rendered once with the model's chat template and passed as token ids
  (`TokensPrompt`); automatic prefix caching shares long common prefixes across prompts. A
  prefilled answer (generate_parse_prefill) is the same text as the transformers backend's
  (Backend.render: the template with its generation prompt, then the prefill).
To run a GPU worker: install the extra on the GPU node, point it at the same Redis and data
folder, and start `rq worker personaboard --url redis://HOST:PORT` with PERSONABOARD_BACKEND=vllm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluator.backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    EngineCall,
    ModelSpec,
)


class VLLMBackend(Backend):
    name = "vllm"
    # Large submissions: vLLM's scheduler batches by itself; between calls only a chunk's hand-over
    # happens (the next chunk is built and tokenized while this one runs, see model_eval.py).
    batch_items = 4096

    def __init__(
        self,
        spec: ModelSpec,
        llm=None,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
    ):
        """`llm` may be passed in (tests pass an object shaped like vllm.LLM); otherwise one is built."""
        self.spec = spec
        if llm is None:
            try:
                from vllm import LLM
            except ImportError as exc:  # pragma: no cover - depends on the GPU image
                raise BackendError(
                    "vLLM is not installed: install the 'vllm' extra on a CUDA machine"
                ) from exc
            kwargs = (
                {"runner": "pooling", "convert": "classify"} if spec.model_type == "reward" else {}
            )
            llm = LLM(
                model=spec.path,
                revision=spec.revision or None,
                enable_prefix_caching=True,
                gpu_memory_utilization=gpu_memory_utilization,
                max_model_len=max_model_len,
                trust_remote_code=False,
                **kwargs,
            )
        self.llm = llm
        self.gpu_memory_utilization = gpu_memory_utilization
        self.tokenizer = llm.get_tokenizer()
        try:
            import vllm

            self.version = vllm.__version__
        except ImportError:
            self.version = "unknown"

    def context_window(self) -> int | None:
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        return getattr(config, "max_model_len", None)

    def describe(self) -> BackendDescription:
        return {**super().describe(), "backend_version": self.version, "prefix_caching": True}

    @staticmethod
    def _prompts(prompts: list[list[int]]):
        try:
            from vllm.inputs import TokensPrompt
        except ImportError:  # tests without vLLM: the dict form is what TokensPrompt is
            return [{"prompt_token_ids": p} for p in prompts]
        return [TokensPrompt(prompt_token_ids=p) for p in prompts]

    @staticmethod
    def _sampling(**kwargs):
        try:
            from vllm import SamplingParams
        except ImportError:
            from types import SimpleNamespace

            return SimpleNamespace(**kwargs)
        return SamplingParams(**kwargs)

    def memory_bytes(self) -> int:
        """vLLM reserves its share of the device's memory up front, whatever the model's size."""
        reserved = getattr(
            self.llm, "reserved_memory_bytes", None
        )  # objects shaped like vLLM in tests
        if reserved is not None:
            return int(reserved)
        try:
            import torch

            return int(self.gpu_memory_utilization * torch.cuda.mem_get_info()[1])
        except Exception:
            return 0

    # -- primitives ---------------------------------------------------------------------------
    def run_calls(self, calls: list[EngineCall], progress=None) -> list:
        """Every request of every call in ONE llm.generate, each prompt with its own sampling
        parameters: the scheduler batches them all, the GPU never waits between them."""
        prompts: list[Any] = []
        params: list[Any] = []
        spans: list[tuple[int, int]] = []
        for call in calls:
            if call.kind == "logprobs":
                sampling = self._sampling(
                    max_tokens=1, temperature=0.0, logprob_token_ids=list(call.choice_ids)
                )
            else:
                sampling = self._sampling(max_tokens=call.max_new_tokens, temperature=0.0)
            spans.append((len(prompts), len(prompts) + len(call.prompts)))
            prompts += call.prompts
            params += [sampling] * len(call.prompts)
        # one parameter object when all share it; else one per prompt (LLM.generate takes either)
        shared = params[0] if len(calls) == 1 and params else params
        outputs = (
            self.llm.generate(self._prompts(prompts), shared, use_tqdm=False) if prompts else []
        )
        results: list[Any] = []
        for call, (start, end) in zip(calls, spans):
            mine = outputs[start:end]
            if call.kind == "logprobs":
                result = np.full((len(mine), len(call.choice_ids)), -np.inf)
                for row, output in enumerate(mine):
                    step = output.outputs[0].logprobs[
                        0
                    ]  # {token id: Logprob} for the first generated position
                    for col, token in enumerate(call.choice_ids):
                        if token not in step:
                            raise BackendError(
                                f"vLLM returned no log-probability for token {token}"
                            )
                        result[row, col] = step[token].logprob
                results.append(result)
            else:
                results.append([output.outputs[0].text for output in mine])
            if progress:
                progress(len(call.prompts), sum(len(p) for p in call.prompts))
        return results

    def choice_logprobs(self, prompts, choice_ids, progress=None) -> np.ndarray:
        return self.run_calls([EngineCall("logprobs", prompts, list(choice_ids))], progress)[0]

    def generate(self, prompts, max_new_tokens, progress=None) -> list[str]:
        return self.run_calls(
            [EngineCall("generate", prompts, max_new_tokens=max_new_tokens)], progress
        )[0]

    def reward_scores(self, prompts, progress=None) -> np.ndarray:
        try:
            from vllm import PoolingParams

            pooling = PoolingParams(use_activation=False)
        except ImportError:
            from types import SimpleNamespace

            pooling = SimpleNamespace(use_activation=False)
        outputs = self.llm.classify(self._prompts(prompts), pooling_params=pooling, use_tqdm=False)
        if progress:
            progress(len(prompts), sum(len(p) for p in prompts))
        return np.array([float(output.outputs.probs[0]) for output in outputs])
