"""The judge model that scores judge-scored tasks, resolved once by the caller and passed into scoring.

A task whose manifest has a `judge:` block is scored by a model: the operator registers it
(`personaboard models add NAME PATH`) and names it in PERSONABOARD_JUDGE_MODEL. The worker and the
CLI build the `Judge` (here) and hand it to `score_answers`; a suite's hooks receive it and never
look it up themselves. The judge's name and revision go into the result's provenance and into the
row's setting: results are comparable only under the same judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from evaluator.backends.base import Backend, BackendError
from evaluator.settings import JUDGE_ENV, EvaluatorSettings, load_evaluator_settings

if TYPE_CHECKING:
    from evaluator.suite import Task


@dataclass(frozen=True)
class Judge:
    name: str
    revision: str
    backend: Backend

    def provenance(self, task: "Task") -> dict[str, Any]:
        """What the result records of the judge: who judged, at which revision, how (the manifest's words)."""
        prompt_hash = (
            task.hooks.judge_prompt_sha256
        )  # the judge's own texts, where the suite has them
        return {
            "model": self.name,
            "revision": self.revision,
            **task.judge,
            **({"prompt_sha256": prompt_hash()} if prompt_hash else {}),
        }


def judge_unavailable_reason(task: "Task", settings: EvaluatorSettings | None = None) -> str | None:
    """Why a judge-scored task refuses submissions on this server now (None: it takes them)."""
    if not task.judge:
        return None
    settings = settings or load_evaluator_settings()
    if settings.judge_model is None:
        return (
            f"{task.key} is scored by an LLM judge and no judge model is configured on this server; "
            f"the operator registers one (`personaboard models add NAME PATH`) and sets {JUDGE_ENV}=NAME"
        )
    return None


def judge_for(task: "Task", settings: EvaluatorSettings | None = None) -> Judge | None:
    """The configured judge for a judge-scored task (loaded once per process), None for other tasks."""
    if not task.judge:
        return None
    settings = settings or load_evaluator_settings()
    reason = judge_unavailable_reason(task, settings)
    if reason:
        raise BackendError(reason)
    return _load_judge(settings.judge_model, str(settings.data_dir), settings.backend)


@lru_cache(maxsize=1)
def _load_judge(name: str, data_dir: str, backend_name: str) -> Judge:
    from pathlib import Path

    from evaluator.backends import ModelSpec, load_backend
    from evaluator.endpoints import EndpointRegistry, endpoint_backend
    from evaluator.models import ModelRegistry

    endpoint = EndpointRegistry(Path(data_dir)).get(name)
    if endpoint is not None:  # a judge behind an OpenAI-compatible endpoint (e.g. a hosted model)
        backend = endpoint_backend(name, Path(data_dir))
        return Judge(name, backend.spec.revision, backend)
    entry = ModelRegistry(Path(data_dir)).get(name)
    if entry is None or entry.get("model_type") != "generative":
        raise BackendError(
            f"judge model {name!r} ({JUDGE_ENV}) is not a registered generative model on this server"
        )
    backend = load_backend(
        ModelSpec(name, entry["path"], "generative", entry["revision"]), backend_name
    )
    return Judge(name, entry["revision"], backend)
