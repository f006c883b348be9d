"""The Overview and Items tabs in Debian's chromium, at 1,400 and 390 px, against one live service:
models across suites with their intervals and ranks, a suite filter, downloads; a real PrefEval
upload's items with gold, answer and outcome, filtered to the wrong ones. Nothing wider than the
viewport but the tables' own scrolling boxes.

What does not depend on the width (filters, paging, the URL round trip) is driven once, at 1,400
px; at 390 px the same page, resized, or a shared link opened there checks the layout.

Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    api_get,
    choose,
    expect,
    launch_chromium,
    open_page,
    open_tab,
    screenshot,
)
from live_helpers import explicit_only, submit_ok, wait_finished  # noqa: E402
from unit.test_overview import default_record as record  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
WIDTHS = (1400, 390)


@pytest.fixture(scope="module")
def service(module_live_service):
    """Three models on two suites (published as a worker would) and one real PrefEval upload."""
    from evaluator.registry import get_task
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(module_live_service.data_dir / "results-dataset")
    split = get_task("prefeval", "mcq").load_split().sha256  # the upload's: ranked together
    alpha = {"model_type": "generative", "parameters": 7e9, "license": "apache-2.0"}
    beta = {"model_type": "generative", "parameters": 3e9, "license": "mit"}
    first = store.publish(record("bo-a1", "Alpha 7B", 0.81, split=split, facts=alpha))
    store.publish(
        record(
            "bo-a2",
            "Alpha 7B",
            0.66,
            suite="personafeedback",
            task="binary_choice",
            setting="persona",
            facts=alpha,
        )
    )
    store.publish(record("bo-b1", "Beta <i>3B</i>", 0.52, split=split, facts=beta))
    # another model under the same display name: someone's uploaded predictions file
    store.publish(
        record(
            "bo-a3",
            "Alpha 7B",
            0.45,
            split=split,
            protocol="uploaded predictions",
            predictions="f" * 64,
            link="https://huggingface.co/someone/alpha-preds",
        )
    )
    with module_live_service.http() as http:
        sid = submit_ok(http, explicit_only().body, model_name="Uploader explicit-only")
        wait_finished(http, sid)
    module_live_service.first_revision = first
    return module_live_service, sid


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser


@pytest.fixture(autouse=True)
def artifacts(monkeypatch):
    monkeypatch.setenv(
        "PERSONABOARD_BROWSER_ARTIFACTS",
        os.environ.get("PERSONABOARD_BROWSER_ARTIFACTS", str(ARTIFACTS)),
    )


def open_tab_anywhere(page, name: str) -> None:
    """A tab by name: at a phone's width Gradio moves the later tabs into its overflow menu (the
    "..." button), as a reader there must open it first."""
    overflowed = page.locator(".overflow-dropdown button", has_text=name)
    if overflowed.count():
        page.locator(".overflow-menu button").first.click()
        overflowed.first.click()
        expect(page.locator(f"#{name.lower()}-note")).to_be_visible()
        return
    open_tab(page, name)


def no_page_overflow(page) -> None:
    """Only the tables' own boxes scroll sideways: the page itself is no wider than the viewport."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"page is {width}px wide"


def cell_texts(page, table: str) -> list[list[str]]:
    return page.locator(f"#{table} table").first.evaluate(
        """t => [...t.querySelectorAll('tbody tr')].map(r =>
            [...r.children].map(c => c.innerText.trim()))"""
    )


def at_width(page, width: int) -> None:
    """Resize the page and let it draw two frames at that width (a resize is laid out before the
    next frame): the checks that follow read the new layout, not the old one."""
    page.set_viewport_size({"width": width, "height": 900})
    drawn = page.evaluate(
        """() => new Promise(done => requestAnimationFrame(() =>
            requestAnimationFrame(() => done(window.innerWidth))))"""
    )
    assert drawn == width, (drawn, width)


def overview_layout(page, tmp_path, width: int) -> None:
    """At this width: every tab on screen, the model column in view, no header or model name cut,
    nothing wider than the viewport but the table's own box."""
    at_width(page, width)
    # every tab is on screen at both widths (the bar wraps; a phone's "..." menu hid 7 of 9)
    tabs = page.get_by_role("tab")
    expect(tabs).to_have_count(9)
    for k in range(9):
        expect(tabs.nth(k)).to_be_in_viewport()
    table = page.locator("#overview-table table")
    expect(table).to_be_visible()
    model = table.locator("tbody th").first.bounding_box()
    assert model["x"] >= 0 and model["x"] + model["width"] <= width, (model, width)
    for th in table.locator("thead th").all() + table.locator("tbody th").all():
        clipped = th.evaluate("h => h.scrollWidth > h.clientWidth + 1")
        assert not clipped, (width, th.inner_text())  # headers and model names whole
    no_page_overflow(page)
    screenshot(page, tmp_path, f"overview-{width}")


def test_overview_tab_at_both_widths(service, browser, tmp_path):
    """The overview's content, read once; its layout at 1,400 and at 390 px (the same page
    resized: what differs by width is the layout, not the rows); the suite filter and its CSV."""
    service, _ = service
    with open_page(browser, service.base_url) as page:
        open_tab_anywhere(page, "Overview")
        table = page.locator("#overview-table table")
        expect(table).to_be_visible()
        expect(page.locator("#overview-note")).to_contain_text("do not average them")
        rows = {r[0]: r for r in cell_texts(page, "overview-table")}
        # inert text; two models named Alpha 7B, each cell saying which it is (as on the boards)
        assert {"Beta <i>3B</i>", "Uploader explicit-only"} <= set(rows)
        assert {"Alpha 7B\nmodel run", "Alpha 7B\npredictions file"} <= set(rows), set(rows)
        rows["Alpha 7B"] = rows["Alpha 7B\nmodel run"]
        headers = table.locator("thead th").all_inner_texts()
        assert any("PrefEval" in h and "Accuracy" in h for h in headers), headers
        alpha = rows["Alpha 7B"]
        assert any(c.startswith("81.0#1") for c in alpha), alpha  # value, rank badge, interval
        assert any("79.0–83.0" in c for c in alpha), alpha
        assert any(c.startswith("33.3#4") for c in rows["Uploader explicit-only"])
        for width in WIDTHS:  # the phone's last: the filter below is used there
            overview_layout(page, tmp_path, width)

        choose(page, "overview-suite", "PersonaFeedback")
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        expect(page.locator("#overview-downloads a", has_text="CSV")).to_have_attribute(
            "download", re.compile(r"^overview-personafeedback-[0-9a-f]{12}\.csv$")
        )
        link = page.locator("#overview-downloads a", has_text="CSV")
        response = api_get(page, link.get_attribute("href"))
        assert response.ok
        rows = list(csv.DictReader(io.StringIO(response.text())))
        assert [r["model_name"] for r in rows] == ["Alpha 7B"]
        assert float(rows[0]["personafeedback/binary_choice"]) == pytest.approx(0.66)
        no_page_overflow(page)


def overview_models(page) -> list[str]:
    return [r[0] for r in cell_texts(page, "overview-table")]


def control_value(page, elem_id: str):
    return page.locator(f"#{elem_id} input").first


def test_overview_filters_and_url_round_trip(service, browser, tmp_path):
    """Type, license, size and name filters narrow the overview; the filters, the header sort and
    the tab itself go into the URL; the link opened elsewhere (a fresh browser context, on a
    phone: the 390 px layout of the same view) shows the same overview, and the Leaderboard's own
    view is kept apart from it. Filters are chosen at 1,400 px only: the dropdowns' use at 390 px
    is test_overview_tab_at_both_widths's."""
    service, _ = service
    wanted = """() => { const p = new URLSearchParams(location.search);
        return p.get('tab') === 'overview' && p.get('suite') === 'prefeval'
            && p.get('type') === 'generative' && p.get('license') === 'apache-2.0'
            && p.get('q') === 'alpha' && p.get('sort') === 'prefeval/mcq:asc'; }"""

    def same_view(page):
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        assert overview_models(page) == ["Alpha 7B"]  # the run; the upload of its name is no type
        expect(control_value(page, "overview-type")).to_have_value("generative")
        expect(control_value(page, "overview-license")).to_have_value("apache-2.0")
        expect(control_value(page, "overview-suite")).to_have_value("PrefEval")
        expect(
            page.locator("#overview-search textarea, #overview-search input").first
        ).to_have_value("alpha")
        expect(page.locator("#overview-table th[data-col='prefeval/mcq']")).to_have_attribute(
            "aria-sort", "ascending"
        )
        no_page_overflow(page)

    with open_page(browser, service.base_url) as page:
        open_tab_anywhere(page, "Overview")
        page.wait_for_function(
            "() => new URLSearchParams(location.search).get('tab') === 'overview'"
        )
        choose(page, "overview-type", "reward")
        expect(page.locator("#overview-empty")).to_contain_text("No model matches these filters")
        choose(page, "overview-type", "generative")
        expect(page.locator("#overview-table tbody tr")).to_have_count(2)  # Alpha's run, Beta
        choose(page, "overview-size", "1B-10B")
        expect(page.locator("#overview-table tbody tr")).to_have_count(2)
        choose(page, "overview-size", "(all)")
        choose(page, "overview-license", "mit")
        # waits for the redraw (Alpha's run is apache-2.0): an at-once read raced it at 390 px
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        assert overview_models(page) == ["Beta <i>3B</i>"]
        choose(page, "overview-license", "apache-2.0")
        choose(page, "overview-suite", "PrefEval")
        # typed key by key, as a person does: on a loaded machine Gradio 6.31's textbox dropped the
        # input event of a one-shot fill() (its value shown, no redraw ever sent); later keys redraw
        search = page.locator("#overview-search textarea, #overview-search input").first
        search.press_sequentially("alpha", delay=100)
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        # the search's redraw is done when its view is in the URL (the row count may be 1 before)
        page.wait_for_function("() => new URLSearchParams(location.search).get('q') === 'alpha'")
        header = page.locator("#overview-table th[data-col='prefeval/mcq']")
        header.click()  # descending
        header.click()  # ascending
        page.wait_for_function(wanted)
        shared = page.url
        screenshot(page, tmp_path, "overview-url-1400")

        # the Leaderboard's view is its own: switching there and back keeps both
        open_tab_anywhere(page, "Leaderboard")
        page.wait_for_function("() => !new URLSearchParams(location.search).has('tab')")
        assert "type=generative" not in page.url and "q=alpha" not in page.url, page.url
        open_tab_anywhere(page, "Overview")
        page.wait_for_function(wanted)

    # someone else opens the link, on a phone: a fresh context (no state but the URL), loaded at
    # 390 px from the start. (A reload of the same page showed nothing this does not.)
    context = browser.new_context(viewport={"width": 390, "height": 900}, base_url=service.base_url)
    context.set_default_timeout(DEADLINE_MS)
    try:
        page = context.new_page()
        page.goto(shared.split(service.base_url, 1)[1])
        expect(page.get_by_role("tab", name="Overview")).to_have_attribute("aria-selected", "true")
        same_view(page)
        page.wait_for_function(wanted)  # after its load's redraw the URL holds the same view
        screenshot(page, tmp_path, "overview-url-shared-390")
        # an older version: the first publish alone, and said so
        page.goto(f"/?tab=overview&revision={service.first_revision[:12]}")
        expect(page.locator("#overview-version-note")).to_contain_text("not the newest")
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        assert overview_models(page) == ["Alpha 7B"]
        # a link's license no model has: said so, with those there are
        page.goto("/?tab=overview&license=no-such")
        expect(page.locator("#overview-empty")).to_contain_text("apache-2.0, mit")
    finally:
        context.close()


def within_viewport(page, locator) -> None:
    """Each cell of `locator` lies inside the viewport's width (not off to the right, not under
    another column's scroll)."""
    width = page.viewport_size["width"]
    for box in locator.evaluate_all(
        "cells => cells.map(c => { const r = c.getBoundingClientRect(); return [r.left, r.right]; })"
    ):
        assert box[0] >= 0 and box[1] <= width + 1, (box, width)


def items_url(page, **wanted) -> None:
    """Wait until the URL holds the Items tab's view `wanted` (None: the parameter is absent)."""
    page.wait_for_function(
        """wanted => { const p = new URLSearchParams(location.search);
            return p.get('tab') === 'items'
                && Object.entries(wanted).every(([k, v]) => p.get(k) === v); }""",
        arg=wanted,
    )


def test_item_explorer_at_both_widths(service, browser, tmp_path):
    """From the upload's row on the board, its link opens the Items tab on that result (through
    the URL); next and previous page through it with "page k of n", the page in the URL; the
    wrong answers only. The link, and every item's Gold, Answer and Outcome, are on screen at
    1,400 and at 390 px (the same page resized: the paging and filters do not depend on it)."""
    service, upload_id = service
    with open_page(browser, service.base_url) as page:
        link = page.locator(f"#leaderboard-table tr[data-id='{upload_id}'] a.pb-items-link")
        expect(link).to_be_visible()
        for width in reversed(WIDTHS):  # back at 1,400 px for what follows
            at_width(page, width)
            expect(link).to_be_visible()
            within_viewport(page, link)
            screenshot(page, tmp_path, f"board-items-link-{width}", full_page=False)
        link.click()
        items_url(page, submission=upload_id)
        expect(control_value(page, "items-result")).to_have_value(
            f"Uploader explicit-only · prefeval/mcq · zero_shot · {upload_id}"
        )
        count = page.locator("#items-table .pb-items-count")
        label = page.locator("#items-page-label")
        back, forward = page.locator("#items-prev"), page.locator("#items-next")
        expect(count).to_have_text("Items 1–50 of 3000")
        expect(label).to_have_text("page 1 of 60")
        expect(back).to_be_disabled()
        first = cell_texts(page, "items-table")[0]
        # item (with its tiers), input, gold, answer, outcome: right on the explicit form
        assert "form: explicit" in first[0] and first[2] == first[3] and first[4] == "right", first
        within_viewport(page, page.locator("#items-table td:is(.pb-gold,.pb-answer,.pb-outcome)"))
        no_page_overflow(page)
        screenshot(page, tmp_path, "items-1400")

        forward.click()
        expect(count).to_have_text("Items 51–100 of 3000")
        expect(label).to_have_text("page 2 of 60")
        items_url(page, submission=upload_id, pg="2")
        expect(back).to_be_enabled()
        back.click()
        expect(count).to_have_text("Items 1–50 of 3000")
        items_url(page, submission=upload_id, pg=None)
        expect(back).to_be_disabled()

        page.locator("#items-outcome").get_by_label("wrong").check()
        expect(count).to_have_text("Items 1–50 of 2000")
        expect(label).to_have_text("page 1 of 40")
        rows = cell_texts(page, "items-table")
        assert all(r[4] == "wrong" and r[2] != r[3] and "form: explicit" not in r[0] for r in rows)
        for width in WIDTHS:
            at_width(page, width)
            cells = page.locator("#items-table td:is(.pb-gold,.pb-answer,.pb-outcome)")
            expect(cells).to_have_count(3 * len(rows))
            within_viewport(page, cells)
            no_page_overflow(page)
            screenshot(page, tmp_path, f"items-wrong-{width}")
        link = page.locator("#items-downloads a", has_text="CSV")
        response = api_get(page, link.get_attribute("href"))
        assert response.ok
        assert len(list(csv.DictReader(io.StringIO(response.text())))) == 2000
