"""A board people browse and share, in Debian's chromium at 1,400 and 390 px, against one live
service for the module:

- the Items tab keeps its view in the URL: a result, a tier, the wrong answers and a page chosen
  (at 1,400 px), the URL holds them, and someone else opening the link (a fresh context, at 390
  px) sees the same rows; a link to an unknown result or to a hidden split's says so and shows
  nothing per item;
- the Submission status tab follows a submission without a click: submitted from the page while
  no worker runs, it is looked up queued; a real worker started then finishes it, and the tab and
  the list of this browser's submissions say "finished". Its timer sends nothing while another
  tab is open (on the phone, the run happens while the reader looks at the Leaderboard) nor once
  the submission finished: counted in the page's own requests, against the status line's ticks.

The service's workers are stopped once the fixture's results are in: a submission stays queued
until the test starts one (the status test waits for the stopped workers' exit before it submits).
Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    api_get,
    choose,
    expect,
    launch_chromium,
    open_tab,
    screenshot,
    sign_in,
    submissions,
    type_custom,
)
from live_helpers import (  # noqa: E402
    explicit_only,
    reordered,
    split_items,
    submit_ok,
    wait_finished,
    wait_state,
)
from test_browser_overview import cell_texts, no_page_overflow, open_tab_anywhere  # noqa: E402
from test_probing import above_the_floor, hidden_fixture, install  # noqa: E402

from backend import processes  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
WIDTHS = (1400, 390)
UPLOADER = "Uploader explicit-only"
TOPIC, TOPIC_LABEL = "topic/entertain_shows", "Topic: Entertain shows"


def stop_workers(svc) -> None:
    """Ask every worker to stop (SIGTERM: a warm shutdown, it leaves Redis), without waiting:
    an idle RQ worker takes some 10 s to exit (it joins its scheduler process), time the next
    test spends loading its page. workers_gone() waits for the exit."""
    processes.send_signal(svc.workers, signal.SIGTERM)


def workers_gone(svc, timeout: float = 60.0) -> None:
    """Every worker asked to stop has exited (then reaped, its process group swept): what is
    submitted now stays queued."""

    def exited(proc) -> bool:
        try:  # WNOWAIT: left a zombie, so stop_process can still sweep its group
            return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    deadline = time.monotonic() + timeout
    while svc.workers:
        proc = svc.workers.pop()
        while not exited(proc) and time.monotonic() < deadline:
            time.sleep(0.1)
        processes.stop_process(proc, timeout=1)  # reaps; SIGKILL if it outlived the deadline


@pytest.fixture(scope="module")
def service(module_live_service, tmp_path_factory):
    """The module's live service, its workers stopped once they have scored a PrefEval upload
    (right on the explicit form only) and a result on a hidden split."""
    svc = module_live_service
    folder = tmp_path_factory.mktemp("browse") / "hidden-split"  # the canary watch skips it
    gold = hidden_fixture(folder, public=False)
    install(svc, folder)
    with svc.http() as http:
        public = submit_ok(http, explicit_only().body, model_name=UPLOADER)
        hidden_body = "".join(
            json.dumps({"id": i, "answer": a}) + "\n" for i, a in above_the_floor(gold).items()
        )
        hidden = submit_ok(
            http,
            hidden_body.encode(),
            suite="recentering",
            task="relevance",
            model_name="hidden-split upload",
        )
        wait_finished(http, public, logs=svc.logs)
        final = wait_state(http, hidden, logs=svc.logs)
        assert final["state"] == "finished" and final["revision"], final
    stop_workers(svc)  # the items test needs none; the status test waits for workers_gone
    return svc, public, hidden, list(gold)


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


@contextlib.contextmanager
def open_at(browser, base_url: str, width: int, token: str | None = None):
    """open_page at this width from the start: resized after its load, a phone's tab bar would
    still be moving tabs into its "..." menu while a tab is clicked."""
    context = browser.new_context(viewport={"width": width, "height": 900}, base_url=base_url)
    context.set_default_timeout(DEADLINE_MS)
    try:
        page = context.new_page()
        page.goto("/")
        expect(page.locator("#leaderboard-table")).to_be_visible()
        if token:
            sign_in(page, token)
        yield page
    finally:
        context.close()


def url_view(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


# -- the Items tab's view in the URL ---------------------------------------------------------------
def test_items_view_round_trips_through_the_url(service, browser, tmp_path):
    """The view chosen at 1,400 px goes into the URL; someone else opens the link on a phone (a
    fresh context at 390 px: the same rows, laid out there), then links to results without
    per-item details and a link with a tier and answer the result does not have."""
    svc, public, hidden, hidden_ids = service
    # what the chosen view holds, from the split itself: topic entertain_shows, not explicit
    wrong_here = [
        i.id
        for i in split_items()
        if i.tiers["topic"] == TOPIC.split("/")[1] and i.tiers["form"] != "explicit"
    ]
    assert len(wrong_here) > 50  # a second page exists
    second_page = f"Items 51–{min(100, len(wrong_here))} of {len(wrong_here)}"
    wanted = {
        "tab": "items",
        "submission": public,
        "tier": TOPIC,
        "outcome": "wrong",
        "pg": "2",
    }

    def same_view(page) -> list[list[str]]:
        # a fresh page's load (every tab's) takes a while on a busy machine
        count = page.locator("#items-table .pb-items-count")
        expect(count).to_have_text(second_page, timeout=DEADLINE_MS)
        expect(page.locator("#items-result input[role='combobox']")).to_have_value(
            f"{UPLOADER} · prefeval/mcq · zero_shot · {public}"
        )
        expect(page.locator("#items-tier input[role='combobox']")).to_have_value(TOPIC_LABEL)
        expect(page.locator("#items-outcome").get_by_label("wrong")).to_be_checked()
        expect(page.locator("#items-page input")).to_have_value("2")
        rows = cell_texts(page, "items-table")
        assert len(rows) == min(50, len(wrong_here) - 50)
        assert [r[0].split("\n")[0] for r in rows] == wrong_here[50:100]
        for row in rows:  # item (its tiers under it), input, gold, answer, outcome
            assert "entertain_shows" in row[0] and "form: explicit" not in row[0], row
            assert row[4] == "wrong" and row[2] != row[3], row
        no_page_overflow(page)
        return rows

    with open_at(browser, svc.base_url, 1400) as page:
        open_tab_anywhere(page, "Items")
        page.wait_for_function("() => new URLSearchParams(location.search).get('tab') === 'items'")
        choose(page, "items-result", f"{UPLOADER} · prefeval/mcq · zero_shot · {public}")
        count = page.locator("#items-table .pb-items-count")
        expect(count).to_have_text("Items 1–50 of 3000")
        choose(page, "items-tier", TOPIC_LABEL)
        page.locator("#items-outcome").get_by_label("wrong").check()
        expect(count).to_have_text(f"Items 1–50 of {len(wrong_here)}")
        page.locator("#items-page input").fill("2")
        expect(count).to_have_text(second_page)
        page.wait_for_function(
            "(w) => { const p = new URLSearchParams(location.search);"
            " return Object.entries(w).every(([k, v]) => p.get(k) === v); }",
            arg=wanted,
        )
        assert url_view(page) == wanted, page.url  # nothing else in it
        shown = same_view(page)
        # the pointer off the controls: Gradio draws a hovered checked radio blank
        page.mouse.move(0, 0)
        screenshot(page, tmp_path, "items-url-1400")
        # the download is the view's items (filters in its query), not the page's
        href = page.locator("#items-downloads a", has_text="CSV").get_attribute("href")
        assert "tier=topic%2Fentertain_shows" in href and "outcome=wrong" in href, href
        shared = page.url

    # a fresh context (no state but the URL), at a phone's width from its load. (A reload of the
    # same page showed nothing this does not.)
    context = browser.new_context(viewport={"width": 390, "height": 900}, base_url=svc.base_url)
    context.set_default_timeout(DEADLINE_MS)
    try:
        page = context.new_page()
        page.goto(shared.split(svc.base_url, 1)[1])  # someone else opens the link
        assert same_view(page) == shown
        assert url_view(page) == wanted, page.url  # its load's redraw kept the link's view
        screenshot(page, tmp_path, "items-url-shared-390")

        # an unknown result (pasted into the box) and a hidden split's (a link): said so,
        # nothing per item, no downloads
        unknown = "0123456789abcdef0123"
        page.goto("/?tab=items")
        expect(page.locator("#items-table")).to_contain_text("Choose a result", timeout=DEADLINE_MS)
        type_custom(page, "items-result", unknown)
        page.wait_for_function(
            "(id) => new URLSearchParams(location.search).get('submission') === id", arg=unknown
        )
        for sid in (unknown, hidden):
            if sid == hidden:
                page.goto(f"/?tab=items&submission={sid}&outcome=wrong&pg=2")
            refused = page.locator("#items-refused")
            expect(refused).to_contain_text(f"no per-item details for '{sid}'", timeout=DEADLINE_MS)
            expect(refused).to_contain_text("public splits only")
            expect(page.locator("#items-table table")).to_have_count(0)
            expect(page.locator("#items-downloads a")).to_have_count(0)
            text = page.locator("body").inner_text()
            assert not [i for i in hidden_ids if re.search(rf"\b{i}\b", text)]
            # the tier filter names no task of a result it may not show
            page.locator("#items-tier input[role='combobox']").click()
            options = page.locator("#items-tier [role='option']")
            expect(options).to_have_count(1)
            assert options.first.get_attribute("aria-label") == "all tiers"
            page.locator("#items-note").click()  # the list closed again
            expect(options).to_have_count(0)
            no_page_overflow(page)
        screenshot(page, tmp_path, "items-refused-390")

        # a link whose tier and answer this result does not have: said so (its text inert), and
        # the result shown with all tiers and answers; the reader's next choice drops the note
        page.goto(f"/?tab=items&submission={public}&tier=bogus%3Cb%3Ex%3C%2Fb%3E&outcome=maybe")
        note = page.locator("#items-link-note")
        expect(note).to_contain_text(
            "This link's tier “bogus<b>x</b>” is not a tier of this result's task; its answer "
            "“maybe” is not right or wrong: showing all instead.",
            timeout=DEADLINE_MS,
        )
        expect(note.locator("b")).to_have_count(0)
        expect(page.locator("#items-table .pb-items-count")).to_have_text("Items 1–50 of 3000")
        expect(page.locator("#items-outcome").get_by_label("all")).to_be_checked()
        page.locator("#items-outcome").get_by_label("wrong").check()
        expect(page.locator("#items-table .pb-items-count")).not_to_have_text("Items 1–50 of 3000")
        expect(note).to_have_count(0)
    finally:
        context.close()


# -- the Submission status tab follows a run ------------------------------------------------------
class Ticks:
    """The timer events the page sends (POST queue/join, one per tick): the status tab's, and the
    status line's (always on, every 3 s: the clock that bounds a window of no status-tab ticks)."""

    def __init__(self, page):
        config = api_get(page, "/config").json()
        by_elem = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}

        def tick_of(elem_id: str) -> int:
            return next(
                d.get("id", i)
                for i, d in enumerate(config["dependencies"])
                if any(t[1] == "tick" for t in d["targets"]) and by_elem[elem_id] in d["outputs"]
            )

        self.status_tab, self.status_line = tick_of("status-result"), tick_of("service-status")
        self.sent: list[int] = []
        page.on("request", self._seen)

    def _seen(self, request) -> None:
        if request.method == "POST" and urlsplit(request.url).path.endswith("/queue/join"):
            self.sent.append((request.post_data_json or {}).get("fn_index"))

    def count(self, fn: int) -> int:
        return self.sent.count(fn)

    def is_tick(self, request, fn: int) -> bool:
        return (
            request.method == "POST"
            and urlsplit(request.url).path.endswith("/queue/join")
            and (request.post_data_json or {}).get("fn_index") == fn
        )

    def none_while(self, page, what: str, deadline_s: float = 90.0) -> None:
        """The status tab stops polling: a window with no status-tab tick while the status line
        ticks twice (3 s or more, against the tab's 2 s period) comes within the deadline. A tick
        sent before the page's switch reached the server and came back may still be in flight (on a
        loaded machine that round trip outlasts a period), so one window is not enough."""
        deadline = time.monotonic() + deadline_s
        while True:
            before = self.count(self.status_tab)
            for _ in range(2):
                with page.expect_request(
                    lambda r: self.is_tick(r, self.status_line), timeout=20_000
                ):
                    pass
            if self.count(self.status_tab) == before:
                return
            assert time.monotonic() < deadline, f"the status tab kept polling {what}"


@pytest.mark.parametrize("width", WIDTHS)
def test_status_tab_follows_a_submission_until_it_finishes(service, browser, tmp_path, width):
    svc, *_ = service
    model = f"followed-{width}"
    predictions = tmp_path / "predictions.jsonl"
    # a new file per run (an identical one is refused as a duplicate): the same answers reordered
    predictions.write_bytes(reordered(explicit_only().body, WIDTHS.index(width) + 1))
    with open_at(browser, svc.base_url, width) as page:
        ticks = Ticks(page)
        open_tab(page, "Submit predictions")
        sign_in(page, svc.token)  # typed on the tab it submits from: no round trip to another tab
        workers_gone(svc)
        page.set_input_files("#submit-file input[type='file']", str(predictions))
        expect(page.locator(f"#submit-file a[href$='/{predictions.name}']")).to_be_visible()
        page.locator("#submit-model textarea, #submit-model input").first.fill(model)
        page.locator("#submit-button").click()
        expect(page.locator("#submit-status")).to_contain_text("State: queued")
        mine = next(s for s in submissions(page) if s["model_name"] == model)
        assert mine["state"] == "queued", mine  # no worker runs
        label = f"{model} (prefeval/mcq, {mine['setting']})"  # after its state

        open_tab(page, "Submission status")
        choose(page, "status-mine", f"queued · {label}")
        result = page.locator("#status-result")
        expect(result).to_contain_text(f"Submission {mine['id']}")
        expect(result).to_contain_text("State: queued")
        expect(result).to_contain_text("Position in queue: 1")
        no_page_overflow(page)
        screenshot(page, tmp_path, f"status-queued-{width}")
        with page.expect_request(lambda r: ticks.is_tick(r, ticks.status_tab)):
            pass  # its timer runs while it shows a queued submission

        away = width == 390  # on a phone: look elsewhere while it runs, then come back
        if away:
            open_tab(page, "Leaderboard")
            ticks.none_while(page, "while another tab was open")
        # a worker comes; from here on, no click (but the phone's one back to the tab)
        svc.start_worker()
        try:
            if away:
                with svc.http() as http:
                    wait_finished(http, mine["id"], logs=svc.logs)
                ticks.none_while(page, "while another tab was open")
                open_tab(page, "Submission status")
            expect(result).to_contain_text("State: finished", timeout=120_000)
            expect(result).to_contain_text("accuracy: 33.3")
            # the list of this browser's submissions says so too, the choice still picked
            expect(page.locator("#status-mine input[role='combobox']")).to_have_value(
                f"finished · {label}"
            )
            ticks.none_while(page, "after the submission finished")
            no_page_overflow(page)
            screenshot(page, tmp_path, f"status-finished-{width}")
        finally:
            stop_workers(svc)  # the next run's submission waits again
