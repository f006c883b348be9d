"""`personaboard` CLI, run as a subprocess exactly as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.registry import get_task

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "personaboard"


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "backend.cli"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def split():
    return get_task("prefeval", "mcq").load_split()


def wrong(letter: str) -> str:
    return "ABCD"[("ABCD".index(letter) + 1) % 4]


def test_score_known_fraction(tmp_path, split):
    # right on every explicit item, wrong on every implicit one: exactly 1000/3000
    path = tmp_path / "preds.jsonl"
    with path.open("w") as out:
        for item in reversed(split.items):
            answer = item.gold if item.tiers["form"] == "explicit" else wrong(item.gold)
            out.write(json.dumps({"id": item.id, "answer": answer}) + "\n")
    proc = run_cli("score", "--suite", "prefeval", "--task", "mcq", str(path))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["suite"], result["task"], result["n_items"]) == ("prefeval", "mcq", 3000)
    total = result["total"]["accuracy"]
    assert total["value"] == 1 / 3 and total["n"] == 3000
    assert total["ci95"][0] < 1 / 3 < total["ci95"][1]
    form = result["tiers"]["form"]
    assert form["explicit"]["accuracy"]["value"] == 1.0
    # 1000 of 1000 (one item per pair in this tier): Wilson's lower end 1000 / (1000 + z^2), not 1.0
    assert form["explicit"]["accuracy"]["ci95"] == pytest.approx(
        [1000 / (1000 + 1.959963984540054**2), 1.0]
    )
    assert form["implicit_choice"]["accuracy"]["value"] == 0.0
    assert form["implicit_persona"]["accuracy"]["value"] == 0.0
    # each topic: its explicit third right
    for topic, stats in result["tiers"]["topic"].items():
        assert stats["accuracy"]["value"] == pytest.approx(1 / 3), topic
    assert result["split"]["sha256"] == split.sha256
    assert "scoring_seconds" not in result


def test_score_bad_file_exit_2(tmp_path, split):
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps({"id": item.id, "answer": "A"}) for item in split.items]
    lines[41] = json.dumps({"id": split.items[41].id, "answer": "F"})
    path.write_text("\n".join(lines) + "\n")
    proc = run_cli("score", "--suite", "prefeval", "--task", "mcq", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "line 42, field 'answer'" in proc.stderr and "'F' is not one of A-D" in proc.stderr


def test_score_missing_file_and_unknown_suite(tmp_path):
    proc = run_cli("score", "--suite", "prefeval", "--task", "mcq", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2 and "no such file" in proc.stderr
    path = tmp_path / "x.jsonl"
    path.write_text("")
    proc = run_cli("score", "--suite", "nosuch", "--task", "mcq", str(path))
    assert proc.returncode == 2 and "unknown suite 'nosuch'" in proc.stderr


def test_inputs_writes_3000_public_lines(tmp_path, split):
    out = tmp_path / "inputs.jsonl"
    proc = run_cli("inputs", "--suite", "prefeval", "--task", "mcq", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = out.read_bytes().splitlines()
    assert len(lines) == 3000
    rows = [json.loads(line) for line in lines]
    assert [r["id"] for r in rows] == [item.id for item in split.items]
    assert all("gold" not in r and set(r["options"]) == set("ABCD") for r in rows)


def test_submit_records_as_the_user_and_refuses_as_the_api_does(tmp_path, split):
    """`personaboard submit` on the server: through the intake, so accepted as the user (recorded;
    queued once Redis answers, here none does) or refused with the API's answer, exit 2."""
    import os

    from submissions.identity import IdentityStore
    from submissions.records import SubmissionStore

    data = tmp_path / "data"
    data.mkdir()
    IdentityStore(SubmissionStore(data / "submissions.sqlite3")).add_user("alice")
    env = {**os.environ, "PERSONABOARD_DATA_DIR": str(data)}
    env["PERSONABOARD_REDIS_URL"] = "redis://127.0.0.1:1/0"  # nothing listens: recorded only
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"id": i.id, "answer": "A"}) + "\n" for i in split.items))
    where = ["--user", "alice", "--suite", "prefeval", "--task", "mcq", "--setting", "zero_shot"]
    proc = run_cli("submit", "predictions", str(path), *where, "--model-name", "cli", env=env)
    assert proc.returncode == 0, proc.stderr
    accepted = json.loads(proc.stdout)
    assert (accepted["owner"], accepted["state"], accepted["model_name"]) == (
        "alice",
        "queued",
        "cli",
    )
    stored = SubmissionStore(data / "submissions.sqlite3").get(accepted["id"])
    assert stored is not None and stored.file_bytes == path.stat().st_size
    again = run_cli("submit", "predictions", str(path), *where, "--model-name", "cli", env=env)
    assert again.returncode == 2, again.stderr
    refusal = json.loads(again.stdout)
    assert refusal["status"] == 409 and refusal["existing_id"] == accepted["id"]
    assert f"error: {refusal['message']}" in again.stderr
    nobody = run_cli("submit", "model", "m", *where[2:], "--user", "bob", env=env)
    assert nobody.returncode == 2 and "no user named 'bob'" in nobody.stderr
