"""The access log drops query values (backend/access_log.py), on a record shaped as uvicorn's."""

from __future__ import annotations

import logging

from backend.access_log import QueryValuesFilter, drop_query_values, without_query_values


def uvicorn_record(path: str) -> logging.LogRecord:
    # what uvicorn's httptools/h11 protocols log per request
    args = ("127.0.0.1:5555", "GET", path, "1.1", 200)
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None
    )


def test_query_values_are_dropped_names_kept():
    assert without_query_values("/api/v1/leaderboard") == "/api/v1/leaderboard"
    assert without_query_values("/x?token=s3cr3t&suite=prefeval&flag") == "/x?token=…&suite=…&flag"
    record = uvicorn_record("/api/v1/submissions?token=s3cr3t")
    assert QueryValuesFilter().filter(record)
    line = record.getMessage()
    assert "s3cr3t" not in line and line.endswith('"GET /api/v1/submissions?token=… HTTP/1.1" 200')


def test_installed_once_on_the_access_logger():
    logger = logging.getLogger("uvicorn.access")
    before = list(logger.filters)
    try:
        drop_query_values()
        drop_query_values()
        assert sum(isinstance(f, QueryValuesFilter) for f in logger.filters) == 1
    finally:
        logger.filters[:] = before
