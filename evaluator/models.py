"""Models that can be submitted: the operator's local registry, and Hub ids resolved before queueing.

Resolution pins everything a result depends on (the commit sha, or a content hash for a local
folder) and refuses what the service will not run (remote code, a generative model without a
chat template), so a bad submission fails at the door, not an hour into a GPU job.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import struct
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evaluator import hub
from evaluator.endpoints import EndpointRegistry
from evaluator.hub import HubUnreachable  # noqa: F401 - callers catch it with ModelError

log = logging.getLogger(__name__)

REWARD_SUFFIXES = ("ForSequenceClassification", "ForRewardModel", "RewardModel")


class ModelError(ValueError):
    """The model cannot be accepted; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


@dataclass
class ResolvedModel:
    name: str  # what the submitter typed: a Hub id or a registered local name
    source: str  # "hub" | "local" | "endpoint"
    revision: str  # commit sha, or "sha256:<content hash>" for a local folder
    model_type: str  # "generative" | "reward"
    path: str | None = (
        None  # local folder (local models only; Hub models are downloaded by the worker)
    )
    gguf_file: str | None = None
    license: str | None = None
    parameters: int | None = None
    has_chat_template: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- model facts from files ---------------------------------------------------------------------


def model_type_from_config(config: dict[str, Any]) -> str:
    architectures = config.get("architectures") or []
    if any(a.endswith(REWARD_SUFFIXES) for a in architectures):
        return "reward"
    return "generative"


def _check_type(requested: str, detected: str, name: str) -> str:
    if requested not in ("auto", "generative", "reward"):
        raise ModelError(f"model_type must be generative, reward or auto, not {requested!r}")
    if requested != "auto" and requested != detected:
        raise ModelError(f"{name} looks like a {detected} model (from its config), not {requested}")
    return detected


def safetensors_parameters(folder: Path) -> int | None:
    """Parameter count from the safetensors headers (no weights are read)."""
    total, found = 0, False
    for path in folder.glob("*.safetensors"):
        with open(path, "rb") as stream:
            (length,) = struct.unpack("<Q", stream.read(8))
            header = json.loads(stream.read(length))
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            count = 1
            for dim in meta["shape"]:
                count *= dim
            total += count
            found = True
    return total if found else None


def local_chat_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").exists():
        return True
    config = folder / "tokenizer_config.json"
    return config.exists() and bool(
        json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    )


def folder_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as stream:
            while chunk := stream.read(1 << 22):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


# -- the operator's registry --------------------------------------------------------------------


class ModelRegistry:
    """Local models the operator registered (`personaboard models add NAME PATH`), kept in the data folder."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / "models.json"

    def _read(self) -> dict[str, dict]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def get(self, name: str) -> dict | None:
        return self._read().get(name)

    def all(self) -> dict[str, dict]:
        return self._read()

    def add(self, name: str, folder: Path, converted_dir: Path | None = None) -> dict:
        """Register a model folder (safetensors, or a GGUF file that is converted once into `converted_dir`)."""
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise ModelError(f"{folder} is not a folder")
        ggufs = sorted(folder.glob("*.gguf"))
        if not (folder / "config.json").exists() and ggufs:
            if converted_dir is None:
                raise ModelError(
                    f"{folder} holds a GGUF checkpoint; give a folder to convert it into"
                )
            folder = convert_gguf(folder, ggufs[0].name, Path(converted_dir))
        if not (folder / "config.json").exists():
            raise ModelError(
                f"{folder} has no config.json (nor a .gguf file): not a transformers model folder"
            )
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if config.get("auto_map"):
            raise ModelError(
                f"{folder} needs remote code (auto_map in config.json), which the service does not run"
            )
        entry = {
            "path": str(folder),
            "model_type": model_type_from_config(config),
            "revision": folder_hash(folder),
            "parameters": safetensors_parameters(folder),
            "has_chat_template": local_chat_template(folder),
            "added_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            models = self._read()
            models[name] = entry
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(models, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
        return entry


def convert_gguf(folder: Path, gguf_file: str, target: Path) -> Path:
    """Dequantise a GGUF checkpoint once into a safetensors folder (loads in a second afterwards)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.mkdir(parents=True, exist_ok=True)
    if (target / "config.json").exists():
        return target
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    # transformers refuses to save a model it still marks as GGUF-quantised; the weights are
    # already dequantised in memory, so clearing the marks saves plain weights.
    model.hf_quantizer = None  # type: ignore[assignment]  # nn.Module types attributes as submodules
    model.is_quantized = False  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


# -- resolution -------------------------------------------------------------------------------


def resolve_model(
    name: str, revision: str | None, model_type: str, registry: ModelRegistry
) -> ResolvedModel:
    name = (name or "").strip()
    if not name:
        raise ModelError(
            "model is required: a Hugging Face Hub id or a registered local model name"
        )
    entry = registry.get(name)
    if entry is not None:
        if revision and revision not in (entry["revision"], "main"):
            raise ModelError(
                f"local model {name!r} is at revision {entry['revision']}, not {revision!r}"
            )
        resolved = ResolvedModel(
            name=name,
            source="local",
            revision=entry["revision"],
            path=entry["path"],
            model_type=_check_type(model_type, entry["model_type"], name),
            license=entry.get("license"),
            parameters=entry.get("parameters"),
            has_chat_template=entry.get("has_chat_template"),
        )
    elif (endpoint := EndpointRegistry(registry.path.parent).get(name)) is not None:
        # an operator-registered OpenAI-compatible endpoint: no files, no pinned weights; the served
        # model id is its revision (the ids the endpoint reports are recorded with the run)
        if model_type not in ("auto", "generative"):
            raise ModelError(
                f"{name} is an OpenAI-compatible chat endpoint: a generative model, not {model_type}"
            )
        resolved = ResolvedModel(
            name=name,
            source="endpoint",
            revision=f"endpoint:{endpoint.model}",
            model_type="generative",
            has_chat_template=True,
            extra={"served_model": endpoint.model, "logprobs": endpoint.logprobs},
        )
    else:
        resolved = resolve_hub_model(name, revision, model_type)
    if resolved.model_type == "generative" and resolved.has_chat_template is False:
        raise ModelError(f"{name} has no chat template; generative models are prompted as chats")
    return resolved


def resolve_hub_model(repo_id: str, revision: str | None, model_type: str) -> ResolvedModel:
    try:
        info = hub.model_info(repo_id, revision)
    except hub.HubRefused as refused:
        raise ModelError(
            {
                "invalid": f"{repo_id!r} is neither a registered local model nor a valid Hub id ({refused.detail})",
                "revision": f"{repo_id} has no revision {revision!r} on the Hub",
                "gated": f"{repo_id} is gated on the Hub; the service evaluates only openly downloadable models",
                "not_found": f"no model {repo_id!r} on the Hub, and no local model registered under that name",
            }.get(refused.reason, f"the Hub refused {repo_id}: {refused.detail}")
        ) from None
    config = info.config or {}
    if config.get("auto_map"):
        raise ModelError(f"{repo_id} needs remote code (auto_map), which the service does not run")
    siblings = {s.rfilename for s in (info.siblings or [])}
    has_template = "chat_template.jinja" in siblings or bool(
        (config.get("tokenizer_config") or {}).get("chat_template")
    )
    card = info.card_data.to_dict() if getattr(info, "card_data", None) else {}
    parameters = getattr(getattr(info, "safetensors", None), "total", None)
    return ResolvedModel(
        name=repo_id,
        source="hub",
        revision=info.sha,
        model_type=_check_type(model_type, model_type_from_config(config), repo_id),
        license=card.get("license"),
        parameters=parameters,
        has_chat_template=has_template,
    )


def download_hub_model(resolved: ResolvedModel) -> str:
    """The worker's copy of a Hub model at its pinned commit (cached by huggingface_hub)."""
    from evaluator.phases import DOWNLOADING, report_phase

    report_phase(DOWNLOADING)
    return hub.download_model(resolved.name, resolved.revision)
