"""RealPref end to end on a live service: refused before install, the synthetic fixture installed with
`personaboard splits install`, mcq and true_false files with known accuracy -> rows with tier columns,
bad input -> 422 naming line and field, open_ended refused without a judge, and a tiny model (16K
window) run on mcq: only the `simple` configuration is run, the others are n/a (partial row)."""
from __future__ import annotations

import io
import json
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_e2e_models import cli, register, wait_done  # noqa: E402
from tiny_models import build_tiny_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "realpref"
SUITE = "realpref"
CONFIGS = ("simple", "normal", "long", "very_long", "extended", "extreme")


def upload(http, task: str, lines: list[dict], name: str, setting: str = "zero_shot"):
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return http.post("/api/v1/submissions", data={"suite": SUITE, "task": task, "setting": setting, "model_name": name},
                     files={"file": ("preds.jsonl", io.BytesIO(body), "application/jsonl")})


def inputs(http, task: str) -> list[dict]:
    answer = http.get(f"/api/v1/suites/{SUITE}/tasks/{task}/inputs")
    assert answer.status_code == 200, answer.text
    return [json.loads(line) for line in answer.text.splitlines() if line.strip()]


def rows(http, task: str) -> dict[str, dict]:
    got = http.get("/api/v1/leaderboard", params={"suite": SUITE, "task": task}).json()
    return {row["model_name"]: row for row in got}


def test_realpref_end_to_end(live_service, tmp_path):
    svc = live_service
    started = time.monotonic()
    with httpx.Client(base_url=svc.base_url, trust_env=False, timeout=60) as http:
        # before install: refused with the install command
        refused = upload(http, "mcq", [{"id": "x", "answer": "A"}], "early")
        assert refused.status_code == 409, refused.text
        assert "personaboard splits install realpref --source" in refused.json()["detail"]["message"]
        assert http.get("/api/v1/leaderboard", params={"suite": SUITE}).status_code == 200

        proc = cli("splits", "install", SUITE, "--source", str(FIXTURE), env=svc.env)
        assert proc.returncode == 0, proc.stderr
        info = json.loads((svc.data_dir / "splits" / SUITE / "INSTALLED.json").read_text())
        assert info["fixture"] is True
        assert {t: v["n_items"] for t, v in info["tasks"].items()} == {"mcq": 120, "true_false": 240, "open_ended": 120}

        mcq = inputs(http, "mcq")
        assert all("answer" not in pub and "preference" not in pub for pub in mcq)
        # We do not know the gold letters from the public inputs; the fixture's source does: aligned option text.
        prefs = {json.loads(l)["preference_id"]: json.loads(l) for l in (FIXTURE / "preferences.jsonl").read_text().splitlines()}
        aligned = {pid: p["mcq_options"][p["mcq_answer"]] for pid, p in prefs.items()}

        def gold_letter(pub):
            return next(k for k, v in pub["options"].items() if v == aligned[pub["preference_id"]])

        def wrong_letter(pub):
            return next(k for k in "ABCD" if k != gold_letter(pub))

        # right exactly on the explicit_direct items: total 1/4, explicit_direct 1.0, the rest 0.0
        lines = [{"id": p["id"], "answer": gold_letter(p) if p["expression_type"] == "explicit_direct" else wrong_letter(p)}
                 for p in mcq]
        tag = uuid.uuid4().hex[:6]
        answer = upload(http, "mcq", lines, f"file-mcq-{tag}")
        assert answer.status_code == 201, answer.text
        final = wait_done(http, answer.json()["id"], 60, svc.logs)
        assert final["state"] == "finished", final
        row = rows(http, "mcq")[f"file-mcq-{tag}"]
        assert row["row_kind"] == "computed" and row["n_items"] == 120
        assert row["total"] == pytest.approx(0.25)
        assert row["expression/explicit_direct"] == 1.0 and row["expression/implicit_experience"] == 0.0
        assert all(row[f"context/{c}"] == pytest.approx(0.25) for c in CONFIGS)
        assert row["kind/generalized"] == pytest.approx(0.25)

        # true/false: answer "true" everywhere -> 0.5 on every tier (one true statement per preference)
        tf = inputs(http, "true_false")
        truths = {(pid, s["statement"]): s["label"] in (True, "true") for pid, p in prefs.items() for s in p["true_false"]}
        answer = upload(http, "true_false", [{"id": p["id"], "answer": "true"} for p in tf], f"file-tf-{tag}")
        assert answer.status_code == 201, answer.text
        # and all correct -> 1.0
        right = [{"id": p["id"], "answer": "true" if truths[(p["preference_id"], p["statement"])] else "false"} for p in tf]
        answer2 = upload(http, "true_false", right, f"file-tf-right-{tag}", setting="reminder")
        assert answer2.status_code == 201, answer2.text
        for sid in (answer.json()["id"], answer2.json()["id"]):
            assert wait_done(http, sid, 60, svc.logs)["state"] == "finished"
        tf_rows = rows(http, "true_false")
        assert tf_rows[f"file-tf-{tag}"]["total"] == 0.5 and tf_rows[f"file-tf-{tag}"]["context/extreme"] == 0.5
        assert tf_rows[f"file-tf-right-{tag}"]["total"] == 1.0 and tf_rows[f"file-tf-right-{tag}"]["setting"] == "reminder"

        # bad input: names line and field
        bad = list(right)
        bad[6] = {"id": bad[6]["id"], "answer": "True!"}
        refused = upload(http, "true_false", bad, "bad")
        assert refused.status_code == 422, refused.text
        assert {"line": 7, "field": "answer"}.items() <= refused.json()["detail"]["problems"][0].items()
        refused = upload(http, "mcq", lines[:-1], "bad")
        assert refused.status_code == 422 and "1 of 120 item ids have no prediction" in refused.text

        # open_ended: no judge configured on this service -> refused, saying what the operator must do
        oe = inputs(http, "open_ended")
        refused = upload(http, "open_ended", [{"id": p["id"], "response": "A quiet place."} for p in oe], "oe")
        assert refused.status_code == 409, refused.text
        assert "PERSONABOARD_JUDGE_MODEL" in refused.json()["detail"]["message"]

        # a tiny model with a 16K window: only `simple` (2K) is run; the other configurations are n/a
        model_dir = build_tiny_model(tmp_path / "tiny", "generative", seed=5)
        name = f"tiny-realpref-{tag}"
        register(svc, name, model_dir)
        answer = http.post("/api/v1/submissions", json={"model": name, "suite": SUITE, "task": "mcq", "setting": "zero_shot"})
        assert answer.status_code == 201, answer.text
        final = wait_done(http, answer.json()["id"], 180, svc.logs)
        assert final["state"] == "finished", final
        row = rows(http, "mcq")[name]
        assert row["row_kind"] == "partial" and row["n_items"] == 20  # 5 preferences x 4 expression types
        assert row["context/simple"] is not None
        assert all(row[f"context/{c}"] is None for c in CONFIGS[1:])  # n/a: no value, never a truncated run
        record = json.loads(next((svc.data_dir / "results-dataset").rglob(f"{answer.json()['id']}.json")).read_text())
        assert set(record["provenance"]["not_applicable"]) == set(CONFIGS[1:])
        assert "context window of 16384" in record["provenance"]["not_applicable"]["normal"]
        assert set(record["metrics"]["tiers"]["context"]) == {"simple"}
    print(f"\nrealpref e2e: {time.monotonic() - started:.1f} s")
