"""The leaderboard's fast path (backend/leaderboard_http.py) sends a cached body with the headers
leaderboard_response gives it, built once per query and body: the same bytes as a fresh answer,
and new headers once the body is another (a publish)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from test_store import make_record

from backend.leaderboard_http import PATH, LeaderboardFastPath, _fast_request, leaderboard_response
from leaderboard.readpath import LeaderboardCache
from leaderboard.store import LocalDatasetStore


def answer(fast: LeaderboardFastPath, query: bytes, headers=()) -> tuple[list, bytes]:
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def inner(scope, receive, send):  # pragma: no cover - a miss would reach it
        raise AssertionError("the fast path passed a cached body on")

    fast.app = inner
    scope = {
        "type": "http",
        "method": "GET",
        "path": PATH,
        "query_string": query,
        "headers": list(headers),
    }
    asyncio.run(fast(scope, None, send))
    start = sent[0]
    assert start["type"] == "http.response.start" and start["status"] == 200
    return start["headers"], b"".join(m.get("body", b"") for m in sent[1:])


def expected(cache: LeaderboardCache, query: bytes, gzipped: bool = False) -> tuple[list, bytes]:
    filters, fmt, page, pairs = _fast_request(query)
    body = cache.table().body(filters, fmt, gzipped, page)
    return leaderboard_response(body, fmt, False, None, pairs).raw_headers, body.content


def test_headers_built_once_per_body_equal_a_fresh_answer(tmp_path):
    store = LocalDatasetStore(tmp_path / "results")
    store.publish(make_record("s1", 0.5))
    cache = LeaderboardCache(store, lambda: [])
    fast = LeaderboardFastPath(None, SimpleNamespace(board=cache))
    query = b"suite=prefeval&limit=1"
    want = expected(cache, query)  # builds the body: the fast path then finds it
    first = answer(fast, query)
    assert first == want
    assert answer(fast, query) == want  # from its header cache: the same
    gzip_want = expected(cache, query, gzipped=True)
    assert answer(fast, query, [(b"accept-encoding", b"gzip")]) == gzip_want

    store.publish(make_record("s2", 0.9))  # a new head: a new body, new headers
    want = expected(cache, query)
    again = answer(fast, query)
    assert again == want and again[0] != first[0]
    assert dict(again[0])[b"x-total-count"] == b"2" and b"link" in dict(again[0])
