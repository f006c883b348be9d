"""Service configuration: the web layer's own variables, composed with the lower layers' settings.

Each layer reads its own variables (evaluator/settings.py, leaderboard/settings.py,
submissions/settings.py: data folder, records, queue and Redis); this module adds what only the
web node and the supervisor need (address, worker count) and is the one object the app and
`make serve` read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from submissions.settings import QUEUE_NAME, SubmissionSettings, load_submission_settings  # noqa: F401
from submissions.upload_budget import UploadLimits

DEFAULT_WEB_APP = "backend.app:create_app"


@dataclass(frozen=True)
class Settings(SubmissionSettings):
    host: str = "127.0.0.1"
    port: int = 7860
    workers: int = 2
    health_port: int | None = None  # GET /api/v1/health also on this port, off the web port's queue
    # per identity on the UI's upload route (submissions/upload_budget.py); 0 turns one off
    upload_limits: UploadLimits = UploadLimits()
    # an upload never submitted is removed after this long: with the sweep's interval under an
    # hour, the disk an identity can hold in uploads is at most its bytes-per-hour budget
    upload_max_age_s: int = 1800

    @property
    def redis_dir(self) -> Path:
        return self.data_dir / "redis"


def load_settings() -> Settings:
    env = os.environ
    lower = load_submission_settings()
    return Settings(
        **{f.name: getattr(lower, f.name) for f in fields(lower)},
        host=env.get("PERSONABOARD_HOST", "127.0.0.1"),
        port=int(env.get("PERSONABOARD_PORT", "7860")),
        workers=int(env.get("PERSONABOARD_WORKERS", "2")),
        health_port=int(env["PERSONABOARD_HEALTH_PORT"])
        if env.get("PERSONABOARD_HEALTH_PORT")
        else None,
        upload_limits=UploadLimits(
            per_hour=_count(env, "PERSONABOARD_UPLOAD_PER_HOUR", UploadLimits.per_hour),
            bytes_per_hour=_count(
                env, "PERSONABOARD_UPLOAD_BYTES_PER_HOUR", UploadLimits.bytes_per_hour
            ),
            per_minute=_count(env, "PERSONABOARD_UPLOAD_PER_MINUTE", UploadLimits.per_minute),
        ),
        upload_max_age_s=_count(env, "PERSONABOARD_UPLOAD_MAX_AGE_S", 1800, least=60),
    )


def _count(env, key: str, default: int, least: int = 0) -> int:
    """A whole number >= `least` from `key`, or a start-up error naming the variable."""
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = least - 1
    if value < least:
        raise ValueError(f"{key} must be a whole number >= {least}, not {raw!r}")
    return value


def web_app(env=None) -> str:
    """The uvicorn app factory to serve: PERSONABOARD_WEB_APP overrides it (the tests use a stub)."""
    return (os.environ if env is None else env).get("PERSONABOARD_WEB_APP") or DEFAULT_WEB_APP


def redis_server_override() -> str | None:
    """A redis-server binary to use instead of the one found on PATH (PERSONABOARD_REDIS_SERVER)."""
    return os.environ.get("PERSONABOARD_REDIS_SERVER") or None
