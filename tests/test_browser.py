"""The Gradio UI driven through Debian's chromium (Playwright, sync API) against a live service.

    1. Submit tab: download the public inputs, upload a predictions file of known accuracy, watch
       the status reach "finished"; Leaderboard tab: the row, the filters, the downloads.
    2. A bad file: the status names the line and the field, and nothing is queued.

Screenshots go to pytest's tmp_path (and to $PERSONABOARD_BROWSER_ARTIFACTS when set), so a
person can look at what the browser saw.
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
SUITE, TASK = "prefeval", "mcq"
SUBMIT_SETTING = "rag"  # not the default choice, so the test really drives the dropdown
STATE_TIMEOUT_S = 120

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
expect = sync_api.expect

from browser_helpers import (  # noqa: E402  (after the importorskip above)
    DEADLINE_MS,
    choose,
    download,
    launch_chromium,
    open_page,
    open_tab,
    row_for,
    screenshot,
    submissions,
    wait_table,
)


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser


@pytest.fixture
def ui(browser, shared_live_service):
    """A fresh context (own cookies/storage, downloads allowed) on the live service's page."""
    with open_page(browser, shared_live_service.base_url, token=shared_live_service.token) as page:
        yield page


@pytest.fixture(scope="module")
def items():
    from evaluator.registry import get_task

    return get_task(SUITE, TASK).load_split().items


# -- helpers --------------------------------------------------------------------------------------
def write_predictions(path: Path, items, correct_form: str) -> float:
    """Right exactly on the items whose form is correct_form, wrong elsewhere; returns the accuracy."""
    wrong = {"A": "B", "B": "C", "C": "D", "D": "A"}
    right = 0
    with open(path, "w") as out:
        for item in items:
            ok = item.tiers["form"] == correct_form
            right += ok
            out.write(
                json.dumps({"id": item.id, "answer": item.gold if ok else wrong[item.gold]}) + "\n"
            )
    return right / len(items)


def upload(page, path: Path) -> None:
    page.set_input_files("#submit-file input[type='file']", str(path))
    # Gradio uploads the file to the server first; Submit before that sees no file.
    # (the link to the uploaded copy; the name's text may be split into stem and extension)
    expect(page.locator(f"#submit-file a[href$='/{path.name}']")).to_be_visible(timeout=DEADLINE_MS)


# -- tests ----------------------------------------------------------------------------------------
def test_submit_then_leaderboard_filters_and_downloads(ui, items, tmp_path):
    page = ui
    model = f"browser-model-{uuid.uuid4().hex[:8]}"

    # Submit tab: the public inputs, 3000 lines without gold.
    open_tab(page, "Submit predictions")
    expect(page.locator("#submit-suite input[role='combobox']")).to_have_value("PrefEval")
    link = page.locator("#inputs-link a", has_text="Download public inputs")
    expect(link).to_be_visible()
    body = download(page, link).decode("utf-8")
    lines = body.splitlines()
    assert len(lines) == 3000 == len(items)
    records = [json.loads(line) for line in lines]
    assert all("gold" not in r and "answer" not in r for r in records), (
        "public inputs leak gold labels"
    )
    assert [r["id"] for r in records] == [item.id for item in items]

    # A predictions file right on exactly the 'explicit' items: 1000 of 3000 -> 33.3.
    predictions = tmp_path / "predictions.jsonl"
    accuracy = write_predictions(predictions, items, "explicit")
    assert f"{accuracy * 100:.1f}" == "33.3"

    before = {s["id"] for s in submissions(page)}
    upload(page, predictions)
    choose(page, "submit-setting", SUBMIT_SETTING)
    expect(page.locator("#submit-setting-info")).to_contain_text(SUBMIT_SETTING)
    page.locator("#submit-model textarea, #submit-model input").first.fill(model)
    page.locator("#submit-button").click()

    status = page.locator("#submit-status")
    expect(status).to_contain_text(model, timeout=DEADLINE_MS)
    # the service stored its own copy and removed the upload: the file box is empty again (its
    # link would lead nowhere, and a second submit would need the box's X first)
    expect(page.locator(f"#submit-file a[href$='/{predictions.name}']")).to_have_count(0)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "State: finished" not in (text := status.inner_text()):
        assert "State: failed" not in text and "Error" not in text, text
        assert time.monotonic() < deadline, f"submission never finished; status:\n{text}"
        page.wait_for_timeout(500)
    assert "accuracy: 33.3" in text, text
    submission_id = re.search(r"Submission ([0-9a-f]{8,})", text).group(1)
    new = [s for s in submissions(page) if s["id"] not in before]
    assert [s["id"] for s in new] == [submission_id]
    assert new[0]["setting"] == SUBMIT_SETTING and new[0]["model_name"] == model
    screenshot(page, tmp_path, "submit")

    # The status links to the row; the leaderboard redrew itself on finish (no Refresh): this
    # submission's suite and task, its row outlined, Total 33.3 among all tiers' columns.
    row_link = page.locator("#submit-status a.pb-row-link")
    assert f"highlight={submission_id}" in row_link.get_attribute("href")
    assert (
        page.locator("#submit-status a.pb-result-link").get_attribute("href")
        == f"/result/{submission_id}"
    )
    open_tab(page, "Leaderboard")
    expect(page.locator("#filter-suite input[role='combobox']")).to_have_value("PrefEval")
    expect(page.locator(f"#leaderboard-table tr[data-id='{submission_id}']")).to_have_attribute(
        "aria-current", "true"
    )
    headers, rows = wait_table(page, lambda h, r: row_for(r, model), f"a row for {model}")
    row = row_for(rows, model)
    assert row["Total"] == "33.3", row
    assert row["Kind"] == "verified" and row["Setting"] == SUBMIT_SETTING and row["Rank"], row
    assert {"Explicit", "Implicit (choice)", "Implicit (persona)"} <= set(headers), headers
    assert (row["Explicit"], row["Implicit (choice)"], row["Implicit (persona)"]) == (
        "100.0",
        "0.0",
        "0.0",
    ), row
    screenshot(page, tmp_path, "leaderboard")

    # Filters: suite, setting, then a tier: the columns narrow to that tier.
    choose(page, "filter-suite", "PrefEval")
    choose(page, "filter-setting", SUBMIT_SETTING)
    headers, rows = wait_table(
        page,
        # the setting's rows and the task's reference lines (their own setting, in every view)
        lambda h, r: (
            r
            and all(x["Setting"] in (SUBMIT_SETTING, "reference") for x in r)
            and any(x["Setting"] == "reference" for x in r)
            and row_for(r, model)
        ),
        f"only setting {SUBMIT_SETTING} rows and the reference lines",
    )
    choose(page, "filter-tier", "Preference form: Explicit")
    headers, rows = wait_table(
        page,
        lambda h, r: "Explicit" in h and "Implicit (choice)" not in h and row_for(r, model),
        "only the Explicit tier column",
    )
    assert not any(h.startswith("Topic") or h in ("Implicit (persona)",) for h in headers), headers
    row = row_for(rows, model)
    assert row["Explicit"] == "100.0" and row["Total"] == "33.3", row
    shown_models = [r["Model"] for r in rows if r["Kind"] == "verified"]
    screenshot(page, tmp_path, "leaderboard-filtered")

    # Downloads: the filtered table, at full precision, in all three formats.
    import pandas as pd

    links = page.locator("#leaderboard-downloads a")
    for fmt in ("CSV", "JSON", "PARQUET"):
        href = links.filter(has_text=fmt).get_attribute("href")
        assert (
            f"setting={SUBMIT_SETTING}" in href
            and "tier=form%2Fexplicit" in href
            and "suite=prefeval" in href
        ), href
    frames = {
        "CSV": pd.read_csv(io.BytesIO(download(page, links.filter(has_text="CSV")))),
        "JSON": pd.read_json(
            io.BytesIO(download(page, links.filter(has_text="JSON"))), orient="records"
        ),
        "PARQUET": pd.read_parquet(io.BytesIO(download(page, links.filter(has_text="PARQUET")))),
    }
    for fmt, frame in frames.items():
        verified = list(frame.loc[frame["row_kind"] == "computed", "model_name"])
        assert verified == shown_models, (fmt, verified, shown_models)
        # the setting's rows, and the task's reference lines (setting `reference`: every view's)
        assert set(frame["setting"]) == {SUBMIT_SETTING, "reference"}, fmt
        assert set(frame.loc[frame["setting"] == "reference", "row_kind"]) == {"reference"}, fmt
        assert set(frame["suite"]) == {SUITE}, fmt
        tier_columns = [c for c in frame.columns if "/" in c]
        assert tier_columns == ["form/explicit"], (fmt, list(frame.columns))
        mine = frame[frame["model_name"] == model].iloc[0]
        assert mine["form/explicit"] == pytest.approx(1.0), fmt
        assert mine["total"] == pytest.approx(accuracy), fmt  # full precision, not the rounded 33.3

    # A reload forgets the page's state but not this browser's submissions: the status tab lists it.
    page.reload()
    expect(page.locator("#leaderboard-table")).to_be_visible()
    open_tab(page, "Submission status")
    choose(page, "status-mine", f"finished · {model} ({SUITE}/{TASK}, {SUBMIT_SETTING})")
    expect(page.locator("#status-id input, #status-id textarea").first).to_have_value(submission_id)
    expect(page.locator("#status-result")).to_contain_text("accuracy: 33.3")


def test_bad_file_is_rejected_with_line_and_field_and_nothing_is_queued(ui, items, tmp_path):
    page = ui
    model = f"browser-bad-{uuid.uuid4().hex[:8]}"
    bad = tmp_path / "bad-predictions.jsonl"
    lines = [json.dumps({"id": item.id, "answer": item.gold}) for item in items]
    lines[1] = "{this is not json"
    lines[2] = json.dumps({"id": items[2].id, "answer": "E"})
    bad.write_text("\n".join(lines) + "\n")

    before = submissions(page)
    open_tab(page, "Submit predictions")
    upload(page, bad)
    page.locator("#submit-model textarea, #submit-model input").first.fill(model)
    page.locator("#submit-button").click()

    status = page.locator("#submit-status")
    expect(status).to_contain_text("Error", timeout=DEADLINE_MS)
    text = status.inner_text()
    assert "line 2" in text and "not valid JSON" in text, text
    assert re.search(r"line 3, field .?answer.?: 'E' is not one of A-D", text), text
    assert "State:" not in text, text
    screenshot(page, tmp_path, "submit-error")

    page.wait_for_timeout(1500)  # the 1 s status poll must not replace the error with anything
    assert status.inner_text() == text
    after = submissions(page)
    assert [s["id"] for s in after] == [s["id"] for s in before], "a rejected file was recorded"
    assert not any(s["model_name"] == model for s in after)
