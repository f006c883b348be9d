"""On a Space, routes that need an identity accept only a session Gradio's middleware signed, and
uploads through Gradio are bounded per identity (count, bytes and rate per hour/minute).

One live service in Space mode (SYSTEM=spaces and the OAuth variables a Space injects; no sign-in
happens, so OPENID_PROVIDER_URL points at an unused port). The test knows OAUTH_CLIENT_SECRET and
signs session cookies as Gradio's SessionMiddleware would (test side only): a cookie so signed is
the signed-in account; forged, tampered, foreign-signed or expired ones are no one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import time
from base64 import b64encode
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import itsdangerous
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import wait_state  # noqa: E402
from live_service import start_live_service  # noqa: E402
from test_probing import SUITE, TASK, above_the_floor, hidden_fixture, install  # noqa: E402

from backend.processes import free_port  # noqa: E402

pytestmark = pytest.mark.service

CLIENT_SECRET = "space-test-client-secret"
PER_MINUTE, PER_HOUR, BYTES_PER_HOUR = 3, 5, 1024 * 1024
ALLOWED = "alice,bob,carol"  # the operator's allow-list: mallory is refused by the policy


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    env = {
        "SYSTEM": "spaces",
        "SPACE_ID": "personaboard/test-space",
        "OAUTH_CLIENT_ID": "test-client",
        "OAUTH_CLIENT_SECRET": CLIENT_SECRET,
        "OAUTH_SCOPES": "openid profile",
        "OPENID_PROVIDER_URL": f"http://127.0.0.1:{free_port()}",  # never called here
        "PERSONABOARD_HF_ALLOWLIST_ONLY": "1",
        "PERSONABOARD_HF_ALLOWED_USERS": ALLOWED,
        "PERSONABOARD_UPLOAD_PER_MINUTE": str(PER_MINUTE),
        "PERSONABOARD_UPLOAD_PER_HOUR": str(PER_HOUR),
        "PERSONABOARD_UPLOAD_BYTES_PER_HOUR": str(BYTES_PER_HOUR),
    }
    svc = start_live_service(tmp_path_factory.mktemp("space-sessions"), 1, env)
    try:
        yield svc
    finally:
        svc.stop()


def sign(session: dict, secret: str = CLIENT_SECRET, signed_at: float | None = None) -> str:
    """A session cookie as Gradio's SessionMiddleware writes it (gradio/oauth.py attach_oauth)."""

    class Signer(itsdangerous.TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time() if signed_at is None else signed_at)

    key = hashlib.sha256((secret + "-v4").encode()).hexdigest()
    return Signer(key).sign(b64encode(json.dumps(session).encode())).decode()


def signed_in(user: str, expires_in: float = 3600, **kwargs) -> str:
    userinfo = {"preferred_username": user, "name": user, "profile": "", "picture": ""}
    info = {"access_token": "t", "expires_at": int(time.time() + expires_in), "userinfo": userinfo}
    return sign({"oauth_info": info}, **kwargs)


def upload(http: httpx.Client, body: bytes, cookie: str | None = None, token: str | None = None):
    headers = {"Cookie": f"session={cookie}"} if cookie is not None else {}
    headers["Accept"] = "application/json"  # the API's refusal (the page gets a plain sentence)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return http.post("/gradio_api/upload", files={"files": ("p.jsonl", body)}, headers=headers)


def counted(svc, owner: str) -> tuple[int, int]:
    with sqlite3.connect(svc.data_dir / "submissions.sqlite3") as db:
        row = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM upload_budget WHERE owner = ?", (owner,)
        ).fetchone()
    return int(row[0]), int(row[1])


def test_the_upload_route_takes_only_a_session_gradio_signed(space):
    valid = signed_in("alice")
    payload, stamp, signature = valid.rsplit(".", 2)
    other = b64encode(
        json.dumps({"oauth_info": {"userinfo": {"preferred_username": "bob"}}}).encode()
    )
    refused = {
        "forged": "x",
        "tampered": f"{other.decode()}.{stamp}.{signature}",
        "another secret": signed_in("alice", secret="not-the-apps-secret"),
        "expired oauth_info": signed_in("alice", expires_in=-10),
        "signed too long ago": signed_in("alice", signed_at=time.time() - 15 * 24 * 3600),
    }
    with space.http(token="") as http:
        for why, cookie in refused.items():
            answer = upload(http, b"{}\n", cookie)
            assert answer.status_code == 401, (why, answer.text)
            detail = answer.json()["detail"]
            assert "sign in with Hugging Face" in detail["message"], why
            assert "needs an identity" in detail["message"], why
            assert detail["problems"][0]["field"] == "token"
        assert counted(space, "hf:alice") == counted(space, "hf:bob") == (0, 0)
        accepted = upload(http, b"{}\n", valid)
        assert accepted.status_code == 200, accepted.text
        assert counted(space, "hf:alice")[0] == 1
        # the sign-in policy applies as to a submission: an account not on the allow-list
        policy = upload(http, b"{}\n", signed_in("mallory"))
        assert policy.status_code == 403 and "accounts the operator listed" in policy.text
        assert counted(space, "hf:mallory") == (0, 0)
        # an API token still works on a Space, and a forged session beside it changes nothing
        token_upload = upload(http, b"{}\n", "x", token=space.token)
        assert token_upload.status_code == 200 and counted(space, "tester")[0] == 1


def test_budgets_give_429_exactly_past_each_figure(space):
    with space.http(token="") as http:
        # per minute: PER_MINUTE pass, the next waits for the oldest to leave the minute
        carol = signed_in("carol")
        answers = [upload(http, b"{}\n", carol) for _ in range(PER_MINUTE + 1)]
        assert [a.status_code for a in answers] == [200] * PER_MINUTE + [429]
        assert f"at most {PER_MINUTE} uploads per minute" in answers[-1].json()["detail"]["message"]
        assert 0 < int(answers[-1].headers["retry-after"]) <= 60
        # per hour: earlier uploads of this hour (older than a minute) are counted too
        token = space.add_user("hourly")
        seed(space, "hourly", [time.time() - 600 + i for i in range(PER_HOUR - 2)])
        answers = [upload(http, b"{}\n", token=token) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429], [a.text for a in answers]
        assert f"at most {PER_HOUR} uploads per hour" in answers[-1].json()["detail"]["message"]
        assert 2990 <= int(answers[-1].headers["retry-after"]) <= 3000
        # bytes per hour (Content-Length): two of 400 KiB fit in 1 MiB, a third does not
        token = space.add_user("bytes")
        big = b"x" * (400 * 1024)
        answers = [upload(http, big, token=token) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        assert "at most 1 MiB uploaded per hour" in answers[-1].json()["detail"]["message"]
        assert 3590 <= int(answers[-1].headers["retry-after"]) <= 3600
        assert counted(space, "bytes")[0] == 2 and counted(space, "bytes")[1] > 800 * 1024
        # one upload larger than the whole hourly budget: 413 at once (never fits)
        alone = upload(http, b"x" * (BYTES_PER_HOUR + 1), token=space.add_user("huge"))
        assert alone.status_code == 413 and "per hour" in alone.text
        # no Content-Length (chunked): 411, nothing counted
        chunked = http.post(
            "/gradio_api/upload",
            content=iter([b"--b\r\n", b"x" * 100]),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "multipart/form-data; boundary=b",
            },
        )
        assert chunked.status_code == 411 and "Content-Length" in chunked.text
        assert counted(space, "bytes")[0] == 2


def seed(svc, owner: str, times: list[float]) -> None:
    """Uploads `owner` made earlier this hour, in the service's own table."""
    with sqlite3.connect(svc.data_dir / "submissions.sqlite3") as db:
        db.executemany(
            "INSERT INTO upload_budget (owner, at, bytes) VALUES (?, ?, 3)",
            [
                (
                    owner,
                    t,
                )
                for t in times
            ],
        )


def test_concurrent_uploads_cannot_exceed_a_budget(space):
    def burst(n: int, body: bytes, **who) -> list[int]:
        with space.http(token="", timeout=120) as http, ThreadPoolExecutor(n) as pool:
            return sorted(pool.map(lambda _: upload(http, body, **who).status_code, range(n)))

    # the minute's rate, with a signed session
    assert burst(12, b"{}\n", cookie=signed_in("bob")) == [200] * PER_MINUTE + [429] * 9
    assert counted(space, "hf:bob")[0] == PER_MINUTE
    # the hour's count (4 of 5 used 10 minutes ago): exactly one more
    token = space.add_user("racer-hour")
    seed(space, "racer-hour", [time.time() - 600 + i for i in range(PER_HOUR - 1)])
    assert burst(10, b"{}\n", token=token) == [200] + [429] * 9
    # the hour's bytes: two of 400 KiB
    token = space.add_user("racer-bytes")
    assert burst(10, b"x" * (400 * 1024), token=token) == [200] * 2 + [429] * 8
    assert counted(space, "racer-bytes")[0] == 2


def test_a_refused_submissions_upload_is_removed(space):
    cookie = signed_in("alice")
    with space.http(token="") as http:
        stored = upload(http, b'{"id": "x", "answer": "nonsense"}\n', cookie)
        assert stored.status_code == 200, stored.text
        shown = stored.json()[0]  # the page's alias of the stored file (space/uploads.py)
        path = space.data_dir / "gradio-uploads" / shown.removeprefix("upload/")
        assert shown.startswith("upload/") and path.is_file()

        def submit(file_path: str, cookie_value: str | None) -> str:
            file_data = {
                "path": file_path,
                "orig_name": "p.jsonl",
                "meta": {"_type": "gradio.FileData"},
            }
            data = [file_data, "prefeval", "mcq", "zero_shot", "space-model", "", ""]
            headers = {"Cookie": f"session={cookie_value}"} if cookie_value else {}
            started = http.post("/gradio_api/call/submit", json={"data": data}, headers=headers)
            assert started.status_code == 200, started.text
            stream = http.get(
                f"/gradio_api/call/submit/{started.json()['event_id']}", headers=headers
            )
            lines = [line for line in stream.text.splitlines() if line.startswith("data:")]
            return json.loads(lines[-1].removeprefix("data:"))[0]

        # no identity (a forged session): refused, and the file stays for a submit that has one
        assert "needs an identity" in submit(shown, "x") and path.is_file()
        # the signed-in account's submission, refused by validation: the file goes at once
        refusal = submit(shown, cookie)
        assert "rejected" in refusal and "unknown id" in refusal, refusal
        assert "choose it again" in refusal  # the page says the file is gone
        assert not path.exists() and not path.parent.exists()
    with sqlite3.connect(space.data_dir / "submissions.sqlite3") as db:
        failed = db.execute("SELECT owner FROM validation_failures").fetchall()
    assert failed == [("hf:alice",)]  # the refusal was the signed-in account's


def test_the_comparison_form_takes_the_signed_in_account(space, tmp_path):
    gold = hidden_fixture(tmp_path / "hidden-split", public=False)
    install(space, tmp_path / "hidden-split")
    rows = []
    for k, token in enumerate([space.token, space.add_user("second")]):
        body = "".join(
            json.dumps({"id": i, "answer": a}) + "\n" for i, a in above_the_floor(gold, k).items()
        )
        with space.http(token=token) as http:
            made = http.post(
                "/api/v1/submissions",
                files={"file": ("p.jsonl", body.encode(), "application/x-ndjson")},
                data={
                    "suite": SUITE,
                    "task": TASK,
                    "setting": "zero_shot",
                    "model_name": f"cmp-{k}",
                },
            )
            assert made.status_code == 201, made.text
            rows.append(wait_state(http, made.json()["id"], timeout=180))
    assert all(r["state"] == "finished" for r in rows), rows
    a, b = rows[0]["id"], rows[1]["id"]
    page = f"/model/{quote('cmp-0', safe='')}"
    with space.http(token="") as http:
        form = http.get(page).text
        assert "unless signed in with Hugging Face" in form  # no token needed on a Space
        refusal = "No comparison: a comparison on a hidden split needs an identity"
        for cookie in ("x", signed_in("alice", secret="other"), signed_in("alice", expires_in=-5)):
            answer = http.post(
                page, data={"a": a, "b": b, "token": ""}, headers={"Cookie": f"session={cookie}"}
            )
            assert answer.status_code == 200 and refusal in answer.text, answer.text
        assert refusal in http.post(page, data={"a": a, "b": b}).text  # the same as no cookie
        policy = http.post(
            page, data={"a": a, "b": b}, headers={"Cookie": f"session={signed_in('mallory')}"}
        )
        assert (
            "No comparison: this service takes submissions from accounts the operator listed"
            in policy.text
        )
        shown = http.post(
            page, data={"a": a, "b": b}, headers={"Cookie": f"session={signed_in('alice')}"}
        )
        assert 'id="comparison"' in shown.text and "Paired comparison" in shown.text, shown.text
    with sqlite3.connect(space.data_dir / "submissions.sqlite3") as db:
        taken = db.execute("SELECT owner FROM comparisons").fetchall()
    assert taken == [("hf:alice",)]  # counted for the signed-in account, once
