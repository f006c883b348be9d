"""Start and stop the service's processes: Redis, RQ workers, the web app.

Used by the supervisor (`python -m backend.serve`) and by the test fixtures (tests/conftest.py),
so both run exactly the same command lines. Every child runs in its own session (process group):
a terminal's Ctrl-C reaches only the supervisor, which stops the children in order, and a test
can SIGKILL a worker together with its work-horse. On Linux every child also gets SIGTERM if the
process that started it dies (PR_SET_PDEATHSIG), so nothing outlives a killed supervisor or test.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Mapping

from backend.redis_server import RedisServer, log_tail, start_redis_server
from backend.settings import web_app
from submissions.hardware import worker_queues

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HEALTH_PATH = "/api/v1/health"

# Faster detection of dead workers than RQ's defaults (see shared/docs/ENVIRONMENT.md): a 20 s
# worker TTL, and maintenance and job monitoring every 5 s (TTL - 15, when an idle worker's wait
# for a job times out). The tests shorten them with PERSONABOARD_WORKER_TTL (tests/conftest.py).
WORKER_TTL_ENV = "PERSONABOARD_WORKER_TTL"
DEFAULT_WORKER_TTL_S = 20


def worker_timing_args(env: Mapping[str, str] | None = None) -> list[str]:
    """RQ's worker TTL, maintenance and job-monitoring intervals from PERSONABOARD_WORKER_TTL."""
    ttl = int((os.environ if env is None else env).get(WORKER_TTL_ENV) or DEFAULT_WORKER_TTL_S)
    interval = max(1, ttl - 15)  # RQ waits ttl - 15 s for a job (at least 1) before maintenance
    return [
        "--worker-ttl",
        str(ttl),
        "--maintenance-interval",
        str(interval),
        "--job-monitoring-interval",
        str(interval),
    ]


# Imports the job code once per worker, not once per job (submissions/worker.py).
WORKER_CLASS = "submissions.worker.PreloadWorker"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def child_env(
    data_dir: Path | str,
    redis_url: str,
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment every child gets: the parent's, plus the service's own variables."""
    env = dict(os.environ if base is None else base)
    env["PERSONABOARD_DATA_DIR"] = str(Path(data_dir).resolve())
    env["PERSONABOARD_REDIS_URL"] = redis_url
    env.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    env.setdefault(
        "HF_HUB_DISABLE_TELEMETRY", "1"
    )  # offline or not is the caller's choice (tests: offline)
    env.setdefault("PYTHONUNBUFFERED", "1")
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(PROJECT_ROOT) not in paths:
        paths.insert(0, str(PROJECT_ROOT))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def _die_with_parent() -> None:
    """preexec_fn: ask Linux to SIGTERM this child when the thread that started it exits."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1 == PR_SET_PDEATHSIG
    except Exception:
        pass


def _popen(
    argv: list[str], env: Mapping[str, str] | None, log_path: Path | str | None
) -> subprocess.Popen:
    """Popen in a new session; output appended to log_path, or inherited when it is None."""
    out = None
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        out = open(log_path, "ab")
    try:
        return subprocess.Popen(
            argv,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    finally:
        if out is not None:
            out.close()  # the child holds its own descriptor


def start_redis(
    port: int,
    redis_dir: Path | str,
    host: str = "127.0.0.1",
    timeout: float = 20.0,
    password: str | None = None,
) -> RedisServer:
    """Redis with append-only persistence in redis_dir; returns once it answers PING.
    Bound to 127.0.0.1 unless `host` says otherwise, which then needs a password."""
    return start_redis_server(
        port,
        redis_dir,
        host=host,
        timeout=timeout,
        password=password,
        popen_kwargs={
            "start_new_session": True,
            "preexec_fn": _die_with_parent if sys.platform.startswith("linux") else None,
        },
    )


def cuda_memory_gib() -> int | None:
    """The first CUDA device's memory in GiB, or None without torch or a GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return int(torch.cuda.get_device_properties(0).total_memory // 2**30)


def queues_for(env: Mapping[str, str], remote: bool) -> list[str]:
    """A worker's queues from PERSONABOARD_WORKER_HARDWARE (web | cpu, the default | gpu) and, for a
    GPU, PERSONABOARD_GPU_MEMORY_GB (else the device's); ValueError with the reason when unclear."""
    hardware = env.get("PERSONABOARD_WORKER_HARDWARE") or "cpu"
    if hardware == "web" and remote:
        raise ValueError(
            "a worker on another machine cannot serve the web node's own queue (its files live there)"
        )
    gib = int(env["PERSONABOARD_GPU_MEMORY_GB"]) if env.get("PERSONABOARD_GPU_MEMORY_GB") else None
    if hardware == "gpu" and gib is None:
        gib = cuda_memory_gib()
        if gib is None:
            raise ValueError(
                "a GPU worker found no CUDA device: run it with --gpus all, or set PERSONABOARD_GPU_MEMORY_GB"
            )
    return worker_queues(hardware, gib, web_node=not remote)


def worker_argv(
    name: str | None = None,
    queues: list[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The worker's command line; the Redis URL (it may hold a password) travels in RQ_REDIS_URL.
    Default queues: the web node's own and the CPU queue (submissions/hardware.py); `env` (else this
    process's environment) may shorten the worker's timings."""
    argv = [
        sys.executable,
        "-m",
        "rq.cli",
        "worker",
        *worker_timing_args(env),
        "--with-scheduler",
        "--worker-class",
        WORKER_CLASS,
    ]
    if name:
        argv += ["--name", name]
    return argv + (queues or worker_queues("cpu", web_node=True))


def start_worker(
    redis_url: str,
    env: Mapping[str, str] | None = None,
    log_path: Path | str | None = None,
    name: str | None = None,
) -> subprocess.Popen:
    """A forking RQ worker on the service's queue, leader of its own process group."""
    env = {**(os.environ if env is None else env), "RQ_REDIS_URL": redis_url}
    return _popen(worker_argv(name, queues_for(env, remote=False), env), env, log_path)


def web_argv(host: str, port: int, app: str | None = None) -> list[str]:
    """uvicorn on an app factory: PERSONABOARD_WEB_APP overrides it (the tests use a stub)."""
    app = app or web_app()
    return [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        "--factory",
        "--host",
        host,
        "--port",
        str(port),
        "--log-level",
        "info",
    ]


def start_web(
    host: str,
    port: int,
    env: Mapping[str, str] | None = None,
    log_path: Path | str | None = None,
    app: str | None = None,
) -> subprocess.Popen:
    app = app or web_app(env)
    return _popen(web_argv(host, port, app), env, log_path)


def base_url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "", "::"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_status(url: str, timeout: float = 5.0) -> int | None:
    """Status code of GET url (never through a proxy), or None when nothing answers."""
    try:
        with _NO_PROXY.open(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


def wait_http(
    base: str,
    timeout: float = 120.0,
    proc: subprocess.Popen | None = None,
    log_path: Path | str | None = None,
    abort: Callable[[], bool] | None = None,
) -> None:
    """Poll GET {base}/api/v1/health until it returns 200.

    Fails early when `proc` (the server) exits; `abort()` returning True stops the wait quietly
    (the supervisor uses it when it is asked to shut down while the app is still starting).
    """
    url = base.rstrip("/") + HEALTH_PATH
    deadline = time.monotonic() + timeout
    last = None
    while True:
        if abort is not None and abort():
            return
        if proc is not None and proc.poll() is not None:
            tail = f"; log tail:\n{log_tail(Path(log_path), 40)}" if log_path else ""
            raise RuntimeError(
                f"web server exited with code {proc.returncode} before {url} answered{tail}"
            )
        last = http_status(url, timeout=5)
        if last == 200:
            return
        if time.monotonic() > deadline:
            tail = f"; log tail:\n{log_tail(Path(log_path), 40)}" if log_path else ""
            raise TimeoutError(
                f"{url} did not return 200 within {timeout:.0f}s (last status {last}){tail}"
            )
        time.sleep(0.25)


def _leads_group(proc: subprocess.Popen) -> bool:
    try:
        return os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        return False


def _exited_unreaped(pid: int) -> bool:
    """True once pid has exited; it stays a zombie (so neither its PID nor its group ID can be reused)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # already reaped
    return info is not None


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, state first (so ppid is [1], session
    [3], utime and stime [11] and [12], start time [19]); None when the process is gone or there is
    no /proc. The name is cut at the last ")": it may itself hold spaces and parentheses."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def session_members(sid: int) -> list[int]:
    """PIDs whose session ID is sid (from /proc; Linux only, else empty)."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        fields = proc_stat(entry) if entry.isdigit() else None
        if fields and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def _kill_tree(leader: int) -> None:
    """SIGKILL the session led by `leader`: its group, plus groups made inside it.

    RQ's work-horse calls setpgrp(), so killing the worker's group alone would orphan a running
    job; it stays in the worker's session. Call only while the leader is alive or an unreaped
    zombie, so the session ID cannot belong to anyone else.
    """
    _killpg(leader, signal.SIGKILL)
    for _ in range(3):
        others = [p for p in session_members(leader) if p != leader]
        if not others:
            break
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def send_signal(procs: list[subprocess.Popen], sig: int = signal.SIGTERM) -> None:
    for proc in procs:
        if proc.returncode is None:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass


def stop_processes(procs: list[subprocess.Popen], timeout: float = 20.0) -> None:
    """SIGTERM each leader, wait up to `timeout` in all, then SIGKILL what is left (and its group).

    A leader is waited for without being reaped, so its process group and session can be swept
    with SIGKILL (e.g. a worker's orphaned work-horse) before its PID is released.
    """
    procs = [p for p in procs if p is not None]
    groups = {p.pid: _leads_group(p) for p in procs if p.returncode is None}
    send_signal(procs, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    pending = [p for p in procs if p.returncode is None]
    while pending and time.monotonic() < deadline:
        pending = [p for p in pending if not _exited_unreaped(p.pid)]
        if pending:
            time.sleep(0.05)
    for proc in procs:
        if proc.returncode is not None:
            continue
        if groups.get(proc.pid):
            # The leader is alive or a zombie, so its group/session ID is still ours: sweep stragglers.
            _kill_tree(proc.pid)
        if not _exited_unreaped(proc.pid):
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def stop_process(proc: subprocess.Popen | None, timeout: float = 20.0) -> int | None:
    """Stop one child by PID: SIGTERM, then SIGKILL to it and its process group after `timeout`."""
    if proc is None:
        return None
    stop_processes([proc], timeout)
    return proc.returncode


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child and everything in its process group and session (fault injection: a worker
    dies with its work-horse, as on a crashed node), then reap it."""
    if proc.returncode is None:
        if _leads_group(proc):
            _kill_tree(proc.pid)
        else:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait()


def pid_alive(pid: int) -> bool:
    """True when pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = proc_stat(pid)
    return fields is None or fields[0] != "Z"
