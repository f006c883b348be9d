"""End to end over HTTP: a real Redis, real `rq worker` processes, the real web app (uvicorn).

Predictions files are built here with known scores (gold read in the test process, which is the
scorer's side); every number the service publishes is checked exactly against them.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import (  # noqa: E402
    Predictions,
    explicit_only,
    make_predictions,
    reordered,
    split_items,
    submit,
    submit_ok,
    tier_groups,
    wait_finished,
)

from leaderboard.readpath import filter_values  # noqa: E402

pytestmark = pytest.mark.service

SETTINGS = {
    "zero_shot",
    "reminder",
    "cot",
    "rag",
    "self_critic",
}  # self_critic: open_ended only (the task refuses it elsewhere)
FORMS = ["explicit", "implicit_choice", "implicit_persona"]
ACCEPTED: list[str] = []  # ids accepted by the shared service in this module


@pytest.fixture(scope="module")
def http(shared_live_service):
    with shared_live_service.http() as c:
        yield c


def leaderboard(http, fmt: str = "json", **params) -> pd.DataFrame:
    response = http.get("/api/v1/leaderboard", params={**params, "format": fmt})
    assert response.status_code == 200, response.text
    if fmt == "json":
        return pd.DataFrame(response.json())
    if fmt == "csv":
        return pd.read_csv(io.BytesIO(response.content))
    return pd.read_parquet(io.BytesIO(response.content))


def row_of(frame: pd.DataFrame, submission_id: str) -> dict:
    rows = frame[frame["submission_id"] == submission_id]
    assert len(rows) == 1, f"expected one row for {submission_id}, got {len(rows)}:\n{frame}"
    return rows.iloc[0].to_dict()


def assert_result(result: dict, expected: Predictions) -> None:
    assert result["metric"] == "accuracy"
    assert result["total"]["accuracy"]["value"] == expected.total
    assert result["total"]["accuracy"]["n"] == len(split_items())
    for group, tiers in expected.tiers.items():
        assert set(result["tiers"][group]) == set(tiers)
        for tier, value in tiers.items():
            assert result["tiers"][group][tier]["accuracy"]["value"] == value, (group, tier)


# -- read-only endpoints ------------------------------------------------------------------------


def test_health(http):
    body = http.get("/api/v1/health").json()
    assert body["status"] == "ok"
    assert body["queue"] == "ok"
    assert len(body["results_revision"]) == 40


def test_suites(http):
    response = http.get("/api/v1/suites")
    assert response.status_code == 200
    suites = {s["name"]: s for s in response.json()["suites"]}
    assert "prefeval" in suites
    prefeval = suites["prefeval"]
    assert {s["name"] for s in prefeval["settings"]} == SETTINGS
    tasks = {t["name"]: t for t in prefeval["tasks"]}
    assert "mcq" in tasks
    mcq = tasks["mcq"]
    assert mcq["answer_labels"] == ["A", "B", "C", "D"]
    groups = {g["name"]: [t["name"] for t in g["tiers"]] for g in mcq["tier_groups"]}
    assert set(groups) == {"form", "topic"}
    assert groups["form"] == FORMS
    assert len(groups["topic"]) == 20


def test_openapi_lists_the_endpoints(http):
    response = http.get("/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    expected = {
        "/api/v1/health": "get",
        "/api/v1/suites": "get",
        "/api/v1/suites/{suite}/tasks/{task}/inputs": "get",
        "/api/v1/submissions": "post",
        "/api/v1/submissions/{submission_id}": "get",
        "/api/v1/leaderboard": "get",
        "/api/v1/leaderboard/versions": "get",
    }
    for path, method in expected.items():
        assert path in paths, f"{path} missing from OpenAPI: {sorted(paths)}"
        assert method in paths[path], (path, method)
    assert "get" in paths["/api/v1/submissions"]
    form = paths["/api/v1/submissions"]["post"]["requestBody"]["content"]["multipart/form-data"][
        "schema"
    ]
    assert {"file", "suite", "task", "setting", "model_name"} <= set(form["required"])


def test_inputs_are_public(http):
    response = http.get("/api/v1/suites/prefeval/tasks/mcq/inputs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = response.content.decode("utf-8").splitlines()
    assert len(lines) == 3000
    ids = set()
    for line in lines:
        record = json.loads(line)
        assert "gold" not in record and "answer" not in record and "label" not in record
        assert set(record) == {"id", "form", "topic", "context", "question", "options"}
        assert sorted(record["options"]) == ["A", "B", "C", "D"]
        ids.add(record["id"])
    assert ids == {item.id for item in split_items()}


def test_unknown_task_inputs_404(http):
    assert http.get("/api/v1/suites/nope/tasks/mcq/inputs").status_code == 404
    assert http.get("/api/v1/suites/prefeval/tasks/nope/inputs").status_code == 404
    assert http.get("/api/v1/submissions/does-not-exist").status_code == 404


# -- submit, score, publish -------------------------------------------------------------------


def test_submission_scored_published_and_downloadable(http, shared_live_service):
    svc = shared_live_service
    versions_before = http.get("/api/v1/leaderboard/versions").json()["versions"]
    table_before = http.get(
        "/api/v1/leaderboard", params={"suite": "prefeval", "task": "mcq"}
    ).json()

    expected = explicit_only()
    assert expected.total == 1 / 3
    response = submit(
        http,
        expected.body,
        setting="reminder",
        model_name="explicit-only",
        link="https://example.org/model",
        description="right on explicit items only",
    )
    assert response.status_code == 201, response.text
    created = response.json()
    sid = created["id"]
    ACCEPTED.append(sid)
    assert created["state"] in ("queued", "running", "finished")
    assert response.headers["location"] == f"/api/v1/submissions/{sid}"
    assert "file_path" not in created

    final = wait_finished(http, sid, logs=svc.logs)
    assert final["result"]["total"]["accuracy"]["value"] == 1 / 3  # unrounded
    assert_result(final["result"], expected)
    assert final["result"]["tiers"]["form"]["explicit"]["accuracy"]["value"] == 1.0
    assert final["result"]["tiers"]["form"]["implicit_choice"]["accuracy"]["value"] == 0.0
    assert final["progress"] == {"done": 3000, "total": 3000}
    assert final["attempts"] == 1
    assert len(final["revision"]) == 40

    # one new version per publish (the result; before it, perhaps its requests/ record), and the
    # older revision still gives the older table
    versions = http.get("/api/v1/leaderboard/versions").json()["versions"]
    new = versions[: len(versions) - len(versions_before)]
    # requests/ records and the dataset's board files are bookkeeping versions of their own
    results = [v for v in new if not v["message"].startswith(("Requests: ", "Boards: "))]
    assert [v["revision"] for v in results] == [final["revision"]], new
    assert results[0]["message"].startswith(f"Add result {sid}")
    assert [v["revision"] for v in versions[len(new) :]] == [v["revision"] for v in versions_before]
    older = http.get(
        "/api/v1/leaderboard",
        params={"suite": "prefeval", "task": "mcq", "revision": versions_before[0]["revision"]},
    )
    assert older.status_code == 200
    assert older.json() == table_before
    assert sid not in {row["submission_id"] for row in older.json()}
    assert http.get("/api/v1/leaderboard", params={"revision": "0" * 40}).status_code == 404
    assert http.get("/api/v1/leaderboard", params={"revision": "HEAD~1; rm"}).status_code == 404

    # the row, in every format, with exact values
    expected_columns = expected.column_values()
    frames = {
        fmt: leaderboard(http, fmt, suite="prefeval", task="mcq", setting="reminder")
        for fmt in ("json", "csv", "parquet")
    }
    for fmt, frame in frames.items():
        for column in ["total", *(f"{g}/{t}" for g, ts in tier_groups().items() for t in ts)]:
            assert column in frame.columns, (fmt, column)
        row = row_of(frame, sid)
        for column, value in expected_columns.items():
            assert row[column] == value, (fmt, column, row[column], value)
        assert row["model_name"] == "explicit-only"
        assert row["setting"] == "reminder"
        assert row["model_link"] == "https://example.org/model"
        assert int(row["n_items"]) == 3000
    assert (
        list(frames["csv"].columns)
        == list(frames["json"].columns)
        == list(frames["parquet"].columns)
    )

    # downloads carry a file name
    csv = http.get("/api/v1/leaderboard", params={"format": "csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    # the file name says the view and the results revision it was cut from
    assert re.search(
        r'filename="leaderboard-[0-9a-f]{12}\.csv"', csv.headers["content-disposition"]
    )
    named = http.get(
        "/api/v1/leaderboard",
        params={"format": "csv", "suite": "prefeval", "task": "mcq", "setting": "reminder"},
    )
    assert re.search(
        r'filename="leaderboard-prefeval-mcq-reminder-[0-9a-f]{12}\.csv"',
        named.headers["content-disposition"],
    ), named.headers["content-disposition"]
    assert http.get("/api/v1/leaderboard", params={"format": "xml"}).status_code == 422


def test_filters(http, shared_live_service):
    svc = shared_live_service
    # two more submissions with different known scores in two different settings
    second = make_predictions(lambda item: item.tiers["form"] != "implicit_persona")  # 2/3
    third = make_predictions(lambda item: int(item.id.rsplit("-", 1)[1]) % 4 == 0)
    sid_cot = submit_ok(http, second.body, setting="cot", model_name="two-thirds")
    sid_rag = submit_ok(http, third.body, setting="rag", model_name="every-fourth")
    ACCEPTED.extend([sid_cot, sid_rag])
    cot = wait_finished(http, sid_cot, logs=svc.logs)
    rag = wait_finished(http, sid_rag, logs=svc.logs)
    assert_result(cot["result"], second)
    assert_result(rag["result"], third)
    assert cot["result"]["total"]["accuracy"]["value"] == 2 / 3

    # setting filter: only that setting's rows, and the task's reference lines (setting
    # `reference`, computed from the split: they hold in every setting)
    only_cot = leaderboard(http, suite="prefeval", task="mcq", setting="cot")
    assert set(only_cot["setting"]) == {"cot", "reference"}
    lines = only_cot[only_cot["setting"] == "reference"]
    assert set(lines["row_kind"]) == {"reference"} and len(lines) == 2
    assert sid_cot in set(only_cot["submission_id"]) and sid_rag not in set(
        only_cot["submission_id"]
    )
    only_rag = leaderboard(http, suite="prefeval", task="mcq", setting="rag")
    assert set(only_rag["setting"]) == {"rag", "reference"}
    assert row_of(only_rag, sid_rag)["total"] == third.total

    everything = leaderboard(http, suite="prefeval", task="mcq")
    assert {sid_cot, sid_rag} <= set(everything["submission_id"])
    # full computed runs are ranked by total; other kinds (partial model runs of other tests) follow
    kinds = list(everything["row_kind"])
    computed = everything[everything["row_kind"] == "computed"]
    assert kinds[: len(computed)] == ["computed"] * len(computed)
    assert list(computed["total"]) == sorted(computed["total"], reverse=True)

    # tier filter: that tier column only, ranked by it
    for tier in ("form/explicit", "explicit"):
        frame = leaderboard(http, suite="prefeval", task="mcq", tier=tier)
        tier_columns = [c for c in frame.columns if "/" in c]
        assert tier_columns == ["form/explicit"], (tier, list(frame.columns))
        assert "total" in frame.columns
        assert row_of(frame, sid_cot)["form/explicit"] == 1.0
        assert row_of(frame, sid_rag)["form/explicit"] == third.tiers["form"]["explicit"]
        ranked = frame[frame["row_kind"] == "computed"]["form/explicit"].dropna()
        assert list(ranked) == sorted(ranked, reverse=True)
    topic = leaderboard(
        http, suite="prefeval", task="mcq", tier="topic/travel_hotel", format="json"
    )
    assert [c for c in topic.columns if "/" in c] == ["topic/travel_hotel"]
    assert row_of(topic, sid_rag)["topic/travel_hotel"] == third.tiers["topic"]["travel_hotel"]

    # a filter that names a setting with no rows gives the reference lines only; an unknown suite
    # is a 422 naming the parameter and what it allows
    empty = http.get(
        "/api/v1/leaderboard", params={"suite": "prefeval", "task": "mcq", "setting": "self_critic"}
    )
    assert empty.status_code == 200, empty.text
    assert {row["row_kind"] for row in empty.json()} == {"reference"}, empty.text
    unknown = http.get("/api/v1/leaderboard", params={"suite": "nope"})
    assert unknown.status_code == 422 and "suite" in unknown.text and "prefeval" in unknown.text


# -- bad input: 4xx with line and field, never 500 -----------------------------------------------


def _lines() -> list[bytes]:
    return explicit_only().body.splitlines()


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n"


def _bad_files() -> dict[str, tuple[bytes, int | None, str | None]]:
    """name -> (file, expected line of the first problem, expected field)."""
    lines = _lines()
    items = split_items()
    not_json = lines.copy()
    not_json[4] = b"{this is not json"
    not_utf8 = lines.copy()
    not_utf8[6] = b'{"id": "' + items[6].id.encode() + b'", "answer": "\xff\xfe"}'
    unknown = lines.copy()
    unknown[2] = json.dumps({"id": "no-such-item-999", "answer": "A"}).encode()
    duplicate = lines.copy()
    duplicate[10] = lines[9]
    missing = lines[:-5]
    answer_e = lines.copy()
    answer_e[7] = json.dumps({"id": items[7].id, "answer": "E"}).encode()
    no_answer = lines.copy()
    no_answer[8] = json.dumps({"id": items[8].id}).encode()
    not_object = lines.copy()
    not_object[1] = b'["A"]'
    return {
        "not json": (_join(not_json), 5, None),
        "not utf-8": (_join(not_utf8), 7, None),
        "unknown id": (_join(unknown), 3, "id"),
        "duplicate id": (_join(duplicate), 11, "id"),
        "missing ids": (_join(missing), None, "id"),
        "answer E": (_join(answer_e), 8, "answer"),
        "no answer": (_join(no_answer), 9, "answer"),
        "not an object": (_join(not_object), 2, None),
        "empty file": (b"", None, None),
        "binary junk": (bytes(range(256)) * 4, 1, None),
    }


@pytest.mark.parametrize("name", list(_bad_files()))
def test_bad_file_rejected_with_line_and_field(http, name):
    body, line, field = _bad_files()[name]
    before = len(http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"])
    response = submit(http, body, model_name=f"bad {name}")
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail["message"]
    problems = detail["problems"]
    assert problems, detail
    first = problems[0]
    assert {"line", "field", "message"} <= set(first)
    assert first["line"] == line, (name, first)
    assert first["field"] == field, (name, first)
    if name == "duplicate id":
        assert "duplicate" in first["message"] and "line 10" in first["message"]
        # the id it displaced is then missing
        assert any(p["line"] is None and p["field"] == "id" for p in problems)
    if name == "missing ids":
        assert "5 of 3000" in first["message"]
    if name == "answer E":
        assert "'E'" in first["message"]
    # nothing was recorded for a rejected file
    after = len(http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"])
    assert after == before


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"suite": "nope"}, "suite"),
        ({"task": "nope"}, "task"),
        ({"setting": "few_shot"}, "setting"),
        ({"model_name": None}, "model_name"),
        ({"model_name": "   "}, "model_name"),
        ({"suite": None}, "suite"),
        ({"link": "javascript:alert(1)"}, "link"),
        ({"model_name": "x" * 500}, "model_name"),
    ],
)
def test_bad_form_rejected(http, overrides, field):
    kwargs = {"setting": "zero_shot", "model_name": "form-check", **overrides}
    response = submit(http, explicit_only().body, **kwargs)
    assert response.status_code == 422, response.text
    problems = response.json()["detail"]["problems"]
    assert any(p["field"] == field for p in problems), problems
    assert all("line" in p for p in problems)


def test_bad_requests_never_500(http):
    cases = [
        http.post("/api/v1/submissions", data={"suite": "prefeval"}),  # not multipart
        http.post(
            "/api/v1/submissions", content=b"{}", headers={"content-type": "application/json"}
        ),
        http.post(
            "/api/v1/submissions",
            files={"other": ("x", b"1")},
            data={"suite": "prefeval", "task": "mcq", "setting": "zero_shot", "model_name": "m"},
        ),
        http.post(
            "/api/v1/submissions",
            content=b"--broken\r\n\r\n",
            headers={"content-type": "multipart/form-data; boundary=broken"},
        ),
        http.get("/api/v1/submissions", params={"limit": 0}),
        http.get("/api/v1/leaderboard", params={"revision": "zzz"}),
    ]
    for response in cases:
        assert 400 <= response.status_code < 500, (
            response.request.url,
            response.status_code,
            response.text,
        )
        assert "detail" in response.json()


def test_accepted_submissions_survive_bad_requests(http, shared_live_service):
    expected = explicit_only()
    # answers of its own (the same scores): the shared service may hold explicit_only()'s
    body = reordered(expected.body, 43)
    sid = submit_ok(http, body, model_name="before-bad-requests")
    ACCEPTED.append(sid)
    wait_finished(http, sid, logs=shared_live_service.logs)
    for name, (body, _, _) in _bad_files().items():
        assert submit(http, body, model_name=name).status_code == 422
    assert submit(http, body, suite="nope").status_code == 422
    final = http.get(f"/api/v1/submissions/{sid}").json()
    assert final["state"] == "finished"
    assert final["result"]["total"]["accuracy"]["value"] == 1 / 3
    listed = {
        s["id"]: s
        for s in http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"]
    }
    assert sid in listed
    # every submission accepted so far in this module is still there and finished
    for accepted in ACCEPTED:
        assert listed[accepted]["state"] == "finished", listed[accepted]
    assert sid in set(leaderboard(http, suite="prefeval")["submission_id"])


def test_upload_size_limit(live_service):
    """A file over PERSONABOARD_MAX_UPLOAD_BYTES gets 413 with field 'file'; earlier results stay."""
    svc = live_service
    expected = explicit_only()
    with svc.http() as http:
        sid = submit_ok(http, expected.body, model_name="before-limit")
        wait_finished(http, sid, logs=svc.logs)

        limit = 50_000
        svc.env["PERSONABOARD_MAX_UPLOAD_BYTES"] = str(limit)
        svc.restart_web()
        assert len(expected.body) > limit

        # over the file limit but inside the form allowance: rejected while it is copied
        response = submit(http, expected.body, model_name="too big")
        assert response.status_code == 413, response.text
        problems = response.json()["detail"]["problems"]
        assert problems[0]["field"] == "file" and "line" in problems[0]
        assert str(limit) in response.json()["detail"]["message"]

        # far over: rejected from the declared length before the body is read
        huge = expected.body * 4
        response = submit(http, huge, model_name="far too big")
        assert response.status_code == 413, response.text
        assert response.json()["detail"]["problems"][0]["field"] == "file"

        # far over, streamed without a declared length (chunked): rejected while it streams
        boundary = "pbtestboundary"
        head = (
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="p.jsonl"\r\n'
            "Content-Type: application/x-ndjson\r\n\r\n"
        ).encode()
        fields = b"".join(
            f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}'.encode()
            for k, v in {
                "suite": "prefeval",
                "task": "mcq",
                "setting": "zero_shot",
                "model_name": "m",
            }.items()
        )

        def chunks():
            yield head
            for start in range(0, len(huge), 65536):
                yield huge[start : start + 65536]
            yield fields + f"\r\n--{boundary}--\r\n".encode()

        response = http.post(
            "/api/v1/submissions",
            content=chunks(),
            headers={"content-type": f"multipart/form-data; boundary={boundary}"},
        )
        assert response.status_code == 413, response.text
        assert response.json()["detail"]["problems"][0]["field"] == "file"

        final = http.get(f"/api/v1/submissions/{sid}").json()
        assert (
            final["state"] == "finished" and final["result"]["total"]["accuracy"]["value"] == 1 / 3
        )
        listed = http.get("/api/v1/submissions").json()["submissions"]
        assert [s["id"] for s in listed] == [sid]
        assert not list((svc.data_dir / "uploads").glob(".incoming-*")), (
            "a rejected upload was left on disk"
        )


# -- the gold never leaves the scorer ------------------------------------------------------------

GOLD_KEYS = {
    "gold",
    "gold_label",
    "gold_answer",
    "correct",
    "is_correct",
    "per_item",
    "item_scores",
    "item_results",
}


def _walk(value, path="$"):
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, f"{path}.{key}")
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _walk(child, f"{path}[{i}]")


def test_no_endpoint_reveals_gold(http, shared_live_service):
    """No JSON answer carries a per-item breakdown (which, with the submitter's own answers,
    would reveal the gold letters)."""
    svc = shared_live_service
    # a file whose per-item correctness would spell out the gold if it leaked
    predictions = make_predictions(lambda item: int(item.id.rsplit("-", 1)[1]) % 2 == 0)
    sid = submit_ok(http, predictions.body, setting="zero_shot", model_name="leak-probe")
    wait_finished(http, sid, logs=svc.logs)
    revision = http.get("/api/v1/leaderboard/versions").json()["versions"][-1]["revision"]

    item_ids = {item.id for item in split_items()}
    tier_names = {"", *filter_values()["tier"]}
    bodies = {}
    for path, params in [
        ("/api/v1/health", {}),
        ("/api/v1/suites", {}),
        (f"/api/v1/submissions/{sid}", {}),
        ("/api/v1/submissions", {"limit": 1000}),
        ("/api/v1/leaderboard", {}),
        ("/api/v1/leaderboard", {"tier": "explicit"}),
        ("/api/v1/leaderboard", {"revision": revision}),
        ("/api/v1/leaderboard/versions", {}),
        ("/openapi.json", {}),
    ]:
        response = http.get(path, params=params)
        assert response.status_code == 200, (path, response.text)
        bodies[f"{path} {params}"] = response.json()
    # error answers too
    lines = predictions.body.splitlines()
    lines[3] = json.dumps({"id": split_items()[3].id, "answer": "Z"}).encode()
    bad = submit(http, b"\n".join(lines[:-1]) + b"\n")
    assert bad.status_code == 422
    bodies["rejected file"] = bad.json()

    for where, body in bodies.items():
        for path, value in _walk(body):
            if isinstance(value, dict):
                leaked = (set(value) & item_ids) or (set(value) & GOLD_KEYS)
                assert not leaked, f"{where} {path} has per-item keys {sorted(leaked)[:5]}"
            # the schema's enums list the manifests' tiers (declared names, no item's data)
            declared = "/openapi" in where and path.endswith(".enum") and set(value) <= tier_names
            if isinstance(value, list) and len(value) >= 50 and not declared:
                assert not any(isinstance(v, (str, bool)) for v in value), (
                    f"{where} {path}: long flat list"
                )
            if isinstance(value, str) and "/openapi" not in where:
                # an item id may appear only inside a message (e.g. "missing ids: ..."), never as data
                if value in item_ids:
                    raise AssertionError(f"{where} {path} holds an item id as a value: {value}")
    status = bodies[f"/api/v1/submissions/{sid} {{}}"]
    assert set(status["result"]) == {"metric", "total", "tiers"}
    # the per-item correctness stays out of the CSV too
    csv = http.get("/api/v1/leaderboard", params={"format": "csv"}).text
    assert not any(item_id in csv for item_id in list(item_ids)[:200])
