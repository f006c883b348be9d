"""The Overview and Items tabs in Debian's chromium, at 1,400 and 390 px, against one live service:
models across suites with their intervals and ranks, a suite filter, downloads; a real PrefEval
upload's items with gold, answer and outcome, filtered to the wrong ones. Nothing wider than the
viewport but the tables' own scrolling boxes.

Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
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
    store.publish(record("bo-a1", "Alpha 7B", 0.81, split=split))
    store.publish(
        record(
            "bo-a2",
            "Alpha 7B",
            0.66,
            suite="personafeedback",
            task="binary_choice",
            setting="persona",
        )
    )
    store.publish(record("bo-b1", "Beta <i>3B</i>", 0.52, split=split))
    with module_live_service.http() as http:
        sid = submit_ok(http, explicit_only().body, model_name="Uploader explicit-only")
        wait_finished(http, sid)
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


@pytest.mark.parametrize("width", WIDTHS)
def test_overview_tab_at_both_widths(service, browser, tmp_path, width):
    service, _ = service
    with open_page(browser, service.base_url) as page:
        page.set_viewport_size({"width": width, "height": 900})
        open_tab_anywhere(page, "Overview")
        table = page.locator("#overview-table table")
        expect(table).to_be_visible()
        expect(page.locator("#overview-note")).to_contain_text("do not average them")
        rows = {r[0]: r for r in cell_texts(page, "overview-table")}
        assert {"Alpha 7B", "Beta <i>3B</i>", "Uploader explicit-only"} <= set(rows)  # inert text
        headers = table.locator("thead th").all_inner_texts()
        assert any("PrefEval" in h and "Accuracy" in h for h in headers), headers
        alpha = rows["Alpha 7B"]
        assert any(c.startswith("81.0#1") for c in alpha), alpha  # value, rank badge, interval
        assert any("79.0–83.0" in c for c in alpha), alpha
        assert any(c.startswith("33.3#3") for c in rows["Uploader explicit-only"])
        # the model column stays in view and its header text is not cut
        model = table.locator("tbody th").first.bounding_box()
        assert model["x"] >= 0 and model["x"] + model["width"] <= width
        for th in table.locator("thead th").all():
            clipped = th.evaluate("h => h.scrollWidth > h.clientWidth + 1")
            assert not clipped, th.inner_text()
        no_page_overflow(page)
        screenshot(page, tmp_path, f"overview-{width}")

        choose(page, "overview-suite", "PersonaFeedback")
        expect(page.locator("#overview-table tbody tr")).to_have_count(1)
        link = page.locator("#overview-downloads a", has_text="CSV")
        response = page.request.get(link.get_attribute("href"))
        assert response.ok
        rows = list(csv.DictReader(io.StringIO(response.text())))
        assert [r["model_name"] for r in rows] == ["Alpha 7B"]
        assert float(rows[0]["personafeedback/binary_choice"]) == pytest.approx(0.66)


@pytest.mark.parametrize("width", WIDTHS)
def test_item_explorer_at_both_widths(service, browser, tmp_path, width):
    service, upload_id = service
    with open_page(browser, service.base_url) as page:
        page.set_viewport_size({"width": width, "height": 900})
        open_tab_anywhere(page, "Items")
        label = f"Uploader explicit-only · prefeval/mcq · zero_shot · {upload_id}"
        choose(page, "items-result", label)
        count = page.locator("#items-table .pb-items-count")
        expect(count).to_have_text("Items 1–50 of 3000")
        first = cell_texts(page, "items-table")[0]
        # item (with its tiers), input, gold, answer, outcome: right on the explicit form
        assert "form: explicit" in first[0] and first[2] == first[3] and first[4] == "right", first
        page.locator("#items-outcome").get_by_label("wrong").check()
        expect(count).to_have_text("Items 1–50 of 2000")
        rows = cell_texts(page, "items-table")
        assert all(r[4] == "wrong" and r[2] != r[3] and "form: explicit" not in r[0] for r in rows)
        no_page_overflow(page)
        screenshot(page, tmp_path, f"items-{width}")
        link = page.locator("#items-downloads a", has_text="CSV")
        response = page.request.get(link.get_attribute("href"))
        assert response.ok
        assert len(list(csv.DictReader(io.StringIO(response.text())))) == 2000
