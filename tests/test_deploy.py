"""The images and the compose file, for real: podman builds docker/Dockerfile's web and worker-cpu
targets, podman-compose runs docker/compose.yaml, and the hosted topology (the web image in Space
mode with Hugging Face sign-in, a worker-cpu container as a remote worker, the tests' Hub server in
a container standing in for huggingface.co: Hub API, results dataset and OpenID provider) runs on a
podman network; Chromium signs in through it and uploads. Nothing is mocked: HTTP to the published ports, the CLI inside the containers,
`podman kill`, `podman-compose down` and `up`.

    make test-deploy     # installs podman & co and the local base images first (docker/local/setup.sh)

Selected with `-m container` only (the rest of the suite never builds images). Figures (build
times, sizes, up-to-healthy, upload-to-board, stop times) are printed as `[deploy] ...` lines and
written to var/deploy-figures.json.

Images come from the local bases docker/local/setup.sh builds (PYTHON_IMAGE, REDIS_IMAGE override
them). The CPU worker's torch: PyTorch's CPU index by default; when the host's pip wheel folder
(PIP_FIND_LINKS) holds a CPU torch wheel, that folder is mounted into the build instead.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_helpers import SUITE, TASK, make_predictions, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hub_server import TEST_TOKEN  # noqa: E402
from tiny_models import build_tiny_model  # noqa: E402

from backend.processes import free_port  # noqa: E402

# image builds on a cold machine take minutes: the suite's 600 s per test is too short for the first
pytestmark = [pytest.mark.container, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[1]
PYTHON_IMAGE = os.environ.get("PYTHON_IMAGE", "localhost/bookworm-python")
REDIS_IMAGE = os.environ.get("REDIS_IMAGE", "localhost/bookworm-redis")
IMAGE = "localhost/personaboard"  # compose's PERSONABOARD_IMAGE: IMAGE-web, IMAGE-worker-cpu
TERMINAL = ("finished", "failed")
FIGURES: dict = {}
GATE = (
    "/data/test-job-gate"  # jobs wait at their start until it exists (PERSONABOARD_TEST_JOB_GATE)
)


@pytest.fixture(scope="module", autouse=True)
def only_when_selected(request):
    if "container" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("container test: run by `make test-deploy` (pytest -m container)")
    if shutil.which("podman") is None:
        pytest.fail("podman is missing: `make test-deploy` installs it (docker/local/setup.sh)")
    yield
    out = ROOT / "var" / "deploy-figures.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(FIGURES, indent=1) + "\n", encoding="utf-8")


def figure(name: str, value) -> None:
    FIGURES[name] = value
    print(f"[deploy] {name}: {value}", flush=True)


def podman(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} -> {done.returncode}\n{done.stderr[-3000:]}")
    return done


def exec_json(container: str, *argv: str) -> dict:
    return json.loads(podman("exec", container, *argv).stdout)


# -- images ------------------------------------------------------------------------------------


def build(target: str) -> tuple[float, str]:
    """podman build of one target (docker format: OCI images drop HEALTHCHECK); seconds, output."""
    argv = [
        "build",
        "--format",
        "docker",
        "-f",
        "docker/Dockerfile",
        "--target",
        target,
        "--build-arg",
        f"PYTHON_IMAGE={PYTHON_IMAGE}",
        "-t",
        f"{IMAGE}-{target}",
    ]
    wheels = os.environ.get("PIP_FIND_LINKS", "")
    if target == "worker-cpu" and wheels and list(Path(wheels).glob("torch-*+cpu-*.whl")):
        argv += [
            "--build-arg",
            "TORCH_INDEX_URL=",
            "--build-arg",
            "PIP_FIND_LINKS=/wheels",
            "--volume",
            f"{wheels}:/wheels:ro",
        ]
    start = time.monotonic()
    done = subprocess.run(
        ["podman", *argv, "."], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return time.monotonic() - start, done.stdout + done.stderr


def image_mb(tag: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", tag).stdout) // 1_000_000


@pytest.fixture(scope="module")
def images():
    for target in ("web", "worker-cpu"):
        seconds, _ = build(target)
        figure(f"build {target} (s, first build of this run)", round(seconds, 1))
        seconds, output = build(target)  # nothing changed: every step must come from the cache
        figure(f"build {target} (s, again, cached)", round(seconds, 1))
        steps = re.findall(r"STEP \d+/\d+: (?:RUN|COPY) ", output)
        assert steps and output.count("Using cache") >= len(steps), output[-3000:]
        figure(f"image {target} (MB)", image_mb(f"{IMAGE}-{target}"))
    inspect = json.loads(podman("image", "inspect", f"{IMAGE}-web").stdout)[0]
    assert inspect["Config"]["User"] == "1000"
    # (its HEALTHCHECK is what `podman healthcheck run` runs below: it fails on an image without one)
    # CPU-only torch in the CPU worker
    cuda = podman(
        "run",
        "--rm",
        f"{IMAGE}-worker-cpu",
        "python",
        "-c",
        "import torch; print(torch.version.cuda)",
    )
    assert cuda.stdout.strip() == "None", cuda.stdout
    return IMAGE


# -- compose -----------------------------------------------------------------------------------


class Stack:
    """One podman-compose project of docker/compose.yaml, plus an override with the test's job gate."""

    def __init__(self, tmp: Path):
        self.project = f"pbdeploy{secrets.token_hex(3)}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.override = tmp / "compose.test.yaml"
        # the suite's shorter worker TTL and job-heartbeat grace (tests/conftest.py): the killed
        # worker's job finishes ~15 s after the restart instead of ~70
        timings = "".join(
            f'      {name}: "{os.environ[name]}"\n'
            for name in ("PERSONABOARD_WORKER_TTL", "PERSONABOARD_JOB_HEARTBEAT_GRACE_S")
        )
        self.override.write_text(
            "services:\n  worker-cpu:\n    environment:\n"
            f"      PERSONABOARD_TEST_JOB_GATE: {GATE}\n{timings}",
            encoding="utf-8",
        )
        self.env = {
            **os.environ,
            "REDIS_PASSWORD": secrets.token_hex(16),
            "REDIS_IMAGE": REDIS_IMAGE,
            "PYTHON_IMAGE": PYTHON_IMAGE,
            "PERSONABOARD_IMAGE": IMAGE,
            "PERSONABOARD_PUBLISH": f"127.0.0.1:{self.port}",
        }
        self.token = ""

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        argv = [str(Path(sys.executable).parent / "podman-compose"), "-p", self.project]
        argv += ["-f", str(ROOT / "docker" / "compose.yaml"), "-f", str(self.override), *args]
        done = subprocess.run(
            argv, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    def container(self, service: str) -> str:
        names = podman(
            "ps",
            "-a",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--filter",
            f"label=com.docker.compose.service={service}",
            "--format",
            "{{.Names}}",
        ).stdout.split()
        assert len(names) == 1, names
        return names[0]

    def healthy(self, service: str) -> bool:
        """Runs the container's health check now (no systemd timers here) and reads its verdict."""
        return podman("healthcheck", "run", self.container(service), check=False).returncode == 0

    def up(self) -> float:
        start = time.monotonic()
        self.compose("up", "-d")
        # each check starts a Python in the container: poll every second, not in a busy loop
        wait_until(
            lambda: self.healthy("redis") and self.healthy("web"), 240, "a healthy stack", 1.0
        )
        return time.monotonic() - start

    def logs(self) -> str:
        return "\n".join(
            podman("logs", "--tail", "40", self.container(s), check=False).stderr[-3000:]
            for s in ("web", "worker-cpu")
        )

    def http(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, trust_env=False, timeout=60, headers=headers)

    def wait(self, http: httpx.Client, sid: str, timeout: float = 300, states=TERMINAL) -> dict:
        def done():
            answer = http.get(f"/api/v1/submissions/{sid}")
            return answer.json() if answer.json()["state"] in states else None

        try:
            return wait_until(done, timeout, f"submission {sid} in {states}", interval=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None


def board_ids(http: httpx.Client, suite: str = SUITE, task: str = TASK) -> set[str]:
    rows = http.get("/api/v1/leaderboard", params={"suite": suite, "task": task}).json()
    return {row["submission_id"] for row in rows}


def upload(http: httpx.Client, body: bytes, name: str) -> str:
    answer = http.post(
        "/api/v1/submissions",
        files={"file": ("predictions.jsonl", body, "application/x-ndjson")},
        data={"suite": SUITE, "task": TASK, "setting": "zero_shot", "model_name": name},
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


@pytest.fixture(scope="module")
def stack(images, tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("compose"))
    try:
        figure("compose up to healthy (s)", round(stack.up(), 1))
        yield stack
    finally:
        subprocess.run(
            [
                str(Path(sys.executable).parent / "podman-compose"),
                "-p",
                stack.project,
                "-f",
                str(ROOT / "docker" / "compose.yaml"),
                "-f",
                str(stack.override),
                "down",
                "-v",
            ],
            cwd=ROOT,
            env=stack.env,
            capture_output=True,
            timeout=300,
        )


def test_compose_serves_an_upload_and_a_registered_model(stack, tmp_path):
    web = stack.container("web")
    podman("exec", web, "touch", GATE)  # jobs run at once
    made = exec_json(web, "personaboard", "users", "add", "deployer")  # the CLI in the container
    stack.token = made["token"]
    assert podman("exec", web, "id", "-u").stdout == "1000\n"  # not root
    with stack.http() as http:
        assert http.get("/api/v1/health").json()["queue"] == "ok"
        predictions = make_predictions(lambda item: item.tiers["form"] == "explicit")
        start = time.monotonic()
        sid = upload(http, predictions.body, "deploy-upload")
        final = stack.wait(http, sid)
        assert final["state"] == "finished", final
        wait_until(lambda: sid in board_ids(http), 60, "the upload's row on the board")
        figure("upload to board through the containers (s)", round(time.monotonic() - start, 2))
        row = next(
            r
            for r in http.get("/api/v1/leaderboard", params={"suite": SUITE, "task": TASK}).json()
            if r["submission_id"] == sid
        )
        assert abs(row["total"] - predictions.total) < 1e-9, row

        # a tiny model registered with the CLI in the web container, run by the worker container
        folder = build_tiny_model(tmp_path / "tiny", "generative", seed=3)
        podman("exec", web, "mkdir", "-p", "/data/incoming")
        podman("cp", str(folder), f"{web}:/data/incoming/tiny")
        podman("exec", "--user", "0", web, "chown", "-R", "1000:1000", "/data/incoming")
        entry = exec_json(web, "personaboard", "models", "add", "tiny", "/data/incoming/tiny")
        assert entry["tiny"]["model_type"] == "generative"
        start = time.monotonic()
        answer = http.post(
            "/api/v1/submissions",
            json={
                "model": "tiny",
                "suite": SUITE,
                "task": TASK,
                "setting": "zero_shot",
                "limit": 6,
            },
        )
        assert answer.status_code == 201, answer.text
        model_sid = answer.json()["id"]
        final = stack.wait(http, model_sid)
        assert final["state"] == "finished", final
        assert final["progress"]["done"] == final["progress"]["total"] == 6, final
        figure(
            "tiny model run of 6 items through the worker container (s)",
            round(time.monotonic() - start, 1),
        )
        assert model_sid in board_ids(http)
        worker = stack.container("worker-cpu")
        assert podman("exec", worker, "id", "-u").stdout == "1000\n"
    stack.kept = {"upload": sid, "model": model_sid}


def test_killed_worker_container_finishes_the_job_after_restart(stack):
    web, worker = stack.container("web"), stack.container("worker-cpu")
    podman("exec", web, "rm", "-f", GATE)  # the next job waits, marked running, at its start
    with stack.http() as http:
        sid = upload(http, make_predictions(lambda item: True).body, "deploy-killed")
        stack.wait(http, sid, 120, states=("running",))
        started = podman("inspect", "--format", "{{.State.StartedAt}}", worker).stdout
        podman("kill", worker)  # SIGKILL, mid-job: the worker and its work horse die at once

        def restarted_or_dead():
            state = podman("inspect", "--format", "{{.State.Status}}|{{.State.StartedAt}}", worker)
            status, started_at = state.stdout.strip().split("|")
            return status if status != "running" or started_at != started.strip() else None

        if wait_until(restarted_or_dead, 30, "the worker container to die") != "running":
            podman("start", worker)  # (compose's restart policy may already have done it)
        podman("exec", web, "touch", GATE)
        start = time.monotonic()
        final = stack.wait(http, sid, 300)
        figure("killed mid-job: finished after the restart (s)", round(time.monotonic() - start, 1))
        assert final["state"] == "finished" and final["attempts"] >= 2, final
        assert sid in board_ids(http)
    stack.kept["killed"] = sid


def test_down_and_up_keep_rows_submissions_and_queue(stack):
    worker = stack.container("worker-cpu")
    podman("stop", "-t", "60", worker)
    with stack.http() as http:
        queued = upload(http, make_predictions(lambda item: False).body, "deploy-queued")
        assert http.get(f"/api/v1/submissions/{queued}").json()["state"] == "queued"
        before = board_ids(http)
    assert set(stack.kept.values()) <= before
    stack.compose("down")  # containers gone, volumes kept
    assert not podman(
        "ps", "-a", "--filter", f"label=com.docker.compose.project={stack.project}", "-q"
    ).stdout.strip()
    figure("compose up again to healthy (s)", round(stack.up(), 1))
    podman("exec", stack.container("web"), "touch", GATE)
    with stack.http() as http:  # the token (SQLite on the volume) still works
        assert set(stack.kept.values()) <= board_ids(http)
        for sid in stack.kept.values():
            assert http.get(f"/api/v1/submissions/{sid}").json()["state"] == "finished"
        final = stack.wait(http, queued, 180)  # the queue survived: the worker runs it now
        assert final["state"] == "finished", final
        assert queued in board_ids(http)
    figure("kept across down/up", sorted([*stack.kept, "queued submission", "API token"]))


# -- hosted: the web image as on a Space, a worker-cpu container as a remote worker ---------------

RESULTS_REPO = "personaboard/results"
MODEL_REPO = "someone/tiny-chat"
OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET = "pb-hosted-space", secrets.token_hex(16)
SPACE_USER = "ada-on-the-space"  # an account old enough for the default sign-in policy (30 days)


class Hosted:
    """A podman network with Redis (password), the tests' Hub server (also the OpenID provider),
    the web node as a Space with `hf_oauth: true` (external Redis, Hub results repo, one worker of
    its own for uploads) and a remote CPU worker (own volume)."""

    def __init__(self):
        self.tag = f"pbhosted{secrets.token_hex(3)}"
        self.password = secrets.token_hex(16)
        self.web_port, self.hub_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.web_port}"
        self.hub_url = f"http://127.0.0.1:{self.hub_port}"
        self.containers: list[str] = []
        self.volumes: list[str] = []

    def name(self, role: str) -> str:
        return f"{self.tag}-{role}"

    def run(self, role: str, image: str, *args: str, volume: bool = True) -> str:
        name = self.name(role)
        argv = ["run", "-d", "--init", "--name", name, "--network", self.tag]
        argv += ["--network-alias", role]
        if volume:
            self.volumes.append(f"{name}-data")
            argv += ["-v", f"{name}-data:/data"]
        podman(*argv, *args[:-1], image, *args[-1].split())
        self.containers.append(name)
        return name

    def start(self, image: str) -> None:
        podman("network", "create", self.tag)
        common = [
            "-e",
            f"PERSONABOARD_REDIS_URL=redis://:{self.password}@redis:6379/0",
            "-e",
            f"PERSONABOARD_RESULTS_REPO={RESULTS_REPO}",
            "-e",
            "HF_ENDPOINT=http://hub:8123",
            "-e",
            f"HF_TOKEN={TEST_TOKEN}",
        ]
        self.run(
            "redis", REDIS_IMAGE, f"redis-server --appendonly yes --requirepass {self.password}"
        )
        hub_script = ROOT / "tests" / "hub_server.py"
        self.run(
            "hub",
            f"{image}-web",
            "-v",
            f"{hub_script}:/opt/hub/hub_server.py:ro",
            "-p",
            f"127.0.0.1:{self.hub_port}:8123",
            f"python /opt/hub/hub_server.py --host 0.0.0.0 --port 8123 --data /tmp/hub --token {TEST_TOKEN}"
            # the browser reaches the sign-in page on the published port, the web node the rest as hub
            f" --public-url {self.hub_url}"
            f" --oauth-client {OAUTH_CLIENT_ID}:{OAUTH_CLIENT_SECRET}:{self.url}/login/callback",
            volume=False,
        )
        space = {  # what a Space with `hf_oauth: true` injects (SPACE_HOST left out: plain http here)
            "SYSTEM": "spaces",
            "SPACE_ID": "personaboard/personaboard",
            "OAUTH_CLIENT_ID": OAUTH_CLIENT_ID,
            "OAUTH_CLIENT_SECRET": OAUTH_CLIENT_SECRET,
            "OAUTH_SCOPES": "openid profile",
            "OPENID_PROVIDER_URL": "http://hub:8123",
        }
        self.run(
            "web",
            f"{image}-web",
            *common,
            *[arg for name, value in space.items() for arg in ("-e", f"{name}={value}")],
            "-e",
            "PERSONABOARD_WORKERS=1",  # as on a Space: a worker for uploads only
            "-p",
            f"127.0.0.1:{self.web_port}:7860",
            "python -m backend.serve",
        )
        self.run(
            "worker",
            f"{image}-worker-cpu",
            *common,
            "-e",
            "PERSONABOARD_WORKER_REMOTE=1",
            "-e",
            "PERSONABOARD_WORKER_NAME=remote-cpu-container",
            "python -m backend.worker",
        )

    def stop(self) -> None:
        for name in reversed(self.containers):
            podman("rm", "-f", "-v", "-t", "10", name, check=False)  # -v: the image's /data
        for volume in self.volumes:
            podman("volume", "rm", "-f", volume, check=False)
        podman("network", "rm", "-f", self.tag, check=False)

    def wait(self, predicate, timeout: float, what: str, interval: float = 0.2):
        try:
            return wait_until(predicate, timeout, what, interval=interval)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from None

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}\n" + podman("logs", "--tail", "30", name, check=False).stderr[-2500:]
            for name in self.containers
        )


def upload_signed_in(hosted: Hosted, tmp_path: Path) -> str:
    """Chromium signs in on the Space as SPACE_USER (an account the Hub says is 400 days old) and
    submits a predictions file through the page; returns the submission's id."""
    from datetime import datetime, timedelta, timezone

    from browser_helpers import launch_chromium
    from playwright.sync_api import expect
    from space_steps import context_for, id_in_status, sign_in, submit

    created = datetime.now(timezone.utc) - timedelta(days=400)
    account = {"user": SPACE_USER, "createdAt": created.isoformat().replace("+00:00", "Z")}
    httpx.post(f"{hosted.hub_url}/_test/users", json=account, timeout=30).raise_for_status()
    with launch_chromium() as browser:
        context = context_for(browser, hosted.url)
        try:
            page = context.new_page()
            sign_in(page, hosted.hub_url, OAUTH_CLIENT_ID, SPACE_USER)
            body = make_predictions(lambda item: item.tiers["form"] == "explicit").body
            text = submit(page, tmp_path, body, "space-signed-in")
            assert "Error" not in text, f"{text}\n{hosted.logs()}"
            status = page.locator("#submit-status")
            expect(status).to_contain_text(f"Submitted by hf:{SPACE_USER}")
            return id_in_status(status.inner_text())
        finally:
            context.close()


def test_hosted_web_node_and_remote_worker_container(images, tmp_path, monkeypatch):
    import huggingface_hub.constants
    from huggingface_hub import HfApi

    hosted = Hosted()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    try:
        hosted.start(images)
        web = hosted.name("web")
        hosted.wait(
            lambda: podman("healthcheck", "run", web, check=False).returncode == 0,
            240,
            "the web node to be healthy",
            interval=1.0,
        )
        api = HfApi(endpoint=hosted.hub_url, token=TEST_TOKEN)
        api.create_repo(MODEL_REPO, repo_type="model")
        api.upload_folder(
            repo_id=MODEL_REPO,
            folder_path=str(build_tiny_model(tmp_path / "tiny", "generative", seed=7)),
            repo_type="model",
        )
        token = exec_json(web, "personaboard", "users", "add", "space-user")["token"]
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(
            base_url=hosted.url, headers=headers, timeout=60, trust_env=False
        ) as http:

            def remote_registered():
                workers = http.get("/api/v1/workers").json()["workers"]
                return [w for w in workers if w["name"] == "remote-cpu-container"]

            shown = hosted.wait(remote_registered, 180, "the remote worker to register")[0]
            assert shown["queues"] == ["personaboard:cpu"], shown

            # an upload: scored by the web node's own worker, published to the Hub repo
            sid = upload(http, make_predictions(lambda item: True).body, "space-upload")
            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": MODEL_REPO,
                    "suite": SUITE,
                    "task": TASK,
                    "setting": "zero_shot",
                    "limit": 6,
                },
            )
            assert answer.status_code == 201, answer.text
            model_sid = answer.json()["id"]
            assert answer.json()["details"]["model"]["source"] == "hub"
            start = time.monotonic()

            def finished(which):
                state = http.get(f"/api/v1/submissions/{which}").json()
                assert state["state"] != "failed", state
                return state if state["state"] == "finished" and state["revision"] else None

            # A person on the Space: signs in with "Hugging Face" (the Hub container's provider),
            # uploads through the page; the submission is hf:<user>'s and reaches the board.
            signed_in_sid = upload_signed_in(hosted, tmp_path)
            assert http.get(f"/api/v1/submissions/{signed_in_sid}").json()["owner"] == (
                f"hf:{SPACE_USER}"
            )

            for which in (sid, model_sid, signed_in_sid):
                hosted.wait(lambda w=which: finished(w), 300, f"{which} published")
            figure(
                "hosted: Hub model run on the remote worker to published (s)",
                round(time.monotonic() - start, 1),
            )
            assert {sid, model_sid, signed_in_sid} <= board_ids(http)
        files = api.list_repo_files(RESULTS_REPO, repo_type="dataset")
        assert [f for f in files if model_sid in f and f.startswith("results/")], files
        assert [f for f in files if sid in f and f.startswith("results/")], files
        # the remote worker has none of the web node's state
        listing = podman("exec", hosted.name("worker"), "ls", "/data").stdout.split()
        assert "submissions.sqlite3" not in listing, listing
    finally:
        hosted.stop()


# -- last, once the compose stack is past its health check's start period -------------------------


def test_health_check_sees_a_stalled_web_loop_and_sigterm_stops_cleanly(stack):
    web = stack.container("web")
    # failed checks count only after the start period (podman: from the start, whatever passed)
    started, period = podman(
        "inspect",
        "--format",
        "{{.State.StartedAt.Unix}} {{.Config.Healthcheck.StartPeriod.Seconds}}",
        web,
    ).stdout.split()
    wait_until(
        lambda: time.time() > int(started) + float(period) + 1, 200, "the end of the start period"
    )
    pids = exec_json(web, "cat", "/data/run/supervisor.json")
    signal = "import os, signal, sys; os.kill(int(sys.argv[2]), getattr(signal, sys.argv[1]))"
    podman("exec", web, "python", "-c", signal, "SIGSTOP", str(pids["web"]))  # web stops answering
    try:
        assert not stack.healthy("web")
        for _ in range(2):  # --retries=3: three failed checks in a row make it unhealthy
            stack.healthy("web")
        status = podman("inspect", "--format", "{{.State.Healthcheck.Status}}", web).stdout
        assert status.strip() == "unhealthy", status
    finally:
        podman("exec", web, "python", "-c", signal, "SIGCONT", str(pids["web"]))
    wait_until(lambda: stack.healthy("web"), 60, "healthy again once the loop runs", 1.0)
    for service in ("web", "worker-cpu", "redis"):
        name = stack.container(service)
        start = time.monotonic()
        podman("stop", "-t", "60", name, timeout=120)
        seconds = time.monotonic() - start
        code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        figure(f"stop {service} on SIGTERM (s)", round(seconds, 1))
        assert code == "0" and seconds < 55, f"{service}: exit {code} after {seconds:.1f} s"
