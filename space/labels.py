"""One distinct label per row of a board, for the model cell and the plots' legends and axes.

Two rows of one model (GPT-4.1 from a paper's Tables 3 and 7, or one model under two settings) must
never read the same: each name shared by several rows gets what tells them apart, in this order
of preference: the setting, the source (the paper's table, or how it was produced), the kind of
row, and last the submission id.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from leaderboard.overview import link_key
from space.display import ROW_KINDS

DISTINGUISHERS = ("setting", "source", "row_kind")


def _text(row, column: str) -> str:
    value = row.get(column)
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if column == "row_kind":
        return ROW_KINDS.get(str(value), str(value))
    if column == "source":  # "reported (paper), Table 7" -> "Table 7"
        return str(value).removeprefix("reported (paper), ")
    if column == "model_link":  # "https://huggingface.co/org/m/tree/abc" -> "org/m"
        return link_key(value).removeprefix("huggingface.co/") or "no link"
    return str(value)


def distinctions(
    board: pd.DataFrame, by: Sequence[str] = DISTINGUISHERS, key: str = "submission_id"
) -> dict[str, str]:
    """row id (`key`) -> what tells the row apart from other rows of its model name ("" if the
    name is unique): the fewest of `by` that make every label of that name distinct, else the id.
    The overview's rows (one per model) are told apart by source and link."""
    found: dict[str, str] = {}
    if board.empty:
        return found
    for _, rows in board.groupby(board["model_name"].astype(str), sort=False):
        ids = list(rows[key].astype(str))
        if len(rows) == 1:
            found[ids[0]] = ""
            continue
        records = [row for _, row in rows.iterrows()]
        chosen: list[str] = []
        for column in by:
            values = [_text(r, column) for r in records]
            if len(set(values)) > 1:
                chosen.append(column)
            keys = [tuple(_text(r, c) for c in chosen) for r in records]
            if len(set(keys)) == len(records):
                break
        for sid, row in zip(ids, records):
            parts = [_text(row, c) for c in chosen]
            keys = [tuple(_text(r, c) for c in chosen) for r in records]
            if keys.count(tuple(parts)) > 1 or not parts:
                parts.append(sid[:8])
            found[sid] = " · ".join(p for p in parts if p)
    return found


def row_labels(board: pd.DataFrame) -> dict[str, str]:
    """submission id -> the row's label: its model name, with what distinguishes it in parentheses."""
    extra = distinctions(board)
    return {
        str(sid): f"{name} ({extra[str(sid)]})" if extra.get(str(sid)) else str(name)
        for sid, name in zip(board["submission_id"], board["model_name"])
    }
