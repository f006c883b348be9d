"""Re-Centering Humans end to end against a live service (Redis + rq workers + web app): refused
with the install command until the split is installed, the paper's rows (Tables 2, 3, 6) visible
meanwhile with their precision / recall / F1 / Spearman columns; the synthetic fixture installed
with `personaboard splits install`; one predictions file per task with known metrics -> rows;
bad files -> 4xx naming line and field; a tiny generative model rating stage-3 pairs
(rating_logprobs) with a limit -> a finished partial row.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_helpers import run_cli, wait_finished

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_tiny_model  # noqa: E402

from leaderboard.store import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "recentering"
SUITE = "recentering"
TASKS = ("attribute_verification", "relevance", "response_preference")


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


@pytest.fixture(scope="module")
def installed(svc):
    proc = run_cli("splits", "install", SUITE, "--source", str(FIXTURE), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["fixture"] is True
    assert {t: v["n_items"] for t, v in info["tasks"].items()} == {t: 10 for t in TASKS}
    return svc


def http_client(svc) -> httpx.Client:
    return svc.http()


def submit(
    http, task: str, body: bytes, setting: str = "zero_shot", model_name: str = "rc-test"
) -> httpx.Response:
    return http.post(
        "/api/v1/submissions",
        files={"file": ("predictions.jsonl", body, "application/x-ndjson")},
        data={"suite": SUITE, "task": task, "setting": setting, "model_name": model_name},
    )


def rows(http, task: str, setting: str | None = None) -> list[dict]:
    params = {"suite": SUITE, "task": task, **({"setting": setting} if setting else {})}
    answer = http.get("/api/v1/leaderboard", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def row_of(http, task: str, sid: str, setting: str) -> dict:
    by_id = {row["submission_id"]: row for row in rows(http, task, setting)}
    assert sid in by_id, list(by_id)
    return by_id[sid]


def gold_items(svc, task: str) -> list:
    """The fixture split as the service built it (the test is the scorer's side: it may read gold)."""
    from evaluator.registry import get_task
    from evaluator.suite import clear_split_cache

    old = os.environ.get("PERSONABOARD_SPLITS_DIR")
    os.environ["PERSONABOARD_SPLITS_DIR"] = str(svc.data_dir / "splits")
    try:
        clear_split_cache(SUITE)
        return get_task(SUITE, task).load_split().items
    finally:
        if old is None:
            os.environ.pop("PERSONABOARD_SPLITS_DIR")
        else:
            os.environ["PERSONABOARD_SPLITS_DIR"] = old
        clear_split_cache(SUITE)


def body_of(records: list[dict]) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def test_refused_until_installed_with_reported_rows_visible(svc):
    with http_client(svc) as http:
        answer = submit(http, "relevance", b'{"id": "r01", "answer": "YES"}\n')
        assert answer.status_code == 409, answer.text
        assert (
            f"personaboard splits install {SUITE} --source PATH_TO_SPLIT_FOLDER"
            in answer.json()["detail"]["message"]
        )
        model = http.post(
            "/api/v1/submissions",
            json={
                "model": "anything",
                "suite": SUITE,
                "task": "response_preference",
                "setting": "default",
                "limit": 2,
            },
        )
        assert model.status_code == 409 and "splits install" in model.text, model.text
        suite = next(s for s in http.get("/api/v1/suites").json()["suites"] if s["name"] == SUITE)
        assert (
            suite["split"]["installed"] is False and "splits install" in suite["split"]["install"]
        )

        t2 = {
            (r["model_name"], r["setting"]): r
            for r in rows(http, "attribute_verification")
            if r["row_kind"] == "reported"
        }
        assert len(t2) == 11
        roberta = t2[("RoBERTa (Trained)", "trained")]
        assert roberta["total"] == pytest.approx(0.748)  # accuracy, the primary metric
        assert (roberta["precision"], roberta["recall"], roberta["f1"]) == pytest.approx(
            (0.591, 0.926, 0.726)
        )
        optimized = rows(http, "attribute_verification", "optimized_prompt")
        assert {r["model_name"] for r in optimized} >= {"GPT-5.4", "Claude-Sonnet-4.6"} and len(
            optimized
        ) == 5

        grpo = rows(http, "relevance", "grpo")
        assert len(grpo) == 1 and grpo[0]["model_name"] == "Qwen3-4B + GRPO"
        assert (
            grpo[0]["total"],
            grpo[0]["precision"],
            grpo[0]["recall"],
            grpo[0]["f1"],
        ) == pytest.approx((0.870, 0.611, 0.674, 0.641))
        assert len(rows(http, "relevance", "zero_shot")) == 6

        t6 = {r["model_name"]: r for r in rows(http, "response_preference", "default")}
        assert len(t6) == 6
        assert t6["Llama-3.3-70B"]["total"] == pytest.approx(0.376)  # Spearman, the primary metric
        assert t6["Llama-3.3-70B"]["mean_rating"] == pytest.approx(4.019)
        assert t6["Human"]["mean_rating"] == pytest.approx(3.176) and t6["Human"]["total"] is None


def test_each_task_upload_scored(installed):
    svc = installed
    av, rel, pref = (gold_items(svc, t) for t in TASKS)
    with http_client(svc) as http:
        # stage 1: flag the first two gold-unsupported items and the first three gold-supported ones
        unsupported = [i.id for i in av if i.gold == "unsupported"][:2]
        supported = [i.id for i in av if i.gold == "supported"][:3]
        flagged = set(unsupported) | set(supported)
        records = [
            {"id": i.id, "answer": "unsupported" if i.id in flagged else "supported"} for i in av
        ]
        n_pos = sum(i.gold == "unsupported" for i in av)
        n_neg = len(av) - n_pos
        expect_av = {
            "total": (2 + n_neg - 3) / len(av),
            "precision": 2 / 5,
            "recall": 2 / n_pos,
            "f1": 4 / (5 + n_pos),
        }
        # stage 2: YES on every item -> recall 1, precision = YES share, yes_rate 1
        yes_share = sum(i.gold == "YES" for i in rel) / len(rel)
        expect_rel = {
            "total": yes_share,
            "precision": yes_share,
            "recall": 1.0,
            "f1": 2 * yes_share / (1 + yes_share),
            "yes_rate": 1.0,
            "human_yes_rate": yes_share,
        }
        # stage 3: A/B ratings that agree exactly with the humans once oriented
        exact = [
            {
                "id": i.id,
                "rating": i.gold["rating"]
                if i.gold["personalized"] == "B"
                else 6 - i.gold["rating"],
            }
            for i in pref
        ]
        human_mean = sum(i.gold["rating"] for i in pref) / len(pref)
        expect_pref = {"total": 1.0, "mean_rating": human_mean, "human_mean_rating": human_mean}

        ids = {}
        for task, recs, setting in (
            ("attribute_verification", records, "optimized_prompt"),
            ("relevance", [{"id": i.id, "answer": "YES"} for i in rel], "zero_shot"),
            ("response_preference", exact, "default"),
        ):
            answer = submit(http, task, body_of(recs), setting=setting, model_name=f"rc-{task}")
            assert answer.status_code == 201, answer.text
            ids[task] = (answer.json()["id"], setting)
        for sid, _ in ids.values():
            wait_finished(http, sid, 120, svc.logs)
        for task, expect in (
            ("attribute_verification", expect_av),
            ("relevance", expect_rel),
            ("response_preference", expect_pref),
        ):
            sid, setting = ids[task]
            row = row_of(http, task, sid, setting)
            assert row["row_kind"] == "computed" and row["n_items"] == 10
            for column, value in expect.items():
                assert row[column] == pytest.approx(value), (task, column)
        av_row = row_of(http, "attribute_verification", *ids["attribute_verification"])
        assert {"source/wildchat", "source/personalens", "source/cupid", "source/prefeval"} <= set(
            av_row
        )
        assert {"agreement/unanimous", "agreement/split"} <= set(
            row_of(http, "relevance", *ids["relevance"])
        )
        # the computed row sits in the same table as the paper's rows, with the same columns
        table = rows(http, "attribute_verification", "optimized_prompt")
        assert {r["row_kind"] for r in table} == {"computed", "reported"}


def test_bad_inputs_name_line_and_field(installed):
    svc = installed
    pref = gold_items(svc, "response_preference")
    rel = gold_items(svc, "relevance")
    with http_client(svc) as http:
        records = [{"id": i.id, "rating": 3} for i in pref]
        records[3]["rating"] = 6
        records[7] = {"id": pref[7].id, "score": 2}
        answer = submit(http, "response_preference", body_of(records), setting="default")
        assert answer.status_code == 422, answer.text
        problems = answer.json()["detail"]["problems"]
        assert {(p["line"], p["field"]) for p in problems} == {(4, "rating"), (8, "rating")}
        assert "line 4, field 'rating'" in answer.json()["detail"]["message"]

        labels = [{"id": i.id, "answer": "NO"} for i in rel]
        labels[1]["answer"] = "relevant"
        answer = submit(http, "relevance", body_of(labels))
        assert answer.status_code == 422, answer.text
        assert [(p["line"], p["field"]) for p in answer.json()["detail"]["problems"]] == [
            (2, "answer")
        ]
        # a setting of other suites (rag): a real value this suite rules out, 404 naming it
        unknown = submit(
            http, "relevance", body_of([{"id": i.id, "answer": "NO"} for i in rel]), setting="rag"
        )
        assert (
            unknown.status_code == 404
            and unknown.json()["detail"]["problems"][0]["field"] == "setting"
            and unknown.json()["detail"]["allowed"]
        ), unknown.text


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("rc-tiny") / "gen", "generative", seed=31)


def test_tiny_model_rates_pairs(installed, tiny):
    svc = installed
    limit = 6
    proc = run_cli("models", "add", "rc-tiny-judge", str(tiny), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    with http_client(svc) as http:
        answer = http.post(
            "/api/v1/submissions",
            json={
                "model": "rc-tiny-judge",
                "suite": SUITE,
                "task": "response_preference",
                "setting": "default",
                "limit": limit,
                "protocol": "rating_logprobs",  # ours; the default is the paper's generate_parse
            },
        )
        assert answer.status_code == 201, answer.text
        assert answer.json()["details"]["protocol"] == "rating_logprobs"
        sid = answer.json()["id"]
        final = wait_finished(http, sid, 240, svc.logs)
        assert final["progress"]["done"] == limit
        row = row_of(http, "response_preference", sid, "default")
    assert row["row_kind"] == "partial" and row["n_items"] == limit
    assert 1 <= row["mean_rating"] <= 5
    assert row["total"] is None or -1 <= row["total"] <= 1
    record = json.loads(
        (
            svc.data_dir / "results-dataset" / result_path(SUITE, "response_preference", sid)
        ).read_text(encoding="utf-8")
    )
    assert (
        record["provenance"]["protocol"] == "rating_logprobs"
        and record["provenance"]["unparsed"] == 0
    )
    assert record["provenance"]["split"]["full_n_items"] == 10


# -- tiny models on stages 1 and 2 ------------------------------------------------------------------


def register_tiny(svc, name: str, folder: Path) -> None:
    proc = run_cli("models", "add", name, str(folder), env=svc.env)
    assert proc.returncode == 0, proc.stderr


def run_tiny(
    http, svc, name: str, task: str, setting: str, protocol: str | None, limit: int | None
) -> str:
    body = {
        "model": name,
        "suite": SUITE,
        "task": task,
        "setting": setting,
        **({"protocol": protocol} if protocol else {}),
        **({"limit": limit} if limit else {}),
    }
    answer = http.post("/api/v1/submissions", json=body)
    assert answer.status_code == 201, answer.text
    if protocol:
        assert answer.json()["details"]["protocol"] == protocol
    return answer.json()["id"]


def stored_record(svc, task: str, sid: str) -> dict:
    path = svc.data_dir / "results-dataset" / result_path(SUITE, task, sid)
    return json.loads(path.read_text(encoding="utf-8"))


def checkpoint_answers(svc, sid: str) -> dict:
    lines = (svc.data_dir / "checkpoints" / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r["answer"] for r in map(json.loads, filter(str.strip, lines))}


def expected_binary(answers: dict, gold: dict, positive: str) -> dict:
    """accuracy (`total`), precision, recall, F1 of stored answers, as the task descriptions define
    them: None (unparsed) is wrong and not positive; an undefined ratio is None (no value)."""
    ids = list(answers)
    tp = sum(answers[i] == positive and gold[i] == positive for i in ids)
    pred = sum(answers[i] == positive for i in ids)
    real = sum(gold[i] == positive for i in ids)
    precision = tp / pred if pred else None
    recall = tp / real if real else None
    f1 = 2 * tp / (pred + real) if pred + real else None
    return {
        "total": sum(answers[i] is not None and answers[i] == gold[i] for i in ids) / len(ids),
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def assert_columns(row: dict, expect: dict) -> None:
    for column, value in expect.items():
        if value is None:
            assert row.get(column) is None, (column, row.get(column))
        else:
            assert row[column] == pytest.approx(value), (column, row[column], value)


def test_tiny_model_verifies_attributes(installed, tiny):
    """Stage 1 from a tiny model (generate_parse, the paper's 512-token cap, limit 3): a finished
    partial row whose accuracy / precision / recall / F1 are exactly those of the stored answers
    (an unparsable answer: wrong, and not flagged), with the unparsed count in the provenance."""
    svc = installed
    started = time.monotonic()
    limit = 3
    register_tiny(svc, "rc-tiny-verifier", tiny)
    gold = {i.id: i.gold for i in gold_items(svc, "attribute_verification")}
    with http_client(svc) as http:
        sid = run_tiny(
            http,
            svc,
            "rc-tiny-verifier",
            "attribute_verification",
            "optimized_prompt",
            "generate_parse",
            limit,
        )
        final = wait_finished(http, sid, 180, svc.logs)
        assert final["progress"]["done"] == limit
        row = row_of(http, "attribute_verification", sid, "optimized_prompt")
    assert (
        row["row_kind"] == "partial"
        and row["n_items"] == limit
        and row["model_name"] == "rc-tiny-verifier"
    )
    answers = checkpoint_answers(svc, sid)
    assert len(answers) == limit and set(answers) <= set(gold)
    assert set(answers.values()) <= {"supported", "unsupported", None}
    assert_columns(row, expected_binary(answers, gold, "unsupported"))
    record = stored_record(svc, "attribute_verification", sid)
    assert record["provenance"]["protocol"] == "generate_parse"
    assert record["provenance"]["unparsed"] == sum(a is None for a in answers.values())
    assert record["provenance"]["split"]["full_n_items"] == 10
    print(f"\nrecentering attribute_verification tiny model: {time.monotonic() - started:.1f} s")


def test_tiny_model_judges_relevance(installed, tiny):
    """Stage 2 from a tiny model: choice_logprobs (YES / NO single tokens) on the whole split -> a
    computed row, every answer read, metrics exactly those of the stored answers and the humans'
    YES-rate; generate_parse (limit 2) -> a partial row scored the same way, unparsed counted."""
    svc = installed
    started = time.monotonic()
    register_tiny(svc, "rc-tiny-relevance", tiny)
    items = gold_items(svc, "relevance")
    gold = {i.id: i.gold for i in items}
    with http_client(svc) as http:
        logprob_sid = run_tiny(
            http, svc, "rc-tiny-relevance", "relevance", "zero_shot", "choice_logprobs", None
        )
        generate_sid = run_tiny(
            http, svc, "rc-tiny-relevance", "relevance", "grpo", "generate_parse", 2
        )
        for sid in (logprob_sid, generate_sid):
            wait_finished(http, sid, 180, svc.logs)
        logprob_row = row_of(http, "relevance", logprob_sid, "zero_shot")
        generate_row = row_of(http, "relevance", generate_sid, "grpo")

    answers = checkpoint_answers(svc, logprob_sid)
    assert len(answers) == 10 and set(answers.values()) <= {"YES", "NO"}  # no unparsed answer
    assert logprob_row["row_kind"] == "computed" and logprob_row["n_items"] == 10
    assert_columns(
        logprob_row,
        {
            **expected_binary(answers, gold, "YES"),
            "yes_rate": sum(a == "YES" for a in answers.values()) / 10,
            "human_yes_rate": sum(g == "YES" for g in gold.values()) / 10,
        },
    )
    record = stored_record(svc, "relevance", logprob_sid)
    assert (
        record["provenance"]["protocol"] == "choice_logprobs"
        and record["provenance"]["unparsed"] == 0
    )

    answers = checkpoint_answers(svc, generate_sid)
    assert len(answers) == 2 and set(answers.values()) <= {"YES", "NO", None}
    assert generate_row["row_kind"] == "partial" and generate_row["n_items"] == 2
    assert_columns(
        generate_row,
        {
            **expected_binary(answers, gold, "YES"),
            "yes_rate": sum(a == "YES" for a in answers.values()) / 2,
        },
    )
    record = stored_record(svc, "relevance", generate_sid)
    assert record["provenance"]["protocol"] == "generate_parse"
    assert record["provenance"]["unparsed"] == sum(a is None for a in answers.values())
    print(f"\nrecentering relevance tiny model: {time.monotonic() - started:.1f} s")
