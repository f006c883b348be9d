"""The Hugging Face account signed in on a Space, read from Gradio's signed `session` cookie.

Gradio (gradio/oauth.py attach_oauth) puts Starlette's SessionMiddleware on its own mounted app:
the session is JSON, base64-encoded and signed with itsdangerous' TimestampSigner; /login/callback
stores `oauth_info` (the provider's userinfo, `expires_at`) in it. Routes outside Gradio's app (the
upload gate, the model page's comparison form) see only the raw cookie, so they verify it here
exactly as that middleware does (same secret, read from the middleware Gradio configured, not
recomputed; same max_age) and as Gradio does before injecting a profile (`expires_at`). Anything
that does not verify (forged, tampered, signed with another secret, expired, malformed) is no one:
None, never an exception. Off a Space (no sign-in) every cookie is no one.
"""

from __future__ import annotations

import inspect
import json
import time
from base64 import b64decode
from dataclasses import dataclass
from typing import Any

from space.identity import hf_oauth_enabled, ui_identity
from submissions.identity import Identity, IdentityStore

SESSION_COOKIE = "session"  # SessionMiddleware's default name, which Gradio keeps


def gradio_session_settings(app) -> dict | None:
    """The keyword arguments Gradio gave SessionMiddleware on the app it mounted inside `app`
    (secret_key, max_age...), or None when it added none (no sign-in)."""
    from starlette.middleware.sessions import SessionMiddleware
    from starlette.routing import Mount

    for route in getattr(app, "routes", []):
        inner = route.app if isinstance(route, Mount) else None
        for middleware in getattr(inner, "user_middleware", []):
            if middleware.cls is SessionMiddleware:
                return dict(middleware.kwargs)
    return None


def _session_defaults() -> dict:
    from starlette.middleware.sessions import SessionMiddleware

    signature = inspect.signature(SessionMiddleware.__init__).parameters
    return {k: signature[k].default for k in ("session_cookie", "max_age")}


class SessionReader:
    """Verifies Gradio's session cookie. Unconfigured (off a Space) it admits no one."""

    def __init__(self) -> None:
        self._signer: Any = None  # itsdangerous.TimestampSigner once configured
        self.max_age: int | None = None
        self.cookie_name = SESSION_COOKIE

    def configure(self, app) -> None:
        """Read the secret from the SessionMiddleware Gradio added to the app mounted in `app`
        (called once the UI is mounted). On a Space with sign-in it must be there."""
        import itsdangerous

        if not hf_oauth_enabled():
            return
        found = gradio_session_settings(app)
        if found is None or not found.get("secret_key"):
            raise RuntimeError("Hugging Face sign-in is on but Gradio added no session middleware")
        settings = {**_session_defaults(), **found}
        self._signer = itsdangerous.TimestampSigner(str(settings["secret_key"]))
        self.max_age = settings["max_age"]
        self.cookie_name = settings["session_cookie"]

    @property
    def enabled(self) -> bool:
        return self._signer is not None

    def username(self, cookie: str | None, now: float | None = None) -> str | None:
        """The Hub username of a valid signed-in session cookie's value, else None."""
        if self._signer is None or not cookie:
            return None
        try:  # SessionMiddleware's own decoding: unsign (max_age), base64, JSON
            data = self._signer.unsign(cookie.encode("utf-8"), max_age=self.max_age)
            session = json.loads(b64decode(data))
        except Exception:  # noqa: BLE001 - bad signature, expired, not base64/JSON: no one
            return None
        info = session.get("oauth_info") if isinstance(session, dict) else None
        if not isinstance(info, dict):
            return None
        expires_at = info.get("expires_at")  # Gradio: absent means no expiry of its own
        if expires_at is not None:
            if not isinstance(expires_at, (int, float)) or isinstance(expires_at, bool):
                return None
            if expires_at < (time.time() if now is None else now):
                return None
        userinfo = info.get("userinfo")
        name = userinfo.get("preferred_username") if isinstance(userinfo, dict) else None
        return name if isinstance(name, str) and name else None

    def username_in(self, cookies: dict[str, str]) -> str | None:
        return self.username(cookies.get(self.cookie_name))


@dataclass(frozen=True)
class SignedInProfile:
    """What ui_identity reads of Gradio's OAuthProfile: the username."""

    username: str


def request_identity(
    identities: IdentityStore, username: str | None, token: str | None
) -> Identity | None:
    """The identity of a request outside Gradio's events: the signed-in account (through the same
    sign-in policy as the submit tabs: space/identity.py ui_identity), else the API token. None when
    it names neither; SubmissionError when the policy refuses the account or the token is not valid."""
    if not username and not (token or "").strip():
        return None
    profile = SignedInProfile(username) if username else None
    return ui_identity(identities, token, profile)  # type: ignore[arg-type]
