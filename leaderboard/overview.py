"""The overview across suites: one row per model, one column per suite/task.

A cell is the model's result on that task under the task's *overview condition* (its suite's first
declared setting, and the task's default protocol for model runs; an uploaded predictions file
counts too, its method being the submitter's own): the primary metric's total with its 95%
interval. The rules, each tested in tests/unit/test_overview.py:

- Which rows count: verified results only (`computed`: a full run scored here). Partial runs, the
  papers' reported numbers and reference lines are left out; so are hidden or deleted results,
  which are withdrawn from the published table this view is built from.
- One result per model and task: the newest counted one (a model's best of several tries would
  favour whoever tried most).
- Ranks only where models ran the same items: within a column, the rows on the column's split
  version (its split hash) with the full item count are ranked together, by the boards' rule
  (1 + the rows whose 95% lower bound is above this row's upper bound); a row on another split
  version or judge is shown unranked with the reason.
- Identical predictions rank once: a row whose uploaded file (or model run's answers) has the same
  sha256 as an earlier row's in that column is marked as its duplicate and not ranked.
- Nothing is averaged across columns: the tasks have different metrics (accuracy, Spearman's rho,
  ratings), scales, item counts and splits (OVERVIEW_NOTE).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.board import RANKED_KIND, ranks_from_intervals

UPLOADED = "uploaded predictions"  # the protocol an uploaded predictions file records
OVERVIEW_NOTE = (
    "One column per suite/task, each the task's primary metric under its suite's default setting "
    "(model runs: the task's default protocol; uploaded predictions: the submitter's own method). "
    "Verified full runs only, the newest per model. Ranks compare rows of one column that ran the "
    "same items (same split version, all items); they are never combined across columns. The "
    "columns are different metrics on different scales, items and splits: do not average them."
)
# per task column: value, interval, rank, and the facts behind them
CELL_FIELDS = ("ci_low", "ci_high", "rank", "n", "setting", "note", "submission_id")


@dataclass(frozen=True)
class Condition:
    """What a task's overview column shows: the results of one setting, under these protocols."""

    suite: str
    task: str
    setting: str
    protocol: str | None  # the task's default protocol for model runs (None: none declared)
    metric: str

    @property
    def column(self) -> str:
        return f"{self.suite}/{self.task}"

    def counts(self, setting: str, protocol: str) -> bool:
        # a judge-scored result names its judge in the setting (`zero_shot+judge:NAME`)
        same_setting = setting == self.setting or setting.startswith(self.setting + "+judge:")
        return same_setting and protocol in (self.protocol, UPLOADED)


@lru_cache(maxsize=1)
def conditions() -> tuple[Condition, ...]:
    """Every task's overview condition, in the suites' and manifests' order."""
    found = []
    for suite in all_suites().values():
        setting = next(iter(suite.settings), "")
        for task in suite.tasks.values():
            found.append(
                Condition(
                    suite.name, task.name, setting, task.model.get("default_protocol"), task.metric
                )
            )
    return tuple(found)


def counted_rows(rows: pd.DataFrame, wanted: Iterable[Condition]) -> pd.DataFrame:
    """The results that count in the overview (one per result; see the module doc), with their
    column; at most one per model and column, the newest."""
    by_task = {(c.suite, c.task): c for c in wanted}
    if rows.empty or not by_task:
        return rows.iloc[0:0].assign(column=pd.Series(dtype=str), model_key=pd.Series(dtype=str))
    rows = rows.reindex(columns=sorted(set(rows.columns) | {"protocol", "predictions_sha256"}))
    conds = [by_task.get((s, t)) for s, t in zip(rows["suite"], rows["task"])]
    keep = [
        c is not None and kind == RANKED_KIND and c.counts(str(setting), str(protocol or ""))
        for c, kind, setting, protocol in zip(
            conds, rows["row_kind"], rows["setting"], rows["protocol"]
        )
    ]
    counted = rows[keep].drop_duplicates("submission_id")
    counted = counted.assign(
        column=counted["suite"] + "/" + counted["task"],
        model_key=counted["model_name"].astype(str).str.strip().str.casefold(),
    )
    counted = counted.sort_values(["submitted_at", "submission_id"], ascending=False)
    return counted.drop_duplicates(["model_key", "column"]).reset_index(drop=True)


def rank_column(cells: pd.DataFrame) -> pd.DataFrame:
    """`rank` and `note` for the counted cells of one column (see the module doc)."""
    cells = cells.sort_values(["submitted_at", "submission_id"]).copy()
    cells["rank"] = pd.Series(pd.NA, index=cells.index, dtype="Int64")
    cells["note"] = ""
    split = cells["split_sha256"].fillna("").astype(str)
    # the column's split version: the one most of its rows ran (ties: the newest row's)
    counts = split.value_counts()
    newest = split.iloc[::-1]
    reference = next(s for s in newest if counts[s] == counts.max())
    full_n = cells.loc[split == reference, "n_items"].max()
    setting = cells.loc[split == reference, "setting"].value_counts().idxmax()
    cells.loc[split != reference, "note"] = "other split version: not ranked with this column"
    fewer = (split == reference) & (cells["n_items"] < full_n)
    cells.loc[fewer, "note"] = "fewer items than the others: not ranked"
    judge = (split == reference) & ~fewer & (cells["setting"] != setting)
    cells.loc[judge, "note"] = "another judge: not ranked with this column"
    # byte-identical predictions: the first upload ranks, its copies are marked
    digest = cells["predictions_sha256"].fillna("").astype(str)
    first_of: dict[str, str] = {}
    for index, value in digest.items():
        if not value:
            continue
        if value in first_of:
            cells.at[index, "note"] = f"same predictions as {first_of[value]}: not ranked twice"
        else:
            first_of[value] = str(cells.at[index, "model_name"])
    ranked = cells["note"] == ""
    if ranked.any():
        value = cells.loc[ranked, "total"].astype(float)
        low = cells.loc[ranked, "total_ci_low"].astype(float).fillna(value)
        high = cells.loc[ranked, "total_ci_high"].astype(float).fillna(value)
        cells.loc[ranked, "rank"] = ranks_from_intervals(low, high)
    return cells


def build_overview(
    rows: pd.DataFrame,
    suite: str | None = None,
    task: str | None = None,
    search: str | None = None,
    wanted: Iterable[Condition] | None = None,
) -> pd.DataFrame:
    """One row per model: `model_name`, `tasks` (how many columns it has a result in), then per
    task column `S/T` its value and `S/T ci_low`, `ci_high`, `rank`, `n`, `setting`, `note`,
    `submission_id`. `rows`: one row per result with the wide view's ids, `total`, its interval,
    `n_items`, and the provenance columns (leaderboard.table.wide_rows). `suite`/`task` keep those
    columns; `search` keeps models whose name contains it (case-insensitive)."""
    chosen = [
        c
        for c in (conditions() if wanted is None else wanted)
        if (not suite or c.suite == suite) and (not task or c.task == task)
    ]
    counted = counted_rows(rows, chosen)
    needle = (search or "").strip().casefold()
    if needle:
        counted = counted[counted["model_key"].str.contains(needle, regex=False)]
    columns = [c.column for c in chosen if c.column in set(counted["column"])]
    header = ["model_name", "tasks"] + [
        name for c in columns for name in (c, *(f"{c} {f}" for f in CELL_FIELDS))
    ]
    if counted.empty:
        frame = pd.DataFrame(columns=header)
        frame.attrs["columns"] = []
        return frame
    ranked = pd.concat(
        [rank_column(cells) for _, cells in counted.groupby("column", sort=False)]
    ).sort_values(["submitted_at", "submission_id"])
    models = ranked.groupby("model_key", sort=False)["model_name"].last()
    frame = pd.DataFrame({"model_name": models})
    for column in columns:
        cells = ranked[ranked["column"] == column].set_index("model_key")
        frame[column] = cells["total"].astype(float)
        frame[f"{column} ci_low"] = cells["total_ci_low"].astype(float)
        frame[f"{column} ci_high"] = cells["total_ci_high"].astype(float)
        frame[f"{column} rank"] = cells["rank"].astype("Int64")
        frame[f"{column} n"] = cells["n_items"].astype("Int64")
        for name in ("setting", "note", "submission_id"):
            frame[f"{column} {name}"] = cells[name]
    frame["tasks"] = frame[columns].notna().sum(axis=1).astype("int64")
    # most tasks first, then by name: no order that would read as an average
    frame = frame.assign(_name=frame["model_name"].str.casefold())
    frame = frame.sort_values(["tasks", "_name"], ascending=[False, True]).drop(columns="_name")
    frame = frame.reindex(columns=header).reset_index(drop=True)
    by_column = {c.column: c for c in chosen}
    frame.attrs["columns"] = [
        {
            "column": column,
            "metric": by_column[column].metric,
            "setting": by_column[column].setting,
            "protocol": by_column[column].protocol,
        }
        for column in columns
    ]
    return frame


def counts_of(frame: pd.DataFrame) -> dict[str, int]:
    """Models per column (for captions)."""
    return {c["column"]: int(np.sum(frame[c["column"]].notna())) for c in frame.attrs["columns"]}
