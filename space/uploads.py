"""Files reach a UI event only as bytes this app's upload route received (no path from
the UI to the server's files).

A Gradio event's FileData carries a server path chosen by the client, so a client can name any
file (/etc/passwd, another submission's stored upload) or probe which paths exist. Two checks
stand between such a path and the scorer:

- Gradio's own: when an app is `launch()`ed, Gradio's preprocess accepts FileData only inside its
  upload folder ("not uploaded by a user" otherwise); `mount_gradio_app` never marks the Blocks
  launched, which leaves that check off. backend/app.py turns it on (`enforce_upload_check`).
- Ours, in the handler: the path must be a regular file (no symlink) inside this app's upload
  folder (GRADIO_TEMP_DIR, set per data folder by backend/app.py), whose names are content hashes
  salted with a per-server secret, so another user's upload cannot be named either.

A refusal never names the path or says whether it exists.
"""

from __future__ import annotations

import os
from pathlib import Path

from gradio.utils import get_upload_folder

from submissions.intake import SubmissionError

NOT_AN_UPLOAD = "choose the file again: only a file uploaded through this page can be submitted"


class NotAnUpload(SubmissionError):
    """A refusal of the file (422, field file), the same whatever path the client named."""

    def __init__(self) -> None:
        super().__init__(422, NOT_AN_UPLOAD, field="file")


def uploaded_file(value: object) -> Path:
    """The path of a file uploaded through this app's upload route, or NotAnUpload."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise NotAnUpload()
    path = Path(value)
    root = Path(get_upload_folder()).resolve()
    try:
        inside = (
            path.is_absolute() and path.resolve().is_relative_to(root) and path.resolve() != root
        )
        ok = inside and not path.is_symlink() and path.is_file()
    except (OSError, ValueError):  # a path too long, NUL bytes...
        ok = False
    if not ok:
        raise NotAnUpload()
    return path


def enforce_upload_check(blocks) -> None:
    """Gradio checks FileData paths only for Blocks it launched itself; ours is mounted."""
    blocks.has_launched = True


UPLOAD_MAX_AGE_S = 3600  # an upload never submitted is removed after this long
SWEEP_EVERY_S = 300


def discard_upload(path: Path) -> None:
    """Remove an upload once its submission copied it (the service keeps its own copy)."""
    try:
        path.unlink(missing_ok=True)
        if path.parent != Path(get_upload_folder()).resolve() and not any(path.parent.iterdir()):
            path.parent.rmdir()  # Gradio puts each upload in a folder of its own
    except OSError:
        pass


def sweep_uploads(max_age_s: float = UPLOAD_MAX_AGE_S, now: float | None = None) -> int:
    """Remove uploads older than max_age_s (and the folders they leave empty); returns how many
    files went. Without it the upload route is a disk anyone can fill from outside."""
    import time

    root = Path(get_upload_folder())
    if not root.is_dir():
        return 0
    cutoff = (now if now is not None else time.time()) - max_age_s
    removed = 0
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        try:
            if path.is_symlink() or path.is_file():
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        except OSError:
            continue  # removed meanwhile, or not ours to remove
    return removed


def start_upload_sweeper(stop, every_s: float = SWEEP_EVERY_S) -> None:
    """A daemon thread sweeping the upload folder every `every_s` until `stop` (an Event) is set."""
    import threading

    def loop() -> None:
        while not stop.wait(every_s):
            sweep_uploads()

    sweep_uploads()
    threading.Thread(target=loop, name="upload-sweeper", daemon=True).start()


class UploadIdentity:
    """ASGI middleware: Gradio's upload route (`path`) answers 401 unless the request carries the
    identity the submit tabs take: an API token (Authorization: Bearer, or the cookie the token
    field sets, space/identity.py), or on a Space with Hugging Face sign-in, Gradio's session
    cookie. Without it anyone could store files here (up to the size limit each) without a token."""

    def __init__(self, app, identities, path: str, session_ok):
        self.app, self.identities, self.path, self.session_ok = app, identities, path, session_ok

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        from http.cookies import SimpleCookie
        from urllib.parse import unquote

        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse

        from space.identity import UPLOAD_TOKEN_COOKIE

        headers = dict(scope["headers"])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:  # noqa: BLE001 - a malformed cookie header: no identity from it
            cookies = SimpleCookie()
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if not token and UPLOAD_TOKEN_COOKIE in cookies:
            token = unquote(cookies[UPLOAD_TOKEN_COOKIE].value)
        known = bool(token) and await run_in_threadpool(self.identities.authenticate, token)
        if not known and not (self.session_ok() and "session" in cookies):
            message = "uploading a file needs an identity: the API token the operator gave you"
            response = JSONResponse(
                {
                    "detail": {
                        "message": message,
                        "problems": [{"line": None, "field": "token", "message": message}],
                    }
                },
                status_code=401,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
