"""A tier group too long for one figure is cut into pieces: every tier with a value in exactly one
piece, no piece over TIERS_PER_FIGURE tiers, distinct titles, each result in one colour throughout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (board_fixture)

from board_fixture import SUITE, TASK, board_record  # noqa: E402

from evaluator.registry import all_suites  # noqa: E402
from leaderboard.board import manifest_tier_order, model_facts, ranked_board  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402
from space.interactive_plots import TIERS_PER_FIGURE, WRAP_AT, pieces, tier_figures  # noqa: E402

BULK = [f"t{k:02d}" for k in range(45)]  # a synthetic group far longer than one figure holds
TOPICS = all_suites()[SUITE].tasks[TASK].tier_groups[1].tiers  # PrefEval's 20 topics


def _stats(value, n=100):
    return {"accuracy": {"value": value, "ci95": [value - 0.05, value + 0.05], "n": n}}


def record(sid, model, value, *, tiers, row_kind="computed"):
    found = board_record(sid, model, value, value - 0.04, value + 0.04, row_kind=row_kind)
    found["metrics"]["tiers"] = tiers
    return found


def figures_of(records):
    board, cells = ranked_board(
        records_to_scores(records),
        model_facts(records),
        SUITE,
        TASK,
        tier_order=manifest_tier_order(),
    )
    return tier_figures(board, cells, list(board["submission_id"]), "t")


def heading(figure):
    return figure["layout"]["title"]["text"].split(" · ")[0]


def series(figure):
    return [(trace["name"], trace["marker"]["color"]) for trace in figure["data"]]


@pytest.mark.parametrize("limit", [1, 5, 12])
def test_pieces_keep_order_and_are_the_fewest_of_near_equal_size(limit):
    for n in range(1, 60):
        items = list(range(n))
        found = pieces(items, limit)
        assert [x for piece in found for x in piece] == items, (n, found)
        sizes = [len(piece) for piece in found]
        assert max(sizes) <= limit and max(sizes) - min(sizes) <= 1, (n, sizes)
        assert len(found) == -(-n // limit), (n, sizes)  # no more pieces than needed
    assert [len(p) for p in pieces(list(range(45)), 12)] == [12, 11, 11, 11]
    assert [len(p) for p in pieces(list(range(13)), 12)] == [7, 6]  # not 12 and a lone 1


def test_a_45_tier_group_is_paged_with_every_tier_once_and_one_colour_per_result():
    values = {"alpha": 0.8, "beta": 0.7, "gamma": 0.6}
    records = [
        record(
            f"fx-{model}",
            model,
            value,
            tiers={
                "form": {"explicit": _stats(value)},
                # gamma has no t07: a tier another result has is still drawn (once)
                "bulk": {
                    t: _stats(value - k / 100)
                    for k, t in enumerate(BULK)
                    if (model, t) != ("gamma", "t07")
                },
            },
        )
        for model, value in values.items()
    ]
    # a partial run's only cell of a tier is under the minimum count: hidden, so that tier is no bar
    records.append(
        record(
            "fx-part", "part", 0.5, row_kind="partial", tiers={"bulk": {"hidden": _stats(0.5, n=3)}}
        )
    )
    figures = figures_of(records)
    bulk = [f for f in figures if heading(f).startswith("bulk")]
    assert [heading(f) for f in bulk] == [f"bulk ({k} of 4)" for k in range(1, 5)]
    titles = [heading(f) for f in figures]
    assert len(titles) == len(set(titles)), titles
    # (the total goes with the first group drawn, here this one)
    ticks = [tick for f in bulk for tick in f["data"][0]["y"] if tick != "Total"]
    assert sorted(ticks) == sorted(f"bulk/{t}" for t in BULK), ticks  # each once, "hidden" not
    for f in bulk:
        assert len(f["data"][0]["y"]) <= TIERS_PER_FIGURE
        assert all(trace["y"] == f["data"][0]["y"] for trace in f["data"])
        assert all(len(trace["x"]) == len(trace["y"]) for trace in f["data"])
    # every result in every piece, in one colour, under one name; one value axis for the group
    assert len({tuple(series(f)) for f in figures}) == 1, [series(f) for f in figures]
    assert [name for name, _ in series(bulk[0])] == ["alpha", "beta", "gamma", "part"]
    assert len({tuple(f["layout"]["xaxis"]["range"]) for f in bulk}) == 1
    low, high = bulk[0]["layout"]["xaxis"]["range"]
    assert low == 0 and 85 < high < 95, (low, high)  # alpha's 80 + its interval, and some room
    for f in bulk:  # no bar or interval runs past the shared axis
        for trace in f["data"]:
            for x, plus in zip(trace["x"], trace["error_x"]["array"]):
                assert x is None or x + plus <= high, (x, plus, high)
    assert len({f["layout"]["margin"]["l"] for f in bulk}) == 1  # the pieces' bars line up
    # the values are the cells': alpha's t44 (0.8 - 0.44), and gamma's missing t07 is a gap
    last = bulk[-1]["data"][0]
    assert last["y"][-1] == "bulk/t44" and last["x"][-1] == pytest.approx(36.0)
    piece = next(f for f in bulk if "bulk/t07" in f["data"][0]["y"])
    gamma = next(trace for trace in piece["data"] if trace["name"] == "gamma")
    assert gamma["x"][gamma["y"].index("bulk/t07")] is None
    # the total is drawn once, with the first group
    assert sum(trace["y"].count("Total") for f in figures for trace in f["data"][:1]) == 1


def test_prefeval_topics_are_two_figures_and_short_groups_stay_whole():
    records = [
        record(
            f"fx-{model}",
            model,
            value,
            tiers={
                "form": {"explicit": _stats(value), "implicit_choice": _stats(value - 0.1)},
                "topic": {t: _stats(value) for t in TOPICS},
            },
        )
        for model, value in (("alpha", 0.8), ("beta", 0.7))
    ]
    figures = figures_of(records)
    assert [heading(f) for f in figures] == ["Preference form", "Topic (1 of 2)", "Topic (2 of 2)"]
    assert figures[0]["data"][0]["y"] == ["Total", "Explicit", "Implicit (choice)"]
    assert "xaxis" not in figures[0]["layout"] or "range" not in figures[0]["layout"]["xaxis"]
    assert [len(f["data"][0]["y"]) for f in figures[1:]] == [10, 10]
    # long labels wrap at spaces (a phone keeps room for the bars), short ones stay on one line
    ticks = [tick for f in figures[1:] for tick in f["data"][0]["y"]]
    assert "Professional work<br>location style" in ticks and "Shop home" in ticks, ticks
    assert all(len(line) <= WRAP_AT for tick in ticks for line in tick.split("<br>")), ticks
    # a piece of 10 tiers is shorter than the group's one figure was
    assert all(f["layout"]["height"] < 140 + 20 * 2 * 18 for f in figures[1:])
