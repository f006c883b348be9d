"""The submissions layer's configuration (records, uploads, queue), read from the environment.

A worker started on another node needs only PERSONABOARD_DATA_DIR (a shared folder) and
PERSONABOARD_REDIS_URL to join.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from evaluator.settings import data_dir
from leaderboard.settings import LeaderboardSettings
from submissions.quotas import QuotaLimits

QUEUE_NAME = "personaboard"
DEFAULT_REDIS_PORT = 6389
# Fault injection for the worker-kill tests: a job, once marked running, waits until this file exists
# (the test opens the gate after killing the worker), so the kill lands mid-job by construction.
FAULT_GATE_ENV = "PERSONABOARD_TEST_JOB_GATE"
WORKER_REMOTE_ENV = "PERSONABOARD_WORKER_REMOTE"  # set by `personaboard worker`


def redis_url(host: str, port: int, password: str | None = None) -> str:
    """The URL clients use; a server bound to every address is reached on the loopback one."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    auth = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{host}:{port}/0"


@dataclass(frozen=True)
class SubmissionSettings(LeaderboardSettings):
    redis_url: str = f"redis://127.0.0.1:{DEFAULT_REDIS_PORT}/0"
    redis_port: int = DEFAULT_REDIS_PORT
    redis_host: str = (
        "127.0.0.1"  # the address the service's own Redis binds: loopback unless a password is set
    )
    redis_password: str | None = None
    max_upload_bytes: int = 64 * 1024 * 1024
    job_gate: Path | None = None
    quotas: QuotaLimits = (
        QuotaLimits()
    )  # per identity, suite and UTC day; `personaboard users quota` overrides
    # a worker on another machine: no access to the web node's disk; state through Redis (submissions/remote.py)
    worker_remote: bool = False

    @property
    def submissions_db(self) -> Path:
        return self.data_dir / "submissions.sqlite3"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"


def load_submission_settings() -> SubmissionSettings:
    env = os.environ
    port = int(env.get("PERSONABOARD_REDIS_PORT", str(DEFAULT_REDIS_PORT)))
    host = env.get("PERSONABOARD_REDIS_HOST", "127.0.0.1")
    password = env.get("PERSONABOARD_REDIS_PASSWORD") or None
    return SubmissionSettings(
        data_dir=data_dir(),
        redis_url=env.get("PERSONABOARD_REDIS_URL") or redis_url(host, port, password),
        redis_port=port,
        redis_host=host,
        redis_password=password,
        max_upload_bytes=int(env.get("PERSONABOARD_MAX_UPLOAD_BYTES", str(64 * 1024 * 1024))),
        job_gate=Path(env[FAULT_GATE_ENV]) if env.get(FAULT_GATE_ENV) else None,
        quotas=QuotaLimits(
            predictions=int(env.get("PERSONABOARD_QUOTA_PREDICTIONS", QuotaLimits.predictions)),
            model=int(env.get("PERSONABOARD_QUOTA_MODEL_RUNS", QuotaLimits.model)),
            failed_validations=int(
                env.get("PERSONABOARD_QUOTA_FAILED_VALIDATIONS", QuotaLimits.failed_validations)
            ),
            comparisons=int(env.get("PERSONABOARD_QUOTA_COMPARISONS", QuotaLimits.comparisons)),
        ),
        worker_remote=env.get(WORKER_REMOTE_ENV, "").lower() in ("1", "true", "yes"),
    )
