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

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import register_model, run_cli, wait_state  # noqa: E402
from live_service import start_live_service  # noqa: E402
from tiny_models import build_scripted_judge, build_tiny_model  # noqa: E402

from leaderboard.store import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "realpref"
SUITE = "realpref"
CONFIGS = ("simple", "normal", "long", "very_long", "extended", "extreme")


def upload(http, task: str, lines: list[dict], name: str, setting: str = "zero_shot"):
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return http.post(
        "/api/v1/submissions",
        data={"suite": SUITE, "task": task, "setting": setting, "model_name": name},
        files={"file": ("preds.jsonl", io.BytesIO(body), "application/jsonl")},
    )


def inputs(http, task: str) -> list[dict]:
    answer = http.get(f"/api/v1/suites/{SUITE}/tasks/{task}/inputs")
    assert answer.status_code == 200, answer.text
    return [json.loads(line) for line in answer.text.splitlines() if line.strip()]


def rows(http, task: str) -> dict[str, dict]:
    got = http.get("/api/v1/leaderboard", params={"suite": SUITE, "task": task}).json()
    return {row["model_name"]: row for row in got}


@pytest.mark.model
def test_realpref_end_to_end(live_service, tmp_path):
    svc = live_service
    started = time.monotonic()
    with svc.http() as http:
        # before install: refused with the install command
        refused = upload(http, "mcq", [{"id": "x", "answer": "A"}], "early")
        assert refused.status_code == 409, refused.text
        assert (
            "personaboard splits install realpref --source" in refused.json()["detail"]["message"]
        )
        assert http.get("/api/v1/leaderboard", params={"suite": SUITE}).status_code == 200

        proc = run_cli("splits", "install", SUITE, "--source", str(FIXTURE), env=svc.env)
        assert proc.returncode == 0, proc.stderr
        info = json.loads((svc.data_dir / "splits" / SUITE / "INSTALLED.json").read_text())
        assert info["fixture"] is True
        assert {t: v["n_items"] for t, v in info["tasks"].items()} == {
            "mcq": 120,
            "true_false": 240,
            "open_ended": 120,
        }

        mcq = inputs(http, "mcq")
        assert all("answer" not in pub and "preference" not in pub for pub in mcq)
        # We do not know the gold letters from the public inputs; the fixture's source does: aligned option text.
        prefs = {
            json.loads(line)["preference_id"]: json.loads(line)
            for line in (FIXTURE / "preferences.jsonl").read_text().splitlines()
        }
        aligned = {pid: p["mcq_options"][p["mcq_answer"]] for pid, p in prefs.items()}

        def gold_letter(pub):
            return next(k for k, v in pub["options"].items() if v == aligned[pub["preference_id"]])

        def wrong_letter(pub):
            return next(k for k in "ABCD" if k != gold_letter(pub))

        # right exactly on the explicit_direct items: total 1/4, explicit_direct 1.0, the rest 0.0
        lines = [
            {
                "id": p["id"],
                "answer": gold_letter(p)
                if p["expression_type"] == "explicit_direct"
                else wrong_letter(p),
            }
            for p in mcq
        ]
        tag = uuid.uuid4().hex[:6]
        answer = upload(http, "mcq", lines, f"file-mcq-{tag}")
        assert answer.status_code == 201, answer.text
        final = wait_state(http, answer.json()["id"], timeout=60, logs=svc.logs)
        assert final["state"] == "finished", final
        row = rows(http, "mcq")[f"file-mcq-{tag}"]
        assert row["row_kind"] == "computed" and row["n_items"] == 120
        assert row["total"] == pytest.approx(0.25)
        assert (
            row["expression/explicit_direct"] == 1.0
            and row["expression/implicit_experience"] == 0.0
        )
        assert all(row[f"context/{c}"] == pytest.approx(0.25) for c in CONFIGS)
        assert row["kind/generalized"] == pytest.approx(0.25)

        # true/false: answer "true" everywhere -> 0.5 on every tier (one true statement per preference)
        tf = inputs(http, "true_false")
        truths = {
            (pid, s["statement"]): s["label"] in (True, "true")
            for pid, p in prefs.items()
            for s in p["true_false"]
        }
        answer = upload(
            http, "true_false", [{"id": p["id"], "answer": "true"} for p in tf], f"file-tf-{tag}"
        )
        assert answer.status_code == 201, answer.text
        # and all correct -> 1.0
        right = [
            {
                "id": p["id"],
                "answer": "true" if truths[(p["preference_id"], p["statement"])] else "false",
            }
            for p in tf
        ]
        answer2 = upload(http, "true_false", right, f"file-tf-right-{tag}", setting="reminder")
        assert answer2.status_code == 201, answer2.text
        for sid in (answer.json()["id"], answer2.json()["id"]):
            assert wait_state(http, sid, timeout=60, logs=svc.logs)["state"] == "finished"
        tf_rows = rows(http, "true_false")
        assert (
            tf_rows[f"file-tf-{tag}"]["total"] == 0.5
            and tf_rows[f"file-tf-{tag}"]["context/extreme"] == 0.5
        )
        assert (
            tf_rows[f"file-tf-right-{tag}"]["total"] == 1.0
            and tf_rows[f"file-tf-right-{tag}"]["setting"] == "reminder"
        )

        # bad input: names line and field
        bad = list(right)
        bad[6] = {"id": bad[6]["id"], "answer": "True!"}
        refused = upload(http, "true_false", bad, "bad")
        assert refused.status_code == 422, refused.text
        assert {"line": 7, "field": "answer"}.items() <= refused.json()["detail"]["problems"][
            0
        ].items()
        refused = upload(http, "mcq", lines[:-1], "bad")
        assert refused.status_code == 422 and "1 of 120 item ids have no prediction" in refused.text

        # open_ended: no judge configured on this service -> refused, saying what the operator must do
        oe = inputs(http, "open_ended")
        refused = upload(
            http, "open_ended", [{"id": p["id"], "response": "A quiet place."} for p in oe], "oe"
        )
        assert refused.status_code == 409, refused.text
        assert "PERSONABOARD_JUDGE_MODEL" in refused.json()["detail"]["message"]

        # a tiny model with a 16K window: only `simple` (2K) is run; the other configurations are n/a
        model_dir = build_tiny_model(tmp_path / "tiny", "generative", seed=5)
        name = f"tiny-realpref-{tag}"
        register_model(svc, name, model_dir)
        answer = http.post(
            "/api/v1/submissions",
            json={"model": name, "suite": SUITE, "task": "mcq", "setting": "zero_shot"},
        )
        assert answer.status_code == 201, answer.text
        # no protocol named: the default, generation (the paper's API models wrote their answers)
        assert answer.json()["details"]["protocol"] == "generate_parse"
        final = wait_state(http, answer.json()["id"], timeout=180, logs=svc.logs)
        assert final["state"] == "finished", final
        row = rows(http, "mcq")[name]
        assert (
            row["row_kind"] == "partial" and row["n_items"] == 20
        )  # 5 preferences x 4 expression types
        assert row["context/simple"] is not None
        assert all(
            row[f"context/{c}"] is None for c in CONFIGS[1:]
        )  # n/a: no value, never a truncated run
        record = json.loads(
            next(
                (svc.data_dir / "results-dataset").rglob(f"{answer.json()['id']}.json")
            ).read_text()
        )
        assert set(record["provenance"]["not_applicable"]) == set(CONFIGS[1:])
        assert "context window of 16384" in record["provenance"]["not_applicable"]["normal"]
        assert set(record["metrics"]["tiers"]["context"]) == {"simple"}
    print(f"\nrealpref e2e: {time.monotonic() - started:.1f} s")


# -- tiny models on true_false and open_ended (with a locally registered judge) -------------------

JUDGE_ENV = "PERSONABOARD_JUDGE_MODEL"


def install(svc) -> None:
    proc = run_cli("splits", "install", SUITE, "--source", str(FIXTURE), env=svc.env)
    assert proc.returncode == 0, proc.stderr


def fixture_preferences() -> dict[str, dict]:
    lines = (FIXTURE / "preferences.jsonl").read_text().splitlines()
    return {p["preference_id"]: p for p in map(json.loads, filter(str.strip, lines))}


def stored(svc, task: str, sid: str) -> dict:
    return json.loads(
        (svc.data_dir / "results-dataset" / result_path(SUITE, task, sid)).read_text()
    )


def checkpoint_answers(svc, sid: str) -> dict[str, object]:
    lines = (svc.data_dir / "checkpoints" / f"{sid}.jsonl").read_text().splitlines()
    return {r["id"]: r["answer"] for r in map(json.loads, filter(str.strip, lines))}


JUDGE = "tiny-judge"  # registered by the judge test; named from the start (below)


@pytest.fixture(scope="module")
def module_live_service(tmp_path_factory):
    """This module's shared service, with PERSONABOARD_JUDGE_MODEL named in the environment of the
    web app (intake) AND of the workers (scoring) from the start: the judge test registers the
    model under that name before its first judged job, and no process restarts. The true_false
    test's task has no judge, so the name changes nothing for it."""
    svc = start_live_service(tmp_path_factory.mktemp("module-service"), 2, {JUDGE_ENV: JUDGE})
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def installed(module_live_service):
    install(module_live_service)
    return module_live_service


# The judge's reply to every prompt (tests/tiny_models.py build_scripted_judge): the paper's
# protocol parses score 4 and the rationale "fits" from it.
JUDGE_REPLY, JUDGE_SCORE, JUDGE_RATIONALE = "Score: 4 - fits", 4.0, "fits"
# The runner's reply to every prompt (scripted too: a random model writes all 512 tokens of the
# task's budget, one token at a time, for text the judge reads the same way)
RUNNER_REPLY = "Try a quiet cafe."


def judge_transcript(svc, sid: str) -> list[dict]:
    """What the judge wrote for a submission, kept beside its answers (never published)."""
    path = svc.data_dir / "checkpoints" / f"{sid}.judge.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.model
def test_realpref_true_false_tiny_model(installed, tmp_path):
    """true_false from a tiny model (choice_logprobs named, over the single tokens True/False: the
    default, generate_parse, reads nothing from a random model's text): a finished
    partial row (only `simple` fits the 16K window) whose accuracy is exactly that of the stored answers."""
    # shared with the judge test below; the end-to-end test, which starts before the install, has its own
    svc = installed
    started = time.monotonic()
    name = "tiny-tf"
    register_model(svc, name, build_tiny_model(tmp_path / "tiny", "generative", seed=7))
    with svc.http() as http:
        prefs = fixture_preferences()
        truths = {
            (pid, s["statement"]): s["label"] in (True, "true")
            for pid, p in prefs.items()
            for s in p["true_false"]
        }
        gold = {
            p["id"]: "true" if truths[(p["preference_id"], p["statement"])] else "false"
            for p in inputs(http, "true_false")
        }
        answer = http.post(
            "/api/v1/submissions",
            json={
                "model": name,
                "suite": SUITE,
                "task": "true_false",
                "setting": "reminder",
                "protocol": "choice_logprobs",
            },
        )
        assert answer.status_code == 201, answer.text
        assert answer.json()["details"]["protocol"] == "choice_logprobs"
        sid = answer.json()["id"]
        final = wait_state(http, sid, timeout=180, logs=svc.logs)
        assert final["state"] == "finished", final
        row = rows(http, "true_false")[name]
    assert row["row_kind"] == "partial" and row["setting"] == "reminder"
    assert row["n_items"] == 40  # 5 preferences x 4 expression types x 2 statements, `simple` only
    assert all(
        row.get(f"context/{c}") is None for c in CONFIGS[1:]
    )  # n/a: no value (no column if no other row has one)
    answers = checkpoint_answers(svc, sid)
    assert len(answers) == 40 and set(answers.values()) <= {
        "true",
        "false",
    }  # every answer read, none unparsed
    correct = sum(answers[i] == gold[i] for i in answers)
    assert row["total"] == pytest.approx(correct / 40)
    assert row["context/simple"] == pytest.approx(correct / 40)
    record = stored(svc, "true_false", sid)
    assert (
        record["provenance"]["protocol"] == "choice_logprobs"
        and record["provenance"]["unparsed"] == 0
    )
    assert set(record["provenance"]["not_applicable"]) == set(CONFIGS[1:])
    print(f"\nrealpref true_false tiny model: {time.monotonic() - started:.1f} s")


@pytest.mark.slow
@pytest.mark.model
def test_realpref_open_ended_with_local_judge(installed, tmp_path):
    """open_ended with a tiny judge registered on the service and named in PERSONABOARD_JUDGE_MODEL
    (web app and workers), under the paper's judge protocol (the judge writes a score and its
    rationale; the worker parses them): (a) an uploaded predictions file -> finished row, every
    rubric mean the judge's written score, no judge failures, the rationales kept beside the
    answers and nowhere public; (b) a tiny model's own answers (generate_parse, limit 2) ->
    finished partial row, its replies stored as written and judged the same way."""
    svc = installed  # its environment names the judge (module_live_service above)
    started = time.monotonic()
    judge, runner = JUDGE, "tiny-oe"
    judge_dir = build_scripted_judge(tmp_path / "judge", JUDGE_REPLY, seed=11)
    judge_entry = register_model(svc, judge, judge_dir)
    register_model(svc, runner, build_scripted_judge(tmp_path / "runner", RUNNER_REPLY, seed=12))
    with svc.http() as http:
        publics = inputs(http, "open_ended")
        assert len(publics) == 120
        # (a) an uploaded file
        responses = {
            p["id"]: (
                "I would suggest a quiet place with good food."
                if k % 2
                else "Yes, go to a big party."
            )
            for k, p in enumerate(publics)
        }
        answer = upload(
            http, "open_ended", [{"id": i, "response": r} for i, r in responses.items()], "file-oe"
        )
        assert answer.status_code == 201, answer.text
        upload_sid = answer.json()["id"]
        # (b) the runner's own answers, judged by the judge
        answer = http.post(
            "/api/v1/submissions",
            json={
                "model": runner,
                "suite": SUITE,
                "task": "open_ended",
                "setting": "zero_shot",
                "limit": 2,
            },
        )
        assert answer.status_code == 201, answer.text
        assert answer.json()["details"]["protocol"] == "generate_parse"
        run_sid = answer.json()["id"]
        for sid in (upload_sid, run_sid):
            final = wait_state(http, sid, timeout=240, logs=svc.logs)
            assert final["state"] == "finished", final
        table = rows(http, "open_ended")
        public_text = http.get(f"/api/v1/submissions/{upload_sid}").text
    setting = f"zero_shot+judge:{judge}"  # judged results compare only under the same judge

    row = table["file-oe"]
    assert row["row_kind"] == "computed" and row["n_items"] == 120 and row["setting"] == setting
    for column in ("total", "awareness", "quality", "context/extreme"):  # total: alignment
        assert row[column] == pytest.approx(JUDGE_SCORE), column
    assert row["judge_failures"] == 0
    record = stored(svc, "open_ended", upload_sid)
    assert record["setting"] == setting
    judged = record["provenance"]["judge"]
    assert judged["model"] == judge and judged["revision"] == judge_entry["revision"]
    assert judged["protocol"] == "judge_score" and "rationale" in judged["protocol_description"]
    assert record["provenance"]["protocol"] == "uploaded predictions"
    kept = judge_transcript(svc, upload_sid)
    assert len(kept) == 3 * 120 and {(k["score"], k["rationale"]) for k in kept} == {
        (4, JUDGE_RATIONALE)
    }
    assert {k["id"] for k in kept} == set(responses)
    # the rationales stay with the answers: not in the published record or the submission status
    assert JUDGE_RATIONALE not in json.dumps(record["provenance"]) + json.dumps(record["metrics"])
    assert '"fits"' not in public_text and 'rationale"' not in public_text

    row = table[runner]
    assert row["row_kind"] == "partial" and row["n_items"] == 2 and row["setting"] == setting
    record = stored(svc, "open_ended", run_sid)
    assert (
        record["provenance"]["protocol"] == "generate_parse"
        and record["provenance"]["judge"]["model"] == judge
    )
    assert record["provenance"]["split"]["full_n_items"] == 120
    texts = checkpoint_answers(svc, run_sid)
    assert len(texts) == 2 and set(texts.values()) == {RUNNER_REPLY}  # what the runner wrote
    for column in ("total", "awareness", "quality"):  # each response judged: the judge's score
        assert row[column] == pytest.approx(JUDGE_SCORE), column
    kept = judge_transcript(svc, run_sid)
    assert len(kept) == 3 * 2 and {k["id"] for k in kept} == set(texts)
    print(f"\nrealpref open_ended with a judge: {time.monotonic() - started:.1f} s")
