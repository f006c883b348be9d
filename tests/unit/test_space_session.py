"""space/session.py reads Gradio's session cookie exactly as Starlette's SessionMiddleware does.

The cookies here are made by a real SessionMiddleware (a Starlette app that stores `oauth_info`
like Gradio's /login/callback) and then forged, tampered with, signed with another secret, aged
past max_age, or given an expired `oauth_info`: only the genuine one names the account.
"""

from __future__ import annotations

import hashlib
import json
import time
from base64 import b64encode

import itsdangerous
import pytest
from starlette.applications import Starlette
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from space.session import SessionReader, gradio_session_settings

SECRET = hashlib.sha256(b"client-secret-v4").hexdigest()  # how Gradio derives it
MAX_AGE = 14 * 24 * 3600


def _sign_in(request: Request) -> PlainTextResponse:
    user = request.query_params["user"]
    expires = float(request.query_params.get("expires_in", "3600"))
    request.session["oauth_info"] = {
        "access_token": "at",
        "expires_at": int(time.time() + expires),
        "userinfo": {"preferred_username": user, "name": user, "profile": "", "picture": ""},
    }
    return PlainTextResponse("ok")


def _app(secret: str = SECRET) -> Starlette:
    """An outer app mounting at "" an inner app with Gradio's SessionMiddleware settings."""
    inner = Starlette(routes=[Route("/login/callback", _sign_in)])
    inner.add_middleware(SessionMiddleware, secret_key=secret, same_site="none", https_only=True)
    return Starlette(routes=[Mount("", app=inner)])


def _cookie(app: Starlette, user: str, expires_in: float = 3600) -> str:
    with TestClient(app) as client:
        response = client.get(f"/login/callback?user={user}&expires_in={expires_in}")
    header = response.headers["set-cookie"]
    assert header.startswith("session=") and "secure" in header
    return header.split(";")[0].removeprefix("session=")


@pytest.fixture
def space(monkeypatch):
    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "org/board")
    monkeypatch.setenv("OAUTH_CLIENT_ID", "client")


def _reader(app: Starlette) -> SessionReader:
    reader = SessionReader()
    reader.configure(app)
    return reader


def _resigned(cookie_payload: dict, secret: str, timestamp: float | None = None) -> str:
    class Signer(itsdangerous.TimestampSigner):
        def get_timestamp(self) -> int:
            return int(timestamp if timestamp is not None else time.time())

    return Signer(secret).sign(b64encode(json.dumps(cookie_payload).encode())).decode()


def test_the_secret_comes_from_the_middleware_gradio_configured(space):
    app = _app()
    assert gradio_session_settings(app)["secret_key"] == SECRET
    reader = _reader(app)
    assert reader.enabled and reader.max_age == MAX_AGE and reader.cookie_name == "session"
    assert reader.username(_cookie(app, "alice")) == "alice"
    assert reader.username_in({"session": _cookie(app, "bob"), "other": "x"}) == "bob"


def test_only_a_genuine_unexpired_session_names_anyone(space):
    app = _app()
    reader = _reader(app)
    genuine = _cookie(app, "alice")
    payload, stamp, signature = genuine.rsplit(".", 2)
    other = _cookie(_app(hashlib.sha256(b"another-v4").hexdigest()), "alice")
    forged_payload = b64encode(
        json.dumps({"oauth_info": {"userinfo": {"preferred_username": "mallory"}}}).encode()
    ).decode()
    now = time.time()
    valid_info = {"expires_at": now + 3600, "userinfo": {"preferred_username": "alice"}}
    refused = {
        "forged": "x",
        "unsigned payload": forged_payload,
        "tampered payload": f"{forged_payload}.{stamp}.{signature}",
        "tampered signature": f"{payload}.{stamp}.{signature[:-2]}AA",
        "another secret": other,
        "expired oauth_info": _cookie(app, "alice", expires_in=-5),
        "signature past max_age": _resigned({"oauth_info": valid_info}, SECRET, now - MAX_AGE - 60),
        "not base64": itsdangerous.TimestampSigner(SECRET).sign(b"%%%").decode(),
        "not JSON": itsdangerous.TimestampSigner(SECRET).sign(b64encode(b"{nope")).decode(),
        "a list": _resigned([1, 2], SECRET),  # type: ignore[arg-type]
        "no oauth_info": _resigned({"other": 1}, SECRET),
        "no username": _resigned({"oauth_info": {"userinfo": {}}}, SECRET),
        "username not a string": _resigned(
            {"oauth_info": {"userinfo": {"preferred_username": ["a"]}}}, SECRET
        ),
        "expires_at not a number": _resigned(
            {"oauth_info": {**valid_info, "expires_at": "tomorrow"}}, SECRET
        ),
        "non-ASCII": "séssion",
        "empty": "",
    }
    for why, cookie in refused.items():
        assert reader.username(cookie) is None, why
    assert reader.username(_resigned({"oauth_info": valid_info}, SECRET)) == "alice"
    # just inside max_age still verifies (the middleware's own bound, not a stricter one)
    assert (
        reader.username(_resigned({"oauth_info": valid_info}, SECRET, now - MAX_AGE + 60))
        == "alice"
    )
    assert reader.username(genuine) == "alice"


def test_off_a_space_no_cookie_names_anyone(monkeypatch):
    monkeypatch.delenv("SYSTEM", raising=False)
    app = _app()
    reader = _reader(app)
    assert not reader.enabled and reader.username(_cookie(app, "alice")) is None


def test_a_space_without_gradios_session_middleware_does_not_start(space):
    with pytest.raises(RuntimeError, match="no session middleware"):
        SessionReader().configure(Starlette(routes=[Mount("", app=Starlette())]))
