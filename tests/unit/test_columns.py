"""One column registry (leaderboard/columns.yaml): the board and every download carry the same
columns. Records are published into a real local results store; the downloads are the read path's
JSON, CSV and parquet bodies; the dataset is read back with `datasets.load_dataset`."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ (board_fixture)

from board_fixture import EXPECTED_RANKS, SUITE, TASK, board_record, board_records  # noqa: E402

from leaderboard.board import model_facts, ranked_board  # noqa: E402
from leaderboard.columns import (  # noqa: E402
    ColumnRegistryError,
    board_download_columns,
    chooser_entries,
    default_chooser,
    parse_columns,
    registry,
    stored_columns,
)
from leaderboard.readpath import Filters, LeaderboardCache  # noqa: E402
from leaderboard.store import LocalDatasetStore  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402
from space.board_view import DEFAULT_COLUMNS, OPTIONAL_COLUMNS  # noqa: E402
from space.display import column_labels  # noqa: E402

# What a reader who downloads must be able to filter and rank by (the board's own facts)
BOARD_FACTS = {
    "model_type",
    "parameters",
    "size",
    "license",
    "rank",
    "rank_group",
    "above_reference",
    "protocol",
    "judge",
}


def reference_record() -> dict:
    """A reference line (the majority answer) at 0.6: delta (0.50) is below it."""
    record = board_record("fx-ref", "majority answer", 0.60, 0.60, 0.60, row_kind="reference")
    record["source"] = "reference"
    return record


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("columns") / "results-dataset"
    store = LocalDatasetStore(root)
    records = [*board_records(), reference_record()]
    for record in records:
        store.publish(record)
    return root, store, records


def downloads(store) -> dict[str, pd.DataFrame]:
    table = LeaderboardCache(store, lambda: []).table()
    filters = Filters(suite=SUITE, task=TASK)
    body = {fmt: table.body(filters, fmt).content for fmt in ("json", "csv", "parquet")}
    return {
        "json": pd.DataFrame(json.loads(body["json"])),
        "csv": pd.read_csv(io.BytesIO(body["csv"])),
        "parquet": pd.read_parquet(io.BytesIO(body["parquet"])),
    }


def test_every_download_has_the_boards_columns_and_ranks(published):
    _, store, records = published
    board, _ = ranked_board(records_to_scores(records), model_facts(records), SUITE, TASK)
    assert BOARD_FACTS <= set(board.columns)
    for fmt, frame in downloads(store).items():
        assert list(frame.columns) == list(board.columns), fmt
        ranks = dict(zip(frame["model_name"], frame["rank"]))
        assert {m: ranks[m] for m in EXPECTED_RANKS if m != "delta"} == {
            m: r for m, r in EXPECTED_RANKS.items() if m != "delta"
        }, fmt
        by_model = frame.set_index("model_name")
        # delta's interval does not clear the reference line: below it, unranked
        assert pd.isna(by_model.loc["delta", "rank"]), fmt
        assert str(by_model.loc["delta", "above_reference"]).lower() in ("false", "0"), fmt
        assert by_model.loc["alpha", "model_type"] == "generative", fmt
        assert by_model.loc["delta", "model_type"] == "predictions file", fmt
        assert by_model.loc["alpha", "protocol"] == "generate_parse", fmt
        assert by_model.loc["alpha", "size"] == "1B-10B", fmt


def test_the_board_columns_are_the_registrys_in_order(published):
    _, _, records = published
    board, _ = ranked_board(records_to_scores(records), model_facts(records), SUITE, TASK)
    tiers = [c for c in board.columns if "/" in c]
    metrics = [c for c in board.columns if c not in tiers and c not in column_labels()]
    assert list(board.columns) == board_download_columns(metrics, tiers)
    assert tiers == ["form/explicit", "form/implicit_choice"]


def test_the_dataset_table_carries_the_stored_columns(published):
    datasets = pytest.importorskip("datasets")
    root, _, _ = published
    # a cache of its own: the user's cache could answer for an earlier folder at the same path
    table = datasets.load_dataset(str(root), split="train", cache_dir=str(root.parent / "hf-cache"))
    assert set(stored_columns()) <= set(table.column_names)
    alpha = table.filter(lambda row: row["model_name"] == "alpha" and row["tier"] == "total")
    assert alpha[0]["model_type"] == "generative" and alpha[0]["parameters"] == 7e9
    assert alpha[0]["license"] == "apache-2.0" and alpha[0]["protocol"] == "generate_parse"
    uploaded = table.filter(lambda row: row["model_name"] == "delta")
    assert set(uploaded["model_type"]) == {"predictions file"}


def test_chooser_and_labels_come_from_the_registry():
    assert OPTIONAL_COLUMNS == chooser_entries() and DEFAULT_COLUMNS == default_chooser()
    labels = column_labels()
    for column in registry():
        if not column.placeholder:
            assert labels[column.name] == column.label
    assert labels["form/explicit"]  # tier labels from the manifests


def test_a_bad_registry_entry_is_named():
    with pytest.raises(ColumnRegistryError, match=r"columns\[0\] \(x\): shown must be one of"):
        parse_columns(
            [{"name": "x", "label": "X", "type": "str", "shown": "sometimes", "source": "record"}]
        )
    with pytest.raises(ColumnRegistryError, match="chooser"):
        parse_columns(
            [{"name": "x", "label": "X", "type": "str", "shown": "default", "source": "record"}]
        )


def test_provenance_is_read_once_typed_and_tolerates_odd_records():
    from leaderboard.result_record import provenance_of
    from leaderboard.table import provenance_columns

    odd = board_record("odd", "odd", 0.5, 0.4, 0.6)
    odd["provenance"].update(model="not an object", judge=None)
    assert "model" not in provenance_of(odd) and "judge" not in provenance_of(odd)
    facts = provenance_columns(odd)
    assert facts["model_type"] == "predictions file" and facts["judge"] == ""
    run = board_record("run", "run", 0.5, 0.4, 0.6, parameters=135e6, license="mit")
    assert provenance_columns(run)["model_type"] == "generative"
    assert provenance_columns(run)["parameters"] == 135e6


def test_both_stores_offer_the_declared_interface(tmp_path):
    from leaderboard.hub_store import HubDatasetStore
    from leaderboard.store import ResultsStore

    assert isinstance(LocalDatasetStore(tmp_path / "store"), ResultsStore)
    members = {name for name in vars(ResultsStore) if not name.startswith("_")}
    members |= set(ResultsStore.__annotations__)
    assert members <= set(dir(LocalDatasetStore)) and members <= set(dir(HubDatasetStore))


def test_the_pages_read_the_typed_provenance():
    from leaderboard.result_record import checked_record
    from space.pages import hub_link
    from space.reproduce import reproduce_command

    run = board_record("run", "org/run", 0.5, 0.4, 0.6, parameters=135e6, license="mit")
    run["provenance"]["judge"] = {"model": "my-judge"}
    command = reproduce_command(checked_record(run))
    assert command.startswith(
        "PERSONABOARD_JUDGE_MODEL=my-judge personaboard evaluate --model org/run"
    )
    assert "--revision 0123456789abcdef" in command and "--protocol generate_parse" in command
    assert hub_link(checked_record(run)) == "https://huggingface.co/org/run"
    odd = board_record("odd", "odd", 0.5, 0.4, 0.6)
    odd["provenance"].update(model="not an object", judge="nor this")
    typed_odd = checked_record(odd)  # provenance is open: the store keeps what a job wrote
    assert hub_link(typed_odd) is None and "evaluate" not in reproduce_command(typed_odd)
