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
  salted with a per-server secret and, once the upload route answered, a random suffix of each
  upload's own (own_link), so another user's upload cannot be named either.

A refusal never names the path or says whether it exists.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import quote

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


# What the page and API clients see instead of the server's upload folder: Gradio's upload route
# answers with each stored file's absolute path (which names the data folder), and the page sends
# that path back in the event's FileData. UploadPathAlias shows `upload/<folder>/<name>` and maps it
# back on the way in, so no response names a server path and the checks above see the real one.
UPLOAD_ALIAS = "upload/"
ALIASED_BODY_MAX_BYTES = 1024 * 1024  # an event's JSON is small; larger bodies pass unmapped


def _upload_roots() -> tuple[str, ...]:
    folder = Path(get_upload_folder())
    return tuple(dict.fromkeys((str(folder), str(folder.resolve()))))


def alias_of(path: str) -> str:
    """`upload/<relative path>` for a path inside the upload folder; any other value unchanged."""
    for root in _upload_roots():
        if path.startswith(root + os.sep):
            return UPLOAD_ALIAS + path[len(root) + 1 :]
    return path


def path_of(value: str) -> str:
    """The absolute path an alias stands for; any other value unchanged (the handler's own check,
    uploaded_file, then refuses anything outside the folder, `upload/../..` included)."""
    if value.startswith(UPLOAD_ALIAS):
        return str(Path(get_upload_folder()) / value[len(UPLOAD_ALIAS) :])
    return value


def _unaliased(data: object) -> object:
    """The event's data with every FileData path that is an alias mapped back."""
    if isinstance(data, list):
        return [_unaliased(item) for item in data]
    if isinstance(data, dict):
        mapped = {key: _unaliased(item) for key, item in data.items()}
        if isinstance(path := mapped.get("path"), str):
            mapped["path"] = path_of(path)
        return mapped
    return data


def own_link(path: str) -> str:
    """The stored upload as a hard link in a folder of its own (`<hash>-<random>/<name>`), the
    content-named original removed; `path` itself where that cannot be done (a file Gradio's
    background task has not moved in yet).

    Gradio names an upload's folder by its content, so two people (or two tabs) uploading the same
    file got one path, and the first submit's discard_upload removed the file the second was about
    to submit ("choose the file again"). With a link each upload is its own file until its submit
    (or the sweep) removes it."""
    stored = Path(path)
    root = stored.parent.parent
    if str(root) not in _upload_roots() or stored.is_symlink() or not stored.is_file():
        return path
    try:
        folder = root / f"{stored.parent.name}-{secrets.token_hex(8)}"
        folder.mkdir()
        own = folder / stored.name
        os.link(stored, own)
    except OSError:
        return path
    try:
        stored.unlink()
        stored.parent.rmdir()  # empty unless a file of another name shares the content
    except OSError:
        pass
    return str(own)


def _with_length(headers: list, length: int) -> list:
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]


class UploadPathAlias:
    """ASGI middleware around the mounted UI: Gradio's upload route answers with aliases
    (`alias_of`), the event routes under `api_prefix` get them mapped back (`path_of`) in their
    JSON bodies, and `<api_prefix>/file=upload/...` (the page's link to an uploaded file) reads
    the real file."""

    def __init__(self, app, upload_path: str, api_prefix: str = "/gradio_api"):
        self.app, self.upload_path, self.api_prefix = app, upload_path, api_prefix
        self.file_prefix = f"{api_prefix}/file={UPLOAD_ALIAS}"

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["method"] == "POST" and path == self.upload_path:
            await self.app(scope, receive, self._aliasing(send))
        elif scope["method"] == "GET" and path.startswith(self.file_prefix):
            real = f"{self.api_prefix}/file=" + path_of(
                path[len(self.file_prefix) - len(UPLOAD_ALIAS) :]
            )
            raw = quote(real).encode()
            await self.app({**scope, "path": real, "raw_path": raw}, receive, send)
        elif scope["method"] == "POST" and path.startswith(self.api_prefix + "/"):
            await self._unaliasing(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _aliasing(self, send):
        """A `send` that holds the upload route's answer (a short JSON list of paths) and sends
        it with every path aliased."""
        start: dict = {}
        chunks: list[bytes] = []

        async def aliasing_send(message) -> None:
            import json

            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            try:
                paths = json.loads(body) if start.get("status") == 200 else None
            except ValueError:
                paths = None
            if isinstance(paths, list):
                body = json.dumps(
                    [alias_of(own_link(p)) if isinstance(p, str) else p for p in paths]
                ).encode()
            await send(
                {**start, "headers": _with_length(list(start.get("headers", [])), len(body))}
            )
            await send({"type": "http.response.body", "body": body})

        return aliasing_send

    async def _unaliasing(self, scope, receive, send) -> None:
        """Read an event's JSON body (at most ALIASED_BODY_MAX_BYTES; beyond, it passes as it
        came) and hand it on with its aliases mapped back."""
        import json

        messages, size, complete = [], 0, False
        while not complete and size <= ALIASED_BODY_MAX_BYTES:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            complete = not message.get("more_body", False)
        headers = list(scope["headers"])
        if complete and UPLOAD_ALIAS.encode() in (
            body := b"".join(m.get("body", b"") for m in messages)
        ):
            try:
                body = json.dumps(_unaliased(json.loads(body))).encode()
                messages = [{"type": "http.request", "body": body, "more_body": False}]
                headers = _with_length(headers, len(body))
            except ValueError:
                pass  # not JSON: Gradio answers it as it would have

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app({**scope, "headers": headers}, replay, send)


UPLOAD_MAX_AGE_S = (
    1800  # an upload never submitted is removed after this long (PERSONABOARD_UPLOAD_MAX_AGE_S)
)
SWEEP_EVERY_S = 60


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


def start_upload_sweeper(
    stop, every_s: float = SWEEP_EVERY_S, max_age_s: float = UPLOAD_MAX_AGE_S
) -> None:
    """A daemon thread sweeping the upload folder every `every_s` until `stop` (an Event) is set."""
    import threading

    def loop() -> None:
        while not stop.wait(every_s):
            sweep_uploads(max_age_s)

    sweep_uploads(max_age_s)
    threading.Thread(target=loop, name="upload-sweeper", daemon=True).start()


def _refusal(status: int, message: str, field: str, headers: dict | None = None, accept: str = ""):
    """The route's refusal. Gradio's page shows the body of a refused upload as it is, in a toast
    ("HTTP 401: <body>"), so the body is one plain sentence; a client asking for JSON (Accept:
    application/json) gets the API's {"detail": {"message", "problems"}} instead."""
    from starlette.responses import JSONResponse, PlainTextResponse

    if "application/json" in accept.lower():
        problems = [{"line": None, "field": field, "message": message}]
        body = {"detail": {"message": message, "problems": problems}}
        return JSONResponse(body, status_code=status, headers=headers)
    return PlainTextResponse(upload_refusal_text(message), status_code=status, headers=headers)


def upload_refusal_text(message: str) -> str:
    """The sentence a person reads in the page's toast."""
    return f"The file was not uploaded: {message.rstrip('.')}."


NO_UPLOAD_IDENTITY = (
    "type your API token first, then choose the file: uploading a file needs an identity (the API "
    "token the operator gave you)"
)
NO_UPLOAD_IDENTITY_SPACE = (
    "sign in with Hugging Face (or type the API token the operator gave you) first, then choose "
    "the file: uploading a file needs an identity"
)


class UploadIdentity:
    """ASGI middleware on Gradio's upload route (`path`): the identity the submit tabs take, then
    the upload budget of that identity.

    - Identity (401 without one): an API token (Authorization: Bearer, or the cookie the token
      field sets, space/identity.py), or on a Space with Hugging Face sign-in a session cookie that
      Gradio's SessionMiddleware signed, verified by space/session.py (a forged, tampered, expired
      or foreign-signed one is no one); the account then goes through the sign-in policy like a
      submission (403/503 as there). Without it anyone could store files here.
    - Budget (submissions/upload_budget.py): the request must declare its Content-Length (411),
      and each identity may upload so many files and bytes per hour, and so many per minute (429
      with Retry-After past them). A request over the size limit is left to BodySizeLimit (413,
      not counted).

    A refusal's body is one plain sentence saying what to do (the page shows it in a toast as it
    is), or the API's JSON for a client that asks for it (Accept: application/json)."""

    def __init__(self, app, identities, path: str, sessions, budget, max_request_bytes: int):
        self.app, self.identities, self.path = app, identities, path
        self.sessions, self.budget, self.max_request_bytes = sessions, budget, max_request_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        from starlette.concurrency import run_in_threadpool

        headers = dict(scope["headers"])
        accept = headers.get(b"accept", b"").decode("latin-1")
        try:
            owner = await run_in_threadpool(self._owner, scope)
        except SubmissionError as exc:
            await _refusal(exc.status, exc.message, "login", accept=accept)(scope, receive, send)
            return
        if owner is None:
            message = NO_UPLOAD_IDENTITY_SPACE if self.sessions.enabled else NO_UPLOAD_IDENTITY
            await _refusal(401, message, "token", accept=accept)(scope, receive, send)
            return
        declared = headers.get(b"content-length", b"").decode("latin-1").strip()
        if not declared.isdigit():
            message = "an upload must declare its size (Content-Length): it counts against the upload budget"
            await _refusal(411, message, "file", accept=accept)(scope, receive, send)
            return
        if int(declared) <= self.max_request_bytes:  # larger: BodySizeLimit's 413, not counted
            refused = await run_in_threadpool(self.budget.take, owner, int(declared))
            if refused is not None:
                retry = (
                    {"Retry-After": str(refused.retry_after_s)} if refused.retry_after_s else None
                )
                refusal = _refusal(refused.status, refused.message, "file", retry, accept)
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _owner(self, scope) -> str | None:
        """The name of the identity the request carries, None for no one (SubmissionError when the
        sign-in policy refuses the account)."""
        from urllib.parse import unquote

        from starlette.requests import HTTPConnection

        from space.identity import UPLOAD_TOKEN_COOKIE
        from space.session import request_identity

        connection = HTTPConnection(scope)
        auth = connection.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        cookies = connection.cookies  # Starlette's parser: what SessionMiddleware reads
        token = token or unquote(cookies.get(UPLOAD_TOKEN_COOKIE, ""))
        username = self.sessions.username_in(cookies)
        if username is None:  # no signed-in account: only a live token identifies
            found = self.identities.authenticate(token) if token else None
            return found.name if found is not None else None
        identity = request_identity(self.identities, username, token)
        return identity.name if identity is not None else None
