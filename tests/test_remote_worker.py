"""A worker on "another machine": its own process and its own empty data folder, sharing only Redis
and the Hub (tests/hub_server.py) with the web node.

The web node installs a hidden split from a private Hub dataset (pinned to its commit); a tiny model
is a Hub model; the submission is routed to the CPU queue, which only the remote worker serves. The
worker installs the pinned split from the Hub on first use, runs the model, publishes the result to
the Hub results repo through its own outbox, and reports state through Redis; the web node folds it
into its records. A second run is hidden by an operator while it runs there: it is never published
(the worker withholds it and the web node keeps it), and unhide publishes it. Then the worker is
drained: it stops, and the worker list no longer shows it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from live_helpers import run_cli, wait_finished, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hub_server import TEST_TOKEN  # noqa: E402
from tiny_models import build_tiny_model  # noqa: E402

from backend import processes  # noqa: E402
from evaluator.hub import DatasetRepo  # noqa: E402
from leaderboard.store import details_path, result_path  # noqa: E402
from submissions.remote import note_released  # noqa: E402
from submissions.settings import FAULT_GATE_ENV  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[1]
SPLIT_FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "recentering"
RESULTS_REPO = "personaboard/results"
SPLIT_REPO = "personaboard/recentering-hidden"
MODEL_REPO = "someone/tiny-relevance"
WORKER = "remote-cpu-1"


def upload(hub_url: str, repo_id: str, folder: Path, repo_type: str, private: bool) -> str:
    import huggingface_hub.constants
    from huggingface_hub import HfApi

    offline, huggingface_hub.constants.HF_HUB_OFFLINE = (
        huggingface_hub.constants.HF_HUB_OFFLINE,
        False,
    )
    try:
        api = HfApi(endpoint=hub_url, token=TEST_TOKEN)
        api.create_repo(repo_id, repo_type=repo_type, private=private)
        return api.upload_folder(
            repo_id=repo_id, folder_path=str(folder), repo_type=repo_type, commit_message="upload"
        ).oid
    finally:
        huggingface_hub.constants.HF_HUB_OFFLINE = offline


@pytest.fixture
def hub_env(hub_server, tmp_path, monkeypatch):
    """What every node gets: the Hub (online), a token, the results repo."""
    env = {
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": hub_server.url,
        "HF_TOKEN": TEST_TOKEN,
        "PERSONABOARD_RESULTS_REPO": RESULTS_REPO,
        "PERSONABOARD_RESULTS_PRIVATE": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "web-hf-home"))
    return env


def test_remote_worker_runs_a_hub_model_on_a_private_split(
    hub_server, hub_env, tmp_path, start_service
):
    upload(
        hub_server.url,
        MODEL_REPO,
        build_tiny_model(tmp_path / "tiny", "generative", seed=5),
        "model",
        private=False,
    )
    split_sha = upload(hub_server.url, SPLIT_REPO, SPLIT_FIXTURE, "dataset", private=True)

    svc = start_service(tmp_path / "web", n_workers=0)  # the web node runs no worker of its own
    remote_dir = tmp_path / "remote" / "data"
    remote_dir.mkdir(parents=True)
    worker = None
    try:
        installed = run_cli("splits", "install", "recentering", "--source", SPLIT_REPO, env=svc.env)
        assert installed.returncode == 0, installed.stderr
        assert json.loads(installed.stdout)["revision"] == split_sha  # pinned to the commit

        # the other machine: its own data folder and HF cache; Redis URL, token and repo only
        gate = (
            tmp_path / "remote" / "gate"
        )  # a job waits at the start until it exists (submissions/jobs.py)
        gate.touch()
        remote_env = processes.child_env(
            remote_dir,
            svc.redis_url,
            extra={
                **hub_env,
                "HF_HOME": str(tmp_path / "remote" / "hf-home"),
                FAULT_GATE_ENV: str(gate),
            },
        )
        log = tmp_path / "remote" / "worker.log"
        with open(log, "ab") as out:
            worker = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "backend.cli",
                    "worker",
                    "--hardware",
                    "cpu",
                    "--name",
                    WORKER,
                ],
                cwd=ROOT,
                env=remote_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

        with svc.http(timeout=60) as http:  # submits as the fixture user "tester"

            def registered():
                listed = {w["name"]: w for w in http.get("/api/v1/workers").json()["workers"]}
                return listed.get(WORKER)

            shown = wait_until(registered, 120, "the remote worker to register")
            assert shown["queues"] == ["personaboard:cpu"] and shown["last_heartbeat"]

            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": MODEL_REPO,
                    "suite": "recentering",
                    "task": "relevance",
                    "setting": "zero_shot",
                    "protocol": "choice_logprobs",
                },
            )
            assert answer.status_code == 201, answer.text
            sid = answer.json()["id"]
            assert answer.json()["details"]["model"]["source"] == "hub"
            assert http.get(f"/api/v1/submissions/{sid}").json()["queue"] in (
                "personaboard:cpu",
                None,
            )

            final = wait_finished(
                http, sid, timeout=300, logs=lambda: log.read_text()[-4000:] + svc.logs()
            )
            assert (
                final["attempts"] == 1
                and final["progress"]["done"] == final["progress"]["total"] == 10
            )
            wait_until(
                lambda: http.get(f"/api/v1/submissions/{sid}").json()["revision"],
                60,
                "the published revision to be folded in",
            )
            revision = http.get(f"/api/v1/submissions/{sid}").json()["revision"]

            # published on the Hub, in the web node's leaderboard too
            results = DatasetRepo(RESULTS_REPO, TEST_TOKEN, hub_server.url, tmp_path / "reader")
            files = _online(lambda: results.files(revision))
            assert result_path("recentering", "relevance", sid) in files
            record = json.loads(
                _online(
                    lambda: results.read(result_path("recentering", "relevance", sid), revision)
                )
            )
            assert (
                record["provenance"]["model"]["revision"]
                == answer.json()["details"]["model"]["revision"]
            )
            # the split's files never enter the results repo; per item only the details file of
            # this run (the fixture split is public: tests/fixtures/splits/recentering/PUBLIC)
            assert all(
                p.split("/")[0]
                in (
                    "README.md",
                    ".gitattributes",
                    "data",
                    "results",
                    "requests",
                    "boards",
                    "details",
                )
                for p in files
            ), sorted({p.split("/")[0] for p in files})
            details = [p for p in files if p.startswith("details/")]
            assert details == [details_path("recentering", "relevance", sid)], details
            # served by the web node from the published file: the answers are on the other machine
            assert not (svc.data_dir / "checkpoints" / f"{sid}.jsonl").exists()
            assert (remote_dir / "checkpoints" / f"{sid}.jsonl").exists()
            shown = http.get(f"/api/v1/submissions/{sid}/details")
            assert shown.status_code == 200, shown.text
            assert shown.headers["x-total-count"] == "10"
            for row in shown.json():
                assert json.loads(row["input"]) and row["gold"] not in ("", None)
                assert row["outcome"] in ("right", "wrong")
                assert (row["outcome"] == "right") == (row["score"] == 1.0)
            # in the web node's leaderboard at once: the worker renewed the results head signal in Redis
            # before its publish returned, so before it sent the revision the web node folded
            # (leaderboard/head_signal.py); the web node does not wait for its kept Hub head to expire
            board = http.get(
                "/api/v1/leaderboard", params={"suite": "recentering", "task": "relevance"}
            )
            assert sid in {row["submission_id"] for row in board.json()}

            # hidden by an operator while it runs on the remote worker: never published, not even briefly
            gate.unlink()
            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": MODEL_REPO,
                    "suite": "recentering",
                    "task": "relevance",
                    "setting": "zero_shot",
                    "protocol": "choice_logprobs",
                    "limit": 4,
                },
            )
            assert answer.status_code == 201, answer.text
            hidden_id = answer.json()["id"]
            wait_until(
                lambda: http.get(f"/api/v1/submissions/{hidden_id}").json()["state"] == "running",
                120,
                "the second run to start on the remote worker",
            )
            hide = run_cli(
                "submissions", "hide", hidden_id, "--reason", "hidden while it ran", env=svc.env
            )
            assert hide.returncode == 0, hide.stderr
            gate.touch()
            final = wait_finished(
                http, hidden_id, timeout=300, logs=lambda: log.read_text()[-4000:] + svc.logs()
            )
            assert final["visibility"] == "hidden"
            assert [e["action"] for e in final["history"]] == [
                "hide",
                "withhold",
            ]  # kept on the web node
            # no revision ever held the result (its request record, "queued", may have come and gone)
            history = _online(results.commits)
            assert not [
                (c.revision, path)
                for c in history
                for path in _online(lambda rev=c.revision: results.files(rev, "results"))
                if hidden_id in path
            ]
            assert not [c for c in history if c.message.startswith(f"Add result {hidden_id} ")]
            unhide = run_cli("submissions", "unhide", hidden_id, env=svc.env)
            assert unhide.returncode == 0, unhide.stderr
            assert json.loads(unhide.stdout)[
                "revision"
            ]  # published now, from the record the web node kept
            board = http.get(
                "/api/v1/leaderboard", params={"suite": "recentering", "task": "relevance"}
            )
            assert hidden_id in {
                row["submission_id"] for row in board.json()
            }  # the next read after unhide

        # the remote machine: the split installed from the Hub at the pinned commit, with the web
        # node's split hash; none of the web node's state (no records database, no uploads)
        info = json.loads((remote_dir / "splits" / "recentering" / "INSTALLED.json").read_text())
        assert info["kind"] == "hub" and info["revision"] == split_sha
        web_info = json.loads(
            (svc.data_dir / "splits" / "recentering" / "INSTALLED.json").read_text()
        )
        assert info["tasks"] == web_info["tasks"]
        assert record["provenance"]["split"]["sha256"] == web_info["tasks"]["relevance"]["sha256"]
        assert (
            not (remote_dir / "submissions.sqlite3").exists()
            and not (remote_dir / "uploads").exists()
        )

        # drained: finishes (nothing running now) and stops; the list no longer shows it
        drained = run_cli("workers", "drain", WORKER, env=svc.env)
        assert drained.returncode == 0, drained.stderr
        assert worker.wait(timeout=180) == 0  # 60 s ran out once at load 12 on 2 cores
        with svc.http(timeout=60) as http:  # submits as the fixture user "tester"
            names = {w["name"] for w in http.get("/api/v1/workers").json()["workers"]}
        assert WORKER not in names
    finally:
        if worker is not None and worker.poll() is None:
            processes.kill_group(worker)


def hidden_recentering(folder: Path, n_relevance: int = 120) -> None:
    """The Re-Centering fixture without its PUBLIC marker (a hidden split, whose manifest declares
    a private half), relevance grown to `n_relevance` items: 60 public and 60 private items, both
    at or above the 50-item release minimum."""
    import random
    import shutil

    shutil.copytree(SPLIT_FIXTURE, folder)
    (folder / "PUBLIC").unlink()
    rng = random.Random(11)
    lines = [
        json.dumps(
            {
                "id": f"p{i:03d}",
                "prompt": f"Prompt {i}.",
                "attribute": "Likes hiking.",
                "votes": [rng.choice(("YES", "NO")) for _ in range(3)],
            }
        )
        for i in range(n_relevance)
    ]
    (folder / "relevance.jsonl").write_text("\n".join(lines) + "\n")


def test_a_remote_workers_result_is_reranked_on_its_private_part(
    hub_server, hub_env, tmp_path, start_service
):
    """A hidden split with a private part, scored by a worker on another machine: its private score
    reaches the web node (and nothing else: not the Hub, a log or the event stream), and
    `personaboard release` re-ranks the result on it, once."""
    import sqlite3

    upload(
        hub_server.url,
        MODEL_REPO,
        build_tiny_model(tmp_path / "tiny", "generative", seed=5),
        "model",
        private=False,
    )
    hidden_recentering(tmp_path / "hidden-split")
    upload(hub_server.url, SPLIT_REPO, tmp_path / "hidden-split", "dataset", private=True)
    svc = start_service(tmp_path / "web", n_workers=0)  # the web node runs no worker of its own
    remote_dir = tmp_path / "remote" / "data"
    remote_dir.mkdir(parents=True)
    worker = None
    try:
        installed = run_cli("splits", "install", "recentering", "--source", SPLIT_REPO, env=svc.env)
        assert installed.returncode == 0, installed.stderr
        info = json.loads(installed.stdout)
        assert info["visibility"] == "hidden"
        assert info["tasks"]["relevance"]["parts"]["private"] == 60
        assert info["tasks"]["relevance"]["parts"]["public"] == 60
        remote_env = processes.child_env(
            remote_dir,
            svc.redis_url,
            extra={**hub_env, "HF_HOME": str(tmp_path / "remote" / "hf-home")},
        )
        log = tmp_path / "remote" / "worker.log"
        with open(log, "ab") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "backend.cli", "worker", "--hardware", "cpu"],
                cwd=ROOT,
                env=remote_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        with svc.http(timeout=60) as http:
            wait_until(
                lambda: http.get("/api/v1/workers").json()["workers"], 120, "the remote worker"
            )
            # A tiny random model answers one label everywhere: never above the floor a first
            # result must clear (the best constant answer). This submitter has a release from
            # before the floor (an installation upgraded with results), so its run goes through
            # the Ladder from that best, as remote workers read it (submissions/remote.py).
            note_released(svc.redis_client(), "owner:tester", "recentering/relevance", 0.0)
            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": MODEL_REPO,
                    "suite": "recentering",
                    "task": "relevance",
                    "setting": "zero_shot",
                    "protocol": "choice_logprobs",
                },
            )
            assert answer.status_code == 201, answer.text
            sid = answer.json()["id"]
            final = wait_finished(
                http, sid, timeout=300, logs=lambda: log.read_text()[-4000:] + svc.logs()
            )
            assert final["result"]["total"]["accuracy"]["n"] == 60  # live: the public part only
            revision = wait_until(
                lambda: http.get(f"/api/v1/submissions/{sid}").json()["revision"],
                60,
                "the published revision to be folded in",
            )

            def kept():
                with closing(sqlite3.connect(svc.data_dir / "submissions.sqlite3")) as db:
                    return db.execute(
                        "SELECT stats, n_items FROM private_scores WHERE submission_id = ?", (sid,)
                    ).fetchone()

            # kept on the web node (the worker has no records database), from the worker's event
            stats, n_private = wait_until(kept, 60, "the private score to be kept")
            exact_stats = json.loads(stats)
            exact = exact_stats["value"]
            assert n_private == 60 and not (remote_dir / "submissions.sqlite3").exists()
            # ...and nowhere else: not on the Hub, not in a log, not left in the event stream.
            # Only the exact numbers off the release grid identify the private score: a value such
            # as 0.6 (36 of 60) is also a legitimately released public number, and "0.6" prints in
            # any log, so the check looks for the private block's distinctive figures (its value
            # when off the grid, its interval bounds), of which there is always at least one.
            fingerprint = _off_grid_figures(exact_stats, step=0.2)
            assert fingerprint, exact_stats
            results = DatasetRepo(RESULTS_REPO, TEST_TOKEN, hub_server.url, tmp_path / "reader")
            path = result_path("recentering", "relevance", sid)
            record = json.loads(_online(lambda: results.read(path, revision)))
            assert "private" not in record["metrics"] and "part" not in record["metrics"]["tiers"]
            logs = log.read_text() + svc.logs(lines=100_000)
            events = repr(svc.redis_client().xrange("personaboard:events"))
            assert "private_score" not in events
            for shown in fingerprint:
                assert shown not in json.dumps(record)
                assert shown not in logs and shown not in events

        # the operator names a release: the remote result is re-ranked on its private part, once
        proc = run_cli("release", "final-1", env=svc.env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["reranked_on_private_part"] == [sid]
        with svc.http(timeout=60) as http:
            rows = http.get(
                "/api/v1/leaderboard",
                params={"suite": "recentering", "task": "relevance", "complete": "true"},
            ).json()
        row = {r["submission_id"]: r for r in rows}[sid]
        step = 0.2  # the noise step of 60 items (evaluator/release.py)
        # ranked on the private part: its score, rounded (with a dither) to the step, is the total
        assert row["ranked_on"] == "private" and row["part/private"] == row["total"]
        assert round(row["total"] / step, 9) == round(row["total"] / step)
        assert abs(row["total"] - exact) < step and row["part/public"] is not None
        again = run_cli("release", "final-2", env=svc.env)
        assert again.returncode == 0 and json.loads(again.stdout)["reranked_on_private_part"] == []
    finally:
        if worker is not None and worker.poll() is None:
            processes.kill_group(worker)


def _off_grid_figures(stats: dict, step: float) -> list[str]:
    """The reprs of a stats block's value and interval bounds that no rounded release or log line
    prints by coincidence: off the release step's grid, and with at least 6 decimals (0.55, 33 of
    60, is in any log's timestamps; a Wilson bound such as 0.4277... is in nothing else)."""
    figures = [stats["value"], *stats.get("ci95", [])]
    return [
        repr(float(x))
        for x in figures
        if isinstance(x, float)
        and abs(x / step - round(x / step)) > 1e-9
        and len(repr(float(x)).partition(".")[2]) >= 6
    ]


def _online(call):
    import huggingface_hub.constants

    offline, huggingface_hub.constants.HF_HUB_OFFLINE = (
        huggingface_hub.constants.HF_HUB_OFFLINE,
        False,
    )
    try:
        return call()
    finally:
        huggingface_hub.constants.HF_HUB_OFFLINE = offline
