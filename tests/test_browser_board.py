"""The leaderboard people use, driven through Debian's chromium against one live service for the module:
ranks and rank groups on records with known intervals (tests/board_fixture.py), header sorting, search,
the column chooser, model and result pages, plots, the queue, the About tab, per-suite format help and a
390 px phone viewport.

Screenshots go to tests/artifacts/browser/ (gitignored) and to pytest's tmp_path.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")

from board_fixture import EXPECTED_RANKS, SUITE, TASK, board_record, board_records  # noqa: E402
from browser_helpers import (  # noqa: E402
    CHROMIUM,
    DEADLINE_MS,
    api_get,
    choose,
    draw_plots,
    expect,
    launch_chromium,
    open_page,
    read_table,
    screenshot,
    wait_table,
)

from space.data import LATEST_LABEL  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
    ),
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
EARLY_RELEASE = "fx-early"
LONG_TASK = "mcq_turns"  # "Multiple choice behind distractor turns (0-300)"
PAGED_SETTING = "reminder"  # two results with every PrefEval topic: the Topic plot comes in pieces


def topic_records() -> list[dict]:
    from evaluator.registry import all_suites

    topics = next(g for g in all_suites()[SUITE].tasks[TASK].tier_groups if g.name == "topic")
    records = []
    for sid, model, value in (
        ("fx-topics-1", "topics-one", 0.6),
        ("fx-topics-2", "topics-two", 0.4),
    ):
        found = board_record(sid, model, value, value - 0.04, value + 0.04, setting=PAGED_SETTING)
        found["metrics"]["tiers"]["topic"] = {
            tier: {"accuracy": {"value": v, "ci95": [v - 0.08, v + 0.08], "n": 50}}
            for tier, v in ((t, value + k / 100) for k, t in enumerate(topics.tiers))
        }
        records.append(found)
    # a result of the task with the longest title, so its board opens (the Task label's test)
    turns = board_record("fx-turns", "turns-one", 0.5, 0.45, 0.55, parameters=1_000_000)
    records.append({**turns, "task": LONG_TASK})
    return records


@pytest.fixture(scope="module")
def service(module_live_service):
    """The module's live service with the fixture's results published into its store."""
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(module_live_service.data_dir / "results-dataset")
    for i, record in enumerate(board_records()):
        store.publish(record)
        if (
            i == 1
        ):  # a release naming the board with alpha and beta only (the Version selector's test)
            store.release(EARLY_RELEASE, notes="the first two")
    for record in topic_records():  # in another setting: the default view keeps its five rows
        store.publish(record)
    return module_live_service


@pytest.fixture(scope="module")
def browser():
    with launch_chromium() as browser:
        yield browser


@pytest.fixture
def page(browser, service):
    with open_page(browser, service.base_url) as page:
        yield page


def shot(page, tmp_path, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = screenshot(page, tmp_path, name)
    (ARTIFACTS / path.name).write_bytes(path.read_bytes())


def fixture_rows(headers, rows):
    return [r for r in rows if r.get("Model") in EXPECTED_RANKS or r.get("Model") == "tiny-partial"]


def test_default_view_is_one_task_ranked_with_rank_groups(page, tmp_path):
    # The first suite with verified results (the fixture's PrefEval mcq) opens by default.
    expect(page.locator("#filter-suite input[role='combobox']")).to_have_value("PrefEval")
    headers, rows = wait_table(
        page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's five rows"
    )
    assert headers[:4] == ["Rank", "Model", "Total", "95% CI"], headers
    ours = fixture_rows(headers, rows)
    assert [r["Model"] for r in ours] == ["alpha", "beta", "gamma", "delta", "tiny-partial"]
    assert {r["Model"]: r["Rank"] for r in ours if r["Model"] in EXPECTED_RANKS} == {
        m: str(rank) for m, rank in EXPECTED_RANKS.items()
    }
    partial = ours[-1]
    assert partial["Rank"] == "" and partial["Kind"] == "partial run (not ranked)", partial
    # 6 items: under the minimum count, its score and interval are hidden, its count shown
    assert partial["Total"].replace("\n", " ") == "– n=6", partial
    assert partial["95% CI"] == "", partial
    assert partial["Explicit"].startswith("–"), partial  # 3 items: hidden
    assert ours[0]["Total"] == "80.0" and ours[0]["95% CI"] == "76.0–84.0", ours[0]
    assert ours[0]["Type"] == "generative" and ours[0]["Size"] == "1B-10B", ours[0]
    # the service publishes PrefEval mcq's chance/majority rows: every fixture row clears the majority line
    assert all(r["vs. reference"] == "above" for r in ours[:4]), ours
    # rank groups are drawn: rows of rank 1 share a marker class, rank 2 the other
    groups = page.locator("#leaderboard-table tr[role=row][data-id]").evaluate_all(
        "rows => rows.map(r => [r.dataset.id, r.className])"
    )
    group_of = {sid: cls for sid, cls in groups}
    assert "pb-group-odd" in group_of["fx-alpha"] and "pb-group-odd" in group_of["fx-beta"]
    assert "pb-group-even" in group_of["fx-gamma"]
    shot(page, tmp_path, "board-ranked")


def test_sort_by_header_keeps_sections_apart(page, tmp_path):
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
    header = page.locator("#leaderboard-table th[data-col='total']")
    header.click()  # first click: descending (already the order)
    header.click()  # second: ascending
    expect(header).to_have_attribute("aria-sort", "ascending")
    headers, rows = read_table(page)
    ours = [r["Model"] for r in fixture_rows(headers, rows)]
    assert ours == ["delta", "gamma", "beta", "alpha", "tiny-partial"], (
        ours
    )  # partial stays in its section
    page.locator("#leaderboard-table th[data-col='model_name']").click()
    headers, rows = read_table(page)
    names = [r["Model"] for r in rows if r["Rank"]]
    assert names == sorted(names, key=str.lower, reverse=True), names
    # the download links get the view's sort as the pointer reaches one: the same order
    link = page.locator("#leaderboard-downloads a", has_text="CSV")
    link.hover()
    expect(link).to_have_attribute("href", re.compile("sort=model_name%3Adesc"))
    rows = csv.DictReader(io.StringIO(api_get(page, link.get_attribute("href")).text()))
    assert [r["model_name"] for r in rows if r["rank"]] == names
    shot(page, tmp_path, "board-sorted")


def test_search_and_column_chooser(page, tmp_path):
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
    page.locator("#filter-search input, #filter-search textarea").first.fill("ALP")
    headers, rows = wait_table(
        page, lambda h, r: [x["Model"] for x in r] == ["alpha"], "only alpha"
    )
    assert rows[0]["Rank"] == "1"  # its rank among all models, not among the search results
    page.locator("#filter-search input, #filter-search textarea").first.fill("")
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "all rows again")
    # switch the tier columns and the CI off, the license on
    for label in ("Tier columns", "95% CI", "License"):
        page.locator("#column-chooser label", has_text=label).first.click()
    headers, rows = wait_table(
        page,
        lambda h, r: "License" in h and "Explicit" not in h and "95% CI" not in h,
        "the chosen columns",
    )
    assert headers[:3] == ["Rank", "Model", "Total"], headers
    assert next(r for r in rows if r["Model"] == "beta")["License"] == "mit"
    # a fact filter: size
    choose(page, "filter-size", "10B-100B")
    headers, rows = wait_table(
        page, lambda h, r: [x["Model"] for x in r] == ["gamma"], "only gamma (70B)"
    )
    assert rows[0]["Rank"] == "2"
    shot(page, tmp_path, "board-search-columns")


def test_phone_width_shows_model_and_score(browser, service, tmp_path):
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        base_url=service.base_url,
        is_mobile=True,
        has_touch=True,
    )
    try:
        page = context.new_page()
        page.goto("/")
        wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
        row = page.locator("#leaderboard-table tr[data-id='fx-alpha']")
        for column in ("model_name", "total"):
            cell = row.locator("td").nth(1 if column == "model_name" else 2)
            box = cell.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (column, box)
            expect(cell).to_be_visible()
        # the other columns are reachable by scrolling the table, not the page
        wrap = page.locator("#leaderboard-table .pb-board-wrap")
        assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
        shot(page, tmp_path, "board-390px")
    finally:
        context.close()


def test_deep_link_highlights_a_row(page, tmp_path):
    page.goto(f"/?suite={SUITE}&task={TASK}&highlight=fx-gamma")
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
    expect(page.locator("#leaderboard-table tr[data-id='fx-gamma']")).to_have_attribute(
        "aria-current", "true"
    )
    # the URL keeps the link's highlight beside the view it now spells out
    assert "highlight=fx-gamma" in page.url and "setting=zero_shot" in page.url, page.url


def test_version_selector_opens_a_release_and_an_older_revision(page, service, tmp_path):
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(service.data_dir / "results-dataset")
    release = next(r for r in store.releases() if r.name == EARLY_RELEASE)
    first = next(
        v for v in reversed(store.versions()) if "fx-alpha" in v.message
    )  # the publish of alpha alone
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
    expect(page.locator("#version-note")).to_have_count(0)

    choose(
        page,
        "filter-version",
        f"Release {EARLY_RELEASE} ({release.created_at[:10]}, {release.revision[:8]})",
    )
    wait_table(
        page,
        lambda h, r: [x["Model"] for x in fixture_rows(h, r)] == ["alpha", "beta"],
        "the release's two rows",
    )
    expect(page.locator("#version-note")).to_contain_text(EARLY_RELEASE)
    # the downloads and the plots are of the version shown
    csv_link = page.locator("#leaderboard-downloads a", has_text="CSV").get_attribute("href")
    assert f"revision={EARLY_RELEASE}" in csv_link, csv_link
    downloaded = api_get(page, csv_link).text()
    assert "fx-beta" in downloaded and "fx-gamma" not in downloaded
    size_plot = api_get(page, page.locator("#plot-size").get_attribute("data-src")).json()
    points = [name for trace in size_plot["figures"][0]["data"] for name in trace["text"]]
    assert "alpha" in points and "gamma" not in points, points

    # a deep link to an older revision (by its short sha) opens it, with the selector showing it
    page.goto(f"/?suite={SUITE}&task={TASK}&revision={first.revision[:12]}")
    wait_table(
        page, lambda h, r: [x["Model"] for x in fixture_rows(h, r)] == ["alpha"], "alpha alone"
    )
    expect(page.locator("#filter-version input[role='combobox']")).to_have_value(
        first.revision[:12]
    )
    shot(page, tmp_path, "board-older-revision")
    # and back to the newest: every row, no note
    choose(page, "filter-version", LATEST_LABEL)
    wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the newest version's rows")
    expect(page.locator("#version-note")).to_have_count(0)

    # a revision that does not exist says so (no traceback, no 500)
    page.goto(f"/?suite={SUITE}&task={TASK}&revision=0000000000")
    expect(page.locator("#version-missing")).to_contain_text("0000000000", timeout=DEADLINE_MS)


def plot_texts(page, selector: str) -> dict:
    """Once Plotly has drawn every figure under `selector`: per figure its title, legend entries,
    axis tick labels, and every text element whose box leaves the figure's own box (clipped)."""
    draw_plots(page, selector)
    return page.locator(selector).evaluate("""root => [...root.querySelectorAll('.js-plotly-plot')]
        .map(fig => {
          const box = fig.getBoundingClientRect();
          const texts = [...fig.querySelectorAll('text')].filter(t => t.textContent.trim());
          return {
            title: (fig.querySelector('.gtitle') || {textContent: ''}).textContent,
            legend: [...fig.querySelectorAll('.legendtext')].map(t => t.textContent),
            ticks: [...fig.querySelectorAll('.ytick text, .xtick text')].map(t => t.textContent),
            clipped: texts.filter(t => { const r = t.getBoundingClientRect();
                return r.width && (r.left < box.left - 1 || r.right > box.right + 1); })
              .map(t => t.textContent),
            right: box.right,
          };
        })""")


@pytest.mark.parametrize("width", [1400, 390])
def test_plots_are_interactive_distinct_and_unclipped(browser, service, tmp_path, width):
    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=service.base_url
    )
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    try:
        page.goto(f"/?suite={SUITE}&task={TASK}")
        wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
        figures = plot_texts(page, "#plots")
        by_title = {f["title"].split(" · ")[0]: f for f in figures}
        # per-tier bars: the three results compared by default, one figure per tier group
        form = by_title["Preference form"]
        assert form["legend"] == ["alpha", "beta", "gamma"], form["legend"]
        assert {"Total", "Explicit", "Implicit (choice)"} <= set(form["ticks"]), form["ticks"]
        assert "Accuracy (%)" in form["title"]  # the metric is named
        # score vs size: the three with a known size; the settings figure has every model
        size = by_title["Total against model size"]
        assert size["legend"] in ([], ["zero_shot"]), size
        settings = by_title["Total by setting"]
        assert {"alpha", "beta", "gamma", "delta"} <= set(settings["ticks"]), settings
        for figure in figures:  # nothing cut off, nothing past the page's width
            assert not figure["clipped"], figure
            assert figure["right"] <= width + 1, figure
            assert len(figure["legend"]) == len(set(figure["legend"])), figure["legend"]
        # interactive: hovering a bar shows its value and interval
        page.locator("#plot-tiers .js-plotly-plot .bars path").first.hover(force=True)
        expect(page.locator("#plot-tiers .hoverlayer")).to_contain_text("95% CI")
        page.locator("#leaderboard-plots").scroll_into_view_if_needed()
        shot(page, tmp_path, f"board-plots-{width}")
    finally:
        context.close()


def test_plot_labels_tell_rows_of_one_model_apart(page):
    """PersonaFeedback's paper reports GPT-4.1 in Tables 3 and 7: two legend entries, two colours."""
    page.goto("/?suite=personafeedback&task=binary_choice&setting=persona")
    wait_table(page, lambda h, r: len([x for x in r if x["Model"] == "GPT-4.1"]) == 2, "GPT-4.1 x2")
    headers, rows = read_table(page)
    twins = [r["Distinct"] for r in rows if r["Model"] == "GPT-4.1"]
    assert sorted(twins) == ["Table 3", "Table 7"], twins  # said in the model cell itself
    figures = plot_texts(page, "#plots")
    legend = figures[0]["legend"]  # the three best rows are compared by default
    assert {"GPT-4.1 (Table 7)", "GPT-4.1 (Table 3)"} <= set(legend), legend
    assert len(legend) == len(set(legend)), legend


def task_label_bounds(page) -> dict:
    """The Task dropdown's input: where its text may run (content box), where the arrow starts."""
    return page.locator("#filter-task").evaluate("""box => {
        const input = box.querySelector('input'), style = getComputedStyle(input);
        const r = input.getBoundingClientRect();
        const arrow = box.querySelector('.icon-wrap, svg').getBoundingClientRect();
        return {value: input.value, textEnd: r.right - parseFloat(style.paddingRight),
                arrowStart: arrow.left, overflow: style.textOverflow,
                cut: input.scrollWidth > input.clientWidth, page: innerWidth};
    }""")


def test_long_task_label_ends_before_the_arrow(page, tmp_path):
    """PrefEval's longest task title at 1,400 px (whole) and at 390 px (cut with an ellipsis): its
    text never runs under the dropdown's arrow. One page, resized: the layout follows the width."""
    page.goto(f"/?suite={SUITE}&task={LONG_TASK}")
    wait_table(page, lambda h, r: "turns-one" in [x["Model"] for x in r], "turns-one's row")
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        task = page.locator("#filter-task")
        if width == 390:  # a line of its own on a phone
            page.wait_for_function(
                "w => document.querySelector('#filter-task').offsetWidth > w / 2", arg=width
            )
        found = task_label_bounds(page)
        assert found["value"] == "Multiple choice behind distractor turns (0-300)", found
        # the text stops short of the arrow; what does not fit ends in an ellipsis
        assert found["textEnd"] <= found["arrowStart"], found
        assert found["overflow"] == "ellipsis", found
        # at 1,400 px the Task is wider than the other filters: whole; a phone's line cuts it
        assert found["cut"] == (width == 390), found
        task.scroll_into_view_if_needed()
        shot(page, tmp_path, f"board-task-label-{width}")


def test_a_long_tier_group_is_paged_on_a_phone(browser, service, tmp_path):
    """PrefEval's 20 topics: two figures of 10 at 390 px, every topic once, the same legend in
    each, nothing clipped."""
    from evaluator.registry import all_suites
    from space.display import column_labels

    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=service.base_url)
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    try:
        page.goto(f"/?suite={SUITE}&task={TASK}&setting={PAGED_SETTING}")
        wait_table(
            page,
            lambda h, r: {"topics-one", "topics-two"} <= {x["Model"] for x in r},
            "the two results with topics",
        )
        figures = [f for f in plot_texts(page, "#plots") if not f["title"].startswith("Total ")]
        titles = [f["title"].split(" · ")[0] for f in figures]
        assert titles == ["Preference form", "Topic (1 of 2)", "Topic (2 of 2)"], titles
        topics = next(g for g in all_suites()[SUITE].tasks[TASK].tier_groups if g.name == "topic")
        # a wrapped label is one tick of several lines (tspans): compare without the breaks
        ticks = [t.replace(" ", "") for f in figures[1:] for t in f["ticks"] if t[:1].isalpha()]
        labels = column_labels()
        wanted = [labels[f"topic/{t}"].replace(" ", "") for t in topics.tiers]
        assert sorted(ticks) == sorted(wanted), ticks  # each topic once
        for figure in figures:
            assert figure["legend"] == ["topics-one", "topics-two"], figure
            assert not figure["clipped"] and figure["right"] <= 391, figure
        assert [len([t for t in f["ticks"] if t[:1].isalpha()]) for f in figures[1:]] == [10, 10]
        page.locator("#plot-tiers").scroll_into_view_if_needed()
        shot(page, tmp_path, "board-plots-paged-390")
        page.locator("#plot-tiers .js-plotly-plot").nth(2).screenshot(
            path=str(ARTIFACTS / "board-plots-paged-390-piece2.png")
        )
    finally:
        context.close()


def test_model_and_result_pages(page, tmp_path):
    """The pages' layout and the way between them (what they say: tests/unit/test_tab_handlers.py):
    the model page's history and plots drawn whole, its link to the result page, and a page for
    a model nobody published."""
    page.goto("/model/alpha")
    expect(page.locator("h1")).to_have_text("alpha")
    expect(page.locator("table.history tbody tr")).to_have_count(1)
    figures = plot_texts(page, "body")  # the same interactive per-tier plots as the board's
    assert {"Total", "Explicit", "Implicit (choice)"} <= set(figures[0]["ticks"]), figures
    assert not any(f["clipped"] for f in figures), figures
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    shot(page, tmp_path, "model-page")

    base = page.url.split("/model/")[0]
    page.locator("table.history a", has_text="result").first.click()
    expect(page).to_have_url(f"{base}/result/fx-alpha")
    expect(page.locator("table.scores tbody tr").first).to_contain_text("76.0–84.0")
    expect(page.locator("pre.reproduce")).to_contain_text("personaboard evaluate --model alpha")
    shot(page, tmp_path, "result-page")
    page.goto("/model/no-such-model")
    expect(page.locator("h1")).to_have_text("Not found")


def test_about_tab_from_the_manifests(page, tmp_path):
    from evaluator.registry import all_suites

    page.get_by_role("tab", name="About").click()
    about = page.locator("#about")
    expect(about).to_contain_text("Current results")
    text = about.inner_text()
    for suite in all_suites().values():
        assert suite.title in text and suite.license.split(" ")[0] in text, suite.name
        for task in suite.tasks.values():
            assert task.title in text, task.key
    assert "CC BY-NC 4.0" in text and "Submission rules" in text
    assert "not installed here" in text  # suites whose split this server lacks say so
    shot(page, tmp_path, "about")


def test_submit_tab_explains_each_suites_format(page, tmp_path):
    page.get_by_role("tab", name="Submit predictions").click()
    help_text = page.locator("#submit-format")
    expect(help_text).to_contain_text("field answer")
    assert "one of A, B, C, D" in help_text.inner_text()
    example = page.locator("#submit-format a.pb-example")
    with page.expect_download() as info:
        example.click()
    lines = [json.loads(line) for line in Path(info.value.path()).read_text().splitlines()]
    assert len(lines) == 3 and all(set(line) == {"id", "answer"} for line in lines), lines

    # a suite whose split is not installed here: marked, its format still explained, one note
    # saying why (with the operator's command), and no upload box or button to try anyway
    choose(page, "submit-suite", "PersonaFeedback (split not installed here)")
    expect(help_text).to_contain_text("field label")
    assert "one of 1, 2" in help_text.inner_text()
    note = page.locator("#inputs-link")
    expect(note).to_contain_text("not installed on this server")
    expect(note).to_contain_text("personaboard splits install personafeedback")
    assert page.locator("#inputs-link a").count() == 0  # no link to a raw 409
    body = page.inner_text("body")
    assert body.count("not installed on this server") == 1, body  # said once, not twice
    expect(page.locator("#submit-file")).to_be_hidden()
    expect(page.locator("#submit-button")).to_be_hidden()
    shot(page, tmp_path, "submit-format")


@pytest.mark.model
def test_live_progress_queue_and_auto_refresh(browser, service, tmp_path):
    """A tiny random model on 30 items: the status's progress moves at least twice while it runs
    (items, tokens/s, time left), the Queue tab lists it, and on finish the board shows its row."""
    import re
    import time

    from browser_helpers import open_tab, set_checkboxes
    from live_helpers import register_model
    from tiny_models import build_tiny_model

    model, limit = (
        "tiny-progress",
        200,
    )  # several chunks of 64: progress moves between and within them
    register_model(service, model, build_tiny_model(tmp_path / "tiny", "generative"))
    with open_page(browser, service.base_url, token=service.token) as page:
        open_tab(page, "Submit a model")
        choose(page, "model-name", model)
        set_checkboxes(page, "model-settings", ["zero_shot"])
        page.locator("#model-limit input").fill(str(limit))
        page.locator("#model-limit input").blur()
        page.locator("#model-submit").click()
        status = page.locator("#model-status")
        expect(status).to_contain_text(model, timeout=DEADLINE_MS)
        seen: list[str] = []
        deadline = time.monotonic() + 300
        while "State: finished" not in (text := status.inner_text()):
            assert "failed" not in text and time.monotonic() < deadline, text
            found = re.search(rf"Progress: (\d+) of {limit} items[^\n]*", text)
            if found and (not seen or seen[-1] != found.group(0)):
                seen.append(found.group(0))
                if len(seen) == 2:
                    shot(page, tmp_path, "model-progress")
            page.wait_for_timeout(150)
        done = [int(re.search(r"(\d+) of", line).group(1)) for line in seen]
        assert len(seen) >= 3, f"progress changed fewer than twice while running: {seen}"
        assert done == sorted(done) and done[-1] <= limit, seen
        assert any("tokens/s" in line and "left" in line for line in seen), seen
        submission_id = re.search(r"Submission (\w+)", text).group(1)

        # The queue lists it (finished now) with everyone's columns.
        open_tab(page, "Queue")
        row = page.locator(f"#queue-table tr[data-id='{submission_id}']")
        expect(row).to_be_visible()
        headers = page.locator("#queue-table th").all_inner_texts()
        assert headers[:8] == [
            "Submitted",
            "Id",
            "Model",
            "Suite / task",
            "Setting",
            "State",
            "Position",
            "Progress",
        ], headers
        assert {"Time left", "Owner", "Reason"} <= set(headers)
        cells = dict(zip(headers, row.locator("td").all_inner_texts()))
        assert (
            cells["Model"] == model
            and cells["State"] == "finished"
            and cells["Progress"] == f"{limit} / {limit}"
        ), cells
        shot(page, tmp_path, "queue")

        # The board followed: PrefEval mcq, this run's partial row outlined, without Refresh.
        open_tab(page, "Leaderboard")
        mine = page.locator(f"#leaderboard-table tr[data-id='{submission_id}']")
        expect(mine).to_have_attribute("aria-current", "true")
        expect(mine).to_contain_text(f"n={limit}")
        shot(page, tmp_path, "board-after-finish")


@pytest.mark.parametrize("width", [1400, 390])
def test_url_holds_the_view_and_a_shared_link_opens_it(browser, service, tmp_path, width):
    """Tier, search, columns, sort and setting go into the URL as they change; a reload and a link
    opened in another browser context show the same view. Headers name the metric and the line."""

    def open_at(url=None):
        context = browser.new_context(
            viewport={"width": width, "height": 900}, base_url=service.base_url
        )
        context.set_default_timeout(DEADLINE_MS)
        page = context.new_page()
        page.goto(url or f"/?suite={SUITE}&task={TASK}")
        return context, page

    def same_view(page):
        headers, rows = wait_table(
            page,
            lambda h, r: [x["Model"] for x in r] == ["alpha"] and "Kind" not in h,
            "alpha alone, ranked by Explicit, without the Kind column",
        )
        assert headers[2] == "Explicit", headers  # ranked by the tier
        ranked = page.locator("#leaderboard-table th[data-col='form/explicit']")
        expect(ranked).to_contain_text("Accuracy")  # the header names the metric
        expect(page.locator("#leaderboard-table th[data-col='model_name']")).to_have_attribute(
            "aria-sort", "ascending"
        )
        expect(page.locator("#filter-tier input[role='combobox']")).to_have_value(
            "Preference form: Explicit"
        )
        expect(page.locator("#filter-search input, #filter-search textarea").first).to_have_value(
            "alp"
        )
        expect(page.locator("#filter-setting input[role='combobox']")).to_have_value("zero_shot")

    context, page = open_at()
    try:
        wait_table(page, lambda h, r: len(fixture_rows(h, r)) == 5, "the fixture's rows")
        total = page.locator("#leaderboard-table th[data-col='total']")
        expect(total).to_have_text("Total · Accuracy")
        expect(page.locator("#leaderboard-table th[data-col='reference']")).to_contain_text(
            "vs. Majority"
        )
        choose(page, "filter-tier", "Preference form: Explicit")
        page.locator("#filter-search input, #filter-search textarea").first.fill("alp")
        page.locator("#column-chooser label", has_text="Kind").first.click()
        wait_table(page, lambda h, r: [x["Model"] for x in r] == ["alpha"] and "Kind" not in h, "")
        page.locator("#leaderboard-table th[data-col='model_name']").click()  # descending
        page.locator("#leaderboard-table th[data-col='model_name']").click()  # ascending
        page.wait_for_function(
            """() => { const p = new URLSearchParams(location.search);
                return p.get('tier') === 'form/explicit' && p.get('q') === 'alp'
                    && p.get('sort') === 'model_name:asc' && !(p.get('columns') || 'x').includes('row_kind')
                    && p.get('setting') === 'zero_shot'; }"""
        )
        shared = page.url
        shot(page, tmp_path, f"url-view-{width}")
        page.reload()
        same_view(page)
    finally:
        context.close()
    context, page = open_at(shared.split(service.base_url, 1)[1])  # someone else opens the link
    try:
        same_view(page)
        shot(page, tmp_path, f"url-view-shared-{width}")
    finally:
        context.close()
