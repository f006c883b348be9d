"""The leaderboard table: long scores -> filtered, ranked wide view -> exports."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from leaderboard.table import export, records_to_scores, wide_view


def stats(value, n=10):
    return {"accuracy": {"value": value, "ci95": [value / 2, (1 + value) / 2], "n": n}}


def record(
    sid,
    model,
    total,
    explicit,
    implicit,
    *,
    suite="prefeval",
    task="mcq",
    setting="zero_shot",
    row_kind="computed",
    at="2025-01-01T00:00:00+00:00",
):
    return {
        "submission_id": sid,
        "suite": suite,
        "task": task,
        "setting": setting,
        "model_name": model,
        "source": "predictions" if row_kind == "computed" else "paper",
        "row_kind": row_kind,
        "submitted_at": at,
        "metrics": {
            "total": stats(total, 30),
            "tiers": {"form": {"explicit": stats(explicit), "implicit_choice": stats(implicit)}},
        },
    }


@pytest.fixture
def scores():
    return records_to_scores(
        [
            record("a", "alpha", 0.50, 0.90, 0.10),
            record("b", "beta", 0.70, 0.60, 0.80),
            record("c", "gamma", 0.60, 0.95, 0.25, setting="cot"),
            record("p", "paper-model", 0.99, 0.99, 0.99, row_kind="reported"),
            record("o", "other-suite", 0.80, 0.80, 0.80, suite="other", task="t"),
        ]
    )


def test_long_table_shape(scores):
    assert len(scores) == 5 * 3
    row = scores[(scores["submission_id"] == "b") & (scores["tier"] == "implicit_choice")].iloc[0]
    assert (
        row["tier_group"],
        row["metric"],
        row["value"],
        row["ci_low"],
        row["ci_high"],
        row["n"],
    ) == ("form", "accuracy", 0.8, 0.4, 0.9, 10)


def test_ranks_by_total_and_reported_rows_last(scores):
    wide = wide_view(scores, suite="prefeval", task="mcq")
    # p has the highest total (0.99) but is a reported row: it comes after every computed row
    assert wide["submission_id"].tolist() == ["b", "c", "a", "p"]
    assert wide["total"].tolist() == [0.70, 0.60, 0.50, 0.99]
    assert list(wide.columns[:10]) == [
        "model_name",
        "suite",
        "task",
        "setting",
        "source",
        "row_kind",
        "metric",
        "total",
        "total_ci_low",
        "total_ci_high",
    ]
    assert set(wide["metric"]) == {"accuracy"}  # the metric `total` and the tier columns are in
    assert {"form/explicit", "form/implicit_choice"} <= set(wide.columns)
    assert wide.loc[wide["submission_id"] == "a", "n_items"].item() == 30


def test_filters(scores):
    assert set(wide_view(scores)["submission_id"]) == {"a", "b", "c", "p", "o"}
    assert wide_view(scores, suite="other")["submission_id"].tolist() == ["o"]
    assert wide_view(scores, suite="prefeval", setting="cot")["submission_id"].tolist() == ["c"]
    assert set(wide_view(scores, setting="zero_shot")["submission_id"]) == {"a", "b", "p", "o"}
    assert set(wide_view(scores, task="t")["submission_id"]) == {"o"}
    empty = wide_view(scores, suite="nope")
    assert empty.empty and "total" in empty.columns


@pytest.mark.parametrize("tier", ["form/explicit", "explicit"])
def test_tier_filter_keeps_one_column_and_ranks_by_it(scores, tier):
    wide = wide_view(scores, suite="prefeval", tier=tier)
    tier_cols = [c for c in wide.columns if c.startswith("form/")]
    assert tier_cols == ["form/explicit"]
    # explicit: c 0.95, a 0.90, b 0.60 (computed), then p (reported)
    assert wide["submission_id"].tolist() == ["c", "a", "b", "p"]
    assert wide["form/explicit"].tolist() == [0.95, 0.90, 0.60, 0.99]


def test_tier_order(scores):
    wide = wide_view(scores, suite="prefeval", tier_order=["form/implicit_choice", "form/explicit"])
    assert [c for c in wide.columns if c.startswith("form/")] == [
        "form/implicit_choice",
        "form/explicit",
    ]


def test_ties_broken_by_submission_time():
    scores = records_to_scores(
        [
            record("late", "l", 0.5, 0.5, 0.5, at="2025-02-01T00:00:00+00:00"),
            record("early", "e", 0.5, 0.5, 0.5, at="2025-01-01T00:00:00+00:00"),
        ]
    )
    assert wide_view(scores)["submission_id"].tolist() == ["early", "late"]


THIRD = 1 / 3


@pytest.fixture
def precise():
    return wide_view(
        records_to_scores(
            [
                record("x", "x-model", THIRD, 2 / 3, 0.123456789012345),
                record("y", "y-model", 0.1, 0.2, 0.3),
            ]
        )
    )


def test_export_csv_round_trip(precise):
    back = pd.read_csv(io.BytesIO(export(precise, "csv")))
    assert back["submission_id"].tolist() == ["x", "y"]
    assert back["total"].tolist() == [THIRD, 0.1]
    assert back["form/explicit"].tolist()[0] == 2 / 3
    assert back["form/implicit_choice"].tolist()[0] == 0.123456789012345


def test_export_json_round_trip(precise):
    rows = json.loads(export(precise, "json"))
    assert [r["submission_id"] for r in rows] == ["x", "y"]
    assert rows[0]["total"] == pytest.approx(THIRD, rel=1e-14, abs=0)
    assert rows[0]["total"] != round(THIRD, 4)
    assert rows[0]["form/implicit_choice"] == pytest.approx(0.123456789012345, rel=1e-14, abs=0)
    assert rows[1]["total"] == 0.1


def test_export_parquet_round_trip(precise):
    back = pd.read_parquet(io.BytesIO(export(precise, "parquet")))
    assert back["total"].tolist() == [THIRD, 0.1]
    assert back["form/explicit"].tolist()[0] == 2 / 3
    assert list(back.columns) == list(precise.columns)


def test_export_unknown_format(precise):
    with pytest.raises(ValueError, match="unknown format"):
        export(precise, "xlsx")
