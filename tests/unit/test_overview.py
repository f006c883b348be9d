"""The overview across suites (leaderboard/overview.py): which rows count, one per model and task,
ranks only among rows that ran the same items, the default setting and protocol only, partial and
hidden rows left out, byte-identical predictions ranked once."""

from __future__ import annotations

import pandas as pd
import pytest

from leaderboard.overview import Condition, build_overview, conditions
from leaderboard.table import records_to_scores, wide_rows

MCQ = Condition("prefeval", "mcq", "zero_shot", "choice_logprobs", "accuracy")
PF = Condition("personafeedback", "binary_choice", "persona", "pairwise_logprobs", "accuracy")
SPLIT = "ab" * 32


def record(
    sid,
    model,
    value,
    *,
    suite="prefeval",
    task="mcq",
    setting="zero_shot",
    protocol="choice_logprobs",
    row_kind="computed",
    split=SPLIT,
    n=3000,
    ci=0.02,
    predictions=None,
    at="2026-01-01T00:00:00+00:00",
):
    stats = {"accuracy": {"value": value, "ci95": [value - ci, value + ci], "n": n}}
    provenance = {"protocol": protocol, "split": {"sha256": split, "n_items": n}}
    if predictions:
        provenance["predictions_sha256"] = predictions
    return {
        "submission_id": sid,
        "suite": suite,
        "task": task,
        "setting": setting,
        "model_name": model,
        "source": "predictions file" if protocol == "uploaded predictions" else "model run",
        "row_kind": row_kind,
        "submitted_at": at,
        "provenance": provenance,
        "n_items": n,
        "metrics": {"metric": "accuracy", "total": stats, "tiers": {}},
    }


def default_record(sid, model, value, **kwargs):
    """A result record under its task's default protocol (what the overview counts)."""
    from evaluator.registry import get_task

    task = get_task(kwargs.get("suite", "prefeval"), kwargs.get("task", "mcq"))
    kwargs.setdefault("protocol", task.model["default_protocol"])
    return record(sid, model, value, **kwargs)


def overview(records, **kwargs) -> pd.DataFrame:
    rows = wide_rows(records_to_scores(records)).rows
    return build_overview(rows, wanted=kwargs.pop("wanted", [MCQ, PF]), **kwargs)


def by_model(frame: pd.DataFrame) -> dict[str, dict]:
    return {row["model_name"]: row for row in frame.to_dict(orient="records")}


def test_every_task_has_a_condition_from_its_manifest():
    from evaluator.registry import get_task

    found = {(c.suite, c.task): c for c in conditions()}
    mcq = get_task("prefeval", "mcq")
    assert found[("prefeval", "mcq")] == Condition(  # the first declared setting
        "prefeval", "mcq", "zero_shot", mcq.model["default_protocol"], "accuracy"
    )
    assert found[("personafeedback", "binary_choice")].setting == "persona"


def test_one_row_per_model_one_column_per_task_never_averaged():
    frame = overview(
        [
            record("a1", "Alpha", 0.8),
            record(
                "a2",
                "alpha ",
                0.7,
                suite="personafeedback",
                task="binary_choice",
                setting="persona",
                protocol="pairwise_logprobs",
            ),
            record("b1", "Beta", 0.6),
        ]
    )
    assert list(frame["model_name"]) == ["alpha ", "Beta"]  # same model, names differing in case
    rows = by_model(frame)
    assert rows["alpha "]["prefeval/mcq"] == pytest.approx(0.8)
    assert rows["alpha "]["personafeedback/binary_choice"] == pytest.approx(0.7)
    assert rows["alpha "]["tasks"] == 2 and rows["Beta"]["tasks"] == 1
    assert pd.isna(rows["Beta"]["personafeedback/binary_choice"])
    assert not any("average" in c or "mean" in c for c in frame.columns)
    assert [c["column"] for c in frame.attrs["columns"]] == [
        "prefeval/mcq",
        "personafeedback/binary_choice",
    ]


def test_only_verified_full_runs_under_the_default_setting_and_protocol_count():
    frame = overview(
        [
            record("ok", "Counted", 0.5),
            record("part", "Partial", 0.9, row_kind="partial", n=30),
            record("paper", "Paper", 0.95, row_kind="reported"),
            record("ref", "Chance", 0.25, row_kind="reference"),
            record("remind", "Reminder", 0.9, setting="reminder"),
            record("gen", "Generated", 0.9, protocol="generate_parse"),
            record("up", "Uploaded", 0.7, protocol="uploaded predictions", predictions="1" * 64),
        ]
    )
    assert set(frame["model_name"]) == {"Counted", "Uploaded"}


def test_the_newest_result_of_a_model_counts_not_its_best():
    frame = overview(
        [
            record("old", "Alpha", 0.9, at="2026-01-01T00:00:00+00:00"),
            record("new", "Alpha", 0.6, at="2026-02-01T00:00:00+00:00"),
        ]
    )
    row = by_model(frame)["Alpha"]
    assert row["prefeval/mcq"] == pytest.approx(0.6)
    assert row["prefeval/mcq submission_id"] == "new"


def test_ranks_only_among_rows_that_ran_the_same_items():
    frame = overview(
        [
            record("a", "A", 0.80, ci=0.01),
            record("b", "B", 0.70, ci=0.01),
            record("c", "C", 0.60, ci=0.01),
            record("old", "OldSplit", 0.99, ci=0.01, split="cd" * 32),
            record("few", "Fewer", 0.95, ci=0.01, n=1500),
        ]
    )
    rows = by_model(frame)
    assert [rows[m]["prefeval/mcq rank"] for m in "ABC"] == [1, 2, 3]
    assert pd.isna(rows["OldSplit"]["prefeval/mcq rank"])
    assert "split version" in rows["OldSplit"]["prefeval/mcq note"]
    assert pd.isna(rows["Fewer"]["prefeval/mcq rank"])
    assert "fewer items" in rows["Fewer"]["prefeval/mcq note"]


def test_overlapping_intervals_share_a_rank():
    rows = by_model(overview([record("a", "A", 0.80), record("b", "B", 0.79)]))
    assert rows["A"]["prefeval/mcq rank"] == rows["B"]["prefeval/mcq rank"] == 1


def test_byte_identical_predictions_are_marked_and_ranked_once():
    same = "9" * 64
    rows = by_model(
        overview(
            [
                record(
                    "first",
                    "Original",
                    0.7,
                    protocol="uploaded predictions",
                    predictions=same,
                    at="2026-01-01T00:00:00+00:00",
                ),
                record(
                    "copy",
                    "Copy",
                    0.7,
                    protocol="uploaded predictions",
                    predictions=same,
                    at="2026-01-02T00:00:00+00:00",
                ),
            ]
        )
    )
    assert rows["Original"]["prefeval/mcq rank"] == 1
    assert pd.isna(rows["Copy"]["prefeval/mcq rank"])
    assert rows["Copy"]["prefeval/mcq note"].startswith("same predictions as Original")


def test_filters_keep_columns_and_models():
    records = [
        record("a1", "Alpha", 0.8),
        record(
            "a2",
            "Alpha",
            0.7,
            suite="personafeedback",
            task="binary_choice",
            setting="persona",
            protocol="pairwise_logprobs",
        ),
        record("b1", "Beta", 0.6),
    ]
    only_pf = overview(records, suite="personafeedback")
    assert list(only_pf["model_name"]) == ["Alpha"]
    assert "prefeval/mcq" not in only_pf.columns
    assert list(overview(records, search="BET")["model_name"]) == ["Beta"]
    assert overview(records, search="nobody").empty


def test_a_hidden_result_withdrawn_from_the_store_leaves_the_overview(tmp_path):
    """Hidden and deleted rows are withdrawn from the published table; the overview is built from
    that table, so they are gone from it too (the store, as the read path reads it)."""
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(tmp_path / "results")
    store.publish(record("keep", "Kept", 0.7))
    store.publish(record("hide", "Hidden", 0.9))
    rows = wide_rows(store.scores()).rows
    assert set(build_overview(rows, wanted=[MCQ])["model_name"]) == {"Kept", "Hidden"}
    store.withdraw("hide", "Withdraw result hide (hidden by an operator)")
    rows = wide_rows(store.scores()).rows
    assert set(build_overview(rows, wanted=[MCQ])["model_name"]) == {"Kept"}


def test_the_tab_draws_every_cell_with_its_rank_or_why_not_and_escapes_names():
    from space.tabs.overview import render_overview

    same = "9" * 64
    frame = overview(
        [
            record(
                "x",
                "<script>alert(1)</script>",
                0.8,
                protocol="uploaded predictions",
                predictions=same,
            ),
            record(
                "y",
                "Copy",
                0.8,
                protocol="uploaded predictions",
                predictions=same,
                at="2026-01-02T00:00:00+00:00",
            ),
        ]
    )
    page = render_overview(frame)
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "#1" in page and "same predictions as &lt;script&gt;" in page
    assert "80.0" in page and "78.0–82.0" in page  # percent, one decimal, with its interval
