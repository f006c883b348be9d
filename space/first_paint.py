"""The board in the page's first HTML: rows on screen at parse time, before Gradio has booted.

Gradio's page is an empty `<gradio-app>` that its JavaScript fills: the tab bar ~2.6 s after
navigation, and the board only after the page's on_load queue calls (link → controls → board),
~3.4 s. So the web app's "/" (the Leaderboard tab's view, a shared link's included)
gets, at the top of its `<body>`, the same board HTML the tab then draws: `link_controls` and
`board_view` of space/tabs/leaderboard.py, the link's note too (an
invalid link shows the default view and says so, as the app does; a tab other than the
Leaderboard gets nothing). A header sort in the link (`sort=`) is applied in the browser by the
same comparator as the table's header clicks, so the rows stand in the order Gradio will show.

Once Gradio has mounted, the copy moves to just above `#leaderboard-table` (where the board will
appear), and it is removed as soon as that table holds its board (a MutationObserver; a CSS rule
hides it too if the script could not run). The copy is inert HTML: the board's own renderer
escapes everything from a submitter; its element ids are renamed (`data-pb-id`) so no id is on
the page twice; nothing in it is wired to Gradio (Gradio's own load draws its board, as before).

Cost: a copy is kept per results head and view (the default view, most loads, is drawn once per
publish, at start too: `warm`); a view not drawn yet takes the read path's ranked board
(`ranked_view`, kept per head) and its rendering. The page's head is sent while it renders, and
its body waits for the copy at most BUDGET_S: a store slow to answer costs the page at most that
(it then goes without the copy, as before). A board over MAX_BYTES is left to Gradio alone.

`PERSONABOARD_FIRST_PAINT=0` turns it off (the page as it was: bench/bench_first_paint.py's
"before").
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from starlette.datastructures import QueryParams

from space.board_view import SORT_BY_JS
from space.choices import ALL, suite_choices, task_choices, task_setting_choices, tier_choices
from space.url_state import FIRST_TAB, url_tab

if TYPE_CHECKING:
    from submissions.service import Services

log = logging.getLogger("personaboard")

ELEMENT_ID = "pb-first-paint"
ENV = "PERSONABOARD_FIRST_PAINT"
PATHS = ("/",)  # where Gradio serves its page (mounted at "" of the app; the same on a Space)
# The page's body waits at most this for its copy (a view not yet drawn: ~0.1-0.3 s on a quiet
# machine; one drawn before at this head: a dict lookup); the head is on its way meanwhile.
BUDGET_S = 1.5
MAX_BYTES = 1 << 20  # a board larger than this is left to Gradio alone (the page stays light)
# The view's parameters (space/tabs/leaderboard.py link_controls): a copy is kept per results head
# and these; `sort` is applied in the browser, and any other parameter changes nothing.
VIEW_PARAMS: tuple[str, ...] = ("tab", "status", "page", "suite", "task", "setting", "tier")
VIEW_PARAMS += ("type", "size", "license", "q", "columns", "highlight", "revision")
KEPT = 64  # copies kept (the default view is most of the loads)
# A light card whatever the OS scheme (Gradio's theme variables do not exist before it boots, and
# the board's colours are a light theme's): readable on the dark page too. In Gradio's layout the
# heading goes (Gradio's own title is above it by then).
CSS = (
    f"#{ELEMENT_ID}{{color-scheme:light;color:#1f2937;background:#fff;"
    "--background-fill-primary:#fff;--background-fill-secondary:#f6f6f6;"
    "--border-color-primary:#e5e7eb;--link-text-color:#4338ca;"
    "font-family:ui-sans-serif,system-ui,sans-serif;box-sizing:border-box;width:100%;"
    "max-width:1280px;margin:0 auto;padding:12px 16px}"
    f"#{ELEMENT_ID}.pb-fp-in-place{{max-width:none;padding:0}}"
    f"#{ELEMENT_ID}.pb-fp-in-place .pb-fp-head{{display:none}}"
    f"#{ELEMENT_ID} .pb-fp-head{{margin:0 0 8px;font-size:15px}}"
    f"#{ELEMENT_ID} .pb-fp-head b{{font-size:20px;margin-right:6px}}"
    f"#{ELEMENT_ID} .pb-fp-wait{{color:#6b7280;font-size:13px}}"
    # a link's sort is applied by the script below: no frame shows its rows in another order
    f"#{ELEMENT_ID}.pb-fp-sorting tbody{{visibility:hidden}}"
    "@media (max-width:600px){"
    f"#{ELEMENT_ID}{{padding:8px}}}}"
    # the fallback of the script below: hidden once Gradio's table holds the board
    f"body:has(#leaderboard-table :is(.pb-board-wrap,.pb-empty)) #{ELEMENT_ID}{{display:none}}"
)
# Sorts the copy as the link says (the comparator of space/board_view.py sort_js), then hands over
# to Gradio: moved above #leaderboard-table once that exists, removed once it holds the board.
SCRIPT = (
    """
(() => {
"""
    + SORT_BY_JS
    + """
  const copy = document.getElementById(%(id)s);
  if (!copy) return;
  const sort = () => {
    const table = copy.querySelector('table.pb-board');
    const wanted = new URLSearchParams(location.search).get('sort');
    const th = wanted && table && [...table.querySelectorAll('thead th[data-col]')]
      .find(h => h.dataset.col === wanted.split(':')[0]);
    if (!th) return;
    sortBy(th, wanted.split(':')[1] !== 'asc');
  };
  try { sort(); } finally { copy.classList.remove('pb-fp-sorting'); }
  const handOver = () => {
    if (document.querySelector('#leaderboard-table :is(.pb-board-wrap,.pb-empty)')) {
      observer.disconnect();
      copy.remove();
      return;
    }
    const place = document.getElementById('leaderboard-table');
    if (place && place.parentNode && place.previousElementSibling !== copy) {
      copy.classList.add('pb-fp-in-place');
      place.before(copy);
    }
  };
  const observer = new MutationObserver(handOver);
  observer.observe(document.documentElement, {childList: true, subtree: true});
})();
"""
) % {"id": json.dumps(ELEMENT_ID)}


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def _label(choices: list[Any], value: str | None) -> str:
    for choice in choices:
        label, key = choice if isinstance(choice, tuple) else (choice, choice)
        if key == value:
            return str(label)
    return str(value or "")


def _heading(c) -> str:
    """What the copy shows: the title, the view's suite, task, setting and tier, and that the
    rest of the page is on its way."""
    from space.tabs.leaderboard import ALL_SETTINGS, NO_TIER

    parts = [_label(suite_choices(), c.suite), _label(task_choices(c.suite), c.task)]
    parts.append(
        ALL_SETTINGS
        if c.setting in (None, "", ALL)
        else _label(task_setting_choices(c.suite, c.task), c.setting)
    )
    if c.tier not in (None, "", NO_TIER):
        parts.append("ranked by " + _label(tier_choices(c.suite, c.task), c.tier))
    return (
        f'<p class="pb-fp-head"><b>PersonaBoard</b> {html.escape(" · ".join(parts))} '
        '<span class="pb-fp-wait">(filters, plots and downloads are loading…)</span></p>'
    )


_copies: OrderedDict[tuple, str] = OrderedDict()
_lock = threading.Lock()


def first_paint(services: Services, params: dict[str, str]) -> str:
    """The copy of the board for a page opened with `params` (the URL's query), or "" where the
    page opens another tab; built once per results head and view (every publish is a new head)."""
    if url_tab(params) != FIRST_TAB or params.get("page"):
        return ""
    head = services.results_head()
    view = tuple(params.get(name) for name in VIEW_PARAMS)
    key = (id(services), head, view, bool(params.get("sort")))
    with _lock:
        found = _copies.get(key) if head else None
        if found is not None:
            _copies.move_to_end(key)
    if found is None:
        found = render(services, params)
        if len(found) > MAX_BYTES:
            log.info(
                "first paint: the board's copy is %d bytes; the page goes without it", len(found)
            )
            found = ""
        if head:
            with _lock:
                _copies[key] = found
                while len(_copies) > KEPT:
                    _copies.popitem(last=False)
    return found


def render(services: Services, params: dict[str, str]) -> str:
    """The copy: the same functions as the tab's load (space/tabs/leaderboard.py), the same rows."""
    from space.tabs.leaderboard import board_view, link_controls, link_note

    controls = link_controls(services, params)
    note = link_note(services, params, controls)
    table = board_view(services, controls).table
    # the board's elements keep their ids in Gradio's copy only (escaped text holds no `"`)
    body = (note + table).replace(' id="', ' data-pb-id="')
    sorting = " pb-fp-sorting" if params.get("sort") else ""
    return (
        f'<div id="{ELEMENT_ID}" class="pb-first-paint{sorting}" aria-busy="true">'
        f"<style>{CSS}</style><noscript><style>#{ELEMENT_ID} tbody{{visibility:visible!important}}"
        f"</style></noscript>{_heading(controls)}{body}</div><script>{SCRIPT}</script>"
    )


def warm(services: Services) -> None:
    """Draws the default view's copy in a thread (at start: the first visitor's page need not
    wait for the store's first reads)."""

    def run() -> None:
        try:
            first_paint(services, {})
        except Exception:
            log.exception("first paint: warming the default view failed")

    if enabled():
        threading.Thread(target=run, name="first-paint-warm", daemon=True).start()


def body_start(page: bytes) -> int:
    """Where the copy goes: just after the page's `<body ...>` tag; -1 for a page without one."""
    start = page.find(b"<body")
    end = page.find(b">", start) if start >= 0 else -1
    return end + 1 if end >= 0 else -1


class FirstPaint:
    """ASGI middleware: Gradio's page ("/", GET, a 200 HTML answer) with the board's copy in it.

    The copy is rendered in a thread while Gradio builds its page; the page's head (~460 KB of
    config, its CSS and JS links) is sent as soon as Gradio has it, so the browser fetches the
    assets meanwhile, and the body follows with the copy (or without it, past the budget)."""

    def __init__(self, app, services: Services, budget_s: float = BUDGET_S) -> None:
        self.app = app
        self.services = services
        self.budget_s = budget_s
        self.on = enabled()

    async def __call__(self, scope, receive, send) -> None:
        if not (
            self.on
            and scope["type"] == "http"
            and scope["method"] == "GET"
            and scope["path"] in PATHS
        ):
            await self.app(scope, receive, send)
            return
        # the query as Gradio's request.query_params reads it (a repeated name: its last value)
        params = dict(QueryParams(scope.get("query_string", b"")))
        if url_tab(params) != FIRST_TAB or params.get("page"):
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(None, first_paint, self.services, params)
        job.add_done_callback(lambda done: done.cancelled() or done.exception())  # seen: no warning
        deadline = loop.time() + self.budget_s
        await self.app(scope, receive, _Injecting(send, job, deadline))


class _Injecting:
    """A `send` that holds a 200 text/html answer's body, sends it up to its `<body>` at once,
    then the copy (awaited until `deadline`) and the rest; any other answer passes as it is."""

    def __init__(self, send, job: asyncio.Future, deadline: float) -> None:
        self.send = send
        self.job = job
        self.deadline = deadline
        self.start: dict | None = None
        self.body: list[bytes] = []

    async def __call__(self, message) -> None:
        if message["type"] == "http.response.start":
            headers = {k.lower(): v for k, v in message.get("headers", [])}
            if (
                message["status"] == 200
                and headers.get(b"content-type", b"").startswith(b"text/html")
                and b"content-encoding" not in headers
            ):
                self.start = message
                return
        if message["type"] != "http.response.body" or self.start is None:
            await self.send(message)
            return
        self.body.append(message.get("body", b""))
        if not message.get("more_body"):
            await self._send_page(b"".join(self.body))

    async def _send_page(self, page: bytes) -> None:
        assert self.start is not None
        cut = body_start(page)
        if cut < 0:
            await self.send(self.start)
            await self.send({"type": "http.response.body", "body": page})
            return
        # its length is known only with the copy: sent chunked
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": page[:cut], "more_body": True})
        copy = await self._copy()
        await self.send({"type": "http.response.body", "body": copy.encode() + page[cut:]})

    async def _copy(self) -> str:
        """The copy, or "" when it failed or is not ready by the deadline (the render goes on in
        its thread, and keeps its copy for the next page)."""
        wait = max(0.0, self.deadline - asyncio.get_running_loop().time())
        try:
            return await asyncio.wait_for(asyncio.shield(self.job), wait)
        except asyncio.TimeoutError:
            log.info("first paint: the board was not ready in time; the page goes without it")
        except Exception:
            log.exception("first paint failed; the page goes without it")
        return ""
