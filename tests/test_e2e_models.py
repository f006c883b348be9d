"""Model submissions end to end against real services: `personaboard models add` into the
service's data folder, JSON submissions over HTTP, real rq workers running tiny random models,
results in the store with their provenance, and a worker SIGKILLed mid-run resuming from its
checkpoint. Also `personaboard evaluate` on a model folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import register_model, run_cli, wait_state  # noqa: E402
from tiny_models import build_tiny_model  # noqa: E402

from leaderboard.store import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITE, TASK = "prefeval", "mcq"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e-tiny-models")
    return {
        "generative": build_tiny_model(root / "gen", "generative", seed=11),
        "reward": build_tiny_model(root / "rew", "reward", seed=12),
    }


def http_client(svc) -> httpx.Client:
    return svc.http()


def stored_record(svc, sid: str) -> dict:
    path = svc.data_dir / "results-dataset" / result_path(SUITE, TASK, sid)
    assert path.exists(), list((svc.data_dir / "results-dataset").rglob("*.json"))
    return json.loads(path.read_text(encoding="utf-8"))


def model_body(model: str, **extra) -> dict:
    return {
        "model": model,
        "suite": SUITE,
        "task": TASK,
        "setting": "zero_shot",
        "limit": 12,
        **extra,
    }


@pytest.mark.slow
def test_model_submissions_run_and_publish_partial_rows(shared_live_service, tiny):
    svc = shared_live_service
    tag = uuid.uuid4().hex[:8]
    gen_name, rm_name = f"tiny-gen-{tag}", f"tiny-rm-{tag}"
    gen_entry = register_model(svc, gen_name, tiny["generative"])
    rm_entry = register_model(svc, rm_name, tiny["reward"])
    assert (gen_entry["model_type"], rm_entry["model_type"]) == ("generative", "reward")
    with http_client(svc) as http:
        listed = {m["name"]: m for m in http.get("/api/v1/models").json()["models"]}
        assert listed[gen_name]["revision"] == gen_entry["revision"]
        assert listed[rm_name]["model_type"] == "reward"

        started = time.monotonic()
        ids = {}
        for name in (gen_name, rm_name):
            answer = http.post("/api/v1/submissions", json=model_body(name))
            assert answer.status_code == 201, answer.text
            body = answer.json()
            assert body["kind"] == "model" and body["progress"]["total"] == 12
            assert "path" not in body["details"]["model"]
            ids[name] = body["id"]

        # the same run again, while queued/running or finished: refused, naming the first
        again = http.post("/api/v1/submissions", json=model_body(gen_name))
        assert again.status_code == 409, again.text
        assert again.json()["detail"]["existing_id"] == ids[gen_name]
        assert ids[gen_name] in again.json()["detail"]["message"]

        finals = {
            name: wait_state(http, sid, timeout=180, logs=svc.logs) for name, sid in ids.items()
        }
        print(f"\ntwo 12-item model runs finished in {time.monotonic() - started:.1f} s")
        for name, final in finals.items():
            assert final["state"] == "finished", (name, final)
            assert final["error"] is None and final["attempts"] == 1
            assert final["progress"]["done"] == 12

        rows = http.get(
            "/api/v1/leaderboard", params={"suite": SUITE, "task": TASK, "setting": "zero_shot"}
        ).json()
        by_id = {row["submission_id"]: row for row in rows}
        for name, sid in ids.items():
            assert sid in by_id, rows
            assert by_id[sid]["row_kind"] == "partial"
            assert by_id[sid]["model_name"] == name
            assert by_id[sid]["n_items"] == 12

        for name, entry, protocol in (
            (gen_name, gen_entry, "generate_parse"),  # mcq's default: the official protocol
            (rm_name, rm_entry, "reward"),
        ):
            record = stored_record(svc, ids[name])
            prov = record["provenance"]
            assert record["row_kind"] == "partial" and record["n_items"] == 12
            assert prov["model"]["revision"] == entry["revision"]
            assert prov["model"]["source"] == "local" and "path" not in prov["model"]
            assert prov["backend"] == "transformers"
            assert prov["backend_version"] and prov["backend_version"][0].isdigit()
            assert prov["protocol"] == protocol and prov["protocol_version"]
            assert len(prov["prompt_template_sha256"]) == 64
            assert prov["seeds"]["option_shuffle"] == 41
            assert prov["items"] == 12 and prov["items_resumed"] == 0
            assert len(prov["answers_sha256"]) == 64  # copies of these answers rank once
            assert prov["split"]["n_items"] == 12 and prov["split"]["full_n_items"] == 3000

        # still a duplicate once finished
        finished_again = http.post("/api/v1/submissions", json=model_body(rm_name))
        assert (
            finished_again.status_code == 409
            and finished_again.json()["detail"]["existing_id"] == ids[rm_name]
        )
        # a different limit is a different run
        other = http.post("/api/v1/submissions", json=model_body(rm_name, limit=3))
        assert other.status_code == 201, other.text
        assert (
            wait_state(http, other.json()["id"], timeout=120, logs=svc.logs)["state"] == "finished"
        )


def test_model_submission_refusals(shared_live_service):
    svc = shared_live_service
    assert svc.env.get("HF_HUB_OFFLINE") == "1"  # the premise of the 503 case
    with http_client(svc) as http:

        def problem_fields(answer) -> set:
            return {p["field"] for p in answer.json()["detail"]["problems"]}

        unknown = http.post("/api/v1/submissions", json=model_body("not a registered model!"))
        assert unknown.status_code == 422, unknown.text
        assert problem_fields(unknown) == {"model"}

        hub = http.post("/api/v1/submissions", json=model_body("some-org/some-model"))
        assert hub.status_code == 503, hub.text
        assert "Hub cannot be reached" in hub.json()["detail"]["message"]

        cases = [
            (model_body("x", limit=0), "limit"),
            (model_body("x", limit="many"), "limit"),
            (model_body("x", model_type="classifier"), "model_type"),
            ({"model": "x", "task": TASK, "setting": "zero_shot"}, "suite"),
            (model_body("x", suite="nosuch"), "suite"),
            (model_body("x", setting="nosuch"), "setting"),
        ]
        for body, field in cases:
            answer = http.post("/api/v1/submissions", json=body)
            assert answer.status_code == 422, (body, answer.text)
            assert field in problem_fields(answer), (body, answer.json())
            assert (
                field in answer.json()["detail"]["message"] or answer.json()["detail"]["problems"]
            )
        broken = http.post(
            "/api/v1/submissions",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert broken.status_code == 422, broken.text


def checkpoint_lines(svc, sid: str) -> int:
    path = svc.data_dir / "checkpoints" / f"{sid}.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
def test_worker_killed_mid_model_run_resumes_from_checkpoint(shared_live_service, tiny):
    # Two batches of 64 items (model_eval.BATCH_ITEMS): the worker dies during the second one.
    # zero_shot rather than cot: the first batch takes ~20 s instead of ~60 s on 2 cores, and the
    # second still leaves a window of ~20 s to kill in. The shared service is left as it was: the
    # killed worker is replaced, and its job finishes on a live one.
    LIMIT = 128
    svc = shared_live_service
    name = f"tiny-gen-{uuid.uuid4().hex[:8]}"
    register_model(svc, name, tiny["generative"])
    with http_client(svc) as http:
        answer = http.post("/api/v1/submissions", json=model_body(name, limit=LIMIT))
        assert answer.status_code == 201, answer.text
        sid = answer.json()["id"]
        deadline = time.monotonic() + 150
        while (
            True
        ):  # the first batch (64 items) is checkpointed (progress inside a chunk comes earlier)
            body = http.get(f"/api/v1/submissions/{sid}").json()
            assert body["state"] != "finished", "finished before the worker could be killed"
            if checkpoint_lines(svc, sid) >= 64:
                break
            assert time.monotonic() < deadline, svc.logs()
            time.sleep(0.2)
        assert checkpoint_lines(svc, sid) >= 64

        from submissions.queue import job_id_for

        running = [w for w in svc.registered_workers() if w.get_current_job_id() == job_id_for(sid)]
        assert len(running) == 1
        index = next(i for i, p in enumerate(svc.workers) if p.pid == running[0].pid)
        svc.kill_worker(index)
        killed_at = time.monotonic()
        svc.start_worker()

        final = wait_state(http, sid, timeout=180, logs=svc.logs)
        print(
            f"\nworker SIGKILL mid model run -> finished {time.monotonic() - killed_at:.1f} s later "
            f"(attempts={final['attempts']})"
        )
        assert final["state"] == "finished", final
        assert final["attempts"] >= 2
        prov = stored_record(svc, sid)["provenance"]
        assert prov["items_resumed"] >= 64
        assert prov["items"] == LIMIT and prov["attempts"] >= 2
        assert checkpoint_lines(svc, sid) == LIMIT  # nothing computed twice
    svc.wait_workers_registered()  # the shared service has its two workers again


@pytest.mark.slow
def test_cli_evaluate_model_folder(tiny, tmp_path):
    env = {**os.environ, "PERSONABOARD_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    proc = run_cli(
        "evaluate",
        "--model",
        str(tiny["generative"]),
        "--suite",
        SUITE,
        "--task",
        TASK,
        "--setting",
        "zero_shot",
        "--limit",
        "6",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["n_items"] == 6 and result["partial"] is True
    assert result["revision"].startswith("sha256:")
    # PrefEval mcq's default is the official protocol: generate 5 tokens, parse the <choice> tag
    assert result["run"]["protocol"] == "generate_parse" and result["run"]["items"] == 6
    assert 0.0 <= result["total"]["accuracy"]["value"] <= 1.0
