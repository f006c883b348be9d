"""The judge model that scores judge-scored tasks, resolved once by the caller and passed into scoring.

A task whose manifest has a `judge:` block is scored by a model: the operator registers it
(`personaboard models add NAME PATH`) and names it in PERSONABOARD_JUDGE_MODEL. The worker and the
CLI build the `Judge` (here) and hand it to `score_answers`; a suite's hooks receive it and never
look it up themselves. The judge's name and revision go into the result's provenance and into the
row's setting: results are comparable only under the same judge.

A task may offer several judge protocols (manifest `judge.protocols`, default `judge.protocol`,
each described under its own name there); the operator picks one with PERSONABOARD_JUDGE_PROTOCOL
(ignored by tasks that do not offer it). The protocol used is in the provenance and in the setting
when it is not the task's default, so rows of different judge protocols are never ranked together.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.backends.base import Backend, BackendError
from evaluator.settings import JUDGE_ENV, EvaluatorSettings, load_evaluator_settings

if TYPE_CHECKING:
    from evaluator.item_records import JudgeCall
    from evaluator.suite import Task


JUDGE_PROTOCOL_ENV = "PERSONABOARD_JUDGE_PROTOCOL"


def judge_protocols(task: "Task") -> list[str]:
    """The judge protocols a task offers (manifest `judge.protocols`, comma-separated), default first."""
    default = task.judge.get("protocol", "")
    listed = [p.strip() for p in str(task.judge.get("protocols", "")).split(",") if p.strip()]
    return [default] + [p for p in listed if p != default]


@dataclass(frozen=True)
class Judge:
    name: str
    revision: str
    backend: Backend
    protocol: str | None = None  # the operator's choice of judge protocol; None: the task's default
    # Where the hooks keep what the judge was asked and wrote for this result (prompts, replies,
    # scores, rationales): a private file beside the run's answers, published only in the
    # per-item details of a public split (submissions/details.py; a hidden split's never). None:
    # not kept.
    transcript: Path | None = None
    # What the hooks tally while scoring (`tally`): judge_outputs, judge_unparsed. score_answers
    # gives each scoring a fresh one and records it in the provenance.
    counts: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    def tally(self, outputs: int, unparsed: int) -> None:
        """`outputs` judge replies read, `unparsed` of them with no verdict the task's rule could
        read (PrefEval reads such a reply as upstream does, e.g. a helpful check as helpful)."""
        self.counts["judge_outputs"] = self.counts.get("judge_outputs", 0) + outputs
        self.counts["judge_unparsed"] = self.counts.get("judge_unparsed", 0) + unparsed

    def scoring(self) -> "Judge":
        """This judge with a tally of its own (one per scoring)."""
        return dataclasses.replace(self, counts={})

    def protocol_for(self, task: "Task") -> str:
        """The judge protocol this judge runs on `task`: the operator's choice where the task offers it."""
        offered = judge_protocols(task)
        return self.protocol if self.protocol in offered else offered[0]

    def provenance(self, task: "Task") -> dict[str, Any]:
        """What the result records of the judge: who judged, at which revision, how (the manifest's
        words; for a task offering several protocols, the one used and its description)."""
        prompt_hash = (
            task.hooks.judge_prompt_sha256
        )  # the judge's own texts, where the suite has them
        offered = judge_protocols(task)
        used = self.protocol_for(task)
        # the manifest's words, less the list of protocols and their descriptions (one is below)
        words = {
            k: v
            for k, v in task.judge.items()
            if k != "protocols" and (len(offered) == 1 or k not in offered)
        }
        return {
            "model": self.name,
            "revision": self.revision,
            **words,
            "protocol": used,
            **({"protocol_description": task.judge[used]} if used in task.judge else {}),
            **({"default_protocol": offered[0]} if used != offered[0] else {}),
            **({"prompt_sha256": prompt_hash()} if prompt_hash else {}),
        }

    def keeping(self, path: Path | None) -> "Judge":
        """This judge, keeping its transcript at `path`."""
        return dataclasses.replace(self, transcript=path)

    def keep(self, records: list[JudgeCall]) -> None:
        """Write the judge's transcript (one JSON object per line), replacing an earlier one whole
        (a rescored result keeps its last scoring only)."""
        if self.transcript is None:
            return
        path = Path(self.transcript)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        with open(partial, "w", encoding="utf-8") as stream:
            for record in records:
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(partial, path)


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
    judge = _load_judge(settings.judge_model, str(settings.data_dir), settings.backend)
    choice = (os.environ.get(JUDGE_PROTOCOL_ENV) or "").strip() or None
    return dataclasses.replace(judge, protocol=choice) if choice else judge


def judged_setting(setting: str, provenance: dict[str, Any]) -> str:
    """A judged result's setting: the judge is part of it, and so is its protocol when that is not
    the task's default (results compare only under the same judge and protocol)."""
    judge = provenance.get("judge")
    if not judge:
        return setting
    suffix = f"+judge:{judge['model']}"
    if judge.get("default_protocol"):
        suffix += f"+judge_protocol:{judge['protocol']}"
    return setting + suffix


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
