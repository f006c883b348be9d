"""leaderboard/view_query.py: the header sort as the board's own sorts (within each section, blanks
last both ways, ties in board order), the column chooser on a download's columns, and the
parameters' checks (a 422 names the parameter)."""

from __future__ import annotations

import pandas as pd
import pytest

from leaderboard.readpath import UnknownFilter
from leaderboard.view_query import keep_columns, parse_columns, parse_sort, sort_rows


def board() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "submission_id": ["a", "b", "c", "d", "p", "q"],
            "suite": ["s"] * 6,
            "task": ["t"] * 6,
            "row_kind": ["computed"] * 4 + ["partial"] * 2,
            "model_name": ["Beta", "alpha", "gamma", "Alpha", "zeta", "eta"],
            "total": [0.5, 0.9, None, 0.5, 0.1, 0.2],
            "parameters": [7e9, None, 1e8, 7e9, None, 1e6],
            "size": ["1B-10B", "unknown", "< 1B", "1B-10B", "unknown", "< 1B"],
            "rank": [2.0, 1.0, None, 2.0, None, None],
            "duplicate_of": ["", "", "", "a", "", ""],
        }
    )


@pytest.mark.parametrize(
    "sort,expected",
    [
        ("total:asc", ["a", "d", "b", "c", "p", "q"]),  # ties in board order, blank last
        ("total:desc", ["b", "a", "d", "c", "q", "p"]),  # blank last here too
        ("model_name:asc", ["b", "d", "a", "c", "q", "p"]),  # any case; alpha, Alpha tie
        ("size:asc", ["c", "a", "d", "b", "q", "p"]),  # by parameters
        ("rank:asc", ["b", "a", "c", "d", "p", "q"]),  # a copy has no rank of its own
        ("ci:desc", ["a", "b", "c", "d", "p", "q"]),  # the interval column: the order stays
    ],
)
def test_a_sort_keeps_sections_apart_and_blanks_last(sort, expected):
    assert list(sort_rows(board(), sort)["submission_id"]) == expected


def test_the_column_chooser_keeps_its_entries_and_what_always_stays():
    frame = pd.DataFrame(
        columns=["rank", "model_name", "total", "total_ci_low", "form/a", "form/b", "license"]
        + ["source", "submission_id"]
    )
    assert list(keep_columns(frame, None).columns) == list(frame.columns)
    assert list(keep_columns(frame, ("license",)).columns) == [
        "rank",
        "model_name",
        "total",
        "license",
        "submission_id",
    ]
    # the ranking tier stays with the tier columns off; the others go
    assert "form/b" in keep_columns(frame, (), "b").columns
    assert "form/a" not in keep_columns(frame, (), "b").columns


def test_the_parameters_are_checked_and_named():
    assert parse_columns("") is None and parse_columns("none") == ()
    assert parse_columns("license,ci") == ("ci", "license")  # the chooser's order
    assert parse_sort("") is None and parse_sort("total:desc") == "total:desc"
    for parse, bad, parameter in (
        (parse_columns, "ci,,license", "columns"),
        (parse_columns, "none,ci", "columns"),
        (parse_sort, "total", "sort"),
        (parse_sort, "total:down", "sort"),
        (parse_sort, "nope:asc", "sort"),
    ):
        with pytest.raises(UnknownFilter) as refused:
            parse(bad)
        assert refused.value.parameter == parameter and refused.value.scope is None
