"""Request-body size limit, enforced while the body streams in (before any parsing or spooling)."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Room for the multipart framing and the small form fields around the file.
FORM_OVERHEAD_BYTES = 256 * 1024


class _TooLarge(Exception):
    pass


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, paths: tuple[str, ...]):
        self.app = app
        self.max_bytes = max_bytes + FORM_OVERHEAD_BYTES
        self.file_limit = max_bytes
        self.paths = paths

    def _reject(self) -> JSONResponse:
        message = f"the upload is larger than the limit of {self.file_limit} bytes"
        return JSONResponse(
            {
                "detail": {
                    "message": message,
                    "problems": [{"line": None, "field": "file", "message": message}],
                }
            },
            status_code=413,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject()(scope, receive, send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject()(scope, receive, send)
