"""Helpers for driving the Gradio UI through Debian's chromium (Playwright, sync API).

The same helpers as tests/test_browser.py uses (launching chromium, picking a Gradio dropdown
option, reading the leaderboard grid, screenshots), shared here so other browser tests reuse them.
Import this module only after `pytest.importorskip("playwright.sync_api")`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path

from playwright import sync_api
from playwright.sync_api import expect

CHROMIUM = "/usr/bin/chromium"
# Every wait for a condition (expect(...), a page's own waits) has a deadline that holds on a busy
# machine: Playwright's expect() gives up after 5 s by default, and a redraw behind a loaded
# server's queue takes longer than that.
DEADLINE_MS = int(float(os.environ.get("PERSONABOARD_TEST_DEADLINE_S", "90")) * 1000)
expect.set_options(timeout=DEADLINE_MS)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# -- browser and pages ----------------------------------------------------------------------------
@contextlib.contextmanager
def launch_chromium():
    """Debian's chromium, headless; closed on exit."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def open_page(browser, base_url: str, timeout_ms: int = DEADLINE_MS, token: str | None = None):
    """A fresh context (own cookies/storage, downloads allowed) on the service's page, loaded;
    with `token`, the page's API-token field holds it (submitting needs an identity)."""
    context = browser.new_context(
        accept_downloads=True, viewport={"width": 1400, "height": 1000}, base_url=base_url
    )
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    page.goto("/")
    expect(page.locator("#leaderboard-table")).to_be_visible(timeout=timeout_ms)
    if token:
        sign_in(page, token)
    try:
        yield page
    finally:
        context.close()


def sign_in(page, token: str) -> None:
    """Put an API token into the page's token field (a reload empties it). The field sits in the
    submit tabs: open one, type it there (the other submit tab's field follows), come back."""
    was = page.locator("[role='tab'][aria-selected='true']").first.inner_text().strip()
    url_tab = page.evaluate("new URLSearchParams(location.search).get('tab')")
    field = page.locator("#api-token input")
    if not field.is_visible():
        open_tab(page, "Submit predictions")
    field.fill(token)
    expect(field).to_have_value(token)
    if was and was != "Submit predictions":
        open_tab(page, was)
        # the tab switch writes the URL after the tab shows: a reload before that (seen under load)
        # would reopen the submit tab
        # the URL is written by a queued event: DEADLINE_MS ran out at load 12 in a full run
        page.wait_for_function(
            "(tab) => new URLSearchParams(location.search).get('tab') === tab",
            arg=url_tab,
            timeout=2 * DEADLINE_MS,
        )


def screenshot(page, tmp_path: Path, name: str, full_page: bool = True) -> Path:
    """A PNG in tmp_path (and in $PERSONABOARD_BROWSER_ARTIFACTS when set)."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    extra = os.environ.get("PERSONABOARD_BROWSER_ARTIFACTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path


# -- controls -------------------------------------------------------------------------------------
def open_tab(page, name: str) -> None:
    """Select a tab; on a narrow screen Gradio moves the tabs that do not fit into a "..." menu."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        expect(tab.first).to_have_attribute("aria-selected", "true")
        return
    page.locator(".overflow-menu > button").first.click()
    page.locator(".overflow-dropdown button", has_text=name).first.click()
    # chosen from the menu, it is either swapped into the bar or marked in the menu
    shown = page.locator(
        f"[role='tab'][aria-selected='true']:text-is({json.dumps(name)}),"
        f" .overflow-dropdown button.selected:text-is({json.dumps(name)})"
    )
    expect(shown.first).to_be_attached()


def choose(page, elem_id: str, option: str) -> None:
    """Pick `option` (its label) in the Gradio dropdown #elem_id: a custom combobox, not a <select>.

    Open the list by clicking the input, click the option by its aria-label inside this
    component's own listbox, and check the input shows it (Gradio then fires .change)."""
    box = page.locator(f"#{elem_id} input[role='combobox']")
    expect(box).to_be_enabled()
    for _ in range(3):
        box.click()
        choice = page.locator(
            f"#{elem_id} [role='listbox'] [role='option'][aria-label={json.dumps(option, ensure_ascii=False)}]"
        )
        try:
            choice.first.wait_for(state="visible", timeout=DEADLINE_MS / 3)
        except sync_api.TimeoutError:
            page.keyboard.press("Escape")
            continue
        choice.first.scroll_into_view_if_needed()
        choice.first.click()
        break
    expect(box).to_have_value(option)
    page.keyboard.press("Escape")  # leave no list open over the next control


def type_custom(page, elem_id: str, value: str) -> None:
    """Type a value that is not among the choices into a Dropdown(allow_custom_value=True).

    Gradio takes a custom value when the input loses focus (or on Enter), so type, then blur."""
    box = page.locator(f"#{elem_id} input[role='combobox']")
    expect(box).to_be_enabled()
    box.click()
    box.fill(value)
    box.press("Enter")
    box.blur()
    page.keyboard.press("Escape")
    expect(box).to_have_value(value)


def set_checkboxes(page, elem_id: str, wanted: list[str]) -> None:
    """Leave exactly the boxes labelled `wanted` checked in the CheckboxGroup #elem_id."""
    labels = page.locator(f"#{elem_id} label")
    expect(labels.first).to_be_visible()
    names = [t.strip() for t in labels.all_inner_texts()]
    missing = set(wanted) - set(names)
    assert not missing, f"#{elem_id} has no boxes {sorted(missing)}; it has {names}"
    for name in names:
        box = labels.filter(has_text=name).first.locator("input[type='checkbox']")
        box.set_checked(name in wanted)
    for name in names:
        box = labels.filter(has_text=name).first.locator("input[type='checkbox']")
        (expect(box).to_be_checked if name in wanted else expect(box).not_to_be_checked)()


# -- the leaderboard grid -------------------------------------------------------------------------
def draw_plots(page, selector: str) -> None:
    """Every plot box under `selector` drawn: the page draws a box as it comes into view
    (space/interactive_plots.py DRAW_JS), so each is scrolled to in turn (a drawn box grows and
    moves the next) and waited on until Plotly is done with it."""
    page.wait_for_function(
        "sel => document.querySelectorAll(sel + ' .pb-plot').length",
        arg=selector,
        timeout=DEADLINE_MS,
    )
    boxes = page.locator(f"{selector} .pb-plot")
    for i in range(boxes.count()):
        box = boxes.nth(i)
        box.evaluate("box => box.scrollIntoView({block: 'center'})")  # an undrawn box has no height
        expect(box).to_have_attribute("data-done", "1", timeout=DEADLINE_MS)


def read_table(page) -> tuple[list[str], list[dict[str, str]]]:
    """Headers and rendered rows of the leaderboard grid, read in one go (it is a virtual table:
    header cells are [role=columnheader], body rows [role=row] of [role=gridcell])."""
    headers, cells = page.locator("#leaderboard-table [role='grid']").first.evaluate("""grid => [
        [...grid.querySelectorAll("[role='columnheader']")].map(h => h.innerText.trim()),
        [...grid.querySelectorAll("[role='row']")]
            .map(r => [...r.querySelectorAll("[role='gridcell']")].map(c => {
                // a model cell's "what tells it apart" line (.pb-distinct) is read on its own
                const d = c.querySelector('.pb-distinct');
                return d ? c.querySelector('a').innerText.trim() + ' | ' + d.innerText.trim()
                         : c.innerText.trim();
            }))
            .filter(r => r.length),
    ]""")
    # a model cell's "name | setting · source" gives "Model" (the name) and "Distinct" (what follows)
    # headers come back short ("Total"; "vs. reference" for "vs. Majority (always C)"); the full text
    # is in the page (th[data-col]) for tests of the headers themselves
    keys = ["vs. reference" if h.startswith("vs. ") else h.split(" · ", 1)[0] for h in headers]
    rows = []
    for row in cells:
        if len(row) != len(headers):
            continue
        read = {**dict(zip(keys, row)), **dict(zip(headers, row))}
        name, _, distinct = read.get("Model", "").partition(" | ")
        rows.append({**read, "Model": name, "Distinct": distinct})
    return keys, rows


def wait_table(page, check, what: str, timeout: float = DEADLINE_MS / 1000):
    """Re-read the leaderboard table until check(headers, rows) is truthy; return (headers, rows)."""
    deadline = time.monotonic() + timeout
    headers, rows = [], []
    while time.monotonic() < deadline:
        try:
            headers, rows = read_table(page)
            if check(headers, rows):
                return headers, rows
        except sync_api.Error:
            pass  # the table re-rendered under us
        page.wait_for_timeout(250)
    raise AssertionError(f"leaderboard never showed {what}; last headers={headers} rows={rows}")


def row_for(rows, model):
    return next((r for r in rows if r.get("Model") == model), None)


def rows_for(rows, model):
    return [r for r in rows if r.get("Model") == model]


# -- the API, through the page's own request context ------------------------------------------------
def api_get(page, url: str):
    """GET `url` through the page's request context. Chromium resends a GET whose kept-alive
    connection the server closed as it was sent (uvicorn closes idle ones after 5 s); Playwright's
    request client does not, and answers "socket hang up (ECONNRESET)": CI saw it once on a loaded
    machine. A GET is idempotent, so that reset is retried once; any other error is raised."""
    try:
        return page.request.get(url)
    except sync_api.Error as error:
        if "ECONNRESET" not in str(error):
            raise
        return page.request.get(url)


def submissions(page) -> list[dict]:
    response = api_get(page, "/api/v1/submissions?limit=1000")
    assert response.ok, response.text()
    return response.json()["submissions"]


def download(page, link) -> bytes:
    with page.expect_download() as info:
        link.click()
    path = info.value.path()
    assert info.value.failure() is None, info.value.failure()
    return Path(path).read_bytes()
