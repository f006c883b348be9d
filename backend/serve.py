"""Supervisor behind `make serve`: Redis, N RQ workers and the web app, kept running until a signal.

    python -m backend.serve          # settings from PERSONABOARD_* (see backend/settings.py)

Start order: Redis (append-only file in DATA_DIR/redis), workers, web. Any child that dies (Redis,
the web app, a worker) is started again, with exponential backoff per child (1 s doubling to 30 s,
back to 1 s once it has run for a minute), so a crash loop costs little and a single crash is
repaired within about a second. Nothing accepted is lost meanwhile: a submission is recorded in
SQLite before it is queued, Redis reloads its append-only file, and the web app's reconciler
re-queues any accepted submission whose job Redis does not have.

The current PIDs are in DATA_DIR/run/supervisor.json (for operators and the fault tests).
On SIGINT/SIGTERM: web, workers, then Redis last, so every write reaches the append-only file;
the exit code is 0.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlparse

from backend.processes import (
    base_url,
    child_env,
    start_redis,
    start_web,
    start_worker,
    stop_process,
    stop_processes,
    wait_http,
)
from backend.settings import load_settings
from leaderboard.results import configuration_problem

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 60.0  # a child that ran this long before dying starts again after BACKOFF_FIRST_S
POLL_S = 0.25


def log(msg: str) -> None:
    print(f"[serve {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class Child:
    """One supervised process: how to start it, and when it may be started again."""

    name: str
    start: Callable[[], Any]  # returns a Popen, or an object with .proc (RedisServer)
    handle: Any = None
    started_at: float = 0.0
    backoff_s: float = BACKOFF_FIRST_S
    restart_at: float | None = None  # set while dead and waiting for its backoff
    restarts: int = 0
    history: list = field(default_factory=list)

    @property
    def proc(self):
        return getattr(self.handle, "proc", self.handle)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def dead(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def launch(self) -> None:
        self.handle = self.start()
        self.started_at = time.monotonic()
        self.restart_at = None

    def tend(self, now: float) -> str | None:
        """Restart when dead and its backoff has passed; returns a line for the log, if any."""
        if not self.dead():
            return None
        if self.restart_at is None:  # just found dead
            code = self.proc.returncode if self.proc is not None else None
            if self.proc is not None and now - self.started_at >= STABLE_AFTER_S:
                self.backoff_s = BACKOFF_FIRST_S
            self.restart_at = now + self.backoff_s
            return f"{self.name} (pid {self.pid}) exited with code {code}; restarting in {self.backoff_s:.0f} s"
        if now < self.restart_at:
            return None
        self.backoff_s = min(self.backoff_s * 2, BACKOFF_MAX_S)
        try:
            self.launch()
        except Exception as exc:  # noqa: BLE001 - e.g. the port still held: try again after the backoff
            self.restart_at = now + self.backoff_s
            return f"{self.name} failed to start ({exc}); trying again in {self.backoff_s:.0f} s"
        self.restarts += 1
        return f"{self.name} restarted as pid {self.pid} (restart {self.restarts})"


def write_pids(path, children: list[Child]) -> None:
    """DATA_DIR/run/supervisor.json: the PID of every child now (written atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "supervisor": os.getpid(),
        **{c.name: c.pid for c in children},
        "restarts": {c.name: c.restarts for c in children},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def main() -> int:
    settings = load_settings()
    if (
        problem := configuration_problem()
    ):  # e.g. a Hub results repo in offline mode: say so, do not loop restarting
        print(f"error: {problem}", file=sys.stderr)
        return 2
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    received: list[str] = []

    def on_signal(signum, _frame):  # no printing here: a signal can land in the middle of a print
        received.append(signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    env = child_env(settings.data_dir, settings.redis_url)
    parsed = urlparse(settings.redis_url)
    redis = None
    if parsed.hostname in LOCAL_HOSTS:
        redis = Child(
            "redis",
            lambda: start_redis(
                parsed.port or settings.redis_port,
                settings.redis_dir,
                host=settings.redis_host,
                password=settings.redis_password,
            ),
        )
    workers = [
        Child(f"worker-{i}", lambda: start_worker(settings.redis_url, env))
        for i in range(settings.workers)
    ]
    web = Child("web", lambda: start_web(settings.host, settings.port, env))
    children = [c for c in (redis, *workers, web) if c is not None]
    pids_file = settings.data_dir / "run" / "supervisor.json"
    code = 0
    try:
        if redis is not None:
            redis.launch()
            log(
                f"redis pid {redis.pid} on {settings.redis_host}:{redis.handle.port}"
                f"{' (password required)' if settings.redis_password else ''}, append-only file in {settings.redis_dir}"
            )
        else:
            log(
                f"using external Redis at {parsed.hostname}:{parsed.port}"
            )  # the URL may hold a password
        for worker in workers:
            worker.launch()
            log(f"{worker.name} pid {worker.pid}")
        web.launch()
        write_pids(pids_file, children)
        url = base_url(settings.host, settings.port)
        wait_http(url, timeout=180, proc=web.proc, abort=stop.is_set)
        if not stop.is_set():
            log(f"PersonaBoard is up: {url}/  (data in {settings.data_dir}; Ctrl-C stops)")

        while not stop.wait(POLL_S):
            now = time.monotonic()
            changed = False
            for child in children:
                pid = child.pid
                line = child.tend(now)
                if line:
                    log(line)
                changed = changed or child.pid != pid
            if changed:
                write_pids(pids_file, children)
    except Exception as exc:  # a child failed its first start: report it, then clean up below
        log(f"error: {exc}")
        code = 1
    finally:
        if received:
            log(f"{received[0]} received, shutting down")
        log("stopping web app")
        stop_process(web.proc, timeout=20)
        log("stopping workers")
        stop_processes([w.proc for w in workers], timeout=30)
        if redis is not None and redis.handle is not None:
            log("stopping redis (append-only file is flushed on exit)")
            redis.handle.stop(timeout=30)
        log("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
