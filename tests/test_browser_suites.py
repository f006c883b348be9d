"""The leaderboard's columns follow each suite's manifest: PersonaFeedback shows the paper's Table 3
columns, Re-Centering its metric columns; the papers' rows are marked reported and come after every
row computed here (the shared service has some from other tests, or none)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from browser_helpers import choose, expect, launch_chromium, open_page, wait_table  # noqa: E402

TABLE3 = [
    "Specific Easy",
    "Specific Medium",
    "Specific Hard",
    "Specific Avg.",
    "General Easy",
    "General Medium",
    "General Hard",
    "General Avg.",
    "Total",
]


@pytest.fixture(scope="module")
def page(shared_live_service):
    with launch_chromium() as browser, open_page(browser, shared_live_service.base_url) as page:
        yield page


def test_personafeedback_columns_and_reported_rows(page, shared_live_service):
    choose(page, "filter-suite", "PersonaFeedback")
    # the board opens on one setting; these checks read every setting's paper rows
    choose(page, "filter-setting", "(all settings, ranked together)")
    # wait for the table of every setting: the one-setting table drawn before it has these
    # columns too, without the other settings' paper rows (read at once, it raced the redraw)
    headers, rows = wait_table(
        page,
        lambda h, r: (
            "Specific Easy" in h
            and "Explicit" not in h
            and any(x["Model"] == "GPT-4.1" and "Table 3" in x["Source"] for x in r)
        ),
        "the PersonaFeedback columns only, with Table 3's GPT-4.1 row",
    )
    assert all(column in headers for column in TABLE3), headers
    assert "Explicit" not in headers  # PrefEval's tiers are gone with the suite filter
    gpt = next(r for r in rows if r["Model"] == "GPT-4.1" and "Table 3" in r["Source"])
    # Table 3 as printed: GPT-4.1 Specific Easy 90.6, Total Avg. 80.0
    assert (float(gpt["Specific Easy"]), float(gpt["Total"])) == (90.6, 80.0), gpt
    kinds = [r["Kind"] for r in rows]
    assert "reported (paper)" in kinds
    first_reported = kinds.index("reported (paper)")
    assert all(k == "reported (paper)" for k in kinds[first_reported:]), (
        kinds
    )  # never ranked among ours

    choose(page, "filter-tier", "Question type: Specific Avg.")
    headers, rows = wait_table(
        page,
        lambda h, r: "Specific Avg." in h and "Specific Easy" not in h,
        "only the Specific Avg. tier column",
    )
    # paper rows are ordered by score within each protocol they came from (a reward model's rows
    # are never ranked against a generative judge's); the board's own download says each row's
    # protocol, matched to the page's rows by model and source
    board = httpx.get(
        f"{shared_live_service.base_url}/api/v1/leaderboard",
        params={"suite": "personafeedback", "task": "binary_choice", "complete": "true"},
        timeout=30,
    ).json()
    protocol_of = {(r["model_name"], r["source"]): r.get("protocol") or "" for r in board}
    groups: dict[str, list[float]] = {}
    order: list[str] = []
    for r in rows:
        if not r["Specific Avg."]:
            continue
        protocol = protocol_of[(r["Model"].split(" · ")[0].strip(), r["Source"])]
        if not order or order[-1] != protocol:
            assert protocol not in groups, ("a protocol's rows are listed together", order)
            order.append(protocol)
        groups.setdefault(protocol, []).append(float(r["Specific Avg."]))
    assert sum(len(v) for v in groups.values()) > 5
    for protocol, ranked in groups.items():
        assert ranked == sorted(ranked, reverse=True), protocol


def test_recentering_metric_columns(page):
    choose(page, "filter-suite", "Re-Centering Humans")
    choose(page, "filter-task", "Stage 2: attribute relevance")
    choose(
        page, "filter-setting", "(all settings, ranked together)"
    )  # GRPO is a setting of its own
    # the task's own table (Stage 1 has F1 columns too): drawn together with its download links
    expect(page.locator("#leaderboard-downloads a").first).to_have_attribute(
        "href", re.compile("task=relevance")
    )
    # the GRPO row comes with the table of every setting (the one-setting table before it has
    # the same columns: a wait for the columns alone raced that redraw)
    headers, rows = wait_table(
        page,
        lambda h, r: (
            "F1" in h
            and "Specific Easy" not in h
            and any(x["Model"] == "Qwen3-4B + GRPO" for x in r)
        ),
        "the relevance metric columns only, with the GRPO row",
    )
    assert {"Precision", "Recall", "F1"} <= set(headers), headers
    grpo = next(r for r in rows if r["Model"] == "Qwen3-4B + GRPO")
    # Table 3 prints fractions (0.611, 0.674, 0.641): shown as percentages
    assert (float(grpo["Precision"]), float(grpo["Recall"]), float(grpo["F1"])) == (
        61.1,
        67.4,
        64.1,
    ), grpo
