"""Model backends: what the evaluation protocols need from a model, on vLLM or on transformers.

A backend takes prompts already rendered to token ids (with the model's own chat template, once)
and offers four primitives: next-token log-probabilities of given tokens, bounded greedy
generation, reward scores and embeddings. Protocols (evaluator/protocols.py) build on these only,
so both backends run the very same protocol.
"""

from __future__ import annotations

from evaluator.backends.base import Backend, BackendError, ModelSpec


def load_backend(spec: ModelSpec, backend: str = "transformers", **options) -> Backend:
    if backend == "transformers":
        from evaluator.backends.hf_transformers import TransformersBackend

        return TransformersBackend(spec, **options)
    if backend == "vllm":
        from evaluator.backends.vllm_backend import VLLMBackend

        return VLLMBackend(spec, **options)
    raise BackendError(f"unknown backend {backend!r}; choose transformers or vllm")


__all__ = ["Backend", "BackendError", "ModelSpec", "load_backend"]
