"""Tests of the process plumbing: redis-server, RQ workers, stop/kill by PID, the supervisor."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import redis
from live_helpers import cmdline, descendants, pgid, wait_until
from rq import Queue, Worker

from backend import processes
from backend.redis_server import RedisServerError, find_redis_server
from backend.settings import QUEUE_NAME

pytestmark = pytest.mark.service

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HAVE_APP = (PROJECT_ROOT / "backend" / "app.py").exists()


# --- redis-server ---------------------------------------------------------------------------


def test_redis_binary_found_and_answers_ping(redis_server):
    binary = find_redis_server()
    assert os.access(binary, os.X_OK)
    client = redis.Redis.from_url(redis_server)
    assert client.ping()
    assert client.config_get("appendonly")["appendonly"] == "yes"
    assert client.config_get("save")["save"] == ""


def test_redis_binary_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("PERSONABOARD_REDIS_SERVER", str(tmp_path / "nope"))
    with pytest.raises(RedisServerError, match="PERSONABOARD_REDIS_SERVER"):
        find_redis_server()


def test_redis_start_failure_shows_log(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RedisServerError, match="log tail"):
            processes.start_redis(port, tmp_path / "redis", timeout=10)


def test_redis_binds_loopback_and_needs_a_password_elsewhere(tmp_path):
    import redis as redis_lib

    # default: loopback only, as the running server reports it
    server = processes.start_redis(processes.free_port(), tmp_path / "open")
    try:
        assert server.client().config_get("bind")["bind"] == "127.0.0.1"
    finally:
        server.stop()
    # any other address without a password: refused before anything starts
    with pytest.raises(RedisServerError, match="PERSONABOARD_REDIS_PASSWORD"):
        processes.start_redis(processes.free_port(), tmp_path / "exposed", host="0.0.0.0")
    # with a password: clients without it are refused; the password is not on the command line
    secret = 'pw "with" \\ quotes'
    server = processes.start_redis(
        processes.free_port(), tmp_path / "locked", host="0.0.0.0", password=secret
    )
    try:
        assert server.client().ping()
        assert server.client().config_get("bind")["bind"] == "0.0.0.0"
        with pytest.raises(redis_lib.AuthenticationError):
            redis_lib.Redis(host="127.0.0.1", port=server.port, socket_timeout=5).ping()
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
        assert secret.encode() not in cmdline
        assert (server.dir / "auth.conf").stat().st_mode & 0o077 == 0
    finally:
        server.stop()


def _aof_bytes(redis_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in redis_dir.rglob("*.aof*") if p.is_file())


def _aof_exists(redis_dir: Path) -> bool:
    return (redis_dir / "appendonly.aof").exists() or (redis_dir / "appendonlydir").is_dir()


def test_aof_survives_clean_restart(tmp_path):
    redis_dir = tmp_path / "redis"
    server = processes.start_redis(processes.free_port(), redis_dir)
    client = server.client()
    client.set("survivor", "yes")
    client.rpush("list", *range(100))
    client.close()
    assert server.stop() == 0
    assert not processes.pid_alive(server.pid)
    assert _aof_exists(redis_dir)

    server2 = processes.start_redis(processes.free_port(), redis_dir)
    try:
        client = server2.client()
        assert client.get("survivor") == b"yes"
        assert client.llen("list") == 100
    finally:
        server2.stop()


def test_aof_survives_sigkill(tmp_path):
    redis_dir = tmp_path / "redis"
    server = processes.start_redis(processes.free_port(), redis_dir)
    server.client().set("crash-survivor", "1")
    # The write is in the append-only file (the kernel's, which a SIGKILL does not lose) once its
    # bytes are there: wait for that, not for a second of appendfsync everysec.
    deadline = time.monotonic() + 10
    while b"crash-survivor" not in _aof_bytes(redis_dir):
        assert time.monotonic() < deadline, "the write never reached the append-only file"
        time.sleep(0.02)
    processes.kill_group(server.proc)
    assert server.proc.returncode == -signal.SIGKILL

    server2 = processes.start_redis(processes.free_port(), redis_dir)
    try:
        assert server2.client().get("crash-survivor") == b"1"
    finally:
        server2.stop()


# --- workers --------------------------------------------------------------------------------


def _worker_pids(url: str) -> set[int]:
    return {w.pid for w in Worker.all(connection=redis.Redis.from_url(url))}


def test_child_env(tmp_path):
    env = processes.child_env(tmp_path, "redis://127.0.0.1:1/0", base={"PYTHONPATH": "/x"})
    assert env["PERSONABOARD_DATA_DIR"] == str(tmp_path.resolve())
    assert env["PERSONABOARD_REDIS_URL"] == "redis://127.0.0.1:1/0"
    assert env["GRADIO_ANALYTICS_ENABLED"] == "False"
    assert env["HF_HUB_DISABLE_TELEMETRY"] == "1"
    # Offline or not is the caller's choice: the service no longer forces it (Hub ids must resolve).
    assert "HF_HUB_OFFLINE" not in env
    assert (
        processes.child_env(tmp_path, "redis://x", base={"HF_HUB_OFFLINE": "1"})["HF_HUB_OFFLINE"]
        == "1"
    )
    assert env["PYTHONPATH"].split(os.pathsep) == [str(PROJECT_ROOT), "/x"]


def test_worker_registers_runs_a_job_and_stops(redis_server, service_env, tmp_path):
    log = tmp_path / "worker.log"
    worker = processes.start_worker(redis_server, service_env, log_path=log)
    try:
        assert os.getpgid(worker.pid) == worker.pid  # its own process group
        wait_until(
            lambda: worker.pid in _worker_pids(redis_server),
            60,
            f"worker registration; log:\n{log.read_text()}",
        )
        conn = redis.Redis.from_url(redis_server)
        (registered,) = [w for w in Worker.all(connection=conn) if w.pid == worker.pid]
        assert registered.queue_names() == [
            QUEUE_NAME,
            f"{QUEUE_NAME}:cpu",
        ]  # the web node's queue, then CPU jobs

        job = Queue(QUEUE_NAME, connection=conn).enqueue("math.sqrt", 16.0)
        wait_until(lambda: job.get_status(refresh=True).value == "finished", 60, "job to finish")
        assert job.return_value() == 4.0
    finally:
        # a warm shutdown on a loaded machine can take longer than 20 s (loaded run 6 hit it)
        code = processes.stop_process(worker, timeout=90)
    assert code == 0, log.read_text()
    assert not processes.pid_alive(worker.pid)
    assert worker.pid not in _worker_pids(redis_server)  # a clean stop unregisters


def test_kill_group_kills_worker_and_work_horse(redis_server, service_env, tmp_path):
    log = tmp_path / "worker.log"
    worker = processes.start_worker(redis_server, service_env, log_path=log)
    try:
        conn = redis.Redis.from_url(redis_server)
        job = Queue(QUEUE_NAME, connection=conn).enqueue("time.sleep", 120, job_timeout=300)
        wait_until(
            lambda: job.get_status(refresh=True).value == "started",
            60,
            f"job start; log:\n{log.read_text()}",
        )
        horses = wait_until(lambda: descendants(worker.pid), 10, "the work-horse")
        processes.kill_group(worker)
        assert worker.returncode == -signal.SIGKILL
        wait_until(lambda: not any(processes.pid_alive(p) for p in horses), 10, "work-horse to die")
    finally:
        processes.stop_process(worker, timeout=5)


def test_stop_process_escalates_to_sigkill_for_process_and_group(tmp_path):
    # A leader that ignores SIGTERM, with a child in its group that ignores SIGTERM too.
    script = textwrap.dedent("""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)"])
        print(child.pid, flush=True)
        time.sleep(120)
    """)
    proc = processes._popen([sys.executable, "-c", script], None, tmp_path / "stubborn.log")
    child_pid = int(
        wait_until(lambda: (tmp_path / "stubborn.log").read_text().strip(), 20, "child pid")
    )
    assert processes.pid_alive(proc.pid) and processes.pid_alive(child_pid)

    t0 = time.monotonic()
    code = processes.stop_process(proc, timeout=1.0)
    assert code == -signal.SIGKILL
    assert time.monotonic() - t0 < 10
    assert not processes.pid_alive(proc.pid)
    wait_until(lambda: not processes.pid_alive(child_pid), 5, "grandchild killed with the group")


def test_stop_process_graceful_exit_code(tmp_path):
    proc = processes._popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], None, tmp_path / "x.log"
    )
    assert processes.stop_process(proc, timeout=10) == -signal.SIGTERM
    assert processes.stop_process(proc) == -signal.SIGTERM  # idempotent
    assert processes.stop_process(None) is None


# --- the supervisor -------------------------------------------------------------------------

STUB_APP = """
from fastapi import FastAPI

def create_app():
    app = FastAPI()

    @app.get("/api/v1/health")
    def health():
        return {"ok": True}

    return app
"""


@pytest.mark.parametrize("app", ["stub", "real"])
def test_serve_starts_restarts_workers_and_stops_everything_on_sigint(app, tmp_path):
    if app == "real" and not HAVE_APP:
        pytest.skip(
            "backend/app.py does not exist yet (the supervisor is also tested with a stub app)"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERSONABOARD_")}
    env.update(
        PERSONABOARD_DATA_DIR=str(tmp_path / "data"),
        PERSONABOARD_HOST="127.0.0.1",
        PERSONABOARD_PORT=str(processes.free_port()),
        PERSONABOARD_REDIS_PORT=str(processes.free_port()),
        PERSONABOARD_WORKERS="2",
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_OFFLINE="1",
    )
    if app == "stub":
        (tmp_path / "stubapp.py").write_text(STUB_APP)
        env["PYTHONPATH"] = str(tmp_path)
        env["PERSONABOARD_WEB_APP"] = "stubapp:create_app"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "backend.serve"],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = processes.base_url("127.0.0.1", int(env["PERSONABOARD_PORT"]))
    redis_url = f"redis://127.0.0.1:{env['PERSONABOARD_REDIS_PORT']}/0"
    try:
        processes.wait_http(base, timeout=180, proc=serve, log_path=log)
        conn = redis.Redis.from_url(redis_url)
        conn.set("kept-across-restarts", "yes")

        def worker_pids():  # group leaders only: a worker forks its scheduler and work-horses
            return {
                p for p in descendants(serve.pid) if "rq.cli worker" in cmdline(p) and pgid(p) == p
            }

        workers = wait_until(lambda: (w := worker_pids()) and len(w) == 2 and w, 60, "2 workers")
        wait_until(lambda: workers <= _worker_pids(redis_url), 60, "workers registered")

        # A worker killed from outside (with its whole group) is restarted by the supervisor.
        victim = min(workers)
        os.killpg(victim, signal.SIGKILL)
        wait_until(
            lambda: len(worker_pids() - workers) == 1 and len(worker_pids()) == 2,
            30,
            f"replacement worker; log:\n{log.read_text()}",
        )
        # the supervisor writes its line once the replacement's launch returned: a moment later
        wait_until(lambda: "restarted as pid" in log.read_text(), 10, "the restart's log line")

        children = descendants(serve.pid)
        assert any("redis-server" in cmdline(p) for p in children)
        assert any("uvicorn" in cmdline(p) for p in children)

        serve.send_signal(signal.SIGINT)
        code = serve.wait(90)
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
    assert code == 0, log.read_text()
    still = [(p, cmdline(p)) for p in children if processes.pid_alive(p)]
    assert not still, f"children left running: {still}\n{log.read_text()}"

    # Nothing lost: the same data dir's append-only file still has the key.
    server = processes.start_redis(processes.free_port(), tmp_path / "data" / "redis")
    try:
        assert server.client().get("kept-across-restarts") == b"yes"
    finally:
        server.stop()
