"""A link naming what the board does not have (a suite, task, setting or tier it lacks, a version
that does not exist) opens the nearest view with a visible note naming each such parameter
(space/url_state.py ignored_params / link_notice, space/tabs/leaderboard.py link_note), where it
once opened the default view without a word. Real stores, as tests/unit/test_tab_handlers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from board_fixture import SUITE, TASK, board_records  # noqa: E402
from test_tab_handlers import Services  # noqa: E402

from space.tabs import leaderboard  # noqa: E402
from space.url_state import ignored_params, link_notice  # noqa: E402


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    services = Services(tmp_path_factory.mktemp("board"))
    for record in board_records():
        services.results.publish(record)
    services.results.release("early")
    return services


def note(board, **params) -> str:
    return leaderboard.link_note(board, params, leaderboard.link_controls(board, params))


def test_each_wrong_parameter_is_named_with_what_is_shown_instead(board):
    shown = note(board, suite="nosuch")
    assert 'id="link-notice"' in shown and "<code>suite=nosuch</code>" in shown
    assert f"showing <code>{SUITE}</code>" in shown
    shown = note(board, suite=SUITE, task=TASK, tier="form/nope")
    assert "<code>tier=form/nope</code>" in shown and "suite=" not in shown
    shown = note(board, suite=SUITE, task="nosuch", setting="nosuch")
    assert "<code>task=nosuch</code>" in shown and "<code>setting=nosuch</code>" in shown
    shown = note(board, revision="deadbeef")
    assert "<code>revision=deadbeef</code>: no such revision here" in shown


def test_a_right_link_or_no_link_has_no_note(board):
    assert note(board) == ""
    assert note(board, suite=SUITE, task=TASK, setting="zero_shot", revision="early") == ""
    head = board.results_head()
    assert note(board, suite=SUITE, task=TASK, revision=head[:12]) == ""


def test_the_note_quotes_the_link_inertly():
    ignored = ignored_params({"suite": "<script>x</script>"}, {"suite": "prefeval"})
    shown = link_notice(ignored, "link-notice")
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert link_notice([], "link-notice") == ""
