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
    facts=None,
    link="",
):
    """`facts`: a model run's resolved model (model_type, parameters, license)."""
    stats = {"accuracy": {"value": value, "ci95": [value - ci, value + ci], "n": n}}
    provenance = {"protocol": protocol, "split": {"sha256": split, "n_items": n}}
    if predictions:
        provenance["predictions_sha256"] = predictions
    if facts:
        provenance["model"] = {"name": model, **facts}
    uploaded = protocol == "uploaded predictions"
    return {
        "submission_id": sid,
        "suite": suite,
        "task": task,
        "setting": setting,
        "model_name": model,
        "model_link": link,
        "source": "predictions file" if uploaded else f"model run ({protocol})",
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


GEN_7B = {"model_type": "generative", "parameters": 7e9, "license": "apache-2.0"}
GEN_70B = {"model_type": "generative", "parameters": 7e10, "license": "llama3"}
REWARD_1B = {"model_type": "reward", "parameters": 5e8, "license": "mit"}


def facts_records():
    return [
        record("s1", "Small", 0.80, ci=0.01, facts=GEN_7B),
        record("b1", "Big", 0.70, ci=0.01, facts=GEN_70B),
        record("r1", "Judge", 0.60, ci=0.01, facts=REWARD_1B),
        record(
            "u1", "Upload", 0.50, ci=0.01, protocol="uploaded predictions", predictions="1" * 64
        ),
        record(
            "b2",
            "Big",
            0.66,
            suite="personafeedback",
            task="binary_choice",
            setting="persona",
            protocol="pairwise_logprobs",
            facts=GEN_70B,
        ),
    ]


def test_model_facts_come_with_each_row():
    rows = by_model(overview(facts_records()))
    assert (rows["Small"]["model_type"], rows["Small"]["size"]) == ("generative", "1B-10B")
    assert rows["Small"]["license"] == "apache-2.0" and rows["Small"]["parameters"] == 7e9
    assert (rows["Judge"]["model_type"], rows["Judge"]["size"]) == ("reward", "< 1B")
    assert rows["Upload"]["model_type"] == "predictions file"
    assert (rows["Upload"]["size"], rows["Upload"]["license"]) == ("unknown", "unknown")
    assert (rows["Upload"]["source"], rows["Small"]["source"]) == ("predictions file", "model run")


@pytest.mark.parametrize(
    "kwargs, models",
    [
        ({"model_type": "generative"}, {"Small", "Big"}),
        ({"model_type": "reward"}, {"Judge"}),
        ({"model_type": "predictions file"}, {"Upload"}),
        ({"size": "10B-100B"}, {"Big"}),
        ({"size": "unknown"}, {"Upload"}),
        ({"license": "mit"}, {"Judge"}),
        ({"model_type": "generative", "size": "1B-10B"}, {"Small"}),
        ({"model_type": "reward", "license": "llama3"}, set()),
    ],
)
def test_type_size_and_license_keep_models(kwargs, models):
    frame = overview(facts_records(), **kwargs)
    assert set(frame["model_name"]) == models


def test_a_filtered_model_keeps_its_rank_among_all_models_and_empty_columns_go():
    """As on the boards: the filters keep rows, the ranks are those of the whole column."""
    frame = overview(facts_records(), model_type="reward")
    rows = by_model(frame)
    assert rows["Judge"]["prefeval/mcq rank"] == 3  # Small and Big are above it, though hidden
    assert [c["column"] for c in frame.attrs["columns"]] == ["prefeval/mcq"]
    assert not any(c.startswith("personafeedback/") for c in frame.columns)
    big = by_model(overview(facts_records(), search="big"))["Big"]
    assert big["prefeval/mcq rank"] == 2 and big["tasks"] == 2


def test_download_names_say_the_view_and_are_safe_in_a_header():
    from leaderboard.overview import download_stem

    assert download_stem("0123456789abcdef", "prefeval", model_type="generative") == (
        "overview-prefeval-generative-0123456789ab"
    )
    hostile = download_stem("f" * 40, license='x"; evil=/../y', search="a b")
    assert hostile == "overview-all-suites-x___evil__.._y-q-a_b-ffffffffffff"


def test_models_sharing_a_name_are_told_apart_by_identity():
    """A model run and an uploaded file of one name, and two uploads linking different models,
    are different models: separate rows, never one row mixing their cells."""
    frame = overview(
        [
            record(
                "run",
                "Shared",
                0.80,
                facts=GEN_7B,
                link="https://huggingface.co/org/shared/tree/abc",
            ),
            record(
                "up-a",
                "Shared",
                0.60,
                protocol="uploaded predictions",
                predictions="a" * 64,
                link="https://huggingface.co/alice/shared",
            ),
            record(
                "up-b",
                "Shared",
                0.70,
                suite="personafeedback",
                task="binary_choice",
                setting="persona",
                protocol="uploaded predictions",
                predictions="b" * 64,
                link="https://huggingface.co/bob/shared",
            ),
        ]
    )
    assert list(frame["model_name"]) == ["Shared"] * 3
    assert frame["model_key"].is_unique
    cells = {
        row["model_key"]: tuple(
            None if pd.isna(x) else x
            for x in (
                row["prefeval/mcq submission_id"],
                row["personafeedback/binary_choice submission_id"],
            )
        )
        for row in frame.to_dict(orient="records")
    }
    assert sorted(map(str, cells.values())) == sorted(
        map(str, [("run", None), ("up-a", None), (None, "up-b")])
    ), cells
    by_id = {row["prefeval/mcq submission_id"]: row for row in frame.to_dict(orient="records")}
    assert by_id["run"]["source"] == "model run" and by_id["up-a"]["source"] == "predictions file"
    assert by_id["up-a"]["model_link"] == "https://huggingface.co/alice/shared"
    # both uploads and the run ranked in their column, as the separate models they are
    assert by_id["run"]["prefeval/mcq rank"] == 1 and by_id["up-a"]["prefeval/mcq rank"] == 2


def test_one_model_across_tasks_stays_one_row():
    """Runs of one model on tasks with different default protocols, its link at any revision,
    and a result without a link beside the one linked model of its name: one row."""
    frame = overview(
        [
            record("m1", "Org/M", 0.8, link="https://huggingface.co/Org/M/tree/aaa"),
            record(
                "m2",
                "org/m",
                0.7,
                suite="personafeedback",
                task="binary_choice",
                setting="persona",
                protocol="pairwise_logprobs",
                link="https://huggingface.co/org/m/tree/bbb",
            ),
        ]
    )
    assert len(frame) == 1 and frame.iloc[0]["tasks"] == 2
    uploads = overview(
        [
            record(
                "u1",
                "Mine",
                0.6,
                protocol="uploaded predictions",
                predictions="c" * 64,
                link="https://example.org/mine/",
            ),
            record(
                "u2",
                "Mine",
                0.7,
                suite="personafeedback",
                task="binary_choice",
                setting="persona",
                protocol="uploaded predictions",
                predictions="d" * 64,
            ),
        ]
    )
    assert len(uploads) == 1 and uploads.iloc[0]["tasks"] == 2
    assert uploads.iloc[0]["model_link"] == "https://example.org/mine/"


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


def test_an_older_version_in_the_tab_leaves_out_results_withdrawn_since(tmp_path):
    """The tab's Version selector opens a past revision without what an operator withdrew
    since, ranked without it (as the Leaderboard tab does); the newest is the read path's."""
    from types import SimpleNamespace

    from leaderboard.readpath import Filters, LeaderboardCache
    from leaderboard.store import LocalDatasetStore
    from space.tabs.overview import overview_filters, overview_frame

    store = LocalDatasetStore(tmp_path / "results")
    store.publish(default_record("keep", "Kept", 0.5, ci=0.01))  # the real conditions count it
    old = store.publish(default_record("hide", "Hidden", 0.9, ci=0.01))
    withdrawn: list[str] = []
    services = SimpleNamespace(
        board=LeaderboardCache(store, lambda: []),
        records=SimpleNamespace(withdrawn_ids=lambda: list(withdrawn)),
    )
    everything = overview_filters()
    assert isinstance(everything, Filters)
    before = by_model(overview_frame(services, everything, old))
    assert set(before) == {"Kept", "Hidden"} and before["Kept"]["prefeval/mcq rank"] == 2
    store.withdraw("hide", "Withdraw result hide (hidden by an operator)")
    withdrawn.append("hide")
    after = by_model(overview_frame(services, everything, old))
    assert set(after) == {"Kept"} and after["Kept"]["prefeval/mcq rank"] == 1
    assert set(by_model(overview_frame(services, everything))) == {"Kept"}  # the newest
    mine = overview_frame(services, overview_filters(search="kep"), old)
    assert list(mine["model_name"]) == ["Kept"]


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


def test_the_model_cell_says_what_tells_models_of_one_name_apart():
    from space.tabs.overview import render_overview

    frame = overview(
        [
            record("run", "Shared", 0.80, facts=GEN_7B),
            record("up", "Shared", 0.60, protocol="uploaded predictions", predictions="a" * 64),
            record("solo", "Solo", 0.50),
        ]
    )
    page = render_overview(frame)
    assert page.count('class="pb-distinct"') == 2
    assert '<span class="pb-distinct">model run</span>' in page
    assert '<span class="pb-distinct">predictions file</span>' in page
