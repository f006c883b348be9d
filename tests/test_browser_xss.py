"""Text users supply is inert where it is shown, in Debian's chromium: model names made
of HTML, Markdown and spreadsheet-formula payloads create no element and run no script in the
status view or the leaderboard, show as typed, and come out of the CSV download neutralised.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import explicit_only, reordered, submit_ok, wait_finished  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
expect = sync_api.expect

from browser_helpers import DEADLINE_MS, download, launch_chromium, open_page, open_tab, wait_table  # noqa: E402

PAYLOADS = [
    '<img src=x onerror="window.__xss=1">',
    "<script>window.__xss=2</script>",
    "[click](javascript:window.__xss=3)",
    '![i](x" onerror="window.__xss=4)',
    '<a href="javascript:window.__xss=5">a</a> **bold**',
    '=HYPERLINK("https://evil.example","x")',
]
# what the payloads would create if rendered as markup
CREATED = "img, script, a[href^='javascript'], iframe, [onerror]"  # (bold is shown as typed: to_contain_text)


def test_payload_names_are_inert_in_status_and_leaderboard(module_live_service, tmp_path):
    svc = module_live_service
    with svc.http() as http:
        body = explicit_only().body  # rotated per name: an identical resubmission would be a 409
        ids = {
            name: submit_ok(http, reordered(body, i), model_name=name)
            for i, name in enumerate(PAYLOADS)
        }
        for sid in ids.values():
            wait_finished(http, sid, logs=svc.logs)

    with launch_chromium() as browser, open_page(browser, svc.base_url) as page:
        # the status view, once per payload
        open_tab(page, "Submission status")
        result = page.locator("#status-result")
        for name, sid in ids.items():
            page.locator("#status-id textarea, #status-id input").first.fill(sid)
            page.locator("#status-button").click()
            expect(result).to_contain_text(sid, timeout=DEADLINE_MS)
            expect(result).to_contain_text(name)  # shown as typed
            assert result.locator(CREATED).count() == 0, result.inner_html()

        # the leaderboard: one row per payload, the name as text
        open_tab(page, "Leaderboard")
        _, rows = wait_table(
            page,
            lambda h, r: all(any(x.get("Model") == n for x in r) for n in PAYLOADS),
            "a row for every payload name",
        )
        table = page.locator("#leaderboard-table")
        assert table.locator(CREATED).count() == 0, table.inner_html()[:2000]
        assert page.evaluate("window.__xss") is None  # no payload ran

        # the CSV download neutralises the formula (a leading apostrophe), other names unchanged
        body = download(page, page.locator("#leaderboard-downloads a", has_text="CSV"))
        names = [
            row["model_name"] for row in csv.DictReader(io.StringIO(body.decode(), newline=""))
        ]
        assert "'" + PAYLOADS[-1] in names and PAYLOADS[-1] not in names
        assert set(PAYLOADS[:-1]) <= set(names)
