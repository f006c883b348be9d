"""The ranked board: rank groups from 95% intervals, sections by row kind, cell counts, the HTML."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (board_fixture)

from board_fixture import EXPECTED_RANKS, SUITE, TASK, board_record, board_records  # noqa: E402

from leaderboard.board import (  # noqa: E402
    model_facts,
    ranked_board,
    ranks_from_intervals,
    size_bucket,
    size_buckets,
    table_facts,
)
from leaderboard.table import records_to_scores  # noqa: E402
from space.board_view import render_board  # noqa: E402
from space.display import format_interval, format_value  # noqa: E402


def board_of(records, task=TASK, **kwargs):
    return ranked_board(records_to_scores(records), model_facts(records), SUITE, task, **kwargs)


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
    assert set(
        board.loc[board["model_name"] == "alpha", ["model_type", "size", "license"]].iloc[0]
    ) == {"generative", "1B-10B", "apache-2.0"}
    assert board.loc[board["model_name"] == "delta", "model_type"].item() == "predictions file"
    n = cells.set_index(["submission_id", "column"])["n"]
    assert n[("fx-partial", "form/explicit")] == 3 and n[("fx-alpha", "total")] == 1000


def test_rank_by_a_tier_uses_its_intervals():
    records = [board_record("x", "x", 0.5, 0.4, 0.6), board_record("y", "y", 0.9, 0.85, 0.95)]
    records[0]["metrics"]["tiers"]["form"]["explicit"] = {
        "accuracy": {"value": 0.99, "ci95": [0.98, 1.0], "n": 100}
    }
    board, _ = board_of(records, tier="form/explicit")
    assert board.attrs["ranked_by"] == "form/explicit"
    assert board["model_name"].tolist() == ["x", "y"] and board["rank"].tolist() == [1, 2]


def test_html_sections_counts_and_escaping():
    records = board_records() + [
        board_record("fx-evil", "<img src=x onerror=alert(1)>", 0.3, 0.2, 0.4)
    ]
    board, cells = board_of(records)
    page = render_board(board, cells)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.index("Verified here (ranked)") < page.index("Partial runs (not ranked)")
    partial = page[page.index('data-id="fx-partial"') :]
    assert "n=6" in partial  # the total of a partial row carries its count
    assert "only 3 items" in partial  # tier cells under MIN_CELL_ITEMS are hidden
    assert 'href="/model/alpha"' in page


def test_one_format_per_metric():
    assert format_value(1 / 3, "accuracy") == "33.3" and format_value(0.25, "f1") == "25.0"
    assert format_value(0.6112, "spearman") == "0.611"
    assert format_value(3.456, "alignment") == "3.46"
    assert format_interval(0.25, 0.5, "accuracy") == "25.0–50.0"


@pytest.mark.parametrize(
    "parameters,bucket",
    [(135e6, "< 1B"), (7e9, "1B-10B"), (7e10, "10B-100B"), (4e11, "100B +"), (None, "unknown")],
)
def test_size_buckets(parameters, bucket):
    assert size_bucket(parameters) == bucket
    assert list(size_buckets(pd.Series([parameters], dtype=object))) == [bucket]


def test_size_buckets_of_a_column_read_each_value_as_size_bucket():
    values = [135e6, 0, "7e9", 1.5e9, 2e11, "abc", float("nan"), None, 1e9, "1e12", -5, True]
    assert list(size_buckets(pd.Series(values, dtype=object))) == [size_bucket(v) for v in values]


def reference_rows(majority=0.293, chance=0.25):
    """Chance and majority lines as leaderboard/reference.py publishes them (setting `reference`)."""
    rows = [
        board_record(
            "ref-chance",
            "Chance (uniform over 4)",
            chance,
            chance,
            chance,
            n=3000,
            row_kind="reference",
            setting="reference",
        ),
        board_record(
            "ref-majority",
            "Majority (always C)",
            majority,
            majority,
            majority,
            n=3000,
            row_kind="reference",
            setting="reference",
        ),
    ]
    rows[1]["metrics"]["tiers"]["form"]["explicit"] = {
        "accuracy": {"value": 0.40, "ci95": [0.40, 0.40], "n": 1000}
    }
    return rows


def test_a_random_file_on_an_otherwise_empty_board_is_flagged_and_not_ranked():
    random_file = board_record(
        "fx-random", "random-guesser", 0.26, 0.23, 0.29
    )  # uniform guessing on 1000 items
    board, cells = board_of([random_file, *reference_rows()])
    row = board.set_index("submission_id").loc["fx-random"]
    assert row["above_reference"] is False or row["above_reference"] == False  # noqa: E712 (pandas boolean)
    assert pd.isna(row["rank"])  # no "1" beside a file that does not beat "always C"
    assert board.attrs["reference_line"] == {
        "value": 0.293,
        "name": "Majority (always C)",
        "column": "total",
    }
    page = render_board(board, cells)
    mine = page[
        page.index('data-id="fx-random"') : page.index("</tr>", page.index('data-id="fx-random"'))
    ]
    assert (
        "pb-not-above-ref"
        in page[
            page.rindex("<tr", 0, page.index('data-id="fx-random"')) : page.index(
                'data-id="fx-random"'
            )
        ]
    )
    assert "not above Majority (always C) = 29.3" in mine
    assert '<td role="gridcell" class="pb-rank" data-sort=""><span class="pb-below-ref"' in mine
    # the section's title does not promise ranks its only row lacks
    assert "Verified here (none ranked yet" in page and "Verified here (ranked)" not in page


def test_rows_clear_the_line_only_with_their_lower_bound_and_the_others_keep_their_ranks():
    near = board_record(
        "fx-near", "near-majority", 0.31, 0.28, 0.34
    )  # point above 29.3, interval reaches below
    plain, _ = board_of(board_records())
    board, cells = board_of([*board_records(), near, *reference_rows()])
    verdict = dict(zip(board["model_name"], board["above_reference"]))
    assert all(verdict[m] for m in EXPECTED_RANKS) and verdict["near-majority"] == False  # noqa: E712
    assert pd.isna(verdict["Majority (always C)"]) and verdict["tiny-partial"] == True  # noqa: E712  (0.60 > 0.293)
    ranks = dict(zip(board["model_name"], board["rank"]))
    before = dict(zip(plain["model_name"], plain["rank"]))
    assert (
        {m: ranks[m] for m in EXPECTED_RANKS}
        == {m: before[m] for m in EXPECTED_RANKS}
        == EXPECTED_RANKS
    )
    verified = board[board["row_kind"] == "computed"]["model_name"].tolist()
    assert verified[-1] == "near-majority"  # listed after every ranked row
    assert 'data-col="reference"' in render_board(board, cells)  # the column is shown by default


def test_the_line_ignores_the_setting_filter_and_follows_the_ranking_tier():
    weak = board_record(
        "fx-weak", "weak", 0.45, 0.35, 0.55
    )  # explicit tier: 0.45 [0.33, 0.57] vs majority 0.40 there
    board, _ = board_of([weak, *reference_rows()], setting="zero_shot")
    # the setting's view lists the reference rows (setting `reference`) after the verified one
    assert board["model_name"].tolist() == [
        "weak",
        "Majority (always C)",
        "Chance (uniform over 4)",
    ] and bool(board["above_reference"].iloc[0])  # total: 0.35 > 0.293
    by_tier, _ = board_of([weak, *reference_rows()], tier="form/explicit")
    assert by_tier.attrs["reference_line"]["value"] == 0.40
    assert by_tier.set_index("model_name").loc["weak", "above_reference"] == False  # noqa: E712
    no_line, cells = board_of(board_records())
    assert no_line.attrs["reference_line"] is None and no_line["above_reference"].isna().all()
    assert 'data-col="reference"' not in render_board(no_line, cells)  # no line, no column


def test_rows_of_another_protocol_are_ranked_only_among_themselves():
    records = board_records()
    records += [
        board_record(
            "fx-lp1",
            "lp-strong",
            0.95,
            0.93,
            0.97,
            parameters=1_000_000,
            protocol="choice_logprobs",
        ),
        board_record(
            "fx-lp2", "lp-weak", 0.60, 0.55, 0.65, parameters=1_000_000, protocol="choice_logprobs"
        ),
    ]
    board, cells = board_of(records)
    ranks = dict(zip(board["model_name"], board["rank"]))
    # the default protocol's ranking is untouched by the better-scoring choice_logprobs row
    assert {m: ranks[m] for m in EXPECTED_RANKS} == EXPECTED_RANKS
    assert (ranks["lp-strong"], ranks["lp-weak"]) == (1, 2)
    among = dict(zip(board["model_name"], board["rank_among"]))
    assert among["lp-strong"] == among["lp-weak"] == "choice_logprobs" and among["alpha"] == ""
    # listed after the default protocol's rows, before the partial run
    assert board["model_name"].tolist() == [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "lp-strong",
        "lp-weak",
        "tiny-partial",
    ]
    html_text = render_board(board, cells)
    assert "ranked only among choice_logprobs rows" in html_text


def test_a_task_without_results_is_an_empty_board_not_an_error():
    # another task of the suite has results, this one none: its board is empty, with the columns
    # a board always has (ranking reads `protocol`; it raised KeyError and the page showed "Error")
    board, cells = board_of(board_records(), task="mcq_turns")  # PrefEval's other mcq task
    assert board.empty and cells.empty
    assert {"rank", "rank_group", "protocol", "above_reference", "model_type"} <= set(board.columns)


def test_the_tables_facts_equal_the_records_facts():
    """The pages take each result's model facts from the table (no record parsed): the same as
    from the records, for model runs with and without a license or size and for uploads."""
    records = [*board_records(), board_record("fx-nolicense", "eps", 0.4, 0.3, 0.5, parameters=3e9)]
    from_table = table_facts(records_to_scores(records))
    from_records = model_facts(records).astype({"parameters": "float64"})
    pd.testing.assert_frame_equal(from_table, from_records)
    assert set(from_table["size"]) >= {"1B-10B", "< 1B", "10B-100B", "unknown"}
