"""The access log (backend/access_log.py): query values dropped, routine reads counted, uvicorn's
own line switched off; through the middleware on a real Starlette app, lines as logging writes them."""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from backend import access_log
from backend.access_log import AccessLog, take_over_uvicorn_access_log, without_query_values


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def app_with_log(logger: logging.Logger) -> TestClient:
    async def ok(request):
        return PlainTextResponse("ok")

    async def not_modified(request):
        return Response(status_code=304)

    routes = [
        Route("/api/v1/leaderboard", ok),
        Route("/api/v1/health", not_modified),
        Route("/api/v1/suites", ok),
        Route("/api/v1/submissions", ok, methods=["POST"]),
    ]
    return TestClient(AccessLog(Starlette(routes=routes), logger=logger))


def test_query_values_are_dropped_names_kept():
    assert without_query_values("/api/v1/leaderboard") == "/api/v1/leaderboard"
    assert without_query_values("/x?token=s3cr3t&suite=prefeval&flag") == "/x?token=…&suite=…&flag"


def test_each_request_logged_without_values_and_routine_reads_summed_up(monkeypatch):
    logger = logging.getLogger("test.access")
    logger.setLevel(logging.INFO)
    lines, summary = Lines(), Lines()
    logger.addHandler(lines)
    summary_logger = logging.getLogger(access_log.SUMMARY_LOGGER)
    summary_logger.addHandler(summary)
    level = summary_logger.level
    summary_logger.setLevel(logging.INFO)
    try:
        client = app_with_log(logger)
        for _ in range(3):
            assert client.get("/api/v1/leaderboard?token=s3cr3t&suite=prefeval").status_code == 200
        assert client.get("/api/v1/health").status_code == 304
        assert client.get("/api/v1/suites?token=s3cr3t").status_code == 200
        assert client.post("/api/v1/submissions?token=s3cr3t").status_code == 200
        assert client.get("/api/v1/missing?q=1").status_code == 404
        assert client.post("/api/v1/leaderboard").status_code == 405  # not a routine read
        assert lines.lines == [
            'testclient:50000 - "GET /api/v1/suites?token=… HTTP/1.1" 200',
            'testclient:50000 - "POST /api/v1/submissions?token=… HTTP/1.1" 200',
            'testclient:50000 - "GET /api/v1/missing?q=… HTTP/1.1" 404',
            'testclient:50000 - "POST /api/v1/leaderboard HTTP/1.1" 405',
        ]
        assert summary.lines == []  # within the minute: counted only

        monkeypatch.setattr(access_log, "SUMMARY_EVERY_S", 0.0)
        assert client.get("/api/v1/leaderboard").status_code == 200
        assert len(summary.lines) == 1 and summary.lines[0].endswith(
            "/api/v1/health 304 x 1, /api/v1/leaderboard 200 x 4"
        )
        assert not any("s3cr3t" in line for line in lines.lines + summary.lines)
    finally:
        logger.removeHandler(lines)
        summary_logger.removeHandler(summary)
        summary_logger.setLevel(level)


def test_uvicorns_access_handlers_move_to_ours_and_uvicorn_writes_none():
    theirs = logging.getLogger(access_log.ACCESS_LOGGER)
    saved = (list(theirs.handlers), theirs.propagate)
    handler = logging.StreamHandler()
    theirs.handlers = [handler]
    try:
        ours = take_over_uvicorn_access_log()
        assert ours.handlers == [handler] and not theirs.hasHandlers()
        assert take_over_uvicorn_access_log().handlers == [handler]  # twice: the same
    finally:
        theirs.handlers, theirs.propagate = saved
        logging.getLogger(access_log.LOGGER).handlers = []
