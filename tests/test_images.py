"""Each image's entry command starts its service on this machine (no container engine here).

The targets, their ENV and their CMD are read from docker/Dockerfile itself, so this runs what the
images run: the web target's supervisor against an external Redis (as in docker/compose.yaml)
until health answers, and each worker target until it has registered with the queue; then SIGTERM
and a clean exit. Addresses stay on 127.0.0.1 (the image listens on 0.0.0.0). Not covered here:
building the images, the slim base's packages, and vLLM itself (the GPU worker starts and takes
jobs without it; a job on it needs CUDA).
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_helpers import client, wait_until

from backend import processes

pytestmark = [pytest.mark.container, pytest.mark.service]

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def dockerfile_stages() -> dict[str, dict]:
    """target -> {"env": {...} (inherited through FROM <stage>), "cmd": [...]}."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    stages: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        op, rest = words[0].upper(), (words[1] if len(words) > 1 else "")
        if op == "FROM":
            parts = rest.split()
            parent = stages.get(parts[0], {"env": {}, "cmd": None})
            current = parts[-1] if len(parts) >= 3 and parts[-2].upper() == "AS" else None
            stages[current] = {"env": dict(parent["env"]), "cmd": parent["cmd"]}
        elif op == "ENV" and current:
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                stages[current]["env"][key] = value
        elif op == "CMD" and current:
            stages[current]["cmd"] = json.loads(rest)
    return stages


STAGES = dockerfile_stages()


def image_command(target: str, data_dir: Path, redis_url: str, extra: dict | None = None):
    stage = STAGES[target]
    argv = [sys.executable if word == "python" else word for word in stage["cmd"]]
    env = processes.child_env(
        data_dir,
        redis_url,
        extra={
            **stage["env"],
            "PERSONABOARD_DATA_DIR": str(data_dir),
            "PERSONABOARD_REDIS_URL": redis_url,
            **(extra or {}),
        },
    )
    return argv, env


def stop(proc: subprocess.Popen, timeout: float = 60) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    finally:
        processes.stop_process(proc, timeout=5)


def test_space_readme_runs_the_web_image_with_sign_in():
    import yaml

    text = (ROOT / "docker" / "space" / "README.md").read_text()
    card = yaml.safe_load(text.split("---\n")[1])
    assert card["sdk"] == "docker" and card["hf_oauth"] is True
    assert str(card["app_port"]) == STAGES["web"]["env"]["PERSONABOARD_PORT"]


def test_dockerfile_has_the_three_images():
    assert {"web", "worker-cpu", "worker-gpu"} <= set(STAGES)
    assert list(STAGES)[-1] == "web"  # the default target (a Space builds the last stage)
    assert STAGES["web"]["cmd"] == ["python", "-m", "backend.serve"]
    assert STAGES["worker-gpu"]["env"]["PERSONABOARD_BACKEND"] == "vllm"
    assert "git" in DOCKERFILE.read_text()  # the local results store runs git


@pytest.fixture
def external_redis(tmp_path):
    """Redis on another loopback address with a password, as compose's `redis` service is to the
    web container: the supervisor must use it, not start its own."""
    server = processes.start_redis(
        processes.free_port(), tmp_path / "redis", host="127.0.0.2", password="pw-for-test"
    )
    try:
        yield f"redis://:pw-for-test@127.0.0.2:{server.port}/0"
    finally:
        server.stop()


def test_web_image_command_serves(tmp_path, external_redis):
    from redis import Redis
    from rq import Worker

    port = processes.free_port()
    assert (
        STAGES["web"]["env"]["PERSONABOARD_WORKERS"] == "0"
    )  # compose runs the workers as their own services
    # a Space sets one worker of its own, for uploaded files: the web image has no torch, so only that queue
    argv, env = image_command(
        "web",
        tmp_path / "data",
        external_redis,
        {
            "PERSONABOARD_HOST": "127.0.0.1",
            "PERSONABOARD_PORT": str(port),
            "PERSONABOARD_WORKERS": "1",
        },
    )
    log = tmp_path / "web.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        base = processes.base_url("127.0.0.1", port)
        processes.wait_http(base, timeout=180, proc=proc, log_path=log)
        with client(base) as http:
            assert http.get("/api/v1/health").json()["queue"] == "ok"
            assert http.get("/api/v1/leaderboard").status_code == 200
            assert http.get("/metrics").status_code == 200
        connection = Redis.from_url(external_redis)
        wait_until(
            lambda: Worker.all(connection=connection),
            timeout=120,
            what="the web image's worker registered",
        )
        assert [w.queue_names() for w in Worker.all(connection=connection)] == [["personaboard"]]
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    assert (
        "using external Redis at 127.0.0.2" in log.read_text()
        and "pw-for-test" not in log.read_text()
    )


@pytest.mark.parametrize(
    "target, extra, queues",
    [
        # beside the web node (compose's shared volume): its own queue, then the hardware's
        ("worker-cpu", {}, ["personaboard", "personaboard:cpu"]),
        (
            "worker-gpu",
            {"PERSONABOARD_GPU_MEMORY_GB": "48"},
            ["personaboard", "personaboard:gpu-48g", "personaboard:gpu-24g"],
        ),
    ],
)
def test_worker_image_command_joins_the_queue(tmp_path, redis_server, target, extra, queues):
    from redis import Redis
    from rq import Worker

    argv, env = image_command(target, tmp_path / "data", redis_server, extra)
    log = tmp_path / f"{target}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        connection = Redis.from_url(redis_server)

        def listening() -> bool:  # registered and idle: its signal handlers are in place
            assert proc.poll() is None, log.read_text()[-3000:]
            return any(
                w.pid == proc.pid and w.get_state() == "idle"
                for w in Worker.all(connection=connection)
            )

        wait_until(
            listening,
            timeout=120,
            what=f"{target} registered with the queue and idle",
            interval=0.2,
        )
        worker = next(w for w in Worker.all(connection=connection) if w.pid == proc.pid)
        assert worker.queue_names() == queues
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()[-3000:]
    deadline = time.monotonic() + 10
    while (
        any(w.pid == proc.pid for w in Worker.all(connection=connection))
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert not any(
        w.pid == proc.pid for w in Worker.all(connection=connection)
    )  # it left the queue cleanly


@pytest.mark.parametrize(
    "target, extra, message",
    [
        # a GPU image on a machine without a GPU, and no memory given: refused, not guessed
        ("worker-gpu", {"PERSONABOARD_GPU_MEMORY_GB": ""}, "found no CUDA device"),
        # on another machine (shares only Redis and the Hub) a worker needs the Hub results repo
        (
            "worker-cpu",
            {"PERSONABOARD_WORKER_REMOTE": "1", "PERSONABOARD_RESULTS_REPO": ""},
            "publishes to the Hub",
        ),
        # offline mode is for a local results folder only
        (
            "worker-cpu",
            {"PERSONABOARD_RESULTS_REPO": "org/results", "HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "1"},
            "HF_HUB_OFFLINE is on",
        ),
        (
            "web",
            {"PERSONABOARD_RESULTS_REPO": "org/results", "HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "1"},
            "HF_HUB_OFFLINE is on",
        ),
    ],
)
def test_image_refuses_a_configuration_that_cannot_work(tmp_path, target, extra, message):
    argv, env = image_command(target, tmp_path / "data", "redis://127.0.0.1:1/0", extra)
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr, (done.returncode, done.stderr[-2000:])
