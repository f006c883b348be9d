"""The vLLM backend (GPU workers). vLLM is an optional extra: `pip install 'personaboard[vllm]'`.

Same primitives as the transformers backend:
- choice log-probabilities: one decoding step, `SamplingParams(max_tokens=1, temperature=0,
  logprob_token_ids=[...])`, which returns raw log-probs of exactly those tokens;
- reward scores: the pooling runner (`runner="pooling"`, `convert="classify"`) with
  `PoolingParams(use_activation=False)` for raw scores;
- prompts are rendered once with the model's chat template and passed as token ids
  (`TokensPrompt`); automatic prefix caching shares long common prefixes across prompts.
To run a GPU worker: install the extra on the GPU node, point it at the same Redis and data
folder, and start `rq worker personaboard --url redis://HOST:PORT` with PERSONABOARD_BACKEND=vllm.
"""
from __future__ import annotations

import numpy as np

from evaluator.backends.base import Backend, BackendError, ModelSpec


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, spec: ModelSpec, llm=None, gpu_memory_utilization: float = 0.85, max_model_len: int | None = None):
        """`llm` may be passed in (tests pass an object shaped like vllm.LLM); otherwise one is built."""
        self.spec = spec
        if llm is None:
            try:
                from vllm import LLM
            except ImportError as exc:  # pragma: no cover - depends on the GPU image
                raise BackendError("vLLM is not installed: install the 'vllm' extra on a CUDA machine") from exc
            kwargs = {"runner": "pooling", "convert": "classify"} if spec.model_type == "reward" else {}
            llm = LLM(model=spec.path, revision=spec.revision or None, enable_prefix_caching=True,
                      gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                      trust_remote_code=False, **kwargs)
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        try:
            import vllm

            self.version = vllm.__version__
        except ImportError:
            self.version = "unknown"

    def context_window(self) -> int | None:
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        return getattr(config, "max_model_len", None)

    def describe(self) -> dict:
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

    # -- primitives ---------------------------------------------------------------------------
    def choice_logprobs(self, prompts, choice_ids, progress=None) -> np.ndarray:
        params = self._sampling(max_tokens=1, temperature=0.0, logprob_token_ids=list(choice_ids))
        outputs = self.llm.generate(self._prompts(prompts), params, use_tqdm=False)
        result = np.full((len(prompts), len(choice_ids)), -np.inf)
        for row, output in enumerate(outputs):
            step = output.outputs[0].logprobs[0]  # {token id: Logprob} for the first generated position
            for col, token in enumerate(choice_ids):
                if token not in step:
                    raise BackendError(f"vLLM returned no log-probability for token {token}")
                result[row, col] = step[token].logprob
        if progress:
            progress(len(prompts), sum(len(p) for p in prompts))
        return result

    def generate(self, prompts, max_new_tokens, progress=None) -> list[str]:
        params = self._sampling(max_tokens=max_new_tokens, temperature=0.0)
        outputs = self.llm.generate(self._prompts(prompts), params, use_tqdm=False)
        if progress:
            progress(len(prompts), sum(len(p) for p in prompts))
        return [output.outputs[0].text for output in outputs]

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
