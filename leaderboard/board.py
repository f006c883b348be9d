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

from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from evaluator.metrics import known_metrics
from evaluator.registry import all_suites
from evaluator.splits import PRIVATE_PART, PRIVATE_TIER_GROUP, PUBLIC_PART, release_tier_columns
from leaderboard.columns import (
    ABOVE_REFERENCE,
    COMPARABLE_PAPER_ROWS,
    DUPLICATE_OF,
    MODEL_REVISION,
    RANK,
    RANK_AMONG,
    RANK_GROUP,
    RANKED_ON,
    SIZE,
    board_download_columns,
)
from leaderboard.reported import comparable_paper_rows
from leaderboard.result_record import KIND_COMPUTED, KIND_PARTIAL, KIND_REFERENCE, KIND_REPORTED
from leaderboard.table import (
    PROVENANCE_MISSING,
    TOTAL,
    UNKNOWN,
    cell_stats,
    column_name,
    provenance_columns,
    wide_view,
)

RANKED_KIND = KIND_COMPUTED
REFERENCE_KIND = KIND_REFERENCE
SECTION_ORDER = (KIND_COMPUTED, KIND_REFERENCE, KIND_PARTIAL, KIND_REPORTED)
SIZE_BUCKETS = ((1e9, "< 1B"), (1e10, "1B-10B"), (1e11, "10B-100B"), (float("inf"), "100B +"))


def ranks_from_intervals(low: Iterable[float], high: Iterable[float]) -> list[int]:
    """1 + the number of rows whose lower bound exceeds this row's upper bound (see the module doc)."""
    low, high = _floats(low), _floats(high)
    # rows whose lower bound is above h: those after h in the sorted lower bounds (n log n, not n^2)
    bounds = np.sort(low[~np.isnan(low)])  # a missing bound is above nothing
    above = len(bounds) - np.searchsorted(bounds, high, side="right")
    return (1 + above).tolist()


def _floats(values: Iterable[float]) -> np.ndarray:
    if isinstance(values, (pd.Series, np.ndarray)):  # a board's column: no Python list between
        return np.asarray(values, dtype=float)
    return np.asarray(list(values), dtype=float)


def size_bucket(parameters: Any) -> str:
    try:
        count = float(parameters)
    except (TypeError, ValueError):
        return UNKNOWN
    if not count or np.isnan(count):
        return UNKNOWN
    return next(label for limit, label in SIZE_BUCKETS if count < limit)


def size_buckets(parameters: pd.Series) -> np.ndarray:
    """`size_bucket` of every value at once (a 20,000-row board in a millisecond, not 25)."""
    if pd.api.types.is_float_dtype(parameters):  # a board's column as the table reads it
        count = parameters.to_numpy(dtype=float, na_value=np.nan)
    else:
        count = pd.to_numeric(pd.Series(parameters, dtype=object), errors="coerce")
        count = count.to_numpy(dtype=float, na_value=np.nan)
    labels = [label for _, label in SIZE_BUCKETS]
    bucket = np.select([count < limit for limit, _ in SIZE_BUCKETS[:-1]], labels[:-1], labels[-1])
    return np.where(np.isnan(count) | (count == 0), UNKNOWN, bucket).astype(object)


def _plain(column: pd.Series) -> np.ndarray:
    """A string column as Python objects (iterating an Arrow-backed column costs ~2 us a value)."""
    return column.to_numpy(dtype=object, na_value=None)


def model_facts(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Per result: model type, parameter count, size bucket, license, model revision (model runs
    know them from the resolved model; uploaded predictions and papers' rows say `unknown`). The
    same reading of the provenance as the table's own columns (leaderboard/table.py)."""
    rows = []
    for record in records:
        facts = provenance_columns(record)
        rows.append(
            {
                "submission_id": record["submission_id"],
                **{c: facts[c] for c in FACT_COLUMNS[1:] if c != SIZE},
                SIZE: size_bucket(facts["parameters"]),
            }
        )
    return pd.DataFrame(rows, columns=FACT_COLUMNS)


def table_facts(scores: pd.DataFrame) -> pd.DataFrame:
    """model_facts read from the table's own provenance columns (the same reading of each record,
    leaderboard/table.py provenance_columns): one row per result, no record parsed. A web process
    that held 20,000 parsed records for this (1.9 million Python objects) paused 0.3-0.7 s in
    each full garbage collection."""
    per_result = scores.drop_duplicates("submission_id")
    facts = pd.DataFrame(
        {
            column: (
                per_result[column].to_numpy()
                if column in per_result
                else [PROVENANCE_MISSING.get(column, "")] * len(per_result)
            )
            for column in FACT_COLUMNS
            if column != SIZE
        }
    )
    facts.insert(FACT_COLUMNS.index(SIZE), SIZE, size_buckets(facts["parameters"]))
    return facts.astype({"parameters": "float64"})[FACT_COLUMNS]


FACT_COLUMNS = [
    "submission_id",
    "model_type",
    "parameters",
    SIZE,
    "license",
    MODEL_REVISION,
    "predictions_sha256",
]


def duplicates_of(board: pd.DataFrame) -> pd.Series:
    """Per row, the earliest other verified row whose answers have the same sha256 ("model
    (setting)"), or "": the same answers sent twice (under another name or setting, in another
    encoding, or by a model run) are one result, ranked once, as the first. Results published
    before answers were hashed hold their file's bytes' hash."""
    found = pd.Series("", index=board.index, dtype=object)
    if "predictions_sha256" not in board:
        return found
    candidates = board[(board["row_kind"] == RANKED_KIND) & (board["predictions_sha256"] != "")]
    ordered = candidates.dropna(subset=["predictions_sha256"]).sort_values(
        ["submitted_at", "submission_id"]
    )
    copies = ordered["predictions_sha256"].duplicated(keep="first")
    if not copies.any():
        return found
    # each digest's first row names it; every later row with that digest is its copy
    firsts = ordered[~copies]
    named = dict(
        zip(
            _plain(firsts["predictions_sha256"]),
            (
                f"{name} ({setting})"
                for name, setting in zip(_plain(firsts["model_name"]), _plain(firsts["setting"]))
            ),
        )
    )
    found[ordered.index[copies.to_numpy()]] = [
        named[digest] for digest in _plain(ordered.loc[copies, "predictions_sha256"])
    ]
    return found


def ranked_board(
    scores: pd.DataFrame,
    facts: pd.DataFrame | None,
    suite: str,
    task: str,
    setting: str | None = None,
    tier: str | None = None,
    tier_order: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(board, cells): the wide view of one task with `rank` (verified rows only), the model facts,
    and sorted by section (verified, partial, reported) then by the ranking score; `cells` holds
    each shown cell's interval and item count, keyed by (submission_id, column). `facts` (from the
    records) overrides the table's own fact columns, which parts written before them lack."""
    board = wide_view(scores, suite, task, setting, tier, tier_order=tier_order)
    cells = (
        cell_stats(scores[scores["submission_id"].isin(board["submission_id"])])
        if not board.empty
        else cell_stats(board)
    )
    if facts is not None:
        board = board.drop(columns=[c for c in FACT_COLUMNS[1:] if c in board]).merge(
            facts, on="submission_id", how="left"
        )
    ranked_by = ranking_column(board, tier)
    line = reference_line(scores, suite, task, ranked_by, tier, tier_order)
    return rank_rows(board, cells, line, tier), cells


def ranking_column(board: pd.DataFrame, tier: str | None) -> str:
    """The tier column a tier filter names, else `total`."""
    return next(
        (
            c
            for c in board.columns
            if tier and "/" in c and (c == tier or c.split("/", 1)[1] == tier)
        ),
        TOTAL,
    )


def rank_rows(
    board: pd.DataFrame, cells: pd.DataFrame, line: dict[str, Any] | None, tier: str | None
) -> pd.DataFrame:
    """One task's rows with the board's columns (leaderboard/columns.yaml): rank and rank group,
    the reference-line verdict, copies, the size bucket; sorted by section, then the verdict, then
    the ranking score; in the registry's column order (what the downloads carry)."""
    board = board.copy()
    if "predictions_sha256" in board:
        board["predictions_sha256"] = board["predictions_sha256"].fillna("")
    for column in ("model_type", "license"):
        board[column] = board[column].fillna(UNKNOWN) if column in board else UNKNOWN
    board[SIZE] = size_buckets(board.get("parameters", pd.Series(index=board.index))).tolist()
    ranked_by = ranking_column(board, tier)
    bounds = cells[cells["column"] == ranked_by].drop_duplicates("submission_id")
    ids = _plain(board["submission_id"])
    where = pd.Index(_plain(bounds["submission_id"])).get_indexer(ids)  # -1: no interval
    value = board[ranked_by].astype(float)

    def bound(name: str) -> pd.Series:
        known = bounds[name].to_numpy(dtype=float, na_value=np.nan)
        taken = np.where(where >= 0, known[np.maximum(where, 0)] if len(known) else np.nan, np.nan)
        return pd.Series(taken, index=board.index).fillna(value)

    low, high = bound("ci_low"), bound("ci_high")
    judged = (board["row_kind"] != REFERENCE_KIND) & value.notna()
    board[ABOVE_REFERENCE] = pd.Series(pd.NA, index=board.index, dtype="boolean")
    if line is not None:
        board.loc[judged, ABOVE_REFERENCE] = (low[judged] > line["value"]).to_numpy()
    below = board[ABOVE_REFERENCE].eq(False).fillna(False).astype(bool)
    board[DUPLICATE_OF] = duplicates_of(board)
    board[RANKED_ON] = ranked_on(board)
    # the paper rows each row may stand beside: same setting and protocol (leaderboard/reported.py)
    protocols = dict(zip(ids, _plain(board["protocol"].fillna("").astype(str))))
    board[COMPARABLE_PAPER_ROWS] = comparable_paper_rows(board, protocols)
    verified = (
        (board["row_kind"] == RANKED_KIND) & value.notna() & ~below & (board[DUPLICATE_OF] == "")
    )
    board[RANK] = pd.Series(pd.NA, index=board.index, dtype="Int64")
    board[RANK_AMONG] = rank_groups(board)
    for group in board.loc[verified, RANK_AMONG].unique():
        members = verified & (board[RANK_AMONG] == group)
        board.loc[members, RANK] = ranks_from_intervals(low[members], high[members])
    # 1, 2, 3 ... over the distinct ranks of each ranking (the default protocol's, then each other's)
    board[RANK_GROUP] = (
        board[RANK].groupby(board[RANK_AMONG], sort=False).rank(method="dense").astype("Int64")
    )
    board["_group"] = (board[RANK_AMONG] != "").astype(int)
    sections = pd.Categorical(board["row_kind"], categories=SECTION_ORDER).codes
    board["_section"] = np.where(sections < 0, len(SECTION_ORDER), sections)
    board["_below"] = below
    board["_score"] = value
    board = board.sort_values(
        ["_section", "_group", RANK_AMONG, "_below", "_score", "submitted_at"],
        ascending=[True, True, True, True, False, True],
        na_position="last",
    )
    metrics = [c for c in known_metrics() if c in board]
    tiers = [c for c in board.columns if "/" in c]
    board = board.reindex(columns=board_download_columns(metrics, tiers)).reset_index(drop=True)
    board.attrs["ranked_by"] = ranked_by
    board.attrs["reference_line"] = line
    verified_parts = board.loc[board["row_kind"] == RANKED_KIND, RANKED_ON]
    board.attrs[RANKED_ON] = {str(k): int(v) for k, v in verified_parts.value_counts().items()}
    return board


ALL_ITEMS = "all"
PRIVATE_COLUMN = f"{PRIVATE_TIER_GROUP}/{PRIVATE_PART}"


def ranked_on(board: pd.DataFrame) -> pd.Series:
    """Per row, the items its total is of: `private` where a named release published its private
    part (the total is then that score: submissions/private_part.py), `public` on a divided hidden
    split until then (the live number), `all` elsewhere."""
    divided = {
        (suite.name, task.name)
        for suite in all_suites().values()
        for task in suite.tasks.values()
        if release_tier_columns(task)
    }
    on = pd.Series(ALL_ITEMS, index=board.index, dtype=object)
    if board.empty:
        return on
    suites, tasks = board["suite"].unique(), board["task"].unique()
    if len(suites) == 1 and len(tasks) == 1:  # one task's board, as rank_rows ranks
        keys = (str(suites[0]), str(tasks[0])) in divided
    else:
        pairs = board[["suite", "task"]].astype(str)
        keys = pd.MultiIndex.from_frame(pairs).isin(list(divided)) if divided else False
    scored_here = (board["row_kind"] != KIND_REPORTED).to_numpy()  # a paper's row: its own test set
    on[keys & scored_here] = PUBLIC_PART
    if PRIVATE_COLUMN in board:
        on[board[PRIVATE_COLUMN].notna()] = PRIVATE_PART
    return on


def _is_score_column(column: str) -> bool:
    return "/" in column or (column != TOTAL and column in known_metrics())


def board_download(
    view: pd.DataFrame,
    cells: pd.DataFrame,
    references: Callable[[str, str], pd.DataFrame],
    tier: str | None = None,
) -> pd.DataFrame:
    """The board's rows of a filtered view for the downloads: each (suite, task) ranked as its board
    is (`rank_rows`), in the registry's columns. `references(suite, task)`: that task's reference
    rows, whatever the setting (the reference line is the best of them)."""
    if view.empty:
        metrics = [c for c in known_metrics() if c in view]
        return pd.DataFrame(columns=board_download_columns(metrics, []))
    boards = []
    for (suite, task), rows in view.groupby(["suite", "task"], sort=False):
        ranked_by = ranking_column(rows, tier)
        own = cells[cells["submission_id"].isin(rows["submission_id"])]
        line = best_line(references(str(suite), str(task)), ranked_by)
        # the tier and metric columns of the other tasks of the view are not this board's
        foreign = [c for c in rows.columns if _is_score_column(c) and rows[c].isna().all()]
        boards.append(rank_rows(rows.drop(columns=foreign), own, line, tier))
    frame = pd.concat(boards, ignore_index=True) if len(boards) > 1 else boards[0]
    metrics = [c for c in known_metrics() if c in frame]
    tiers = [c for c in frame.columns if "/" in c]
    return frame.reindex(columns=board_download_columns(metrics, tiers))


def rank_groups(board: pd.DataFrame) -> pd.Series:
    """Per row of one task's board, "" where it is ranked with the task's default protocol (or has
    none: a predictions file), else the protocol it is ranked among (the row's `protocol`)."""
    protocols = board["protocol"].fillna("").astype(str)
    default = None
    if not board.empty:
        spec = all_suites().get(str(board["suite"].iloc[0]))
        task = str(board["task"].iloc[0])
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
    return best_line(lines, column)


def best_line(lines: pd.DataFrame, column: str) -> dict[str, Any] | None:
    """The best of a task's reference rows in `column` ({value, name, column}); None without one."""
    if "row_kind" in lines:
        lines = lines[lines["row_kind"] == REFERENCE_KIND]
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
            order.extend(release_tier_columns(task))  # a divided hidden split's parts, last
    return order
