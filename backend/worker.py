"""One queue worker, exactly as `make serve` starts each of its workers (backend.processes.worker_argv).

    python -m backend.worker        # settings from PERSONABOARD_* (Redis URL, data dir, backend)

The entry command of the worker images (docker/Dockerfile: worker-cpu, worker-gpu): the process
becomes the RQ worker (exec), so the container's SIGTERM reaches RQ, which finishes or requeues
the running job (a warm shutdown), and the container stops when the worker does.

Its queues (submissions/hardware.py) follow the image: PERSONABOARD_WORKER_HARDWARE=cpu|gpu, and for
a GPU its memory (PERSONABOARD_GPU_MEMORY_GB, else read from the first CUDA device). Beside the web
node (compose: the same data volume) it also serves the web node's own queue (uploaded files,
locally registered models); with PERSONABOARD_WORKER_REMOTE=1 (another machine, sharing only Redis
and the Hub) it serves the hardware queues only, like `personaboard worker`.
"""

from __future__ import annotations

import os
import sys

from backend.processes import child_env, queues_for, worker_argv
from backend.settings import load_settings
from leaderboard.results import configuration_problem
from leaderboard.settings import load_leaderboard_settings
from submissions.settings import WORKER_REMOTE_ENV


def main() -> int:
    settings = load_settings()
    try:
        queues = queues_for(os.environ, settings.worker_remote)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = load_leaderboard_settings()
    problem = configuration_problem(results) or (
        f"a worker on another machine ({WORKER_REMOTE_ENV}=1) publishes to the Hub: set PERSONABOARD_RESULTS_REPO "
        "and a token (HF_TOKEN)"
        if settings.worker_remote and not results.results_repo
        else None
    )
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    env = {**child_env(settings.data_dir, settings.redis_url), "RQ_REDIS_URL": settings.redis_url}
    argv = worker_argv(os.environ.get("PERSONABOARD_WORKER_NAME") or None, queues)
    print(f"worker on {', '.join(queues)}", file=sys.stderr, flush=True)
    os.execve(argv[0], argv, env)
    return 0  # not reached: the RQ worker replaced this process


if __name__ == "__main__":
    sys.exit(main())
