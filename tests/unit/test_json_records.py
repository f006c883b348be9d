"""table.export's JSON: rows encoded column by column (json_records) give the bytes the row-wise
encoding gave (astype(object) / where(notna, None) / to_dict), for every dtype a board holds, each
with missing values, and for the boards themselves."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from leaderboard.table import _json_default, export


def row_wise(frame: pd.DataFrame) -> bytes:
    """The encoding before json_records (kept here as the reference)."""
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return json.dumps(records, allow_nan=False, default=_json_default).encode()


def every_dtype() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "float": [0.1, np.nan, 1 / 3],
            "int": np.array([1, 2, 3], dtype="int64"),
            "nullable int": pd.array([1, None, 3], dtype="Int64"),
            "bool": [True, False, True],
            "nullable bool": pd.array([True, None, False], dtype="boolean"),
            "text": pd.array(["a", None, 'ü "x" \\ '], dtype="str"),
            "object": ["x", None, np.nan],
            "mixed": [1, "two", 3.5],
            "when": pd.to_datetime(["2026-01-01T00:00:00", None, "2026-11-27T10:00:00"]),
            "category": pd.Categorical(["p", None, "q"]),
            "float32": np.array([0.5, np.nan, 2.25], dtype="float32"),
        }
    )


def test_every_dtype_with_missing_values_encodes_as_before():
    frame = every_dtype()
    assert export(frame, "json") == row_wise(frame)
    decoded = json.loads(export(frame, "json"))
    assert decoded[1]["float"] is None and decoded[1]["nullable int"] is None
    assert decoded[1]["text"] is None and decoded[2]["object"] is None
    assert decoded[0]["nullable int"] == 1 and decoded[2]["float"] == 1 / 3  # exact, not 15 digits


def test_empty_frames_and_a_page_of_a_board_encode_as_before(tmp_path):
    from test_store import make_record

    from leaderboard.board import manifest_tier_order
    from leaderboard.readpath import Filters, LeaderboardCache
    from leaderboard.store import LocalDatasetStore

    assert export(every_dtype().iloc[:0], "json") == row_wise(every_dtype().iloc[:0]) == b"[]"
    store = LocalDatasetStore(tmp_path / "results")
    for i in range(5):
        store.publish(make_record(f"s{i}", i / 7, model=f"model {i}"))
    board = LeaderboardCache(store, manifest_tier_order).table().board(Filters())
    assert len(board) == 5 and export(board, "json") == row_wise(board)
    assert export(board.iloc[1:3], "json") == row_wise(board.iloc[1:3])
