"""The tabs' handlers in process, no browser: each is a plain function from the controls' values
(and a link's query) and the services to what the tab shows (space/tabs/*.py, space/pages.py), so
the first screen's choice, a link's view, the filters, the highlighted row, the live head and the
items of a result are checked here; tests/test_browser_*.py keep the layout and the round trip.

The services are real stores: a results dataset in a folder (git), the submissions' SQLite, the
read path over them."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path

import gradio as gr
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from board_fixture import SUITE, TASK, board_record, board_records  # noqa: E402

from leaderboard.board import manifest_tier_order  # noqa: E402
from leaderboard.readpath import LeaderboardCache  # noqa: E402
from leaderboard.store import LocalDatasetStore  # noqa: E402
from space.choices import (  # noqa: E402
    ALL,
    suite_choices,
    task_setting_choices,
    tier_choices,
)
from space.data import LATEST  # noqa: E402
from space.tabs import explorer, leaderboard, overview  # noqa: E402
from space.tabs.leaderboard import NO_TIER, BoardControls  # noqa: E402
from submissions.records import Submission, SubmissionStore, utc_now  # noqa: E402


class Services:
    """What the tabs read of submissions/service.py's Services, over real stores (the handlers
    never queue, so no Redis)."""

    def __init__(self, folder: Path):
        self.results = LocalDatasetStore(folder / "results")
        self.records = SubmissionStore(folder / "submissions.sqlite3")
        self.board = LeaderboardCache(self.results, manifest_tier_order)

    def results_head(self) -> str | None:
        return self.results.head_revision()

    def submission(self, submission_id: str):
        return self.records.get(submission_id) if submission_id else None


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """The board fixture's five PrefEval mcq rows (zero_shot), a release after the first two, and
    one result in another setting."""
    services = Services(tmp_path_factory.mktemp("board"))
    for i, record in enumerate(board_records()):
        services.results.publish(record)
        if i == 1:
            services.results.release("early", notes="alpha and beta")
    services.results.publish(board_record("fx-cot", "cot-one", 0.6, 0.55, 0.65, setting="cot"))
    return services


def controls(**changes) -> BoardControls:
    return BoardControls(SUITE, TASK, "zero_shot", **changes)


def row_ids(table: str) -> list[str]:
    return [part.split('"', 1)[0] for part in table.split('data-id="')[1:]]


# -- the Leaderboard tab --------------------------------------------------------------------------
def test_the_first_screen_is_the_task_with_verified_rows_not_the_first_choice(board):
    first_choice = suite_choices()[0][1]
    assert first_choice != SUITE, "the fixture's suite is listed first: this would check nothing"
    first = leaderboard.first_controls(board)
    assert (first.suite, first.task, first.setting) == (SUITE, TASK, "zero_shot")
    assert first == leaderboard.link_controls(board, {})  # as a page load without a link


def test_the_suite_box_shows_the_default_from_the_first_render(board):
    """The Blocks' own config holds the default (no wait for the page's load event)."""
    with gr.Blocks() as ui:
        leaderboard.build_leaderboard_tab(ui, board)
    shown = {
        block.elem_id: block
        for block in ui.blocks.values()
        if str(getattr(block, "elem_id", "")).startswith("filter-")
    }
    assert shown["filter-suite"].value == SUITE
    assert shown["filter-task"].value == TASK
    assert TASK in {value for _, value in shown["filter-task"].choices}, shown["filter-task"]
    assert shown["filter-setting"].value == "zero_shot"


def test_a_link_names_the_view_and_what_it_names_wrong_falls_back(board):
    linked = leaderboard.link_controls(
        board,
        {
            "suite": SUITE,
            "task": "mcq_turns",
            "setting": "reminder",
            "tier": "form/explicit",
            "type": "generative",
            "q": "x" * 300,
            "columns": "ci,nonsense,license",
            "highlight": "fx-beta",
            "revision": "early",
        },
    )
    assert (linked.suite, linked.task, linked.setting) == (SUITE, "mcq_turns", "reminder")
    assert (linked.tier, linked.model_type, linked.size) == ("form/explicit", "generative", ALL)
    assert linked.search == "x" * 200 and list(linked.columns or []) == ["ci", "license"]
    assert (linked.highlight, linked.version, linked.revision) == ("fx-beta", "early", "early")
    wrong = leaderboard.link_controls(
        board, {"suite": SUITE, "task": "nope", "setting": "nope", "tier": "form/nope"}
    )
    assert (wrong.task, wrong.setting, wrong.tier) == (TASK, "zero_shot", NO_TIER)
    assert wrong.revision is None
    # a suite the server does not have: the first screen
    assert leaderboard.link_controls(board, {"suite": "nope"}).suite == SUITE


def test_a_chosen_suite_and_task_bring_their_settings_and_tiers(board):
    suite = leaderboard.chosen_suite(board, SUITE)
    assert (suite.task, suite.setting, suite.tier) == (TASK, "zero_shot", NO_TIER)
    assert suite.settings[0] == (leaderboard.ALL_SETTINGS, ALL)
    assert "form/explicit" in {value for _, value in suite.tiers[1:]}
    # the task's own settings (its check_setting hook, the server's rule), all of them first
    assert suite.settings[1:] == task_setting_choices(SUITE, TASK)
    turns = leaderboard.chosen_task(board, SUITE, "mcq_turns")
    assert turns.settings[1:] == task_setting_choices(SUITE, "mcq_turns")
    assert (turns.task, turns.tier) == ("mcq_turns", NO_TIER)
    assert {value for _, value in turns.tiers[1:]} == {
        value for _, value in tier_choices(SUITE, "mcq_turns")
    }


def test_the_board_ranks_filters_and_outlines_the_highlighted_row(board):
    view = leaderboard.board_view(board, controls(highlight="fx-beta"))
    assert row_ids(view.table) == ["fx-alpha", "fx-beta", "fx-gamma", "fx-delta", "fx-partial"]
    assert 'data-id="fx-beta" style="outline:3px solid #f59e0b" aria-current="true"' in view.table
    assert view.board is not None and len(view.board) == 5
    head = board.results_head()
    assert f"zero_shot-{head[:12]}.csv" in view.downloads  # the file names its revision
    searched = leaderboard.board_view(board, controls(search="ALP", model_type="generative"))
    assert row_ids(searched.table) == ["fx-alpha"]
    assert searched.board is not None and len(searched.board) == 5  # ranks of the whole view
    empty = leaderboard.board_view(board, controls(search="nobody"))
    assert "No results match these filters" in empty.table


def test_an_older_version_shows_its_rows_and_says_so(board):
    early = leaderboard.board_view(board, controls(version="early"))
    assert row_ids(early.table.split("</p>", 1)[1]) == ["fx-alpha", "fx-beta"]
    assert 'id="version-note"' in early.table and "revision=early" in early.downloads
    missing = leaderboard.board_view(board, controls(version="no-such-version"))
    assert 'id="version-missing"' in missing.table and missing.board is None
    unchosen = leaderboard.board_view(board, BoardControls(None, None))
    assert "Choose a suite and a task" in unchosen.table and unchosen.board is None


def test_the_choices_that_come_with_a_board(board):
    view = leaderboard.board_view(board, controls())
    assert view.board is not None
    found = leaderboard.board_choices(view.board)
    assert found.licenses[0] == ALL and found.licenses[-1] == "unknown"  # delta's facts
    assert {"apache-2.0", "mit", "llama3"} <= set(found.licenses)
    assert found.default_compared == ["fx-alpha", "fx-beta", "fx-gamma"]
    assert len({label for label, _ in found.compared}) == len(found.compared) == 5


def test_plots_name_their_version_and_at_most_a_few_results():
    many = [f"r{i}" for i in range(20)]
    latest = leaderboard.plots_html(SUITE, TASK, "zero_shot", many, LATEST)
    assert "revision" not in latest and "r7" in latest and "r19" not in latest
    assert "revision=early" in leaderboard.plots_html(SUITE, TASK, ALL, [], "early")
    assert leaderboard.plots_html(None, TASK, ALL, many) == ""


def test_a_finished_submission_opens_its_task_with_its_row_outlined(tmp_path):
    services = Services(tmp_path)
    services.records.add(
        Submission(
            id="mine",
            created_at=utc_now(),
            kind="predictions",
            suite=SUITE,
            task="mcq_turns",
            setting="cot",
            model_name="m",
        )
    )
    found = leaderboard.finished_controls(services, "mine")
    assert found == BoardControls(SUITE, "mcq_turns", "cot", highlight="mine")
    assert leaderboard.finished_controls(services, "unknown") is None


def test_the_head_timer_redraws_only_when_the_head_moved(tmp_path):
    services = Services(tmp_path)
    services.results.publish(board_record("h1", "one", 0.5, 0.4, 0.6))
    first = services.results_head()
    assert leaderboard.head_moved(services, None) == (first, None)  # the first tick: noted only
    assert leaderboard.head_moved(services, first) == (None, None)
    services.results.publish(board_record("h2", "two", 0.5, 0.4, 0.6))
    moved = services.results_head()
    assert moved != first and leaderboard.head_moved(services, first) == (moved, moved)


def test_an_empty_board_lists_the_reference_lines_in_every_setting(tmp_path):
    """No submission yet: the first screen shows the task's chance and majority rows (setting
    `reference`, computed from the split), and so do the read path's view of any setting (what the
    API and the downloads serve) and the first paint; a verified result then ranks above them."""
    from leaderboard.readpath import Filters
    from leaderboard.reference import publish_reference
    from space.first_paint import render

    services = Services(tmp_path)
    services.results.ensure()
    assert publish_reference(services.results) is not None
    first = leaderboard.first_controls(services)
    assert (first.suite, first.task, first.setting) == (SUITE, TASK, "zero_shot")
    lines = ["Majority (always C)", "Chance (uniform over 4)"]
    view = leaderboard.board_view(services, first)
    assert len(row_ids(view.table)) == 2 and all(name in view.table for name in lines)
    assert "The rows below are reference lines (chance and majority), not ranked" in view.table
    assert all(name in render(services, {}) for name in lines)
    for setting in ("zero_shot", "reminder", "reference", None):
        board = services.board.table().board(Filters(suite=SUITE, task=TASK, setting=setting))
        assert list(board["model_name"]) == lines, setting
        assert board["rank"].isna().all(), setting

    services.results.publish(board_record("fx-first", "first", 0.8, 0.76, 0.84))
    ranked = services.board.table().board(Filters(suite=SUITE, task=TASK, setting="zero_shot"))
    assert list(ranked["model_name"]) == ["first", *lines]
    assert ranked["rank"].tolist()[0] == 1 and bool(ranked["above_reference"].iloc[0])
    assert "The rows below are" not in leaderboard.board_view(services, first).table
    reminder = services.board.table().board(Filters(suite=SUITE, task=TASK, setting="reminder"))
    assert list(reminder["model_name"]) == lines  # another setting's result is not this view's


# -- the Overview tab -----------------------------------------------------------------------------
def test_an_overview_link_keeps_only_what_its_controls_offer():
    linked = overview.link_controls(
        {"suite": "prefeval", "task": "mcq", "type": "generative", "size": "huge", "q": "al"}
    )
    assert linked == overview.OverviewControls("prefeval", "mcq", "generative", ALL, ALL, "al")
    other = overview.link_controls({"suite": "nope", "task": "mcq", "revision": "v1"})
    assert (other.suite, other.task, other.version, other.revision) == (ALL, ALL, "v1", "v1")
    assert overview.task_options("prefeval")[0] == (ALL, ALL)
    assert overview.task_options(ALL) == [(ALL, ALL)]


def test_the_overview_view_its_licenses_and_a_license_nobody_has(tmp_path):
    from unit.test_overview import default_record

    services = Services(tmp_path)
    facts = {"model_type": "generative", "parameters": 7e9, "license": "apache-2.0"}
    services.results.publish(default_record("ov-1", "Alpha <b>7B</b>", 0.8, facts=facts))
    view = overview.overview_view(services, overview.OverviewControls())
    assert "Alpha &lt;b&gt;7B&lt;/b&gt;" in view.table and "<b>7B" not in view.table
    assert view.licenses == [ALL, "apache-2.0"]
    assert "overview-" in view.downloads
    nobody = overview.overview_view(services, overview.OverviewControls(license="gpl"))
    assert "No model here has that license (gpl)" in nobody.table and "apache-2.0" in nobody.table
    assert nobody.licenses == [ALL, "apache-2.0", "gpl"]  # the link's value stays chosen
    narrowed = overview.overview_view(services, overview.OverviewControls(search="nobody"))
    assert "No model matches these filters" in narrowed.table
    missing = overview.overview_view(services, overview.OverviewControls(version="nope"))
    assert 'id="version-missing"' in missing.table
    assert missing.licenses is None  # the choices offered stay as they are


# -- the Items tab --------------------------------------------------------------------------------
def published_upload(tmp_path, services, sid: str) -> list:
    """A published PrefEval mcq upload as a finished submission, right on the explicit form only
    (its answers file kept, as the Items tab reads it); returns the split's items."""
    from unit.test_overview import record

    from evaluator.registry import get_task

    task = get_task("prefeval", "mcq")
    items = task.load_split().items
    answers = {
        i.id: i.gold if i.tiers["form"] == "explicit" else "ABCD"[("ABCD".index(i.gold) + 1) % 4]
        for i in items
    }
    upload = tmp_path / "predictions.jsonl"
    upload.write_text(
        "".join(json.dumps({"id": k, "answer": v}) + "\n" for k, v in answers.items())
    )
    split = task.load_split().sha256
    revision = services.results.publish(record(sid, "Uploader", 0.33, split=split))
    services.records.add(
        Submission(
            id=sid,
            created_at=utc_now(),
            kind="predictions",
            suite="prefeval",
            task="mcq",
            setting="zero_shot",
            model_name="Uploader",
            file_path=str(upload),
            state="finished",
            revision=revision,
            result={"total": {}},
        )
    )
    return items


def test_items_of_a_published_result_page_and_filter(tmp_path):
    services = Services(tmp_path)
    items = published_upload(tmp_path, services, "it-1")
    first = explorer.items_view(services, "it-1", ALL, ALL, 1)
    assert (
        f"Items 1–50 of {len(items)}" in first.table
        and "/submissions/it-1/details" in first.downloads
    )
    wrong = explorer.items_view(services, "it-1", ALL, "wrong", 2)
    assert "Items 51–100 of" in wrong.table and "outcome=wrong" in wrong.downloads
    picked = explorer.picked_result(services, " it-1 ", "", "wrong")
    assert picked is not None and picked.submission_id == "it-1"
    assert "Items 1–50 of" in picked.view.table
    assert ("all tiers", ALL) == picked.tiers[0] and len(picked.tiers) > 1
    assert explorer.picked_result(services, "it-1", "it-1", ALL) is None  # a blur, no change


def test_items_of_no_result_or_an_unknown_one(tmp_path):
    services = Services(tmp_path)
    assert "Choose a result" in explorer.items_view(services, "", ALL, ALL, 1).table
    refused = explorer.items_view(services, "<nope>", ALL, ALL, 1)
    assert 'id="items-refused"' in refused.table and "<nope>" not in refused.table
    assert refused.downloads == ""


# -- the model and result pages (space/pages.py) --------------------------------------------------
class Tables(HTMLParser):
    """The text of every cell of a page's tables, by the table's class: {class: [[cell, ...], ...]}
    (header cells included, as the reader sees the rows)."""

    def __init__(self, page: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.table: list[list[str]] | None = None
        self.cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.table = self.tables.setdefault(dict(attrs).get("class") or "", [])
        elif tag == "tr" and self.table is not None:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None:
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.table:
            self.table[-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_the_model_page_lists_each_result_with_its_revisions(board):
    from space import pages

    page = pages.model_page(board, "alpha", None, None)
    assert page.status_code == 200
    text = bytes(page.body).decode()
    assert 'class="hub-link" href="https://huggingface.co/alpha"' in text
    assert 'class="submitter-link" href="https://example.org/alpha"' in text
    history = [row for row in Tables(text).tables["history"] if row and row[0] != "Submitted"]
    assert len(history) == 1
    assert history[0][3:7] == ["verified", "80.0", "76.0–84.0", "1000"], history
    model_revision, results_revision = history[0][7:9]
    assert model_revision.startswith("0123456789abcdef") and len(results_revision) == 12
    assert 'href="/result/fx-alpha"' in text and "Compare with another result" in text
    assert pages.model_page(board, "<nobody>", None, None).status_code == 404


def test_the_result_page_shows_scores_provenance_and_how_to_reproduce(board):
    from space import pages

    page = pages.result_page(board, "fx-alpha")
    assert page.status_code == 200
    text = bytes(page.body).decode()
    assert "Result fx-alpha" in text and "highlight=fx-alpha" in text
    found = Tables(text).tables
    scores = {row[0]: row[1:] for row in found["scores"] if row[0] != "Score"}
    assert scores["Total"] == ["Accuracy", "80.0", "76.0–84.0", "1000"], scores
    assert scores["Preference form: Explicit"] == ["Accuracy", "80.0", "74.0–86.0", "333"]
    provenance = dict(found["provenance"])
    for field in ("split.sha256", "split.n_items", "scorer_version", "suite_version"):
        assert field in provenance, (field, provenance)
    for field in ("model.revision", "model.parameters", "protocol"):
        assert field in provenance, (field, provenance)
    assert provenance["model.license"] == "apache-2.0"
    command = text.split("<pre class=reproduce><code>", 1)[1].split("</code></pre>", 1)[0]
    assert command.startswith("personaboard evaluate --model alpha --revision 0123456789abcdef")
    assert "--setting zero_shot" in command
    assert pages.result_page(board, "nope").status_code == 404


def test_a_plot_of_an_unknown_task_or_version_is_a_404(board):
    from fastapi import HTTPException

    from space import pages

    ranked, _ = pages.board_of(board, SUITE, TASK)
    assert set(ranked["submission_id"]) >= {"fx-alpha", "fx-partial"}
    for where in ((SUITE, "nope", None), (SUITE, TASK, "no-such-version")):
        with pytest.raises(HTTPException) as refused:
            pages.board_of(board, *where)
        assert refused.value.status_code == 404


# -- the Submission status tab --------------------------------------------------------------------
def test_the_status_tab_lists_this_browsers_submissions_and_says_what_it_does_not_know(tmp_path):
    from space.tabs import status

    services = Services(tmp_path)
    for sid, state in (("a1b2c3d4e5", "queued"), ("f6a7b8c9d0", "finished")):
        services.records.add(
            Submission(
                id=sid,
                created_at=utc_now(),
                kind="predictions",
                suite=SUITE,
                task=TASK,
                setting="zero_shot",
                model_name=f"model <{sid[:2]}>",
                state=state,
            )
        )
    stored = ["f6a7b8c9d0", "not an id", "0123456789", "a1b2c3d4e5", "f6a7b8c9d0"]
    assert status.my_choices(services, stored) == [  # known ids only, once each, in order
        ("finished · model <f6> (prefeval/mcq, zero_shot)", "f6a7b8c9d0"),
        ("queued · model <a1> (prefeval/mcq, zero_shot)", "a1b2c3d4e5"),
    ]
    unknown = status.status_view(services, " <b>nope</b> ")
    assert unknown.followed == status.NOT_FOLLOWED and "<b>" not in unknown.text
    assert unknown.text.startswith("No submission with id")
    # a tick never starts the timer (another tab may have stopped it meanwhile): it stops it once final
    running = status.StatusView("State: running", ("a1b2c3d4e5", "running"))
    assert not status.tick_stops_timer(running)
    assert status.tick_stops_timer(status.StatusView("State: finished"))
    assert status.tick_stops_timer(unknown)


def test_the_model_page_offers_the_results_to_compare_with(board):
    """The comparison form lists the other verified and partial results of the same suite, task
    and setting (not the model's own, not another setting's), each named by model, score and id."""
    from space import pages

    text = bytes(pages.model_page(board, "alpha", None, None).body).decode()
    form = text.split('data-a="fx-alpha"', 1)[1].split("</form>", 1)[0]
    offered = [o.split(">", 1)[1] for o in form.split("<option ")[1:]]
    offered = [o.split("</option>", 1)[0] for o in offered]
    assert [o.rsplit(" · ", 1)[1] for o in offered] == [
        "fx-beta",
        "fx-gamma",
        "fx-delta",
        "fx-partial",
    ]
    assert offered[0] == "beta · 78.0 · 2026-11-01 10:00 · fx-beta", offered
    assert "partial" in offered[3] and "fx-cot" not in form


def test_the_pages_keep_no_parsed_record_between_requests(tmp_path):
    """The result, model and turns pages read the records they show, by path; the web process
    keeps none of them. At 20,000 results, all records parsed were 1.9 million Python objects, and
    every full garbage collection paused every request for 0.3-0.7 s."""
    import gc

    from space import pages

    def services_with(count: int) -> Services:
        services = Services(tmp_path / str(count))
        results = [
            board_record(f"many-{i:04d}", f"model-{i % 40}", 0.5, 0.45, 0.6, parameters=1e9)
            for i in range(count)
        ]
        services.results.sync_group("many-", results, f"{count} results")
        return services

    def serve(services: Services) -> None:
        assert pages.result_page(services, "many-0007").status_code == 200
        assert pages.model_page(services, "model-7", None, None).status_code == 200
        assert pages.result_page(services, "nope").status_code == 404

    serve(services_with(10))  # the modules and caches any first request loads, once
    services = services_with(2000)
    gc.collect()
    before = len(gc.get_objects())
    serve(services)  # builds and keeps the head's table, facts and summaries (frames: few objects)
    gc.collect()
    kept = len(gc.get_objects()) - before
    held = services.results.records()  # what the pages kept before
    gc.collect()
    per_record = (len(gc.get_objects()) - before - kept) / len(held)
    print(f"kept {kept} objects; the records would be {per_record:.0f} a result")
    assert per_record > 10
    # a quarter of the records' objects: the head's frames and whatever caches other tests' first
    # requests left to fill keep a few hundred to ~1,400 (27,864 when the pages kept the records)
    assert kept < 0.25 * per_record * len(held), kept


def test_the_pages_read_the_versions_once_per_head(tmp_path):
    """Which revision published each result takes every version's message (`git log` over all
    commits): read once per head, again after a publish (the new result's revision shown)."""
    from space import pages

    class CountingStore(LocalDatasetStore):
        reads = 0

        def versions(self):
            CountingStore.reads += 1
            return super().versions()

    services = Services(tmp_path)
    services.results = CountingStore(tmp_path / "counted")
    for record in board_records()[:2]:
        services.results.publish(record)
    for _ in range(2):
        assert pages.model_page(services, "alpha", None, None).status_code == 200
        assert pages.result_page(services, "fx-beta").status_code == 200
    assert CountingStore.reads == 1
    revision = services.results.publish(board_record("fx-new", "alpha", 0.6, 0.5, 0.7))
    page = bytes(pages.model_page(services, "alpha", None, None).body).decode()
    assert CountingStore.reads == 2 and revision[:12] in page
