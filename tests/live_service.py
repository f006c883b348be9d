"""A live service for tests: a real redis-server, RQ workers and the web app on free ports.

A plain module (not conftest.py) so test modules can import it: `import conftest` may name
tests/unit/conftest.py when both folders are collected in one process.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from backend import processes
from backend.redis_server import RedisServer, log_tail

WEB_START_TIMEOUT = float(os.environ.get("PERSONABOARD_TEST_WEB_TIMEOUT", "180"))


@dataclass
class LiveService:
    """A running service. `workers` holds the current worker Popens (index = worker slot)."""

    base_url: str
    redis_url: str
    data_dir: Path
    env: dict
    redis: RedisServer
    web: subprocess.Popen
    web_port: int
    log_dir: Path
    workers: list[subprocess.Popen] = field(default_factory=list)
    token: str = ""  # API token of "tester", a plain user with quotas large enough for any test
    admin_token: str = ""  # API token of "operator", an admin
    _retired: list[subprocess.Popen] = field(default_factory=list)

    # -- web -------------------------------------------------------------------------------
    def http(self, timeout: float = 60.0, token: str | None = None):
        """An httpx client of the service that submits as "tester" (or with `token`; "" = anonymous)."""
        from live_helpers import client

        return client(self.base_url, timeout, token=self.token if token is None else token)

    def add_user(self, name: str, role: str = "user", **quotas: int) -> str:
        """Another identity (quota overrides as in `personaboard users quota`); returns its API token."""
        from submissions.identity import IdentityStore
        from submissions.records import SubmissionStore

        identities = IdentityStore(SubmissionStore(self.data_dir / "submissions.sqlite3"))
        identities.add_user(name, role)
        if quotas:
            identities.set_quotas(name, **quotas)
        return identities.issue_token(name)[1]

    def url(self, path: str = "/") -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    def start_web(self) -> None:
        log = self.log_dir / "web.log"
        self.web = processes.start_web("127.0.0.1", self.web_port, self.env, log_path=log)
        processes.wait_http(self.base_url, timeout=WEB_START_TIMEOUT, proc=self.web, log_path=log)

    def stop_web(self) -> None:
        processes.stop_process(self.web, timeout=20)

    def restart_web(self) -> None:
        """Stop the web app (SIGTERM) and start it again on the same port and data dir."""
        self.stop_web()
        self.start_web()

    # -- workers ---------------------------------------------------------------------------
    def start_worker(self) -> subprocess.Popen:
        i = len(self.workers) + len(self._retired)
        proc = processes.start_worker(
            self.redis_url, self.env, log_path=self.log_dir / f"worker-{i}.log"
        )
        self.workers.append(proc)
        return proc

    def kill_worker(self, i: int = 0) -> subprocess.Popen:
        """SIGKILL worker i and its whole process group (its work-horse too); it leaves self.workers."""
        proc = self.workers.pop(i)
        processes.kill_group(proc)
        self._retired.append(proc)
        return proc

    def registered_workers(self) -> list:
        """rq Worker objects registered in Redis (a SIGKILLed one stays until its registration expires)."""
        from rq import Worker

        return Worker.all(connection=self.redis_client())

    def wait_workers_registered(self, timeout: float = 60.0) -> None:
        """Wait until every live worker in self.workers has registered with Redis."""
        deadline = time.monotonic() + timeout
        while True:
            pids = {w.pid for w in self.registered_workers()}
            missing = [p for p in self.workers if p.pid not in pids]
            if not missing:
                return
            for p in missing:
                if p.poll() is not None:
                    raise RuntimeError(
                        f"worker pid {p.pid} exited with code {p.returncode}:\n{self.logs()}"
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"workers {[p.pid for p in missing]} did not register:\n{self.logs()}"
                )
            time.sleep(0.2)

    # -- misc ------------------------------------------------------------------------------
    def redis_client(self):
        import redis

        return redis.Redis.from_url(self.redis_url)

    def logs(self, lines: int = 30) -> str:
        """Tails of every log (web, workers, redis): handy in assertion messages."""
        parts = []
        for path in sorted(self.log_dir.glob("*.log")) + [self.redis.logfile]:
            parts.append(f"--- {path.name}\n{log_tail(path, lines)}")
        return "\n".join(parts)

    def stop(self) -> None:
        processes.stop_process(self.web, timeout=20)
        processes.stop_processes(self.workers + self._retired, timeout=20)
        self.redis.stop(timeout=20)


def create_test_users(data_dir: Path) -> tuple[str, str]:
    """The identities the tests submit with: "tester" (a user whose quotas no test reaches) and
    "operator" (an admin). Returns their API tokens."""
    from submissions.identity import IdentityStore
    from submissions.records import SubmissionStore

    identities = IdentityStore(SubmissionStore(data_dir / "submissions.sqlite3"))
    identities.add_user("tester")
    identities.set_quotas("tester", predictions=100_000, model=100_000, failed_validations=100_000)
    identities.add_user("operator", role="admin")
    return identities.issue_token("tester")[1], identities.issue_token("operator")[1]


# Seconds each live service of this process took to start (Redis, workers, web app answering):
# the terminal summary counts them, as start-ups are where a shared service saves time.
LIVE_SERVICE_STARTUPS: list[float] = []


def start_live_service(
    root: Path, n_workers: int = 1, extra_env: dict[str, str] | None = None
) -> LiveService:
    """Redis + workers + web app under `root` (data in root/data, logs in root/logs); `extra_env`
    is added to every process's environment (e.g. a Space's variables, a policy's budget).

    One worker unless a test asks for more: each costs ~2 CPU s to start (imports, split preload)
    on a 2-core machine whose suite is CPU-bound, and a test's jobs run one after another anyway."""
    started = time.monotonic()
    data_dir = root / "data"
    log_dir = root / "logs"
    data_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    redis = processes.start_redis(processes.free_port(), data_dir / "redis")
    # The tests' "tester" uploads through the UI far faster than a person: the per-identity upload
    # budgets are off unless a test sets them (tests/test_space_sessions.py checks them).
    budgets_off = {"PERSONABOARD_UPLOAD_PER_MINUTE": "0", "PERSONABOARD_UPLOAD_PER_HOUR": "0"}
    env = processes.child_env(data_dir, redis.url, extra={**budgets_off, **(extra_env or {})})
    web_port = processes.free_port()
    token, admin_token = create_test_users(data_dir)
    svc = LiveService(
        base_url=processes.base_url("127.0.0.1", web_port),
        redis_url=redis.url,
        data_dir=data_dir,
        env=env,
        redis=redis,
        web=None,
        web_port=web_port,
        log_dir=log_dir,  # type: ignore[arg-type]
        token=token,
        admin_token=admin_token,
    )
    try:
        for _ in range(n_workers):
            svc.start_worker()
        svc.start_web()
        svc.wait_workers_registered()
    except BaseException:
        svc.stop()
        raise
    LIVE_SERVICE_STARTUPS.append(time.monotonic() - started)
    return svc
