"""PersonaFeedback end to end against a live service (Redis + rq workers + web app): refused with the
install command until the split is installed (reported rows visible meanwhile); the synthetic
fixture installed with `personaboard splits install`; a label file and a reward-score file with
known accuracies -> rows with the paper's Table 3 columns; bad files -> 4xx naming line and field;
`rag` refused on a split without memory data; a tiny generative judge (pairwise_logprobs named,
both orders) and a tiny reward model run with a limit -> finished partial rows, matching
`personaboard evaluate` run on the same items; a judge run naming no protocol gets the default,
generate_parse (the paper's judges wrote their choice), both orders asked.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest
from live_helpers import run_cli, wait_finished

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_tiny_model  # noqa: E402

from leaderboard.store import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "personafeedback"
SUITE, TASK = "personafeedback", "binary_choice"
CELLS = (
    "specific/easy",
    "specific/medium",
    "specific/hard",
    "general/easy",
    "general/medium",
    "general/hard",
)
TABLE3_COLUMNS = ("total", *(f"cell/{c}" for c in CELLS), "type/specific", "type/general")


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


def install(svc, source: Path) -> dict:
    proc = run_cli("splits", "install", SUITE, "--source", str(source), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def installed(svc):
    info = install(svc, FIXTURE)
    assert info["fixture"] is True and info["tasks"][TASK]["n_items"] == 24
    return svc


def http_client(svc) -> httpx.Client:
    return svc.http()


def submit(
    http, body: bytes, setting: str = "persona", model_name: str = "pf-test"
) -> httpx.Response:
    return http.post(
        "/api/v1/submissions",
        files={"file": ("predictions.jsonl", body, "application/x-ndjson")},
        data={"suite": SUITE, "task": TASK, "setting": setting, "model_name": model_name},
    )


def rows(http, setting: str | None = None) -> list[dict]:
    params = {"suite": SUITE, "task": TASK, **({"setting": setting} if setting else {})}
    answer = http.get("/api/v1/leaderboard", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def row_of(http, sid: str, setting: str = "persona") -> dict:
    by_id = {row["submission_id"]: row for row in rows(http, setting)}
    assert sid in by_id, list(by_id)
    return by_id[sid]


def gold_items(svc) -> list:
    """The fixture split as the service built it (the test is the scorer's side: it may read gold)."""
    import os

    from evaluator.registry import get_task
    from evaluator.suite import clear_split_cache

    old = os.environ.get("PERSONABOARD_SPLITS_DIR")
    os.environ["PERSONABOARD_SPLITS_DIR"] = str(svc.data_dir / "splits")
    try:
        clear_split_cache(SUITE)
        return get_task(SUITE, TASK).load_split().items
    finally:
        if old is None:
            os.environ.pop("PERSONABOARD_SPLITS_DIR")
        else:
            os.environ["PERSONABOARD_SPLITS_DIR"] = old
        clear_split_cache(SUITE)


def test_refused_until_installed_with_reported_rows_visible(svc):
    with http_client(svc) as http:
        answer = submit(http, b'{"id": "specific/easy/1", "label": "1"}\n')
        assert answer.status_code == 409, answer.text
        assert (
            f"personaboard splits install {SUITE} --source PersonalAILab/PersonaFeedback"
            in answer.json()["detail"]["message"]
        )
        model = http.post(
            "/api/v1/submissions",
            json={
                "model": "anything",
                "suite": SUITE,
                "task": TASK,
                "setting": "persona",
                "limit": 2,
            },
        )
        assert model.status_code == 409 and "splits install" in model.text, model.text
        inputs = http.get(f"/api/v1/suites/{SUITE}/tasks/{TASK}/inputs")
        assert inputs.status_code == 409
        reported = [r for r in rows(http, "persona") if r["row_kind"] == "reported"]
        gpt41 = [
            r for r in reported if r["model_name"] == "GPT-4.1" and r["source"].endswith("Table 3")
        ]
        assert len(gpt41) == 1, [r["model_name"] for r in reported][:5]
        assert set(TABLE3_COLUMNS) <= set(gpt41[0])
        assert gpt41[0]["cell/specific/easy"] == pytest.approx(0.906)  # printed 90.6 in Table 3
        assert gpt41[0]["type/general"] == pytest.approx(0.832) and gpt41[0][
            "total"
        ] == pytest.approx(0.80)
        suite = next(s for s in http.get("/api/v1/suites").json()["suites"] if s["name"] == SUITE)
        assert (
            suite["split"]["installed"] is False and "splits install" in suite["split"]["install"]
        )


def _label_file(items) -> tuple[bytes, dict[str, float]]:
    """Correct on line-1 and line-2 items of specific cells and on line-1 items of general cells."""
    lines, expected = [], {}
    counts: dict[str, list[int]] = {}
    for item in items:
        n = int(item.id.rsplit("/", 1)[1])
        ok = n <= (2 if item.tiers["type"] == "specific" else 1)
        label = item.gold if ok else ("2" if item.gold == "1" else "1")
        lines.append(json.dumps({"id": item.id, "label": label}))
        for key in ("total", f"cell/{item.tiers['cell']}", f"type/{item.tiers['type']}"):
            counts.setdefault(key, [0, 0])
            counts[key][0] += ok
            counts[key][1] += 1
    expected = {key: c / n for key, (c, n) in counts.items()}
    return ("\n".join(lines) + "\n").encode(), expected


def test_uploads_scored_into_table3_columns(installed):
    svc = installed
    items = gold_items(svc)
    assert len(items) == 24
    with http_client(svc) as http:
        public = [
            json.loads(line)
            for line in http.get(f"/api/v1/suites/{SUITE}/tasks/{TASK}/inputs").text.splitlines()
        ]
        assert [p["id"] for p in public] == [i.id for i in items]
        assert all("gold" not in p and "chosen" not in p and "reject" not in p for p in public)

        body, expected = _label_file(items)
        assert expected["total"] == pytest.approx(9 / 24) and expected[
            "type/specific"
        ] == pytest.approx(6 / 12)
        assert expected["cell/general/hard"] == pytest.approx(1 / 4)
        labels_id = submit(http, body, model_name="pf-labels").json()["id"]

        # reward-model scores: chosen strictly higher except one tie and two reversed items
        score_lines = []
        for item in items:
            chosen, other = ("score_1", "score_2") if item.gold == "1" else ("score_2", "score_1")
            if item.id == "general/medium/4":
                scores = {chosen: 1.5, other: 1.5}  # a tie is wrong
            elif item.id in ("specific/hard/2", "general/medium/1"):
                scores = {chosen: -0.5, other: 0.5}
            else:
                scores = {chosen: 2.0, other: -3.25}
            score_lines.append(json.dumps({"id": item.id, **scores}))
        scores_id = submit(
            http, ("\n".join(score_lines) + "\n").encode(), model_name="pf-scores"
        ).json()["id"]

        for sid in (labels_id, scores_id):
            wait_finished(http, sid, 120, svc.logs)
        row = row_of(http, labels_id)
        assert row["row_kind"] == "computed" and row["n_items"] == 24
        for column in TABLE3_COLUMNS:
            assert row[column] == pytest.approx(expected[column]), column
        assert row.get("position_consistency") is None  # labels have one order only

        row = row_of(http, scores_id)
        assert row["cell/general/medium"] == pytest.approx(2 / 4)
        assert row["cell/specific/hard"] == pytest.approx(3 / 4)
        assert row["type/general"] == pytest.approx(10 / 12) and row[
            "type/specific"
        ] == pytest.approx(11 / 12)
        assert row["total"] == pytest.approx(21 / 24)
        for column in (
            "cell/specific/easy",
            "cell/specific/medium",
            "cell/general/easy",
            "cell/general/hard",
        ):
            assert row[column] == 1.0


def test_bad_inputs_name_line_and_field(installed):
    svc = installed
    items = gold_items(svc)
    with http_client(svc) as http:
        lines = [json.dumps({"id": i.id, "label": "1"}) for i in items]
        lines[6] = json.dumps({"id": items[6].id, "label": "B"})
        lines[9] = json.dumps({"id": items[9].id, "score_1": 0.3})
        answer = submit(http, ("\n".join(lines) + "\n").encode())
        assert answer.status_code == 422, answer.text
        problems = answer.json()["detail"]["problems"]
        assert {(p["line"], p["field"]) for p in problems} == {(7, "label"), (10, "score_2")}
        assert "line 7, field 'label'" in answer.json()["detail"]["message"]
        for problem in problems:  # never the gold
            assert "chosen" not in problem["message"] and "gold" not in problem["message"]
        short = submit(http, ("\n".join(lines[:3]) + "\n").replace('"B"', '"1"').encode())
        assert short.status_code == 422 and "item ids have no prediction" in short.text
        # a setting of another suite (PrefEval's): a real value the suite rules out, 404 naming it
        unknown = submit(http, b'{"id": "specific/easy/1", "label": "1"}\n', setting="zero_shot")
        assert (
            unknown.status_code == 404
            and unknown.json()["detail"]["problems"][0]["field"] == "setting"
            and "no_persona" in unknown.json()["detail"]["allowed"]
        ), unknown.text


def test_rag_refused_on_a_split_without_memory(installed, tmp_path):
    svc = installed
    items = gold_items(svc)
    body = ("\n".join(json.dumps({"id": i.id, "label": i.gold}) for i in items) + "\n").encode()
    copy = tmp_path / "no-memory"
    shutil.copytree(FIXTURE, copy)
    shutil.rmtree(copy / "memory")
    install(svc, copy)
    try:
        with http_client(svc) as http:
            # the installed split cannot serve it (a server with memory data can): 409
            answer = submit(http, body, setting="rag")
            assert answer.status_code == 409, answer.text
            detail = answer.json()["detail"]
            assert (
                "no memory data" in detail["message"]
                and detail["problems"][0]["field"] == "setting"
            )
            model = http.post(
                "/api/v1/submissions",
                json={
                    "model": "anything",
                    "suite": SUITE,
                    "task": TASK,
                    "setting": "rag",
                    "limit": 2,
                },
            )
            assert model.status_code == 409 and "no memory data" in model.text
            assert (
                submit(http, body, setting="no_persona", model_name="pf-perfect").status_code == 201
            )
    finally:
        install(svc, FIXTURE)
    with http_client(svc) as http:  # with memory data again: rag accepted
        sid = submit(http, body, setting="rag", model_name="pf-perfect-rag").json()["id"]
        wait_finished(http, sid, 120, svc.logs)
        assert row_of(http, sid, "rag")["total"] == 1.0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("pf-tiny-models")
    return {
        "generative": build_tiny_model(root / "gen", "generative", seed=21),
        "reward": build_tiny_model(root / "rew", "reward", seed=22),
    }


def evaluate_in_process(svc, *args: str) -> dict:
    """`personaboard evaluate ARGS` on the service's data folder, through the CLI's own entry
    point (backend.cli.main) in this process: a fresh interpreter spends most of its seconds
    importing torch, which this process (it built the models) has already done. Its JSON."""
    from backend import cli
    from evaluator.suite import clear_split_cache

    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PERSONABOARD_DATA_DIR", svc.env["PERSONABOARD_DATA_DIR"])
        env.delenv("PERSONABOARD_SPLITS_DIR", raising=False)
        clear_split_cache(SUITE)  # the split as installed in that folder, not a cached one
        try:
            with contextlib.redirect_stdout(printed):
                code = cli.main(["evaluate", *args])
        finally:
            clear_split_cache(SUITE)
    assert code == 0, printed.getvalue()[-2000:]
    return json.loads(printed.getvalue())


def test_tiny_judge_and_reward_model_runs(installed, tiny):
    svc = installed
    limit = 12
    names = {"generative": "pf-tiny-judge", "reward": "pf-tiny-rm"}
    protocols = {"generative": "pairwise_logprobs", "reward": "reward"}
    for kind, name in names.items():
        proc = run_cli("models", "add", name, str(tiny[kind]), env=svc.env)
        assert proc.returncode == 0, proc.stderr
    with http_client(svc) as http:
        ids = {}
        for kind, name in names.items():
            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": name,
                    "suite": SUITE,
                    "task": TASK,
                    "setting": "persona",
                    "limit": limit,
                    # named: a tiny random model writes no letter, the log-probs always read one
                    **({"protocol": "pairwise_logprobs"} if kind == "generative" else {}),
                },
            )
            assert answer.status_code == 201, answer.text
            assert answer.json()["details"]["protocol"] == protocols[kind]
            ids[kind] = answer.json()["id"]
        # the same runs through the CLI, while the workers run theirs: compared below
        local = {
            kind: evaluate_in_process(
                svc,
                *("--model", str(tiny[kind]), "--suite", SUITE, "--task", TASK),
                *("--setting", "persona", "--limit", str(limit), "--protocol", protocols[kind]),
            )
            for kind in names
        }
        for sid in ids.values():
            final = wait_finished(http, sid, 240, svc.logs)
            assert final["progress"]["done"] == limit
        judge, rm = row_of(http, ids["generative"]), row_of(http, ids["reward"])
    for row in (judge, rm):
        assert row["row_kind"] == "partial" and row["n_items"] == limit
        assert all(
            row[c] is not None for c in TABLE3_COLUMNS
        )  # 2 items per cell in the even spread
    consistency = judge["position_consistency"]
    assert consistency is not None and 0 <= consistency <= 1
    assert (consistency * limit) == pytest.approx(round(consistency * limit))
    # consistent items score 0 or 1, inconsistent ones exactly 0.5
    assert (
        0.5 * (1 - consistency) - 1e-9
        <= judge["total"]
        <= 0.5 * (1 - consistency) + consistency + 1e-9
    )
    assert (judge["total"] * 2 * limit) == pytest.approx(round(judge["total"] * 2 * limit))
    assert rm.get("position_consistency") is None
    assert (rm["total"] * limit) == pytest.approx(round(rm["total"] * limit))

    records = {
        kind: json.loads(
            (svc.data_dir / "results-dataset" / result_path(SUITE, TASK, sid)).read_text(
                encoding="utf-8"
            )
        )
        for kind, sid in ids.items()
    }
    assert records["generative"]["provenance"]["protocol"] == "pairwise_logprobs"
    assert records["generative"]["provenance"]["seeds"]["option_shuffle"] == 20250615

    # the same runs in-process via the CLI give the same answers and numbers as the workers
    for kind, row in (("generative", judge), ("reward", rm)):
        result = local[kind]
        assert result["partial"] is True and result["n_items"] == limit
        assert result["answers_sha256"] == records[kind]["provenance"]["answers_sha256"], kind
        assert result["total"]["accuracy"]["value"] == pytest.approx(row["total"])
        assert result["tiers"]["type"]["specific"]["accuracy"]["value"] == pytest.approx(
            row["type/specific"]
        )
        if kind == "generative":
            assert result["total"]["position_consistency"]["value"] == pytest.approx(consistency)


@pytest.mark.slow
def test_tiny_judge_rag_run(installed, tiny):
    """rag: memory snippets retrieved with the embedding model, judged in both orders under the
    default protocol, generate_parse (no protocol named)."""
    svc = installed
    proc = run_cli("models", "add", "pf-tiny-judge-rag", str(tiny["generative"]), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    with http_client(svc) as http:
        answer = http.post(
            "/api/v1/submissions",
            json={
                "model": "pf-tiny-judge-rag",
                "suite": SUITE,
                "task": TASK,
                "setting": "rag",
                "limit": 6,
            },
        )
        assert answer.status_code == 201, answer.text
        assert answer.json()["details"]["protocol"] == "generate_parse"
        sid = answer.json()["id"]
        wait_finished(http, sid, 240, svc.logs)
        row = row_of(http, sid, "rag")
    assert (
        row["row_kind"] == "partial"
        and row["n_items"] == 6
        and row["position_consistency"] is not None
    )
    record = json.loads(
        (svc.data_dir / "results-dataset" / result_path(SUITE, TASK, sid)).read_text()
    )
    assert record["provenance"]["retrieval_model"]
    assert record["provenance"]["protocol"] == "generate_parse"
    # a random tiny model's letters: each item's two orders generated and read (or counted unparsed)
    assert 0 <= record["provenance"]["unparsed"] <= 6
