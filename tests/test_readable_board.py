"""The board reads well on any screen, in Debian's chromium against one live service:

- no clipped text at 1,400 and 390 px: every header and cell of the board's table and of the
  Items tab's table shows its whole text, or an ellipsis with the whole text on hover (a title);
  no cell is drawn over by its neighbour (the sticky Rank and Model columns);
- dark mode (the OS's, which Gradio follows) readable: every visible text on the Leaderboard and
  Overview tabs, plots included, has a contrast of at least 4.5:1 against the background it is
  drawn on (WCAG relative luminance; the background found by walking up the ancestors);
- Plotly's mode bar never covers a plot's title at 390 px;
- an Overview link naming what the server does not have says so.

Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    draw_plots,
    expect,
    launch_chromium,
    open_tab,
    screenshot,
)
from live_helpers import explicit_only, submit_ok, wait_finished  # noqa: E402
from unit.test_overview import default_record, record  # noqa: E402

from space.interactive_plots import REFERENCE_NOTE  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
WIDTHS = (1400, 390)
LONG_NAME = "an-organisation-with-a-long-name/a-model-whose-name-goes-on-and-on-7B-instruct-v2"


def seed(service) -> str:
    """Runs, a long-named model, an uploaded file's row (ranked among uploads: its Rank cell names
    that), a partial run, and one real PrefEval upload (its items for the Items tab); the upload's
    submission id."""
    from evaluator.registry import get_task
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(service.data_dir / "results-dataset")
    split = get_task("prefeval", "mcq").load_split().sha256
    facts = {"model_type": "generative", "parameters": 7e9, "license": "apache-2.0"}
    store.publish(default_record("rb-a", "Alpha 7B", 0.81, split=split, facts=facts))
    store.publish(default_record("rb-l", LONG_NAME, 0.62, split=split, facts=facts))
    store.publish(
        default_record(
            "rb-f", "Gamma 2B", 0.58, suite="personafeedback", task="binary_choice",
            setting="persona", facts=facts,
        )
    )  # fmt: skip
    store.publish(
        record(
            "rb-u", "Alpha 7B", 0.45, split=split, protocol="uploaded predictions",
            predictions="e" * 64,
        )
    )  # fmt: skip
    store.publish(default_record("rb-p", "Delta 1B", 0.5, split=split, row_kind="partial", n=40))
    with service.http() as http:
        sid = submit_ok(http, explicit_only().body, model_name="Uploader explicit-only")
        wait_finished(http, sid)
    return sid


@pytest.fixture(scope="module")
def service(module_live_service):
    return module_live_service, seed(module_live_service)


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


# -- what is measured in the page -----------------------------------------------------------------
# Every header and cell under a root, and every box inside them: one whose content is wider than
# itself (scrollWidth > clientWidth) must cut it visibly (text-overflow: ellipsis, overflow not
# visible) and carry the whole text in a title (its own or an enclosing one's); a header is never
# cut; and no cell of a row may lie over another (a sticky column drawn over its neighbour hides
# its start).
CLIPPED_JS = """
root => {
  const found = [];
  const where = e => (e.closest('tr')?.dataset.id || e.closest('tr')?.dataset.model || 'head')
    + ' ' + e.tagName.toLowerCase() + '.' + [...e.classList].join('.');
  for (const cell of document.querySelector(root).querySelectorAll('th, td')) {
    if (!cell.checkVisibility()) continue;
    for (const e of [cell, ...cell.querySelectorAll('*')]) {
      const style = getComputedStyle(e);
      if (style.display === 'inline' || !e.checkVisibility()) continue;  // inline: no box to clip
      if (e.scrollWidth <= e.clientWidth + 1) continue;
      const text = e.innerText.trim().split('\\n')[0].trim();
      const titled = e.closest('[title]');
      const cut = style.textOverflow === 'ellipsis' && style.overflowX !== 'visible';
      if (e.closest('thead'))  // a header is never cut: it names the column
        found.push(`${where(e)} "${e.innerText.trim()}" is ${e.scrollWidth}px in ${e.clientWidth}px`);
      else if (!cut || !titled || !titled.title.includes(text))
        found.push(`${where(e)} "${e.innerText.trim()}" is ${e.scrollWidth}px in ${e.clientWidth}px`
          + (cut ? ' without its whole text in a title' : ' with no ellipsis'));
    }
  }
  // (a phone's Items table lays a row's cells out as a card: cells side by side or stacked)
  const apart = (a, b) => a.right <= b.left + 1 || b.right <= a.left + 1
    || a.bottom <= b.top + 1 || b.bottom <= a.top + 1;
  for (const row of document.querySelector(root).querySelectorAll('tr')) {
    const cells = [...row.children].filter(c => c.checkVisibility());
    const boxes = cells.map(c => c.getBoundingClientRect());
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++)
        if (boxes[i].width && boxes[j].width && !apart(boxes[i], boxes[j]))
          found.push(`${where(cells[j])} lies over ${where(cells[i])}`);
  }
  return found;
}
"""


def clipped(page, root: str) -> list[str]:
    return page.evaluate(CLIPPED_JS, root)


# The contrast of every visible text (an element with a text node of its own, an input's value, an
# SVG text) against the colour it is drawn on: the backgrounds of its ancestors composed from the
# page's canvas up (WCAG 2 relative luminance; an SVG text's colour is its fill).
CONTRAST_JS = """
() => {
  const rgba = s => {
    const m = /rgba?\\(([^)]*)\\)/.exec(s || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3]));
  const luminance = c => c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const canvas = rgba(getComputedStyle(document.documentElement).backgroundColor);
  const background = e => {
    const layers = [];
    for (; e; e = e.parentElement) {
      const own = [rgba(getComputedStyle(e).backgroundColor)];
      // a Plotly figure's texts lie in svgs layered over its first one, which paints the paper
      const paper = e.classList?.contains('svg-container') && e.querySelector(':scope > svg');
      if (paper) own.unshift(rgba(getComputedStyle(paper).backgroundColor));
      const opaque = own.filter(c => c && c[3] > 0);
      layers.push(...opaque);
      if (opaque.some(c => c[3] >= 1)) break;
    }
    let colour = canvas && canvas[3] > 0 ? canvas.slice(0, 3) : [255, 255, 255];
    for (const c of layers.reverse()) colour = over(c, colour);
    return colour;
  };
  const found = [], seen = new Set();
  const texts = [...document.querySelectorAll('body *')].filter(e =>
    e.tagName === 'TEXTAREA' || (e.tagName === 'INPUT' && ['text', 'search', 'number'].includes(e.type))
      ? e.value
      : [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()));
  for (const e of texts) {
    if (!e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) continue;
    const box = e.getBoundingClientRect();
    if (box.width < 1 || box.height < 1) continue;
    const style = getComputedStyle(e);
    const svg = e instanceof SVGElement;
    const ink = rgba(svg ? style.fill : style.color);
    if (!ink) continue;
    if (svg) ink[3] *= Number(style.fillOpacity || 1);
    const back = background(e);
    const fore = over(ink, back);
    const [a, b] = [luminance(fore), luminance(back)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const text = (e.value || [...e.childNodes].filter(n => n.nodeType === 3)
      .map(n => n.textContent).join(' ')).trim().slice(0, 40);
    const key = text + '|' + ratio.toFixed(2);
    if (ratio < 4.5 && !seen.has(key)) {
      seen.add(key);
      found.push(`"${text}" (${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}`
        + `${e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : ''})`
        + ` ${ratio.toFixed(2)}:1, rgb(${fore.map(Math.round)}) on rgb(${back.map(Math.round)})`);
    }
  }
  return found;
}
"""


def low_contrast(page) -> list[str]:
    return page.evaluate(CONTRAST_JS)


# Each figure's mode bar (Plotly's toolbar) and title: their boxes, to be apart.
MODEBAR_JS = """
root => [...document.querySelectorAll(root + ' .js-plotly-plot')].map(plot => {
  const box = e => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const bar = plot.querySelector('.modebar'), title = plot.querySelector('.gtitle');
  return {title: title ? title.textContent : null,
          bar: bar ? box(bar) : null, box: title ? box(title) : null};
})
"""


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["left"] < b["right"] - 1
        and b["left"] < a["right"] - 1
        and a["top"] < b["bottom"] - 1
        and b["top"] < a["bottom"] - 1
    )


# -- the tests ------------------------------------------------------------------------------------
def board_page(browser, base_url: str, width: int, scheme: str = "light", path: str = "/"):
    """A fresh page of the service at `width` px with the OS's colour scheme `scheme`."""
    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=base_url, color_scheme=scheme
    )
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    page.goto(path)
    return context, page


def plots_drawn(page) -> None:
    """Every plot box of the Leaderboard tab drawn, and one figure at least."""
    draw_plots(page, "#plots")
    expect(page.locator("#plots .js-plotly-plot").first).to_be_attached()


@pytest.mark.parametrize("width", WIDTHS)
def test_no_text_is_cut_without_an_ellipsis_and_its_title(service, browser, tmp_path, width):
    """Every header and cell of the board and of the Items tab's table shows its whole text, or an
    ellipsis with the whole text on hover; headers are never cut; no sticky cell covers another.
    The uploaded rows' Rank cell ("1" and the protocol it is ranked among) is the one the issue saw
    read "1 uploac"."""
    service, upload_id = service
    context, page = board_page(browser, service.base_url, width)
    try:
        upload = page.locator(f"#leaderboard-table tr[data-id='{upload_id}']")
        expect(upload).to_be_visible()
        rank = upload.locator("td.pb-rank")
        expect(rank).to_contain_text("2")  # second among the uploaded files (45.0 and 33.3)
        expect(rank.locator(".pb-rank-among")).to_have_attribute(
            "title", re.compile("ranked only among uploaded predictions rows")
        )
        expect(page.locator("#leaderboard-table tr[data-id='rb-l'] td.pb-model")).to_have_attribute(
            "title", LONG_NAME
        )
        cut = clipped(page, "#leaderboard-table")
        assert cut == [], "cut text in #leaderboard-table:\n" + "\n".join(cut)
        screenshot(page, tmp_path, f"readable-board-{width}", full_page=False)

        upload.locator("a.pb-items-link").click()
        expect(page.locator("#items-table .pb-items-count")).to_have_text("Items 1–50 of 3000")
        cut = clipped(page, "#items-table")
        assert cut == [], "cut text in #items-table:\n" + "\n".join(cut)
        screenshot(page, tmp_path, f"readable-items-{width}")
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_dark_mode_every_text_reads_on_its_background(service, browser, tmp_path, width):
    """With the OS in dark mode (Gradio follows it) every visible text of the Leaderboard tab (the
    partial run's amber row, the plots' titles, ticks and legends included), of the Overview tab
    and of the Items tab (an upload's items: gold, answer, outcome, their labels) has a contrast of
    at least 4.5:1 on the background it is drawn on."""
    service, upload_id = service
    context, page = board_page(browser, service.base_url, width, scheme="dark")
    try:
        expect(page.locator("body.dark")).to_be_attached()  # Gradio took the OS's dark mode
        expect(page.locator("#leaderboard-table tr[data-id='rb-p'] .pb-n")).to_have_text("n=40")
        plots_drawn(page)
        failures = low_contrast(page)
        screenshot(page, tmp_path, f"dark-board-{width}")
        assert failures == [], "texts under 4.5:1 on the Leaderboard tab:\n" + "\n".join(failures)
        assert page.locator("#plots .js-plotly-plot text").count() > 5  # the plots were measured

        open_tab(page, "Overview")
        expect(page.locator("#overview-table table tbody tr").first).to_be_visible()
        failures = low_contrast(page)
        screenshot(page, tmp_path, f"dark-overview-{width}")
        assert failures == [], "texts under 4.5:1 on the Overview tab:\n" + "\n".join(failures)

        open_tab(page, "Leaderboard")
        page.locator(f"#leaderboard-table tr[data-id='{upload_id}'] a.pb-items-link").click()
        expect(page.locator("#items-table .pb-items-count")).to_have_text("Items 1–50 of 3000")
        expect(page.locator("#items-table :is(.pb-right,.pb-wrong)").first).to_be_visible()
        failures = low_contrast(page)
        screenshot(page, tmp_path, f"dark-items-{width}")
        assert failures == [], "texts under 4.5:1 on the Items tab:\n" + "\n".join(failures)
    finally:
        context.close()


def test_the_mode_bar_never_covers_a_plot_title_at_390_px(service, browser, tmp_path):
    """At a phone's width Plotly's toolbar (shown while the pointer is over a plot) lies clear of
    every figure's title; the plots carry the board's reference line."""
    service, _ = service
    context, page = board_page(browser, service.base_url, 390)
    try:
        plots_drawn(page)
        figure = page.locator("#plots .js-plotly-plot").first
        figure.hover()
        expect(figure.locator(".modebar")).to_be_visible()
        boxes = page.evaluate(MODEBAR_JS, "#plots")
        assert boxes and all(b["bar"] and b["box"] for b in boxes), boxes
        covered = [b["title"] for b in boxes if overlaps(b["bar"], b["box"])]
        assert covered == [], f"the mode bar covers {covered}: {boxes}"
        # the reference line: a mark per tier (named in the title's note) and a labelled line
        texts = page.locator("#plots .js-plotly-plot").evaluate_all(
            "plots => plots.map(p => [...p.querySelectorAll('text')].map(t => t.textContent))"
        )
        assert any(REFERENCE_NOTE in " ".join(t) for t in texts), texts
        assert any(t.startswith(("Majority", "Chance")) for f in texts for t in f), texts
        screenshot(page, tmp_path, "plots-modebar-390", full_page=False)
    finally:
        context.close()


def test_an_overview_link_naming_what_is_not_here_says_so(service, browser):
    """`suite=nosuch`, a size that is no choice and `revision=deadbeef`: named above the overview,
    with what is shown instead, not the default view without a word."""
    service, _ = service
    path = "/?tab=overview&suite=nosuch&size=%3Cb%3Ehuge%3C%2Fb%3E&revision=deadbeef"
    context, page = board_page(browser, service.base_url, 1400, path=path)
    try:
        notice = page.locator("#overview-link-notice")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("suite=nosuch")
        expect(notice).to_contain_text("size=<b>huge</b>")  # as text, not markup
        expect(notice).to_contain_text("revision=deadbeef: no such revision here")
        expect(notice.locator("b")).to_have_count(0)
    finally:
        context.close()
