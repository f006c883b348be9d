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

DEFAULT_WEB_APP = "backend.app:create_app"


@dataclass(frozen=True)
class Settings(SubmissionSettings):
    host: str = "127.0.0.1"
    port: int = 7860
    workers: int = 2
    health_port: int | None = None  # GET /api/v1/health also on this port, off the web port's queue

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
    )


def web_app(env=None) -> str:
    """The uvicorn app factory to serve: PERSONABOARD_WEB_APP overrides it (the tests use a stub)."""
    return (os.environ if env is None else env).get("PERSONABOARD_WEB_APP") or DEFAULT_WEB_APP


def redis_server_override() -> str | None:
    """A redis-server binary to use instead of the one found on PATH (PERSONABOARD_REDIS_SERVER)."""
    return os.environ.get("PERSONABOARD_REDIS_SERVER") or None
