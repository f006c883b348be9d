"""The ranked board of one suite and task: rank groups from 95% intervals, per-cell counts and
intervals, and the model facts (type, size, license) the filters use.

Ranking (Chatbot Arena's rule, also used by RewardBench-style boards):

    rank(row) = 1 + number of rows whose 95% lower bound is above this row's 95% upper bound

so a row is outranked only by rows that are better beyond doubt; rows whose intervals overlap the
same leaders share a rank (a rank group), and ranks may skip (1, 1, 3). Only verified rows
(`computed`: a full run scored here) are ranked; partial runs and the papers' reported rows are
listed after them, in their own sections, never ranked. A row without an interval (a single item)
gets the interval [value, value].

The reference line of a board is its best reference row (the majority answer where it beats uniform
chance) in the ranking column. A row beats it only when its 95% lower bound is above it
(`above_reference`); a verified row that does not is listed after the ranked ones, unranked, so a
random predictions file never heads a board, empty or not. Ranks of the others do not change: a
row below the line can never be above another row's upper bound that clears it.

Protocols are never mixed in one ranking: a verified model run under another protocol than the
task's default (PrefEval mcq: choice_logprobs beside the official generate_parse) is ranked only
among rows of its own protocol, listed after the default ones in its section, and `rank_among`
names that protocol (the view shows it beside the rank). Predictions files carry no protocol and
are ranked with the default.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.reported import comparable_paper_rows
from leaderboard.table import TOTAL, column_name, wide_view

RANKED_KIND = "computed"
REFERENCE_KIND = "reference"
SECTION_ORDER = ("computed", "reference", "partial", "reported")
SIZE_BUCKETS = ((1e9, "< 1B"), (1e10, "1B-10B"), (1e11, "10B-100B"), (float("inf"), "100B +"))
UNKNOWN = "unknown"


def ranks_from_intervals(low: Iterable[float], high: Iterable[float]) -> list[int]:
    """1 + the number of rows whose lower bound exceeds this row's upper bound (see the module doc)."""
    low, high = np.asarray(list(low), dtype=float), np.asarray(list(high), dtype=float)
    return [int(1 + np.sum(low > h)) for h in high]


def cell_stats(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (submission, column) of the wide view with its interval and item count."""
    if scores.empty:
        return pd.DataFrame(columns=["submission_id", "column", "ci_low", "ci_high", "n"])
    primary = scores["primary"] if "primary" in scores else pd.Series(True, index=scores.index)
    frame = scores.assign(
        column=[
            column_name(g, t, m, p)
            for g, t, m, p in zip(scores["tier_group"], scores["tier"], scores["metric"], primary)
        ]
    )
    return frame.loc[frame["column"].notna(), ["submission_id", "column", "ci_low", "ci_high", "n"]]


def size_bucket(parameters: Any) -> str:
    try:
        count = float(parameters)
    except (TypeError, ValueError):
        return UNKNOWN
    if not count or np.isnan(count):
        return UNKNOWN
    return next(label for limit, label in SIZE_BUCKETS if count < limit)


def model_facts(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Per result: model type, parameter count, size bucket, license, model revision (model runs
    know them from the resolved model; uploaded predictions and papers' rows say `unknown`)."""
    rows = []
    for record in records:
        provenance = record.get("provenance") or {}
        model = provenance.get("model")
        if not isinstance(model, dict):
            model = {}
        if record.get("row_kind") in ("reported", "reference"):
            kind = "paper" if record["row_kind"] == "reported" else "reference line"
        elif model:
            kind = model.get("model_type") or UNKNOWN
        else:
            kind = "predictions file"
        rows.append(
            {
                "submission_id": record["submission_id"],
                "model_type": kind,
                "parameters": model.get("parameters"),
                "size": size_bucket(model.get("parameters")),
                "license": model.get("license") or UNKNOWN,
                "model_revision": model.get("revision") or "",
                "predictions_sha256": provenance.get("predictions_sha256")
                or provenance.get("answers_sha256")
                or "",
            }
        )
    return pd.DataFrame(rows, columns=FACT_COLUMNS)


FACT_COLUMNS = [
    "submission_id",
    "model_type",
    "parameters",
    "size",
    "license",
    "model_revision",
    "predictions_sha256",
]


def duplicates_of(board: pd.DataFrame) -> pd.Series:
    """Per row, the earliest other verified row whose predictions file has the same sha256
    ("model (setting)"), or "": the same file uploaded twice (under another name or setting) is one
    result, ranked once, as the first."""
    found = pd.Series("", index=board.index, dtype=object)
    if "predictions_sha256" not in board:
        return found
    first: dict[str, str] = {}
    candidates = board[(board["row_kind"] == RANKED_KIND) & (board["predictions_sha256"] != "")]
    for index, row in (
        candidates.dropna(subset=["predictions_sha256"])
        .sort_values(["submitted_at", "submission_id"])
        .iterrows()
    ):
        digest = row["predictions_sha256"]
        if digest in first:
            found[index] = first[digest]
        else:
            first[digest] = f"{row['model_name']} ({row['setting']})"
    return found


def ranked_board(
    scores: pd.DataFrame,
    facts: pd.DataFrame,
    suite: str,
    task: str,
    setting: str | None = None,
    tier: str | None = None,
    tier_order: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(board, cells): the wide view of one task with `rank` (verified rows only), the model facts,
    and sorted by section (verified, partial, reported) then by the ranking score; `cells` holds
    each shown cell's interval and item count, keyed by (submission_id, column)."""
    board = wide_view(scores, suite, task, setting, tier, tier_order=tier_order)
    cells = (
        cell_stats(scores[scores["submission_id"].isin(board["submission_id"])])
        if not board.empty
        else cell_stats(board)
    )
    board = board.merge(facts, on="submission_id", how="left")
    if "predictions_sha256" in board:
        board["predictions_sha256"] = board["predictions_sha256"].fillna("")
    for column in ("model_type", "size", "license"):
        board[column] = board[column].fillna(UNKNOWN)
    ranked_by = next(
        (
            c
            for c in board.columns
            if tier and "/" in c and (c == tier or c.split("/", 1)[1] == tier)
        ),
        TOTAL,
    )
    bounds = cells[cells["column"] == ranked_by].set_index("submission_id")
    value = board[ranked_by].astype(float)
    low = board["submission_id"].map(bounds["ci_low"]).astype(float).fillna(value)
    high = board["submission_id"].map(bounds["ci_high"]).astype(float).fillna(value)
    line = reference_line(scores, suite, task, ranked_by, tier, tier_order)
    judged = (board["row_kind"] != REFERENCE_KIND) & value.notna()
    board["above_reference"] = pd.Series(pd.NA, index=board.index, dtype="boolean")
    if line is not None:
        board.loc[judged, "above_reference"] = (low[judged] > line["value"]).to_numpy()
    below = board["above_reference"].eq(False).fillna(False).astype(bool)
    board["duplicate_of"] = duplicates_of(board)
    # the paper rows each row may stand beside: same setting and protocol (leaderboard/reported.py)
    protocols = (
        scores.drop_duplicates("submission_id").set_index("submission_id")["protocol"].to_dict()
        if "protocol" in scores
        else {}
    )
    board["comparable_paper_rows"] = comparable_paper_rows(board, protocols)
    verified = (
        (board["row_kind"] == RANKED_KIND) & value.notna() & ~below & (board["duplicate_of"] == "")
    )
    board["rank"] = pd.Series(pd.NA, index=board.index, dtype="Int64")
    board["rank_among"] = rank_groups(board, scores, suite, task)
    for group in board.loc[verified, "rank_among"].unique():
        members = verified & (board["rank_among"] == group)
        board.loc[members, "rank"] = ranks_from_intervals(low[members], high[members])
    board["_group"] = (board["rank_among"] != "").astype(int)
    board["_section"] = (
        board["row_kind"]
        .map({k: i for i, k in enumerate(SECTION_ORDER)})
        .fillna(len(SECTION_ORDER))
    )
    board["_below"] = below
    board["_score"] = value
    board = board.sort_values(
        ["_section", "_group", "rank_among", "_below", "_score", "submitted_at"],
        ascending=[True, True, True, True, False, True],
        na_position="last",
    )
    board.attrs["ranked_by"] = ranked_by
    board.attrs["reference_line"] = line
    return board.drop(columns=["_section", "_group", "_below", "_score"]).reset_index(
        drop=True
    ), cells


def rank_groups(board: pd.DataFrame, scores: pd.DataFrame, suite: str, task: str) -> pd.Series:
    """Per row, "" where it is ranked with the task's default protocol (or has none: a predictions
    file), else the protocol it is ranked among (the row's provenance, from the long table)."""
    if "protocol" in scores and not scores.empty:
        by_id = scores.drop_duplicates("submission_id").set_index("submission_id")["protocol"]
        protocols = board["submission_id"].map(by_id).fillna("").astype(str)
    else:
        protocols = pd.Series("", index=board.index)
    spec = all_suites().get(suite)
    default = (
        spec.tasks[task].model.get("default_protocol") if spec and task in spec.tasks else None
    )
    return protocols.where((protocols != "") & (protocols != (default or "")), "")


def reference_line(
    scores: pd.DataFrame,
    suite: str,
    task: str,
    column: str,
    tier: str | None = None,
    tier_order: list[str] | None = None,
) -> dict[str, Any] | None:
    """The best reference row of suite/task in `column` ({value, name}), whatever setting the board
    shows (reference rows have their own); None when the task has none (no label answers)."""
    if scores.empty or "row_kind" not in scores:
        return None
    lines = wide_view(
        scores[scores["row_kind"] == REFERENCE_KIND], suite, task, None, tier, tier_order=tier_order
    )
    if lines.empty or column not in lines or lines[column].isna().all():
        return None
    best = lines.loc[lines[column].astype(float).idxmax()]
    return {"value": float(best[column]), "name": str(best["model_name"]), "column": column}


def manifest_tier_order() -> list[str]:
    """Tier columns in the order the suites' manifests declare them."""
    order: list[str] = []
    for suite in all_suites().values():
        for task in suite.tasks.values():
            for group in task.tier_groups:
                order.extend(
                    name for tier in group.tiers if (name := column_name(group.name, tier))
                )
    return order
