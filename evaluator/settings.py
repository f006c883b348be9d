"""The evaluator's configuration, read from the environment (the only place this layer reads it).

Each layer reads its own variables (evaluator, leaderboard, submissions, backend); the web layer
composes them. The data folder is the lowest shared fact, so it is read here and reused above.
Read on every call, not cached: tests and the CLI change the environment between calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "PERSONABOARD_DATA_DIR"
JUDGE_ENV = "PERSONABOARD_JUDGE_MODEL"
CACHE_DIR_ENV = "PERSONABOARD_CACHE_DIR"


def data_dir() -> Path:
    """The service's data folder (splits, registered models, results, records, uploads)."""
    return Path(os.environ.get(DATA_DIR_ENV, "./var")).resolve()


def cache_dir() -> Path:
    """Where derived, content-addressed results are kept between starts (the reference lines):
    data/cache unless PERSONABOARD_CACHE_DIR names another (the tests share one across services)."""
    named = os.environ.get(CACHE_DIR_ENV)
    return Path(named).resolve() if named else data_dir() / "cache"


@dataclass(frozen=True)
class EvaluatorSettings:
    data_dir: Path
    splits_dir: Path  # installed hidden splits, one folder per suite
    backend: str  # "transformers" | "vllm": what workers and the judge run models on
    judge_model: (
        str | None
    )  # a registered local model that scores judge-scored tasks; None: such tasks refuse
    embedding_model: str | None  # retrieval settings' embedding model; None: the bundled default

    @property
    def models_file(self) -> Path:
        """The operator's registry of local models."""
        return self.data_dir / "models.json"

    @property
    def converted_models_dir(self) -> Path:
        """Where GGUF checkpoints are converted once into safetensors folders."""
        return self.data_dir / "models"

    @property
    def checkpoints_dir(self) -> Path:
        """Model runs' append-only decision checkpoints (resume after a killed worker)."""
        return self.data_dir / "checkpoints"


def load_evaluator_settings() -> EvaluatorSettings:
    env = os.environ
    root = data_dir()
    return EvaluatorSettings(
        data_dir=root,
        splits_dir=Path(env["PERSONABOARD_SPLITS_DIR"])
        if env.get("PERSONABOARD_SPLITS_DIR")
        else root / "splits",
        backend=env.get("PERSONABOARD_BACKEND", "transformers"),
        judge_model=(env.get(JUDGE_ENV) or "").strip() or None,
        embedding_model=env.get("PERSONABOARD_EMBEDDING_MODEL") or None,
    )
