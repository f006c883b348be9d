"""Models behind an OpenAI-compatible endpoint (a vLLM server, a hosted provider) that the operator registered.

The operator registers an endpoint once (`personaboard endpoints add NAME --base-url URL --model ID
[--api-key-env VAR] ...`); submitters then name it like any registered model. The registry file
holds no secret: only the NAME of the environment variable that holds the key, which the worker
reads when it calls the endpoint. So a key is in the operator's settings (the environment), never
in the registry, a submission record, a result or a log line.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class EndpointError(ValueError):
    pass


class PublicEndpoint(TypedDict):
    """What a result records of an endpoint (EndpointConfig.public)."""

    endpoint: str  # its registered name
    served_model: str  # the model id it is asked for


@dataclass(frozen=True)
class EndpointConfig:
    """How to reach and pace one endpoint. Prices are per million tokens (0: not recorded as a cost)."""

    name: str
    base_url: str  # e.g. http://127.0.0.1:8000/v1
    model: str  # the model id the endpoint serves
    api_key_env: str | None = None  # the environment variable holding the key (None: no key)
    logprobs: bool = (
        True  # the endpoint returns top log-probabilities (else: generate-and-parse only)
    )
    requests_per_minute: float = 600.0
    max_concurrency: int = 4
    max_retries: int = 5  # retries with exponential backoff on 429, 5xx and connection errors
    timeout_s: float = 120.0
    context_window: int | None = None
    price_input_per_million: float = 0.0
    price_output_per_million: float = 0.0
    added_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def api_key(self) -> str:
        """The key from the environment, read at call time (never stored)."""
        if not self.api_key_env:
            return "none"  # the client library insists on a string; keyless local servers ignore it
        key = os.environ.get(self.api_key_env)
        if not key:
            raise EndpointError(
                f"endpoint {self.name!r} needs its key in the environment variable "
                f"{self.api_key_env}, which is not set on this worker"
            )
        return key

    def public(self) -> PublicEndpoint:
        """What a result may record about the endpoint: no URL (it may be private), no key."""
        return {"endpoint": self.name, "served_model": self.model}


def check_config(config: EndpointConfig) -> EndpointConfig:
    if not re.match(r"^https?://[^\s]+$", config.base_url):
        raise EndpointError(f"base_url must be an http(s) URL, not {config.base_url!r}")
    if "@" in config.base_url.split("//", 1)[1].split("/", 1)[0]:
        raise EndpointError(
            "base_url must not carry credentials; put the key in an environment variable "
            "and give its name with --api-key-env"
        )
    if config.api_key_env is not None and not ENV_NAME.match(config.api_key_env):
        raise EndpointError(
            f"api_key_env must name an environment variable (A-Z, 0-9, _), not {config.api_key_env!r}; "
            "the key itself is never registered"
        )
    if not config.model.strip():
        raise EndpointError("model (the id the endpoint serves) is required")
    if config.requests_per_minute <= 0 or config.max_concurrency < 1 or config.max_retries < 0:
        raise EndpointError(
            "requests_per_minute must be > 0, max_concurrency >= 1, max_retries >= 0"
        )
    return config


def endpoint_backend(name: str, data_dir: Path):
    """The backend for a registered endpoint (the key read from the environment now)."""
    from evaluator.backends.base import BackendError
    from evaluator.backends.openai_endpoint import EndpointBackend

    config = EndpointRegistry(data_dir).get(name)
    if config is None:
        raise BackendError(f"{name!r} is not an endpoint registered on this server")
    try:
        return EndpointBackend(config)
    except EndpointError as exc:
        raise BackendError(str(exc)) from None


def _config(entry: dict[str, Any]) -> EndpointConfig:
    """A stored entry as a config (the fields it knows; `added_at` and the like are the file's own)."""
    known = {f.name for f in fields(EndpointConfig)}
    return EndpointConfig(**{k: v for k, v in entry.items() if k in known})


class EndpointRegistry:
    """The operator's endpoints, `endpoints.json` in the data folder (beside models.json)."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / "endpoints.json"

    def _read(self) -> dict[str, dict]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def get(self, name: str) -> EndpointConfig | None:
        entry = self._read().get(name)
        return None if entry is None else _config(entry)

    def all(self) -> dict[str, EndpointConfig]:
        return {name: _config(entry) for name, entry in self._read().items()}

    def add(self, config: EndpointConfig) -> EndpointConfig:
        config = check_config(config)
        entry = asdict(config)
        entry["added_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            endpoints = self._read()
            endpoints[config.name] = entry
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(endpoints, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
        return _config(entry)
