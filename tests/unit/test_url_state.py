"""Which tab a link opens, and which parameters each tab reads from it (space/url_state.py)."""

from __future__ import annotations

from types import SimpleNamespace

from space.url_state import tab_params, url_tab, url_writer_js


def request(query: dict[str, str]):
    return SimpleNamespace(query_params=query)


def test_a_link_opens_its_tab():
    assert url_tab({}) == "leaderboard"
    assert url_tab({"suite": "prefeval"}) == "leaderboard"
    assert url_tab({"tab": "overview", "suite": "prefeval"}) == "overview"
    assert url_tab({"status": "abc123"}) == "status"  # the status line's and the queue's links


def test_each_tab_reads_only_a_link_to_itself():
    """Two tabs may use one parameter name: the Leaderboard does not take the overview's suite."""
    link = request({"tab": "overview", "suite": "personafeedback", "sort": "prefeval/mcq:desc"})
    assert tab_params(link, "overview")["suite"] == "personafeedback"
    assert tab_params(link, "leaderboard") == {}
    board = request({"suite": "prefeval", "task": "mcq"})
    assert tab_params(board, "leaderboard") == {"suite": "prefeval", "task": "mcq"}
    assert tab_params(board, "overview") == {}
    assert tab_params(None, "leaderboard") == {}


def test_writer_names_each_field_with_its_default():
    js = url_writer_js("overview", [("suite", "(all)"), ("q", None)])
    assert js.startswith("(v0, v1) => {")
    assert '["suite", v0, "(all)"]' in js and '["q", v1, null]' in js
    assert 'pbUrl.write("overview"' in js and 'pbUrl.applySort("overview")' in js
