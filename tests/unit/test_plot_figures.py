"""The board's plots as figure JSON (space/interactive_plots.py): each draws the board's reference
line (the best of chance and majority, as the table's "vs." column), and every title starts below
the band Plotly's mode bar takes, on a transparent background (a dark page shows through)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (board_fixture)

from board_fixture import SUITE, TASK, board_record, board_records  # noqa: E402

from leaderboard.board import manifest_tier_order, model_facts, ranked_board  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402
from space.interactive_plots import (  # noqa: E402
    MODEBAR_PX,
    REFERENCE_NOTE,
    setting_figure,
    size_figure,
    tier_figures,
)


def reference(sid: str, name: str, value: float) -> dict:
    """A chance or majority row as leaderboard/reference.py publishes it (its own setting)."""
    found = board_record(sid, name, value, value, value, row_kind="reference", setting="reference")
    found["metrics"]["tiers"]["form"]["explicit"]["accuracy"]["value"] = value + 0.05
    return found


LINES = [
    reference("ref-c", "Chance (uniform over 4)", 0.25),
    reference("ref-m", "Majority (always C)", 0.3),
]


def board_of(records):
    return ranked_board(
        records_to_scores(records),
        model_facts(records),
        SUITE,
        TASK,
        tier_order=manifest_tier_order(),
    )


@pytest.fixture(scope="module")
def boards():
    return board_of(board_records() + LINES), board_of(board_records())


def all_figures(board, cells) -> list[dict]:
    ids = ["fx-alpha", "fx-beta", "fx-gamma"]
    # the routes' boards (space/pages.py): partial and reference rows left out of these two
    totals = board[~board["row_kind"].isin(["partial", "reference"])]
    return [
        *tier_figures(board, cells, ids, "t"),
        *setting_figure(totals, "Total by setting"),
        *size_figure(board[board["row_kind"] == "computed"], "Total against model size"),
    ]


def test_the_per_tier_bars_mark_each_tiers_own_reference_line(boards):
    (board, cells), _ = boards
    figure = tier_figures(board, cells, ["fx-alpha", "fx-beta"], "t")[0]
    marks = [t for t in figure["data"] if t["type"] == "scatter"]
    assert len(marks) == 1 and marks[0]["marker"]["symbol"] == "line-ns"
    bars = [t for t in figure["data"] if t["type"] == "bar"]
    assert [b["name"] for b in bars] == ["alpha", "beta"] and marks[0]["y"] == bars[0]["y"]
    at = dict(zip(marks[0]["y"], marks[0]["x"]))
    # the best line of each tier: majority's 30% in the total, 35% on the explicit form
    assert at["Total"] == pytest.approx(30.0) and at["Explicit"] == pytest.approx(35.0)
    assert marks[0]["customdata"][0] == "Majority (always C)"
    assert marks[0]["showlegend"] is False and REFERENCE_NOTE in figure["layout"]["title"]["text"]


def test_the_totals_plots_draw_the_line_with_its_name_and_value(boards):
    (board, cells), _ = boards
    _, settings, size = all_figures(board, cells)
    line = settings["layout"]["shapes"][0]
    assert (line["type"], line["x0"], line["x1"]) == (
        "line",
        pytest.approx(30.0),
        pytest.approx(30.0),
    )
    assert (line["yref"], line["y0"], line["y1"]) == ("paper", 0, 1)  # vertical, across every bar
    assert line["label"]["text"] == "Majority: 30.0"
    across = size["layout"]["shapes"][0]
    assert (across["xref"], across["y0"], across["y1"]) == (
        "paper",
        pytest.approx(30.0),
        pytest.approx(30.0),
    )
    assert across["label"]["text"] == "Majority: 30.0"


def test_a_board_without_reference_rows_draws_no_line(boards):
    _, (board, cells) = boards
    figures = all_figures(board, cells)
    assert len(figures) == 3
    for figure in figures:
        assert not [
            t for t in figure["data"] if t["type"] == "scatter" and t.get("showlegend") is False
        ]
        assert not figure["layout"].get("shapes")
        assert REFERENCE_NOTE not in figure["layout"]["title"]["text"]


def test_every_title_starts_below_the_mode_bar_on_a_transparent_background(boards):
    (board, cells), _ = boards
    for figure in all_figures(board, cells):
        layout, title = figure["layout"], figure["layout"]["title"]
        # anchored to the figure's top, padded past the mode bar's band; the plot starts below
        assert (title["yref"], title["y"], title["yanchor"]) == ("container", 1, "top")
        assert title["pad"]["t"] >= MODEBAR_PX
        lines = title["text"].count("<br>") + 1
        assert layout["margin"]["t"] >= title["pad"]["t"] + 16 * lines, layout["margin"]
        assert layout["paper_bgcolor"] == layout["plot_bgcolor"] == "rgba(0,0,0,0)"
