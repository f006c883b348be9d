"""One queue worker, exactly as `make serve` starts each of its workers (backend.processes.worker_argv).

    python -m backend.worker        # settings from PERSONABOARD_* (Redis URL, data dir, backend)

The entry command of the worker images (docker/Dockerfile: worker-cpu, worker-gpu): the process
becomes the RQ worker (exec), so the container's SIGTERM reaches RQ, which finishes or requeues
the running job (a warm shutdown), and the container stops when the worker does.
"""
from __future__ import annotations

import os

from backend.processes import child_env, worker_argv
from backend.settings import load_settings


def main() -> None:
    settings = load_settings()
    env = {**child_env(settings.data_dir, settings.redis_url), "RQ_REDIS_URL": settings.redis_url}
    argv = worker_argv(os.environ.get("PERSONABOARD_WORKER_NAME") or None)
    os.execve(argv[0], argv, env)


if __name__ == "__main__":
    main()
