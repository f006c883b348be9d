"""Submitting through the page, in Debian's chromium (Playwright): the traps a new user met.

Choosing a file before typing the API token: the upload route refuses (401), and Gradio's page
shows the body of that refusal in a toast as it is. The toast reads as one sentence saying what to
do (type the token first, then choose the file), never the API's raw JSON.

The model tab shows the task's default setting chosen from the first render; a link naming what
the board does not have shows a note naming it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
expect = sync_api.expect

from browser_helpers import DEADLINE_MS, launch_chromium, open_page, open_tab  # noqa: E402


def test_a_file_chosen_before_the_token_reads_as_a_sentence(shared_live_service, tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "x", "answer": "A"}\n')
    with launch_chromium() as browser, open_page(browser, shared_live_service.base_url) as page:
        open_tab(page, "Submit predictions")
        expect(page.locator("#api-token input")).to_have_value("")
        page.set_input_files("#submit-file input[type='file']", str(predictions))
        toast = page.locator("[data-testid='toast-body']").filter(has_text="not uploaded")
        expect(toast.first).to_be_visible(timeout=DEADLINE_MS)
        text = toast.first.inner_text()
        assert "type your API token first, then choose the file" in text, text
        assert '{"detail"' not in text and "problems" not in text, text
        # nothing was uploaded: the file field holds no link to a stored copy
        expect(page.locator(f"#submit-file a[href$='/{predictions.name}']")).to_have_count(0)


def test_the_model_tab_has_a_setting_chosen_and_a_bad_link_is_named(shared_live_service):
    with launch_chromium() as browser, open_page(browser, shared_live_service.base_url) as page:
        open_tab(page, "Submit a model")
        settings = page.locator("#model-settings input[type='checkbox']:checked")
        expect(settings).to_have_count(1)
        assert settings.first.evaluate("e => e.closest('label').innerText").strip() == "zero_shot"
        # a link with a suite and a version the board does not have
        page.goto("/?suite=nosuch&revision=deadbeef")
        note = page.locator("#link-notice")
        expect(note).to_be_visible(timeout=DEADLINE_MS)
        expect(note).to_contain_text("suite=nosuch")
        expect(note).to_contain_text("revision=deadbeef")
