"""The item explorer is found and paged: links to the Items tab from the board's
rows, the result page and the model page, only where the result has items to show (scored here on
a public split); the pager's "page k of n", previous and next held at the ends; the table's cells
labelled for a phone's stacked layout. In process, over real stores (tests/unit/test_tab_handlers.py
Services); the browser round trip is tests/test_browser_overview.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from board_fixture import SUITE, TASK, board_record, board_records  # noqa: E402
from unit.test_overview import record  # noqa: E402
from unit.test_tab_handlers import Services, published_upload  # noqa: E402

from leaderboard.board import model_facts, ranked_board  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402
from space import item_links, pages  # noqa: E402
from space.board_view import render_board  # noqa: E402
from space.choices import ALL  # noqa: E402
from space.tabs import explorer  # noqa: E402
from space.url_state import tab_params  # noqa: E402

HREF = re.compile(r'class="pb-items-link" href="([^"]*)"')


class Request:
    """What tab_params reads of a Gradio request: the query."""

    def __init__(self, href: str):
        self.query_params = {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}


def test_a_link_opens_the_items_tab_on_that_result_with_the_tabs_own_names():
    href = item_links.items_href("ab&c<1>")
    assert href.startswith("/?")
    # the Items tab reads it as a link to itself, with the result the reader asked for
    params = tab_params(Request(href), explorer.TAB)
    assert params == {"tab": "items", "submission": "ab&c<1>"}
    assert item_links.items_href("x", page=3).endswith("&pg=3")
    assert [key for key, _ in explorer.URL_FIELDS] == ["submission", "tier", "outcome", "pg"]
    link = item_links.items_link("a<b", "items")
    assert "<b" not in link and 'href="/?tab=items&amp;submission=a%3Cb"' in link


@pytest.mark.parametrize(
    "kind,suite,task,shown",
    [
        ("computed", "prefeval", "mcq", True),
        ("partial", "prefeval", "mcq", True),  # a partial run's answers are kept too
        ("reported", "prefeval", "mcq", False),  # a paper's number: no items of its own
        ("reference", "prefeval", "mcq", False),
        ("computed", "personafeedback", "binary_choice", False),  # hidden split: nothing per item
        ("computed", "nosuch", "mcq", False),
        (None, "prefeval", "mcq", False),
    ],
)
def test_only_results_scored_here_on_a_public_split_have_items(kind, suite, task, shown):
    assert item_links.has_item_details(kind, suite, task) is shown


@pytest.mark.parametrize("total,pages", [(0, 0), (1, 1), (50, 1), (51, 2), (3000, 60), (2000, 40)])
def test_page_count(total, pages):
    assert item_links.page_count(total) == pages


def test_page_label_and_previous_next_held_at_the_ends():
    assert item_links.page_label(1, 60) == "page 1 of 60"
    assert item_links.page_label(4, 0) == ""  # nothing shown, no label
    assert item_links.page_label(9, 4) == "page 9: past the last (4)"  # a link's, or one typed
    turned = item_links.turned_page
    assert turned(1, 60, 1) == 2 and turned(2, 60, -1) == 1
    assert turned(1, 60, -1) == 1  # before the first: stays
    assert turned(60, 60, 1) == 60  # past the last: stays
    assert turned(99, 60, -1) == 60  # from past the last, back to the last
    assert turned(1, 0, 1) == 1 and turned(None, 5, 1) == 2
    can = item_links.can_turn
    assert can(1, 60) == (False, True)
    assert can(30, 60) == (True, True)
    assert can(60, 60) == (True, False)
    assert can(1, 1) == (False, False)
    assert can(1, 0) == (False, False)
    assert can(99, 60) == (True, False)


def test_every_board_row_with_items_links_to_them_and_no_other():
    reported = board_record("fx-paper", "paper-model", 0.6, 0.55, 0.65, row_kind="reported")
    records = [*board_records(), reported]
    board, cells = ranked_board(records_to_scores(records), model_facts(records), SUITE, TASK)
    page = render_board(board, cells)
    rows = dict(re.findall(r'data-id="([^"]+)">(.*?)</tr>', page))
    for sid in ("fx-alpha", "fx-beta", "fx-gamma", "fx-delta", "fx-partial"):
        (href,) = HREF.findall(rows[sid])
        assert href.replace("&amp;", "&") == item_links.items_href(sid)
    assert not HREF.findall(rows["fx-paper"])
    # the link's word is drawn by CSS: the cell's text stays the model's name
    assert 'aria-label="Items of alpha' in rows["fx-alpha"] and "items \\203A" in page

    hidden = [record("pf-1", "pf model", 0.7, suite="personafeedback", task="binary_choice")]
    board, cells = ranked_board(
        records_to_scores(hidden), model_facts(hidden), "personafeedback", "binary_choice"
    )
    page = render_board(board, cells)
    assert 'data-id="pf-1"' in page and not HREF.findall(page)


@pytest.fixture
def published(tmp_path):
    """One published PrefEval mcq upload (right on the explicit form only, as a submission), a
    paper's row and a hidden-split result of the same model."""
    services = Services(tmp_path)
    items = published_upload(tmp_path, services, "up-1")
    services.results.publish(record("paper-1", "Uploader", 0.5, row_kind="reported"))
    services.results.publish(
        record("pf-1", "Uploader", 0.6, suite="personafeedback", task="binary_choice")
    )
    return services, len(items)


def test_the_result_and_model_pages_link_to_the_items(published):
    services, _ = published
    href = item_links.items_href("up-1").replace("&", "&amp;")
    result = bytes(pages.result_page(services, "up-1").body).decode()
    assert f'href="{href}"' in result and "Its answers item by item" in result
    for other in ("paper-1", "pf-1"):  # a paper's row, a hidden split: no items, no link
        page = pages.result_page(services, other)
        assert page.status_code == 200 and not HREF.findall(bytes(page.body).decode())
    model = bytes(pages.model_page(services, "Uploader", None, None).body).decode()
    rows = {
        sid: row for row in model.split("<tr")[1:] if (sid := re.search(r"/result/([\w-]+)", row))
    }
    by_id = {m.group(1): row for m, row in rows.items()}
    assert set(by_id) == {"up-1", "paper-1", "pf-1"}
    assert f'href="{href}"' in by_id["up-1"]
    assert "pb-items-link" not in by_id["paper-1"] + by_id["pf-1"]


def test_the_pager_pages_through_the_results_items(published):
    services, total = published
    pages_of = item_links.page_count(total)
    first = explorer.items_view(services, "up-1", ALL, ALL, 1)
    assert (first.page, first.pages) == (1, pages_of)
    assert explorer.pager(first) == (
        f'<span class="pb-page-label">page 1 of {pages_of}</span>',
        False,
        True,
    )
    second = explorer.turned_view(services, "up-1", ALL, ALL, 1, first.pages, 1)
    assert second.page == 2 and f"Items 51–100 of {total}" in second.table
    back = explorer.turned_view(services, "up-1", ALL, ALL, 2, second.pages, -1)
    assert back.page == 1 and f"Items 1–50 of {total}" in back.table
    last = explorer.turned_view(services, "up-1", ALL, ALL, pages_of, pages_of, 1)
    assert last.page == pages_of and explorer.pager(last)[1:] == (True, False)
    assert f"of {total}" in last.table and "past the last" not in last.table
    # the wrong answers only, on a page past their last (a link's): said so; previous goes to the last
    past = explorer.items_view(services, "up-1", ALL, "wrong", pages_of)
    assert past.pages < pages_of and "past the last" in past.table
    assert explorer.pager(past) == (
        f'<span class="pb-page-label">page {pages_of}: past the last ({past.pages})</span>',
        True,
        False,
    )
    wrong = explorer.turned_view(services, "up-1", ALL, "wrong", past.page, past.pages, -1)
    assert wrong.page == wrong.pages == past.pages and "past the last" not in wrong.table
    # nothing chosen, or refused: no pages, no buttons
    for view in (
        explorer.items_view(services, "", ALL, ALL, 1),
        explorer.items_view(services, "pf-1", ALL, ALL, 1),
    ):
        assert view.pages == 0 and explorer.pager(view) == ("", False, False)


def test_the_items_cells_are_labelled_for_a_phones_stacked_layout(published):
    services, _ = published
    table = explorer.items_view(services, "up-1", ALL, ALL, 1).table
    for label, css in (("Gold", "pb-gold"), ("Answer", "pb-answer"), ("Outcome", "pb-outcome")):
        assert table.count(f'data-label="{label}"') == 50
        assert re.search(rf'<td class="[^"]*\b{css}\b[^"]*" data-label="{label}"', table)
    # the stacked layout lives under the phone's media query, the desktop keeps its columns
    phone = explorer.STYLE.split("@media (max-width:600px){", 1)[1]
    assert "grid-template-columns:repeat(3,minmax(0,1fr))" in phone
    assert "td[data-label]::before{content:attr(data-label)" in phone
