"""Identity, name ownership, quotas, duplicates and Idempotency-Key, over HTTP against a live service
(real Redis, rq workers, uvicorn); users and tokens made with the `personaboard users` CLI."""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import make_predictions, run_cli, submit, wait_finished, wait_until  # noqa: E402

from leaderboard.store import result_glob  # noqa: E402

pytestmark = pytest.mark.service


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


def new_user(svc, *, admin: bool = False, **quotas: int) -> tuple[str, str]:
    """`personaboard users add` (and `users quota`); returns (name, token)."""
    name = f"u{uuid.uuid4().hex[:8]}"
    proc = run_cli("users", "add", name, *(["--admin"] if admin else []), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    token = json.loads(proc.stdout)["token"]
    if quotas:
        flags = [x for k, v in quotas.items() for x in (f"--{k.replace('_', '-')}", str(v))]
        proc = run_cli("users", "quota", name, *flags, env=svc.env)
        assert proc.returncode == 0, proc.stderr
    return name, token


def unique_predictions(salt: str) -> bytes:
    """A valid, complete predictions file whose bytes (and sha256) depend on `salt`."""
    return make_predictions(
        lambda item: int(hashlib.sha256((salt + item.id).encode()).hexdigest(), 16) % 3 == 0
    ).body


def records_with(svc, **where) -> list[dict]:
    with svc.http(token="") as http:
        rows = http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"]
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def test_tokens_missing_invalid_revoked_valid(svc):
    name, token = new_user(svc)
    body = unique_predictions("tokens")
    with svc.http(token="") as anonymous:
        assert anonymous.get("/api/v1/leaderboard").status_code == 200  # browsing stays anonymous
        missing = submit(anonymous, body, model_name="tok-model")
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert missing.json()["detail"]["problems"][0]["field"] == "Authorization"
        model_run = anonymous.post(
            "/api/v1/submissions",
            json={"model": "x", "suite": "prefeval", "task": "mcq", "setting": "zero_shot"},
        )
        assert model_run.status_code == 401
    with svc.http(token="pb_not-a-real-token") as forged:
        assert submit(forged, body, model_name="tok-model").status_code == 401
    with svc.http(token=token) as http:
        accepted = submit(http, body, model_name="tok-model")
        assert accepted.status_code == 201, accepted.text
        assert accepted.json()["owner"] == name
        wait_finished(http, accepted.json()["id"], logs=svc.logs)
    proc = run_cli("users", "revoke", name, env=svc.env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["revoked"] == 1, proc.stderr
    with svc.http(token=token) as revoked:
        assert (
            submit(revoked, unique_predictions("tokens-2"), model_name="tok-model").status_code
            == 401
        )
    listed = json.loads(run_cli("users", "list", env=svc.env).stdout)
    entry = next(u for u in listed if u["name"] == name)
    assert entry["tokens"][0]["revoked_at"] and token not in json.dumps(
        listed
    )  # tokens are never listed
    assert [r["id"] for r in records_with(svc, owner=name)] == [accepted.json()["id"]]


def test_model_name_belongs_to_first_publisher(svc):
    alice, alice_token = new_user(svc)
    mallory, mallory_token = new_user(svc)
    model = f"Name-{uuid.uuid4().hex[:6]}"
    with svc.http(token=alice_token) as http:
        assert submit(http, unique_predictions(model + "a"), model_name=model).status_code == 201
    with svc.http(token=mallory_token) as http:
        for spelling in (
            model,
            model.upper(),
            f"  {model.lower()} ",
            "".join(chr(ord(c) + 0xFEE0) if c.isalnum() else c for c in model),
        ):  # full-width forms
            taken = submit(http, unique_predictions(model + "m"), model_name=spelling)
            assert taken.status_code == 403, (spelling, taken.text)
            assert taken.json()["detail"]["problems"][0]["field"] == "model_name"
    proc = run_cli("names", "transfer", model, "--to", mallory, env=svc.env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["previous_owner"] == alice, proc.stderr
    with svc.http(token=mallory_token) as http:
        assert submit(http, unique_predictions(model + "m"), model_name=model).status_code == 201
    with svc.http(token=alice_token) as http:
        assert submit(http, unique_predictions(model + "a2"), model_name=model).status_code == 403


@pytest.mark.parametrize(
    "bad, why",
    [
        ("evil\u202egnp.exe", "U+202E"),
        ("nul\x00name", "NUL"),
        ("bell\x07", "U+0007"),
        ("x" * 201, "longer than 200"),
    ],
)
def test_names_with_hidden_characters_are_refused_naming_the_field(svc, bad, why):
    with svc.http() as http:
        refused = submit(http, unique_predictions("names" + why), model_name=bad)
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert detail["problems"][0]["field"] == "model_name" and why in detail["message"]


def test_quota_429_then_failed_validations_counted_apart(svc):
    name, token = new_user(svc, predictions=2, failed_validations=3)
    broken = [b'{"id": "nope", "answer": "A"}\n' + str(i).encode() for i in range(4)]
    with svc.http(token=token) as http:
        # failed validations have their own budget (3): two of them leave the 2 uploads of the day intact
        assert [submit(http, broken[i], model_name=f"q-{name}").status_code for i in range(2)] == [
            422,
            422,
        ]
        ids = [
            submit(http, unique_predictions(f"quota{i}"), model_name=f"q-{name}").json()["id"]
            for i in range(2)
        ]
        over = submit(http, unique_predictions("quota2"), model_name=f"q-{name}")
        assert over.status_code == 429, over.text
        detail = over.json()["detail"]
        assert (detail["quota"], detail["limit"], detail["used"]) == ("predictions", 2, 2)
        assert (
            detail["resets_at"].endswith("T00:00:00+00:00") and int(over.headers["retry-after"]) > 0
        )
        assert "resets at" in detail["message"]
        # another suite has its own quota: refused for other reasons (its split or content), not the quota
        other = http.post(
            "/api/v1/submissions",
            files={"file": ("p.jsonl", b"{}\n")},
            data={
                "suite": "recentering",
                "task": "attribute_verification",
                "setting": "zero_shot",
                "model_name": f"q-{name}",
            },
        )
        assert other.status_code in (409, 422) and "quota" not in other.json()["detail"], other.text
    assert sorted(r["id"] for r in records_with(svc, owner=name)) == sorted(ids)
    # the operator raises this user's upload limit: accepted again; the failed budget is still 3
    assert run_cli("users", "quota", name, "--predictions", "10", env=svc.env).returncode == 0
    with svc.http(token=token) as http:
        assert submit(http, unique_predictions("quota2"), model_name=f"q-{name}").status_code == 201
        assert submit(http, broken[2], model_name=f"q-{name}").status_code == 422
        last = submit(http, broken[3], model_name=f"q-{name}")
        assert last.status_code == 429 and last.json()["detail"]["quota"] == "failed_validations", (
            last.text
        )
        for sid in ids:
            wait_finished(http, sid, logs=svc.logs)


def test_identical_resubmission_409_with_earlier_id(svc):
    name, token = new_user(svc)
    body = unique_predictions("dup")
    with svc.http(token=token) as http:
        first = submit(http, body, model_name=f"d-{name}")
        assert first.status_code == 201
        again = submit(
            http, body, model_name=f"d-{name}-renamed"
        )  # same file, suite, task, setting
        assert (
            again.status_code == 409 and again.json()["detail"]["existing_id"] == first.json()["id"]
        )
        assert (
            submit(http, body, model_name=f"d-{name}", setting="cot").status_code == 201
        )  # another setting
    _, other_token = new_user(svc)
    with svc.http(
        token=other_token
    ) as http:  # dedup is per owner: another identity may send the same file
        assert submit(http, body, model_name=f"d2-{name}").status_code == 201


def test_idempotency_key_returns_first_answer_once(svc):
    name, token = new_user(svc)
    key = uuid.uuid4().hex
    with svc.http(token=token) as http:

        def send(_):
            return http.post(
                "/api/v1/submissions",
                headers={"Idempotency-Key": key},
                files={"file": ("p.jsonl", unique_predictions("idem"))},
                data={
                    "suite": "prefeval",
                    "task": "mcq",
                    "setting": "zero_shot",
                    "model_name": f"i-{name}",
                },
            )

        with ThreadPoolExecutor(4) as pool:  # concurrent retries with one key
            answers = list(pool.map(send, range(4)))
        assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1
        assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 3
    assert len(records_with(svc, owner=name)) == 1


def test_idempotency_after_dropped_connection(svc):
    """The client sends its upload and hangs up before the answer: the submission is recorded with
    the key; the retry gets the same id and nothing is recorded twice."""
    name, token = new_user(svc)
    key = uuid.uuid4().hex
    body = unique_predictions("dropped")
    boundary = uuid.uuid4().hex
    fields = {
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": f"drop-{name}",
    }
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.jsonl"\r\n'
        f"Content-Type: application/x-ndjson\r\n\r\n".encode()
        + body
        + f"\r\n--{boundary}--\r\n".encode()
    )
    payload = b"".join(parts)
    host, port = svc.base_url.removeprefix("http://").split(":")
    head = (
        f"POST /api/v1/submissions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Idempotency-Key: {key}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(head + payload)
        raw.shutdown(socket.SHUT_RDWR)  # gone before any answer
    recorded = wait_until(
        lambda: records_with(svc, owner=name), timeout=60, what="the dropped upload's record"
    )
    with svc.http(token=token) as http:
        retry = http.post(
            "/api/v1/submissions",
            headers={"Idempotency-Key": key},
            files={"file": ("p.jsonl", body)},
            data=fields,
        )
    assert retry.status_code == 201 and retry.json()["id"] == recorded[0]["id"], retry.text
    assert retry.headers["idempotent-replayed"] == "true"
    assert len(records_with(svc, owner=name)) == 1


def test_ui_submit_needs_an_identity(svc):
    """The Gradio event the page uses: refused without a token, accepted (owner recorded) with one."""
    name, token = new_user(svc)
    body = unique_predictions("ui")
    with svc.http(token="") as http:
        # the upload route itself takes the same identity (space/uploads.py UploadIdentity)
        anonymous = http.post("/gradio_api/upload", files={"files": ("p.jsonl", body)})
        assert anonymous.status_code == 401, anonymous.text
        uploaded = http.post(
            "/gradio_api/upload",
            files={"files": ("p.jsonl", body)},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert uploaded.status_code == 200, uploaded.text
        path = uploaded.json()[0]

        def call(token_value: str) -> str:
            file_data = {"path": path, "orig_name": "p.jsonl", "meta": {"_type": "gradio.FileData"}}
            data = [file_data, "prefeval", "mcq", "zero_shot", f"ui-{name}", "", "", token_value]
            started = http.post("/gradio_api/call/submit", json={"data": data})
            assert started.status_code == 200, started.text
            stream = http.get(f"/gradio_api/call/submit/{started.json()['event_id']}")
            lines = [line for line in stream.text.splitlines() if line.startswith("data:")]
            return json.loads(lines[-1].removeprefix("data:"))[0]

        refused = call("")
        assert "needs an identity" in refused and not records_with(svc, owner=name)
        assert "not valid" in call("pb_forged")
        accepted = call(token)
    rows = records_with(svc, owner=name)
    assert len(rows) == 1 and rows[0]["id"] in accepted


def test_ui_identity_from_hugging_face_profile(tmp_path):
    """On a Space, Gradio injects the signed-in profile; it becomes the identity hf:<username>."""
    import gradio as gr

    from space.identity import ui_identity
    from submissions.identity import IdentityStore
    from submissions.intake import SubmissionError
    from submissions.records import SubmissionStore

    identities = IdentityStore(SubmissionStore(tmp_path / "s.sqlite3"))
    profile = gr.OAuthProfile(
        {"preferred_username": "some-researcher", "name": "R", "profile": "", "picture": ""}
    )
    from submissions.identity import HfSigninPolicy

    open_policy = HfSigninPolicy(min_account_age_days=0)  # tests/test_hf_signin.py: the others
    first = ui_identity(identities, "", profile, open_policy)
    assert (first.name, first.provider, first.role) == ("hf:some-researcher", "hf", "user")
    assert ui_identity(identities, "", profile, open_policy) == first  # same account, same identity
    with pytest.raises(SubmissionError) as refused:
        ui_identity(identities, "", None)
    assert refused.value.status == 401
    bad = gr.OAuthProfile(
        {"preferred_username": "evil\u202e", "name": "", "profile": "", "picture": ""}
    )
    with pytest.raises(SubmissionError):
        ui_identity(identities, "", bad, open_policy)


# -- operator actions ----------------------------------------------------------------------------
def leaderboard_ids(http, fmt: str = "json", revision: str | None = None) -> set[str]:
    import io

    import pandas as pd

    params = {"format": fmt, **({"revision": revision} if revision else {})}
    response = http.get("/api/v1/leaderboard", params=params)
    assert response.status_code == 200, response.text
    if fmt == "json":
        frame = pd.DataFrame(response.json())
    elif fmt == "csv":
        frame = pd.read_csv(io.BytesIO(response.content))
    else:
        frame = pd.read_parquet(io.BytesIO(response.content))
    return set(frame["submission_id"]) if "submission_id" in frame else set()


def act(http, action: str, sid: str, reason: str = "", expect: int = 200) -> dict:
    response = http.post(f"/api/v1/admin/submissions/{sid}/{action}", json={"reason": reason})
    assert response.status_code == expect, response.text
    return response.json()


def finished_submission(svc, token: str, salt: str) -> str:
    with svc.http(token=token) as http:
        sid = submit(http, unique_predictions(salt), model_name=f"op-{salt}").json()["id"]
        wait_finished(http, sid, logs=svc.logs)
    return sid


def test_operator_actions_need_an_admin(svc):
    _, token = new_user(svc)
    sid = finished_submission(svc, token, "needs-admin")
    with svc.http(token="") as anonymous:
        assert (
            anonymous.post(
                f"/api/v1/admin/submissions/{sid}/hide", json={"reason": "x"}
            ).status_code
            == 401
        )
    with svc.http(token=token) as user:  # the submitter is no operator, not even of their own row
        refused = user.post(f"/api/v1/admin/submissions/{sid}/hide", json={"reason": "x"})
        assert refused.status_code == 403, refused.text
    with svc.http(token=svc.admin_token) as admin:
        assert act(admin, "hide", sid, expect=422)["detail"]["problems"][0]["field"] == "reason"
        assert act(admin, "hide", "0" * 16, "x", expect=404)
        assert (
            leaderboard_ids(admin) >= {sid}
            and not admin.get(f"/api/v1/submissions/{sid}").json()["history"]
        )


def test_hide_unhide_flag_delete_with_audit_log(svc):
    _, token = new_user(svc)
    sid = finished_submission(svc, token, "hide-me")
    keep = finished_submission(svc, token, "keep-me")
    with svc.http(token=svc.admin_token) as admin:
        before = admin.get("/api/v1/leaderboard/versions").json()["versions"][0]["revision"]
        for fmt in ("json", "csv", "parquet"):
            assert {sid, keep} <= leaderboard_ids(admin, fmt)
        hidden = act(admin, "hide", sid, "copied predictions")
        assert hidden["action"]["revision"] and hidden["submission"]["visibility"] == "hidden"
        assert hidden["submission"]["result"] is None  # no scores shown for a hidden row
        # the newest version that changes the table (the publisher may add bookkeeping ones:
        # requests/ records, the dataset's board files)
        head = next(
            v["revision"]
            for v in admin.get("/api/v1/leaderboard/versions").json()["versions"]
            if not v["message"].startswith(("Requests: ", "Boards: "))
        )
        assert head == hidden["action"]["revision"] != before
        for fmt in ("json", "csv", "parquet"):
            ids = leaderboard_ids(admin, fmt)
            assert sid not in ids and keep in ids, fmt
        assert sid not in leaderboard_ids(admin, revision=head)
        assert sid in leaderboard_ids(
            admin, revision=before
        )  # versions published before keep it: history
        assert sid not in {
            s["id"]
            for s in admin.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"]
        }
        act(admin, "hide", sid, "again", expect=409)
    dataset = svc.data_dir / "results-dataset"
    assert not list(dataset.glob(result_glob(sid))) and not list(
        dataset.glob(result_glob(sid, "requests"))
    )

    # unhide and flag from the CLI, as the operator on the server
    proc = run_cli("submissions", "unhide", sid, "--actor", "ops-alice", env=svc.env)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        "submissions",
        "flag",
        sid,
        "--reason",
        "scores disputed by the authors",
        "--actor",
        "ops-alice",
        env=svc.env,
    )
    assert proc.returncode == 0, proc.stderr
    wait_until(
        lambda: list(dataset.glob(result_glob(sid, "requests"))),
        30,
        "the request record published again",
    )
    with svc.http(token="") as anyone:
        assert sid in leaderboard_ids(anyone)
        status = anyone.get(f"/api/v1/submissions/{sid}").json()
        assert (
            status["visibility"] == "public" and status["flag"] == "scores disputed by the authors"
        )
        history = anyone.get(f"/api/v1/submissions/{sid}/history").json()["history"]
    assert [(e["action"], e["actor"], e["reason"]) for e in history] == [
        ("hide", "operator", "copied predictions"),
        ("unhide", "ops-alice", ""),
        ("flag", "ops-alice", "scores disputed by the authors"),
    ]
    assert all(e["at"] for e in history) and status["history"] == history
    cli_history = json.loads(run_cli("submissions", "history", sid, env=svc.env).stdout)
    assert [e["action"] for e in cli_history] == ["hide", "unhide", "flag"]

    with svc.http(token=svc.admin_token) as admin:
        deleted = act(admin, "delete", sid, "spam")
        assert deleted["submission"]["visibility"] == "deleted"
        assert sid not in leaderboard_ids(admin, "parquet") and keep in leaderboard_ids(
            admin, "parquet"
        )
        act(admin, "unhide", sid, expect=409)  # deleted is for good
    assert not list((svc.data_dir / "uploads").glob(f"{sid}*"))
    assert not list((svc.data_dir / "results-dataset").glob(result_glob(sid)))


def test_cancel_queued_and_running_then_rerun(svc):
    from submissions.settings import FAULT_GATE_ENV

    _, token = new_user(svc)
    redis = svc.redis_client()
    while svc.workers:  # no worker: the next submission stays queued
        svc.kill_worker(0)
    try:
        with svc.http(token=token) as http, svc.http(token=svc.admin_token) as admin:
            queued = submit(
                http, unique_predictions("cancel-queued"), model_name="op-cancel"
            ).json()["id"]
            act(admin, "cancel", queued, "submitted by mistake")
            assert http.get(f"/api/v1/submissions/{queued}").json()["state"] == "cancelled"
            assert redis.llen("rq:queue:personaboard") == 0
            act(admin, "cancel", queued, "twice", expect=409)

            # a worker whose job sits in "running" at a gate nobody opens (until it is cancelled)
            svc.env[FAULT_GATE_ENV] = str(svc.data_dir / "gate-never-opened")
            svc.start_worker()
            svc.env.pop(FAULT_GATE_ENV)
            svc.wait_workers_registered()
            running = submit(
                http, unique_predictions("cancel-running"), model_name="op-cancel"
            ).json()["id"]
            wait_until(
                lambda: http.get(f"/api/v1/submissions/{running}").json()["state"] == "running",
                60,
                "running",
            )
            act(admin, "cancel", running, "runaway job")
            job = f"submission-{running}"
            wait_until(
                lambda: redis.hget(f"rq:job:{job}", "status") in (b"stopped", b"canceled"),
                30,
                "the job to stop",
            )
            assert http.get(f"/api/v1/submissions/{running}").json()["state"] == "cancelled"
            svc.kill_worker(len(svc.workers) - 1)  # the pausing worker

            for _ in range(2):  # back to normal workers
                svc.start_worker()
            svc.wait_workers_registered()
            rerun = act(admin, "rerun", running, "cancelled by mistake")
            assert rerun["submission"]["state"] == "queued"
            final = wait_finished(http, running, logs=svc.logs)
            assert final["revision"] and running in leaderboard_ids(http)
            assert [e["action"] for e in final["history"]] == ["cancel", "rerun"]
            assert (
                http.get(f"/api/v1/submissions/{queued}").json()["state"] == "cancelled"
            )  # never ran
            assert queued not in leaderboard_ids(http)
    finally:
        svc.env.pop(FAULT_GATE_ENV, None)
        if not svc.workers:
            svc.start_worker()
