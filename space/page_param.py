"""Gradio's page route reads `?page=NAME` (a page of a multipage app) and answers 500 for a name it
does not have (a KeyError inside Gradio). This app has one page, and its own links say `pg` for the
Items tab's page, but a link edited by hand or cut from another site may carry `page`: a name the
app has no page of is a 404 saying so, with a link to the board, never a 500."""

from __future__ import annotations

import html
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse

PAGE_PATHS = ("/", "")


class UnknownPageParam:
    """ASGI middleware in front of the Gradio mount's page route."""

    def __init__(self, app, blocks):
        self.app, self.blocks = app, blocks

    def _pages(self) -> set[str]:
        config = getattr(self.blocks, "config", None) or {}
        return set(config.get("page") or {""})

    async def __call__(self, scope, receive, send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and scope["path"] in PAGE_PATHS
            and b"page=" in scope.get("query_string", b"")
        ):
            query = parse_qs(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            unknown = [name for name in query.get("page", []) if name not in self._pages()]
            if unknown:
                name = html.escape(unknown[0][:100])
                body = (
                    "<!doctype html><meta charset=utf-8><title>No such page</title>"
                    f"<p>This board has no page named <code>{name}</code> (query parameter "
                    "<code>page</code>; the Items tab's page is <code>pg</code>). "
                    '<a href="/">Open the leaderboard</a>.</p>'
                )
                await HTMLResponse(body, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)
