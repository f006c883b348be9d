"""A person's steps on a Space with Hugging Face sign-in, in Chromium (Playwright): sign in on the
provider's page (tests/hub_server.py stands in for huggingface.co), upload and submit. Used by
tests/test_space_signin.py (a live service) and tests/test_deploy.py (the web image in a container).
"""

from __future__ import annotations

import re
from pathlib import Path


def context_for(browser, base_url: str):
    from browser_helpers import DEADLINE_MS

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, base_url=base_url)
    context.set_default_timeout(DEADLINE_MS)
    return context


def login_button(page):
    return page.locator("[id$='-hf-login']:visible").first  # the open tab's


def on_board(page) -> None:
    """Back on the app (the redirect to "/"), its page drawn, then on the Submit tab. Gradio's
    LoginButton sends the page's query along (`window.location.search`, read half a second after
    the click), so the redirect lands on the board, or on the Submit tab once the page's URL names
    it (`?tab=submit`): which one depends on how soon the URL was updated, so either is awaited."""
    from browser_helpers import open_tab
    from playwright.sync_api import expect

    page.wait_for_url(re.compile(r"^http://[^/?#]+/(\?.*)?$"))  # the app, on whichever host
    expect(page.locator("[role='tab'][aria-selected='true']").first).to_be_visible()
    open_tab(page, "Submit predictions")


def sign_in(page, provider_url: str, client_id: str, user: str) -> None:
    """From the board: the Submit tab's button, the sign-in page of the provider at `provider_url`
    (tests/hub_server.py, as the browser reaches it) for the app `client_id`, back on the board."""
    from playwright.sync_api import expect

    page.goto("/")
    on_board(page)
    expect(login_button(page)).to_have_text(re.compile("Sign in with Hugging Face"))
    login_button(page).click()
    page.wait_for_url(f"{provider_url}/oauth/authorize?**")
    expect(page.locator("#client")).to_have_text(client_id)
    page.locator("#username").fill(user)
    page.locator("#authorize").click()
    on_board(page)
    expect(login_button(page)).to_have_text(re.compile(rf"Logout \({re.escape(user)}\)"))


def submit(page, tmp_path: Path, body: bytes, model: str) -> str:
    """Upload `body` on the Submit tab and press Submit; returns the status text once it settles."""
    from playwright.sync_api import expect

    path = tmp_path / f"{model}.jsonl"
    path.write_bytes(body)
    page.set_input_files("#submit-file input[type='file']", str(path))
    expect(page.locator(f"#submit-file a[href$='/{path.name}']")).to_be_visible()
    page.locator("#submit-model textarea, #submit-model input").first.fill(model)
    page.locator("#submit-button").click()
    status = page.locator("#submit-status")
    expect(status).to_contain_text(re.compile(f"{re.escape(model)}|Error"))
    return status.inner_text()


def id_in_status(text: str) -> str:
    found = re.search(r"Submission ([0-9a-f]{8,})", text)
    assert found, f"no submission id in the status: {text}"
    return found.group(1)
