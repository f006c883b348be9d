"""The leaderboard's HTTP side: one response builder for the route and the fast path.

`LeaderboardFastPath` answers GET /api/v1/leaderboard from memory when the current head's body for
those filters is built already: before routing and parameter validation, which are most of the
cost of a request once the body is cached (about 40 % of ~1.5 ms measured here). Anything else
(a body not built yet, `revision=`, an unknown or repeated parameter, a bad value) goes on to the
FastAPI route, which validates, builds on the read threads and answers with the same builder.

JSON is paged (`limit`, `offset`; X-Total-Count and a Link header with the next and previous
pages), each page with its own ETag; CSV and parquet are the complete table, and so is the JSON
with `complete=true` (the page's "Download JSON" link). `limit` and `offset` page those too (rows
`offset` .. `offset + limit`, or to the last row without a limit): a request without them is the
complete table, as before.

Bodies are sent in pieces cut once per body (`Body.pieces`), so a slow reader of a large table holds
one piece of transport buffer at a time (uvicorn waits for the socket to drain), not the whole
body, and no request copies the body.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from leaderboard.readpath import (
    DEFAULT_PAGE_ROWS,
    MAX_PAGE_ROWS,
    Body,
    Filters,
    Page,
    UnknownFilter,
    check_filters,
)
from leaderboard.table import EXPORT_FORMATS

if TYPE_CHECKING:
    from submissions.service import Services

PATH = "/api/v1/leaderboard"
FAST_PARAMS = {"suite", "task", "setting", "tier", "format", "limit", "offset", "complete"}
MAX_OFFSET = 10_000_000
PARSED_QUERIES = 1024


def accepts_gzip(accept_encoding: str | None) -> bool:
    """Accept-Encoding lists gzip (or *) with a non-zero quality."""
    for part in (accept_encoding or "").lower().split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip() in ("gzip", "*"):
            q = params.strip().removeprefix("q=")
            try:
                return not params.strip().startswith("q=") or float(q) > 0
            except ValueError:
                return False
    return False


class PiecewiseBody(Response):
    """A cached Body sent in its pieces (Body.pieces: cut once, never copied per request), with
    Content-Length as usual: a slow reader holds one piece of transport buffer at a time."""

    def __init__(self, body: Body, headers: dict[str, str]) -> None:
        super().__init__(body.content, media_type=body.media_type, headers=headers)
        self.pieces = body.pieces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_pieces(send, self.status_code, self.raw_headers, self.pieces)


async def send_pieces(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], pieces: tuple[bytes, ...]
) -> None:
    """An answer whose body is sent in its pieces (the fast path's, and PiecewiseBody's)."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        await send({"type": "http.response.body", "body": piece, "more_body": i < last})


def page_of(fmt: str, limit: int | None, offset: int, complete: bool = False) -> Page | None:
    """The rows asked for: `limit` rows from `offset`, in any format. Without a limit, JSON is a
    page of DEFAULT_PAGE_ROWS rows, and a download (CSV, parquet, JSON with `complete`) every row
    from `offset`. None: the complete table (a download with no paging)."""
    if limit is None:
        if fmt == "json" and not complete:
            return Page(offset, DEFAULT_PAGE_ROWS)
        if not offset:
            return None
    return Page(offset, limit)


def page_links(query: list[tuple[str, str]], page: Page, total: int, path: str = PATH) -> str:
    """RFC 8288 Link header: the next and previous pages, with the request's other parameters."""
    if page.limit is None:  # every row from the offset: nothing after it to link
        return ""
    others = [(k, v) for k, v in query if k not in ("limit", "offset")]
    links = []
    if page.offset + page.limit < total:
        links.append((page.offset + page.limit, "next"))
    if page.offset > 0:
        links.append((max(0, page.offset - page.limit), "prev"))
    return ", ".join(
        f'<{path}?{urlencode([*others, ("limit", page.limit), ("offset", offset)])}>; rel="{rel}"'
        for offset, rel in links
    )


def download_name(
    query, revision: str, fmt: str, page: Page | None = None, total: int | None = None
) -> str:
    """`leaderboard-prefeval-mcq-zero_shot-3f2a9c1d7e0b.csv`: what the file holds (the reader's
    filters and sort too: `-generative-q-llama-by-total-desc`), at which results revision; a page
    of it says which (`-page-2-of-7-rows-101-200`, 1-based)."""
    given = dict(query)
    parts = ["leaderboard"] + [
        given[k]
        for k in ("suite", "task", "setting", "tier", "type", "size", "license")
        if given.get(k)
    ]
    if given.get("search", "").strip():
        parts.append("q-" + given["search"].strip()[:40])
    if given.get("sort"):
        parts.append("by-" + given["sort"].replace(":", "-"))
    parts.append(revision[:12])
    stem = "-".join(re.sub(r"[^A-Za-z0-9_.+-]", "_", p) for p in parts)
    return f"{stem}{rows_suffix(page, total)}.{fmt}"


def rows_suffix(page: Page | None, total: int | None = None) -> str:
    """What part of the table a paged download holds, for its file name (empty for the complete
    table): `-page-2-of-7-rows-101-200` for a page of `limit` rows at a multiple of it, else
    `-rows-51-150-of-700` (1-based; the last row is the table's last where the page runs past it)."""
    if page is None:
        return ""
    # the last row it holds: the table's last where the page runs past it (none: its first - 1)
    last = page.end if total is None else max(page.offset, min(page.end or total, total))
    rows = f"-rows-{page.offset + 1}-" + ("" if last is None else str(last))
    if total is None:
        return rows
    if page.limit and page.offset % page.limit == 0:
        return f"-page-{page.offset // page.limit + 1}-of-{max(1, -(-total // page.limit))}{rows}"
    return f"{rows}-of-{total}"


def leaderboard_response(
    body: Body,
    fmt: str,
    pinned: bool,
    if_none_match: str | None,
    query: Sequence[tuple[str, str]] = (),
    path: str = PATH,
    filename: str = "leaderboard",
) -> Response:
    """200 with the body, or 304 when If-None-Match matches; the same headers either way.
    `path`: the route the Link header pages (the board's, or the overview's)."""
    # A revision named by its full id never changes; the newest must be revalidated each time.
    headers = {
        "X-Results-Revision": body.revision,
        "ETag": body.etag,
        "Vary": "Accept-Encoding",
        "Cache-Control": "public, max-age=31536000, immutable" if pinned else "no-cache",
        "X-Total-Count": str(body.total),
    }
    if body.page is not None:
        links = page_links(list(query), body.page, body.total, path)
        if links:
            headers["Link"] = links
    if body.matches(if_none_match):
        return Response(status_code=304, headers=headers)
    if body.encoding:
        headers["Content-Encoding"] = body.encoding
    if body.page is None or fmt != "json":  # a download: CSV, parquet, or JSON with complete
        name = (
            download_name(query, body.revision, fmt, body.page, body.total)
            if filename == "leaderboard"
            else f"{filename}{rows_suffix(body.page, body.total)}.{fmt}"  # the caller's (the overview)
        )
        headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return PiecewiseBody(body, headers)


class LeaderboardFastPath:
    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self.services = services
        self._parsed: dict[
            bytes, FastRequest | None
        ] = {}  # query string -> what it asks for (None: the route's)
        # (query string, encoding) -> the body last sent for it and its headers
        self._headers: dict[tuple[bytes, str | None], tuple[Body, list[tuple[bytes, bytes]]]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == PATH:
            hit = self._cached(scope)
            if hit is not None:
                body, fmt, if_none_match, pairs = hit
                if if_none_match is None:
                    await self._send_200(scope, body, fmt, pairs, send)
                    return
                await leaderboard_response(body, fmt, False, if_none_match, pairs)(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)

    async def _send_200(
        self, scope: Scope, body: Body, fmt: str, pairs: list[tuple[str, str]], send: Send
    ) -> None:
        """The body with the headers leaderboard_response gives it, built once per query and body
        (they cost as much as the rest of the answer did)."""
        key = (scope.get("query_string", b""), body.encoding)
        found = self._headers.get(key)
        if found is None or found[0] is not body:
            found = (body, leaderboard_response(body, fmt, False, None, pairs).raw_headers)
            if len(self._headers) >= PARSED_QUERIES:
                self._headers.clear()
            self._headers[key] = found
        await send_pieces(send, 200, found[1], body.pieces)

    def _cached(self, scope: Scope) -> tuple[Body, str, str | None, list[tuple[str, str]]] | None:
        query = scope.get("query_string", b"")
        try:
            request = self._parsed[query]
        except KeyError:
            request = _fast_request(query)
            if len(self._parsed) >= PARSED_QUERIES:
                self._parsed.clear()  # query strings come from anyone: bounded
            self._parsed[query] = request
        if request is None:
            return None
        filters, fmt, page, pairs = request
        table = self.services.board.cached_head()
        if table is None:
            return None
        headers = {k: v for k, v in scope["headers"] if k in (b"accept-encoding", b"if-none-match")}
        decode = lambda name: headers[name].decode("latin-1") if name in headers else None  # noqa: E731
        body = table.cached_body(filters, fmt, accepts_gzip(decode(b"accept-encoding")), page)
        return (body, fmt, decode(b"if-none-match"), pairs) if body is not None else None


# what a query string asks for: its filters, format, page, and its parameters (the Link header's)
FastRequest = tuple[Filters, str, Page | None, list[tuple[str, str]]]


def _fast_request(query: bytes) -> FastRequest | None:
    """What a query string asks for, or None when the route must answer it."""
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    params = dict(pairs)
    if len(params) != len(pairs) or not params.keys() <= FAST_PARAMS:
        return None  # repeated or other parameters (revision=...): the route decides
    fmt = params.get("format", "json")
    if fmt not in EXPORT_FORMATS:
        return None
    limit, offset = (
        _count(params.get("limit"), 1, MAX_PAGE_ROWS),
        _count(params.get("offset"), 0, MAX_OFFSET),
    )
    complete = params.get("complete", "false")
    if limit is False or offset is False or complete not in ("true", "false"):
        return None  # the route explains what is wrong (or reads a spelling of true it accepts)
    filters = Filters(
        suite=params.get("suite") or None,
        task=params.get("task") or None,
        setting=params.get("setting") or None,
        tier=params.get("tier") or None,
    )
    try:
        check_filters(filters)
    except UnknownFilter:
        return None  # the route answers 422 naming the parameter and its allowed values
    return filters, fmt, page_of(fmt, limit, offset or 0, complete == "true"), pairs


def _count(text: str | None, low: int, high: int) -> int | None | bool:
    """A query parameter's whole number written plainly (None when absent; False: the route's case)."""
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return False
    value = int(text)
    return value if low <= value <= high else False
