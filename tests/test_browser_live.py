"""The page follows the service without a click, at 1,400 and 390 px: the status line above the tabs
shows a worker busy with a submission made elsewhere (through the API), then idle again with the
new results revision; the Queue tab lists it with its id as a link to its status and its Position;
the board shows its row. Operator details (worker names) live in the Service tab, not above the tabs,
and the API-token field sits in the submit tabs.

Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    expect,
    launch_chromium,
    open_tab,
    screenshot,
    wait_table,
)
from live_helpers import register_model, wait_finished, wait_until  # noqa: E402
from live_service import start_live_service  # noqa: E402

from submissions.settings import FAULT_GATE_ENV  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
WIDTHS = {"desktop": 1400, "phone": 390}


def shot(page, tmp_path, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = screenshot(page, tmp_path, name)
    (ARTIFACTS / path.name).write_bytes(path.read_bytes())


def no_horizontal_overflow(page, selector: str) -> None:
    """Every element under `selector` lies within the viewport's width (nothing cut off at the right)."""
    width = page.viewport_size["width"]
    overflow = page.locator(selector).evaluate(
        """(root, width) => [...root.querySelectorAll('*')]
            .filter(e => e.getClientRects().length && e.getBoundingClientRect().right > width + 1)
            .map(e => e.outerHTML.slice(0, 80))""",
        width,
    )
    assert not overflow, f"{selector} runs past {width} px: {overflow[:3]}"


@pytest.fixture(scope="module")
def gated_service(tmp_path_factory):
    """This module's service, whose worker holds each job once it is running until the test opens
    a gate (creates the file in FAULT_GATE_ENV): the run stays "busy" for as long as the test looks
    at it, without a long run to keep it busy."""
    root = tmp_path_factory.mktemp("module-service")
    svc = start_live_service(root, extra_env={FAULT_GATE_ENV: str(root / "job-gate")})
    try:
        yield svc
    finally:
        svc.stop()


@pytest.mark.slow
@pytest.mark.parametrize("viewport", list(WIDTHS))
def test_status_line_and_queue_follow_a_run_without_a_click(
    browser, gated_service, tmp_path, viewport
):
    from tiny_models import build_tiny_model

    svc = gated_service
    gate = Path(svc.env[FAULT_GATE_ENV])
    gate.unlink(missing_ok=True)  # closed: the run waits, marked running, until it is opened
    svc.wait_workers_registered()
    model = f"tiny-live-{viewport}"
    register_model(svc, model, build_tiny_model(tmp_path / "tiny", "generative"))
    context = browser.new_context(
        viewport={"width": WIDTHS[viewport], "height": 900}, base_url=svc.base_url
    )
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    try:
        page.goto("/?suite=prefeval&task=mcq")  # where the run's row will appear
        line = page.locator("#service-status")
        expect(line).to_contain_text("idle", timeout=DEADLINE_MS)
        before = page.locator("#status-revision").inner_text()
        # operators' details are not above the tabs; the token field is in the submit tabs
        names = [w["name"] for w in svc.http().get("/api/v1/workers").json()["workers"]]
        assert names and not any(n in line.inner_text() for n in names), line.inner_text()
        expect(page.locator("#api-token input")).to_be_hidden()
        open_tab(page, "Submit predictions")
        page.locator("#api-token input").fill("typed-once")
        open_tab(page, "Submit a model")  # one identity for both submit tabs
        expect(page.locator("#api-token-model input")).to_have_value("typed-once")
        open_tab(page, "Leaderboard")
        no_horizontal_overflow(page, "#service-status")
        shot(page, tmp_path, f"status-idle-{viewport}")

        with svc.http() as http:
            answer = http.post(
                "/api/v1/submissions",
                json={
                    "model": model,
                    "suite": "prefeval",
                    "task": "mcq",
                    "setting": "zero_shot",
                    "limit": 6,
                },
            )
            assert answer.status_code == 201, answer.text
            submission_id = answer.json()["id"]
            # no click: the line says a worker is busy with it, its id a link to its status
            link = line.locator(f"a.pb-submission:text-is('{submission_id}')")
            expect(link).to_be_visible(timeout=60_000)
            assert link.get_attribute("href") == f"/?status={submission_id}"
            expect(line).to_contain_text("busy with")
            shot(page, tmp_path, f"status-busy-{viewport}")

            open_tab(page, "Queue")
            row = page.locator(f"#queue-table tr[data-id='{submission_id}']")
            expect(row).to_be_visible()
            headers = page.locator("#queue-table th").all_inner_texts()
            cells = dict(zip(headers, row.locator("td").all_inner_texts()))
            assert cells["Position"] in ("running now", "1"), cells
            id_link = row.locator("a.pb-submission")
            assert id_link.inner_text() == submission_id
            gate.touch()  # the run goes on and finishes
            final = wait_finished(http, submission_id, timeout=300, logs=svc.logs)
            # the queue row moves on by itself
            expect(row.locator("td").nth(5)).to_have_text("finished", timeout=DEADLINE_MS)
            shot(page, tmp_path, f"queue-{viewport}")

        # the line goes idle again and shows the new results revision, still without a click
        expect(line).to_contain_text("idle", timeout=DEADLINE_MS)

        # ... and reaches the publish of this run or a later revision (bookkeeping commits follow)
        def caught_up():
            shown = page.locator("#status-revision").inner_text()
            versions = svc.http().get("/api/v1/leaderboard/versions").json()["versions"]
            revisions = [v["revision"] for v in versions]
            newer = revisions[: revisions.index(final["revision"]) + 1]
            return any(r.startswith(shown) for r in newer)

        wait_until(caught_up, 30, "the status line showing the run's results revision", 0.5)
        assert page.locator("#status-revision").inner_text() != before

        # the worker names are in the Service tab
        open_tab(page, "Service")
        details = page.locator("#service-details")
        expect(details).to_contain_text(names[0], timeout=DEADLINE_MS)
        no_horizontal_overflow(page, "#service-details")
        shot(page, tmp_path, f"service-tab-{viewport}")

        # the board followed the publish (the run is a partial row of PrefEval mcq)
        open_tab(page, "Leaderboard")
        wait_table(
            page,
            lambda h, r: any(x.get("Model", "").startswith(model) for x in r),
            f"a row for {model}",
        )

        # the queue's id link opens that submission's status
        id_link_href = f"/?status={submission_id}"
        page.goto(id_link_href)
        expect(page.locator("#status-result")).to_be_visible()  # its tab is the one open
        expect(page.locator("#status-result")).to_contain_text(
            re.compile(rf"Submission {submission_id}.*finished", re.S)
        )
        shot(page, tmp_path, f"status-link-{viewport}")
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser
