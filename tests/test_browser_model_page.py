"""The model page's paired comparison and accuracy-vs-turns plot, in Debian's chromium against the shared
live service: two real uploads on PrefEval mcq compared through the page's form (the numbers must be
GET /api/v1/compare's, formatted), the other model's name an HTML payload that must stay text, and a real
mcq_turns upload whose accuracy per turn count is known by construction.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import (
    client,
    explicit_only,
    make_predictions,
    reordered,
    submit_ok,
    wait_finished,
    wrong_letter,
)  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import DEADLINE_MS, api_get, expect, launch_chromium  # noqa: E402

PAYLOAD = 'cmp-page<img src=x onerror="window.__pwned=1">'
# what the payload would create as markup (the page's own plot loader scripts are marked data-pb)
CREATED = "img:not(.plot), [onerror], script:not([data-pb]):not([data-pb-plotly])"


def turns_file() -> bytes:
    """mcq_turns answered right at 0 and 10 turns, wrong at 70 and 300: accuracy 100/100/0/0 by construction."""
    from evaluator.registry import get_task

    items = get_task("prefeval", "mcq_turns").load_split().items
    return "".join(
        json.dumps(
            {
                "id": i.id,
                "answer": i.gold if i.tiers["turns"] in ("0", "10") else wrong_letter(i.gold),
            }
        )
        + "\n"
        for i in items
    ).encode()


def test_model_page_compares_two_results_and_plots_turns(shared_live_service, tmp_path):
    from space.display import format_interval
    from space.pages import format_difference, format_p_value

    svc = shared_live_service
    with client(svc.base_url, token=svc.token) as http:
        a = submit_ok(http, reordered(explicit_only().body, 29), model_name="cmp-page-explicit")
        b = submit_ok(
            http,
            make_predictions(
                lambda i: i.tiers["form"] == "explicit" or i.tiers["topic"] == "travel_hotel"
            ).body,
            model_name=PAYLOAD,
        )
        turns = submit_ok(http, turns_file(), task="mcq_turns", model_name="turns-page-model")
        for sid in (a, b, turns):
            wait_finished(http, sid, logs=svc.logs)
        api = http.get("/api/v1/compare", params={"a": a, "b": b}).json()
    assert api["difference"] < 0 and api["n"] == 3000  # B is right wherever A is, and on more

    with launch_chromium() as browser:
        page = browser.new_page(base_url=svc.base_url)
        page.set_default_timeout(DEADLINE_MS)
        page.goto("/model/cmp-page-explicit")
        form = page.locator(f"form.pb-compare[data-a='{a}']")
        option = form.locator(f"option[value='{b}']")
        expect(option).to_have_count(1)
        assert PAYLOAD in option.inner_text()  # the other model's name, shown as typed
        form.locator("select").select_option(b)
        form.get_by_role("button", name="Compare").click()
        table = page.locator("#comparison table.comparison")
        expect(table).to_be_visible()
        shown = dict(
            zip(table.locator("th").all_inner_texts(), table.locator("td").all_inner_texts())
        )
        assert shown["Difference (A − B)"] == format_difference(api["difference"], "accuracy"), (
            shown
        )
        assert shown["95% CI of the difference"] == format_interval(*api["ci95"], "accuracy"), shown
        assert shown["p-value"] == format_p_value(api["p_value"]) == "< 0.001", shown
        assert (
            shown["Items both answered"] == "3000"
            and shown["Units (preference pairs, resampled together)"] == "1000"
        )
        assert PAYLOAD in shown["B"], shown
        assert page.locator(CREATED).count() == 0 and page.evaluate("window.__pwned") is None
        page.screenshot(path=str(tmp_path / "model-page-compare.png"), full_page=True)

        page.goto(f"/model/{quote('turns-page-model')}")
        rows = page.locator("table.turns tbody tr")
        expect(rows).to_have_count(1)
        assert rows.first.locator("td").all_inner_texts()[1:] == ["100.0", "100.0", "0.0", "0.0"]
        image = page.locator("#turns-plot")
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 100", arg=image.element_handle()
        )
        svg = api_get(page, image.get_attribute("src")).text()
        assert (
            ">turns-page-model (zero_shot)<" in svg
            and ">distractor turns between preference and question<" in svg
        )
        page.screenshot(path=str(tmp_path / "model-page-turns.png"), full_page=True)
