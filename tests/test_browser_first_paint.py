"""The board in the page's first HTML (space/first_paint.py): a reader sees the rows of the URL's
view before Gradio has booted, and Gradio's own board then takes its place with the same rows.

Gradio is held back for real: the page's JavaScript (/assets/*.js) and every /gradio_api/ request
are parked (page.route) until the test lets them go, so what is on screen meanwhile comes from the
initial HTML alone. The rows expected are the API's for the same view (GET /api/v1/leaderboard,
its own filters and sort), never the copy's own output. A Space-mode service checks the same on
the page a Space serves (sign-in button, session middleware).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from board_fixture import SUITE, TASK, board_records  # noqa: E402
from browser_helpers import CHROMIUM, DEADLINE_MS, api_get, expect, launch_chromium  # noqa: E402
from live_helpers import wait_until  # noqa: E402

from backend.processes import free_port  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
COPY_ROWS = "#pb-first-paint tr[role=row][data-id]"
GRADIO_ROWS = "#leaderboard-table tr[role=row][data-id]"
# A shared link naming a tier to rank by, a search, the columns, a header sort and a highlighted
# row: "l" keeps alpha, delta and tiny-partial; sorted by name, descending, delta comes before
# alpha (ranked: alpha first), the partial run stays in its own section.
LINK = {
    "suite": SUITE,
    "task": TASK,
    "setting": "zero_shot",
    "tier": "form/explicit",
    "q": "l",
    "columns": "ci,reference,tiers,model_type",
    "sort": "model_name:desc",
    "highlight": "fx-alpha",
}
LINK_API = {
    **{k: v for k, v in LINK.items() if k not in ("q", "highlight")},
    "search": LINK["q"],
}
DEFAULT_API = {"suite": SUITE, "task": TASK, "setting": "zero_shot"}  # the fixture's first screen


def publish_board(svc):
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(svc.data_dir / "results-dataset")
    for record in board_records():
        store.publish(record)
    return svc


@pytest.fixture(scope="module")
def service(module_live_service):
    return publish_board(module_live_service)


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser


class HeldGradio:
    """Parks Gradio's JavaScript and API requests until release(): the page is its HTML alone."""

    PATTERN = re.compile(r"/assets/[^?]*\.js(\?.*)?$|/gradio_api/")

    def __init__(self, page):
        self.held: list = []
        self.released = False
        page.route(self.PATTERN, self._hold)

    def _hold(self, route) -> None:
        if self.released:
            route.continue_()
        else:
            self.held.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.held:
            route.continue_()


def api_ids(page, params: dict) -> list[str]:
    answer = api_get(page, "/api/v1/leaderboard?" + urlencode({**params, "limit": 1000}))
    assert answer.ok, answer.text()
    return [row["submission_id"] for row in answer.json()]


def ids(page, selector: str) -> list[str]:
    return page.locator(selector).evaluate_all("rows => rows.map(r => r.dataset.id)")


def gradio_took_over(page, expected: list[str]) -> None:
    """Gradio's table shows exactly `expected` (in order), and the copy is gone: one table."""
    page.wait_for_function(
        """([selector, want]) => {
            const got = [...document.querySelectorAll(selector)].map(r => r.dataset.id);
            return JSON.stringify(got) === JSON.stringify(want)
                && !document.getElementById('pb-first-paint');
        }""",
        arg=[GRADIO_ROWS, expected],
        timeout=DEADLINE_MS * 2,
    )
    expect(page.locator("table.pb-board")).to_have_count(1)
    expect(page.locator("#pb-first-paint")).to_have_count(0)


def copy_ready(svc, path: str) -> None:
    """The service has drawn the copy of `path`'s view at its current head: a page asked for
    before the render is done goes without it (space/first_paint.py BUDGET_S, a busy machine),
    and the render, once done, is kept for the next one."""
    with svc.http() as http:
        wait_until(
            lambda: 'id="pb-first-paint"' in http.get(path).text,
            DEADLINE_MS / 1000,
            f"the copy of the board in the page {path}",
            interval=0.5,
        )


def open_held(browser, svc, path: str, width: int):
    copy_ready(svc, path)
    base_url = svc.base_url
    context = browser.new_context(
        viewport={"width": width, "height": 844 if width < 600 else 1000}, base_url=base_url
    )
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    gradio = HeldGradio(page)
    page.goto(path, wait_until="commit")  # the load event waits for the parked module script
    return context, page, gradio


def test_a_links_exact_view_is_on_screen_from_the_html_then_gradio_shows_the_same(browser, service):
    context, page, gradio = open_held(browser, service, "/?" + urlencode(LINK), 1400)
    try:
        expected = api_ids(page, LINK_API)
        fixture = [i for i in expected if i.startswith("fx-")]
        assert fixture == ["fx-delta", "fx-alpha", "fx-partial"], expected  # sorted, not ranked
        rows = page.locator(COPY_ROWS)
        expect(rows.first).to_be_visible()
        assert ids(page, COPY_ROWS) == expected
        box = rows.first.bounding_box()
        assert box and 0 <= box["y"] < 1000, box  # on the first screen
        # only the initial HTML so far: Gradio drew nothing
        expect(page.locator("gradio-app #leaderboard-table")).to_have_count(0)
        assert gradio.held, "Gradio's requests were not held"
        copy = page.locator("#pb-first-paint")
        expect(copy.locator("th[data-col='model_name']")).to_have_attribute(
            "aria-sort", "descending"
        )
        expect(copy.locator("th[data-col='form/explicit']")).to_be_visible()  # ranked by the tier
        expect(copy.locator("th[data-col='model_type']")).to_be_visible()  # a chosen column
        expect(copy.locator("th[data-col='size']")).to_have_count(0)  # not chosen
        expect(copy.locator("tr[data-id='fx-alpha']")).to_have_attribute("aria-current", "true")
        expect(copy.locator(".pb-fp-head")).to_contain_text("PrefEval")
        expect(copy.locator("a[href='/model/alpha']")).to_be_visible()  # the row's links work
        gradio.release()
        gradio_took_over(page, expected)
        expect(page.locator("#leaderboard-table tr[data-id='fx-alpha']")).to_have_attribute(
            "aria-current", "true"
        )
        view = dict(re.findall(r"([^?&=]+)=([^&]*)", page.evaluate("location.search")))
        assert view.get("q") == "l" and view.get("sort") == "model_name%3Adesc", view
    finally:
        context.close()


def test_the_default_view_at_390_px_from_the_html_then_gradio_shows_the_same(browser, service):
    context, page, gradio = open_held(browser, service, "/", 390)
    try:
        expected = api_ids(page, DEFAULT_API)
        assert [i for i in expected if i.startswith("fx-")] == [
            "fx-alpha",
            "fx-beta",
            "fx-gamma",
            "fx-delta",
            "fx-partial",
        ], expected
        rows = page.locator(COPY_ROWS)
        expect(rows.first).to_be_visible()
        assert ids(page, COPY_ROWS) == expected
        box = rows.first.bounding_box()
        assert box and 0 <= box["y"] < 844 and box["x"] >= 0, box
        # the page itself does not scroll sideways (the table scrolls in its own box)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        expect(page.locator("gradio-app #leaderboard-table")).to_have_count(0)
        gradio.release()
        gradio_took_over(page, expected)
    finally:
        context.close()


def test_the_copy_is_the_apps_view_or_nothing(service):
    """Another tab's link gets no copy; a link naming what the board lacks gets the default view
    with the note the app shows; what a link carries is escaped; no id is on the page twice."""
    copy_ready(service, "/")
    copy_ready(service, "/?suite=nosuch&tier=bad")
    with service.http() as http:
        assert 'id="pb-first-paint"' not in http.get("/", params={"tab": "overview"}).text
        assert 'id="pb-first-paint"' not in http.get("/", params={"status": "abc"}).text
        default = copy_of(http.get("/").text)
        odd = copy_of(http.get("/", params={"suite": "nosuch", "tier": "bad"}).text)
        assert row_ids(odd) == row_ids(default) and row_ids(default), (odd, default)
        assert 'data-pb-id="link-notice"' in odd and "suite=nosuch" in odd
        hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
        hostile_path = "/?" + urlencode({"q": hostile, "highlight": hostile, "type": hostile})
        copy_ready(service, hostile_path)
        page = http.get(hostile_path).text
        copy = copy_of(page)
        assert "<script>alert" not in copy and "<img src=x" not in copy, copy
        assert len(re.findall(r'\sid="leaderboard-table"', page)) <= 1
        for element_id in re.findall(r'\sid="([^"]+)"', copy):
            assert element_id == "pb-first-paint", element_id  # the copy's own ids are renamed


def copy_of(page: str) -> str:
    start = page.find('<div id="pb-first-paint"')
    assert start >= 0, "the page has no copy of the board"
    return page[start : page.find("</script>", start)]


def row_ids(copy: str) -> list[str]:
    return re.findall(r'<tr role="row" class="[^"]*" data-id="([^"]+)"', copy)


def test_on_a_space_the_page_has_the_copy_and_gradio_takes_over(start_service, tmp_path, browser):
    env = {  # what a Space with `hf_oauth: true` injects (no sign-in happens here)
        "SYSTEM": "spaces",
        "SPACE_ID": "personaboard/test-space",
        "OAUTH_CLIENT_ID": "test-client",
        "OAUTH_CLIENT_SECRET": "first-paint-secret",
        "OAUTH_SCOPES": "openid profile",
        "OPENID_PROVIDER_URL": f"http://127.0.0.1:{free_port()}",  # never called
    }
    svc = publish_board(start_service(tmp_path / "space", 1, env))
    copy_ready(svc, "/")
    with svc.http() as http:
        page_html = http.get("/").text
        assert "window.gradio_config" in page_html and row_ids(copy_of(page_html))
    context, page, gradio = open_held(browser, svc, "/", 1400)
    try:
        expected = api_ids(page, DEFAULT_API)
        expect(page.locator(COPY_ROWS).first).to_be_visible()
        assert ids(page, COPY_ROWS) == expected
        gradio.release()
        gradio_took_over(page, expected)
        expect(page.get_by_role("tab", name="Leaderboard")).to_be_visible()
    finally:
        context.close()
