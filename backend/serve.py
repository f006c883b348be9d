"""Supervisor behind `make serve`: Redis, N RQ workers and the web app, stopped cleanly on a signal.

    python -m backend.serve          # settings from PERSONABOARD_* (see backend/settings.py)

Start order: Redis (append-only file in DATA_DIR/redis), workers, web. On SIGINT/SIGTERM: web,
workers, then Redis last, so every write reaches the append-only file; the exit code is 0.
A worker that dies is restarted; if Redis or the web app dies, everything stops (exit code 1).
Running again on the same data dir reloads Redis from its append-only file: nothing is lost.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from urllib.parse import urlparse

from backend.processes import (
    base_url, child_env, start_redis, start_web, start_worker, stop_process, stop_processes, wait_http,
)
from backend.settings import load_settings

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
RESTART_DELAY_S = 5.0  # a worker is restarted at most once per this many seconds


def log(msg: str) -> None:
    print(f"[serve {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main() -> int:
    settings = load_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    received: list[str] = []

    def on_signal(signum, _frame):  # no printing here: a signal can land in the middle of a print
        received.append(signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    redis = web = None
    workers: list = []
    started_at: list[float] = []
    code = 0
    try:
        parsed = urlparse(settings.redis_url)
        if parsed.hostname in LOCAL_HOSTS:
            redis = start_redis(parsed.port or settings.redis_port, settings.redis_dir,
                                host=settings.redis_host, password=settings.redis_password)
            log(f"redis pid {redis.pid} on {settings.redis_host}:{redis.port}"
                f"{' (password required)' if settings.redis_password else ''}, append-only file in {settings.redis_dir}")
        else:
            log(f"using external Redis at {parsed.hostname}:{parsed.port}")  # the URL may hold a password
        env = child_env(settings.data_dir, settings.redis_url)

        for i in range(settings.workers):
            workers.append(start_worker(settings.redis_url, env))
            started_at.append(time.monotonic())
            log(f"worker {i} pid {workers[i].pid}")

        web = start_web(settings.host, settings.port, env)
        url = base_url(settings.host, settings.port)
        wait_http(url, timeout=180, proc=web, abort=stop.is_set)
        if not stop.is_set():
            log(f"PersonaBoard is up: {url}/  (data in {settings.data_dir}; Ctrl-C stops)")

        while not stop.wait(1.0):
            if redis is not None and redis.proc.poll() is not None:
                log(f"redis exited unexpectedly (code {redis.proc.returncode}); stopping")
                code = 1
                break
            if web.poll() is not None:
                log(f"web app exited unexpectedly (code {web.returncode}); stopping")
                code = 1
                break
            for i, proc in enumerate(workers):
                if proc.poll() is not None and time.monotonic() - started_at[i] >= RESTART_DELAY_S:
                    workers[i] = start_worker(settings.redis_url, env)
                    started_at[i] = time.monotonic()
                    log(f"worker {i} (pid {proc.pid}) exited with code {proc.returncode}; "
                        f"restarted as pid {workers[i].pid}")
    except Exception as exc:  # a child failed to start: report it, then clean up below
        log(f"error: {exc}")
        code = 1
    finally:
        if received:
            log(f"{received[0]} received, shutting down")
        log("stopping web app")
        stop_process(web, timeout=20)
        log("stopping workers")
        stop_processes(workers, timeout=30)
        if redis is not None:
            log("stopping redis (append-only file is flushed on exit)")
            redis.stop(timeout=30)
        log("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
