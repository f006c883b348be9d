"""Service configuration, read once from the environment.

Every process of the service (web app, RQ workers, CLI) reads the same variables, so a worker
started on another node only needs PERSONABOARD_DATA_DIR (a shared folder) and
PERSONABOARD_REDIS_URL to join.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from backend.redis_server import redis_url

QUEUE_NAME = "personaboard"


@dataclass(frozen=True)
class Settings:
    host: str
    port: int
    data_dir: Path
    redis_url: str
    redis_port: int
    redis_host: str  # the address the service's own Redis binds: loopback unless a password is set
    redis_password: str | None
    workers: int
    max_upload_bytes: int

    @property
    def submissions_db(self) -> Path:
        return self.data_dir / "submissions.sqlite3"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def store_dir(self) -> Path:
        """The results store: a folder laid out like a Hugging Face Hub dataset repository."""
        return self.data_dir / "results-dataset"

    @property
    def redis_dir(self) -> Path:
        return self.data_dir / "redis"


def load_settings() -> Settings:
    env = os.environ
    data_dir = Path(env.get("PERSONABOARD_DATA_DIR", "./var")).resolve()
    redis_port = int(env.get("PERSONABOARD_REDIS_PORT", "6389"))
    redis_host = env.get("PERSONABOARD_REDIS_HOST", "127.0.0.1")
    redis_password = env.get("PERSONABOARD_REDIS_PASSWORD") or None
    return Settings(
        host=env.get("PERSONABOARD_HOST", "127.0.0.1"),
        port=int(env.get("PERSONABOARD_PORT", "7860")),
        data_dir=data_dir,
        redis_url=env.get("PERSONABOARD_REDIS_URL") or redis_url(redis_host, redis_port, redis_password),
        redis_port=redis_port,
        redis_host=redis_host,
        redis_password=redis_password,
        workers=int(env.get("PERSONABOARD_WORKERS", "2")),
        max_upload_bytes=int(env.get("PERSONABOARD_MAX_UPLOAD_BYTES", str(64 * 1024 * 1024))),
    )
