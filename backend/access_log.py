"""The web process's access log keeps paths, not query values.

uvicorn logs every request's path with its query string; a token someone puts in a URL
(`?token=...`), or any other value of a query, would land in the operator's log on every request.
The parameter names stay (what was asked for is still readable); their values are dropped.
"""

from __future__ import annotations

import logging
import re

ACCESS_LOGGER = "uvicorn.access"
_VALUE = re.compile(r"=[^&]*")


def without_query_values(path: str) -> str:
    """`/a?token=x&suite=y` -> `/a?token=…&suite=…`; a path with no query is unchanged."""
    head, sep, query = path.partition("?")
    return head + sep + _VALUE.sub("=…", query) if sep else path


class QueryValuesFilter(logging.Filter):
    """Rewrites uvicorn's access record (client, method, path with query, version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], without_query_values(args[2]), *args[3:])
        return True


def drop_query_values(logger_name: str = ACCESS_LOGGER) -> None:
    """Install the filter once on the access logger (create_app may run more than once)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, QueryValuesFilter) for f in logger.filters):
        logger.addFilter(QueryValuesFilter())
