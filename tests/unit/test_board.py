"""The ranked board: rank groups from 95% intervals, sections by row kind, cell counts, the HTML."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (board_fixture)

from board_fixture import EXPECTED_RANKS, SUITE, TASK, board_record, board_records  # noqa: E402
from leaderboard.board import model_facts, ranked_board, ranks_from_intervals, size_bucket  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402
from space.board_view import render_board  # noqa: E402
from space.display import format_interval, format_value  # noqa: E402


def board_of(records, **kwargs):
    return ranked_board(records_to_scores(records), model_facts(records), SUITE, TASK, **kwargs)


def test_ranks_from_intervals_rule():
    # [0.76,0.84] [0.74,0.82] [0.66,0.74] [0.45,0.55]
    assert ranks_from_intervals([0.76, 0.74, 0.66, 0.45], [0.84, 0.82, 0.74, 0.55]) == [1, 1, 2, 4]
    assert ranks_from_intervals([0.5, 0.5], [0.5, 0.5]) == [1, 1]  # ties share
    assert ranks_from_intervals([], []) == []


def test_board_ranks_verified_rows_only_and_lists_partial_after():
    board, cells = board_of(board_records())
    assert board["model_name"].tolist() == ["alpha", "beta", "gamma", "delta", "tiny-partial"]
    ranks = dict(zip(board["model_name"], board["rank"]))
    assert {m: ranks[m] for m in EXPECTED_RANKS} == EXPECTED_RANKS
    assert pd.isna(ranks["tiny-partial"])  # highest score, but partial: never ranked
    assert set(board.loc[board["model_name"] == "alpha", ["model_type", "size", "license"]].iloc[0]) == \
        {"generative", "1B-10B", "apache-2.0"}
    assert board.loc[board["model_name"] == "delta", "model_type"].item() == "predictions file"
    n = cells.set_index(["submission_id", "column"])["n"]
    assert n[("fx-partial", "form/explicit")] == 3 and n[("fx-alpha", "total")] == 1000


def test_rank_by_a_tier_uses_its_intervals():
    records = [board_record("x", "x", 0.5, 0.4, 0.6), board_record("y", "y", 0.9, 0.85, 0.95)]
    records[0]["metrics"]["tiers"]["form"]["explicit"] = {"accuracy": {"value": 0.99, "ci95": [0.98, 1.0], "n": 100}}
    board, _ = board_of(records, tier="form/explicit")
    assert board.attrs["ranked_by"] == "form/explicit"
    assert board["model_name"].tolist() == ["x", "y"] and board["rank"].tolist() == [1, 2]


def test_html_sections_counts_and_escaping():
    records = board_records() + [board_record("fx-evil", "<img src=x onerror=alert(1)>", 0.3, 0.2, 0.4)]
    board, cells = board_of(records)
    page = render_board(board, cells)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.index("Verified here (ranked)") < page.index("Partial runs (not ranked)")
    partial = page[page.index('data-id="fx-partial"'):]
    assert "n=6" in partial  # the total of a partial row carries its count
    assert "only 3 items" in partial  # tier cells under MIN_CELL_ITEMS are hidden
    assert 'href="/model/alpha"' in page


def test_one_format_per_metric():
    assert format_value(1 / 3, "accuracy") == "33.3" and format_value(0.25, "f1") == "25.0"
    assert format_value(0.6112, "spearman") == "0.611"
    assert format_value(3.456, "alignment") == "3.46"
    assert format_interval(0.25, 0.5, "accuracy") == "25.0–50.0"


@pytest.mark.parametrize("parameters,bucket", [(135e6, "< 1B"), (7e9, "1B-10B"), (7e10, "10B-100B"),
                                               (4e11, "100B +"), (None, "unknown")])
def test_size_buckets(parameters, bucket):
    assert size_bucket(parameters) == bucket
