"""The web process's access log: one line per request, without query values; routine reads counted.

uvicorn logs every request's path with its query string; a token someone puts in a URL
(`?token=...`), or any other value of a query, would land in the operator's log on every request.
The parameter names stay (what was asked for is still readable); their values are dropped.

uvicorn's line costs about 0.1 ms of the event loop a request (a LogRecord, its formatter, a write),
as much as answering a cached leaderboard page does, and at thousands of reads a second it floods
the log. So `AccessLog` (an ASGI middleware, outermost) writes the lines instead, in uvicorn's
format and through its handlers, and the routine reads (a GET of the leaderboard or health answered
200 or 304) only count: one summary line a minute says how many there were.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS_LOGGER = "uvicorn.access"
LOGGER = "personaboard.access"  # where AccessLog writes (with uvicorn's access handlers)
SUMMARY_LOGGER = "uvicorn.error"  # uvicorn's logger of its own notices (INFO, plain format)
_VALUE = re.compile(r"=[^&]*")
ROUTINE_PATHS = frozenset({"/api/v1/leaderboard", "/api/v1/health"})
ROUTINE_STATUSES = frozenset({200, 304})
SUMMARY_EVERY_S = 60.0


def without_query_values(path: str) -> str:
    """`/a?token=x&suite=y` -> `/a?token=…&suite=…`; a path with no query is unchanged."""
    head, sep, query = path.partition("?")
    return head + sep + _VALUE.sub("=…", query) if sep else path


def take_over_uvicorn_access_log() -> logging.Logger:
    """AccessLog's logger, with the handlers uvicorn gave its access logger (its format, its
    stream), which is left without any: uvicorn then writes no line of its own. Idempotent."""
    ours = logging.getLogger(LOGGER)
    theirs = logging.getLogger(ACCESS_LOGGER)
    if theirs.handlers:
        ours.handlers = list(theirs.handlers)
        ours.propagate = False
        ours.setLevel(theirs.level or logging.INFO)
        theirs.handlers = []
        theirs.propagate = False
    return ours


class AccessLog:
    """Logs each request as uvicorn does (`client - "GET /path?name=… HTTP/1.1" 200`), except the
    routine reads, which are counted and summed up every SUMMARY_EVERY_S (with the next request)."""

    def __init__(self, app: ASGIApp, logger: logging.Logger | None = None) -> None:
        self.app = app
        self.logger = logger or take_over_uvicorn_access_log()
        # the access format reads a request's five fields: the summary goes to another logger
        self.summary_logger = logging.getLogger(SUMMARY_LOGGER)
        self._counts: Counter[tuple[str, int]] = Counter()
        self._since = time.monotonic()
        self._lock = threading.Lock()  # the counts: the event loop, and a summary at shutdown

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def logging_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.record(scope, message["status"])
            await send(message)

        await self.app(scope, receive, logging_send)

    def record(self, scope: Scope, status: int) -> None:
        path = scope["path"]
        if (
            path in ROUTINE_PATHS
            and status in ROUTINE_STATUSES
            and scope["method"] in ("GET", "HEAD")
        ):
            with self._lock:
                self._counts[(path, status)] += 1
        else:
            query = scope.get("query_string", b"").decode("latin-1")
            client = scope.get("client")
            self.logger.info(
                '%s - "%s %s HTTP/%s" %d',
                f"{client[0]}:{client[1]}" if client else "-",
                scope["method"],
                without_query_values(f"{path}?{query}" if query else path),
                scope.get("http_version", "1.1"),
                status,
            )
        if time.monotonic() - self._since >= SUMMARY_EVERY_S:
            self.summarize()

    def summarize(self) -> None:
        """One line for the routine reads counted since the last one (none: no line)."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
            seconds, self._since = time.monotonic() - self._since, time.monotonic()
        if counts:
            self.summary_logger.info(
                "routine reads in the last %.0f s: %s",
                seconds,
                ", ".join(f"{path} {status} x {n}" for (path, status), n in sorted(counts.items())),
            )
