"""The overview across suites: one row per model, one column per suite/task.

A cell is the model's result on that task under the task's *overview condition* (its suite's first
declared setting, and the task's default protocol for model runs; an uploaded predictions file
counts too, its method being the submitter's own): the primary metric's total with its 95%
interval. The rules, each tested in tests/unit/test_overview.py:

- One row per model, told apart by its identity, not its display name alone (`model_key`): the
  name as the ownership rule reads it (case and spacing folded), how the result was produced (a
  model run here, or an uploaded predictions file: the board's Source), and the model's link
  (its repository, any revision). A result without a link joins the one linked model of its name
  and kind, if there is exactly one. Rows that share a display name say what tells them apart in
  the model cell (its source, its link), as the boards do.
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
- Filters like the boards': model type, size bucket, license and a name search keep models (by
  the model's facts from its newest result that states them); ranks are those of the whole
  column, so a filtered model keeps its place among all models, as on the boards.
- Nothing is averaged across columns: the tasks have different metrics (accuracy, Spearman's rho,
  ratings), scales, item counts and splits (OVERVIEW_NOTE).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np
import pandas as pd

from evaluator.registry import all_suites
from leaderboard.board import RANKED_KIND, SIZE_BUCKETS, ranks_from_intervals, size_buckets
from leaderboard.columns import RANK, SIZE, SPLIT_SHA256, TOTAL_CI_HIGH, TOTAL_CI_LOW
from leaderboard.table import UNKNOWN

UPLOADED = "uploaded predictions"  # the protocol an uploaded predictions file records
OVERVIEW_NOTE = (
    "One column per suite/task, each the task's primary metric under its suite's default setting "
    "(model runs: the task's default protocol; uploaded predictions: the submitter's own method). "
    "Verified full runs only, the newest per model. Ranks compare rows of one column that ran the "
    "same items (same split version, all items); they are never combined across columns. The "
    "columns are different metrics on different scales, items and splits: do not average them."
)
# per task column: value, interval, rank, and the facts behind them
CELL_FIELDS = ("ci_low", "ci_high", RANK, "n", "setting", "note", "submission_id")
# per model: who it is and the facts the filters read (its newest result that states each)
MODEL_FIELDS = (
    "model_name",
    "model_key",
    "source",
    "model_link",
    "model_type",
    "parameters",
    SIZE,
    "license",
    "tasks",
)
MODEL_RUN = "model run"
# the filters' fixed choices: what a verified row's type can be, and the boards' size buckets
TYPE_CHOICES = ("generative", "reward", "predictions file", UNKNOWN)
SIZE_CHOICES = (*(label for _, label in SIZE_BUCKETS), UNKNOWN)


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


def producer(source: str) -> str:
    """How a result was produced, without the protocol ("model run (loglik)" -> "model run"): a
    model's runs on tasks of different default protocols are one model."""
    return MODEL_RUN if str(source).startswith(MODEL_RUN) else str(source)


def link_key(link) -> str:
    """A model link as an identity: no scheme, `www.`, revision (`/tree/<rev>`) or trailing slash;
    case folded ("https://huggingface.co/Org/M/tree/abc" -> "huggingface.co/org/m")."""
    text = str(link or "").strip().casefold()
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text).removeprefix("www.")
    return re.sub(r"/(tree|blob|resolve|commit)/.*$", "", text).rstrip("/")


def name_key(name: str) -> str:
    """A model name as the name-ownership rule reads it (submissions/names.py): case folded, inner
    whitespace collapsed."""
    return " ".join(name.casefold().split())


def model_keys(rows: pd.DataFrame) -> pd.Series:
    """Per result, its model's identity (see the module doc): "name key · producer[ · link]"."""
    base = [
        f"{name_key(str(name))} · {producer(source)}"
        for name, source in zip(rows["model_name"], rows["source"])
    ]
    links = [link_key(link) for link in rows.get("model_link", pd.Series("", index=rows.index))]
    linked: dict[str, set[str]] = {}
    for b, link in zip(base, links):
        if link:
            linked.setdefault(b, set()).add(link)
    keys = []
    for b, link in zip(base, links):
        if not link and len(linked.get(b, ())) == 1:
            link = next(iter(linked[b]))  # the one linked model of this name and kind
        keys.append(f"{b} · {link}" if link else b)
    return pd.Series(keys, index=rows.index, dtype=object)


def counted_rows(rows: pd.DataFrame, wanted: Iterable[Condition]) -> pd.DataFrame:
    """The results that count in the overview (one per result; see the module doc), with their
    column; at most one per model and column, the newest."""
    by_task = {(c.suite, c.task): c for c in wanted}
    if rows.empty or not by_task:
        return rows.iloc[0:0].assign(column=pd.Series(dtype=str), model_key=pd.Series(dtype=str))
    rows = rows.reindex(
        columns=sorted(set(rows.columns) | {"protocol", "predictions_sha256", "model_link"})
    )
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
        model_key=model_keys(counted),
    )
    counted = counted.sort_values(["submitted_at", "submission_id"], ascending=False)
    return counted.drop_duplicates(["model_key", "column"]).reset_index(drop=True)


def rank_column(cells: pd.DataFrame) -> pd.DataFrame:
    """`rank` and `note` for the counted cells of one column (see the module doc)."""
    cells = cells.sort_values(["submitted_at", "submission_id"]).copy()
    cells[RANK] = pd.Series(pd.NA, index=cells.index, dtype="Int64")
    cells["note"] = ""
    split = cells[SPLIT_SHA256].fillna("").astype(str)
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
        low = cells.loc[ranked, TOTAL_CI_LOW].astype(float).fillna(value)
        high = cells.loc[ranked, TOTAL_CI_HIGH].astype(float).fillna(value)
        cells.loc[ranked, RANK] = ranks_from_intervals(low, high)
    return cells


def overview_table(
    rows: pd.DataFrame,
    suite: str | None = None,
    task: str | None = None,
    wanted: Iterable[Condition] | None = None,
) -> pd.DataFrame:
    """One row per model (MODEL_FIELDS), then per task column `S/T` its value and `S/T ci_low`,
    `ci_high`, `rank`, `n`, `setting`, `note`, `submission_id`. `rows`: one row per result with the
    wide view's ids, `total`, its interval, `n_items`, and the provenance columns
    (leaderboard.table.wide_rows). `suite`/`task` keep those columns. Unfiltered: the filters
    (filter_overview) keep rows of it, with the ranks made here."""
    chosen = [
        c
        for c in (conditions() if wanted is None else wanted)
        if (not suite or c.suite == suite) and (not task or c.task == task)
    ]
    counted = counted_rows(rows, chosen)
    columns = [c.column for c in chosen if c.column in set(counted["column"])]
    header = list(MODEL_FIELDS) + [
        name for c in columns for name in (c, *(f"{c} {f}" for f in CELL_FIELDS))
    ]
    if counted.empty:
        frame = pd.DataFrame(columns=header)
        frame.attrs["columns"] = []
        return frame
    ranked = pd.concat(
        [rank_column(cells) for _, cells in counted.groupby("column", sort=False)]
    ).sort_values(["submitted_at", "submission_id"])
    frame = model_facts(ranked)
    for column in columns:
        cells = ranked[ranked["column"] == column].set_index("model_key")
        frame[column] = cells["total"].astype(float)
        frame[f"{column} ci_low"] = cells[TOTAL_CI_LOW].astype(float)
        frame[f"{column} ci_high"] = cells[TOTAL_CI_HIGH].astype(float)
        frame[f"{column} rank"] = cells[RANK].astype("Int64")
        frame[f"{column} n"] = cells["n_items"].astype("Int64")
        for name in ("setting", "note", "submission_id"):
            frame[f"{column} {name}"] = cells[name]
    frame["tasks"] = frame[columns].notna().sum(axis=1).astype("int64")
    # most tasks first, then by name: no order that would read as an average
    frame = frame.assign(_name=frame["model_name"].str.casefold())
    frame = frame.sort_values(["tasks", "_name", "model_key"], ascending=[False, True, True])
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


def model_facts(ranked: pd.DataFrame) -> pd.DataFrame:
    """Per model (indexed by `model_key`): its newest name, the facts of its newest result that
    states each (type, parameters, license; `unknown` where none does), how its results were
    produced and its link (what tells it apart from another model of the same name).
    `ranked`: its counted results, oldest first."""

    def newest_known(column: str):
        values = ranked[column].where(~ranked[column].isin(["", UNKNOWN]))
        return values.groupby(ranked["model_key"], sort=False).last()

    grouped = ranked.groupby("model_key", sort=False)
    frame = pd.DataFrame({"model_name": grouped["model_name"].last()})
    frame["model_key"] = frame.index
    frame.index.name = None  # the key is also a column (sorted on)
    frame["model_type"] = newest_known("model_type").reindex(frame.index).fillna(UNKNOWN)
    parameters = pd.to_numeric(ranked["parameters"], errors="coerce")
    frame["parameters"] = parameters.groupby(ranked["model_key"]).last().reindex(frame.index)
    frame[SIZE] = size_buckets(frame["parameters"])
    frame["license"] = newest_known("license").reindex(frame.index).fillna(UNKNOWN)
    frame["source"] = grouped["source"].last().map(producer)
    frame["model_link"] = newest_known("model_link").reindex(frame.index).fillna("")
    return frame


def filter_overview(
    frame: pd.DataFrame,
    model_type: str | None = None,
    size: str | None = None,
    license: str | None = None,
    search: str | None = None,
) -> pd.DataFrame:
    """The boards' filters on an overview (`overview_table`): models of this type, size bucket and
    license, whose name contains `search` (any case). Ranks stay those of the whole column; a
    column no kept model has a result in is dropped."""
    keep = pd.Series(True, index=frame.index)
    for column, wanted in (("model_type", model_type), (SIZE, size), ("license", license)):
        if wanted:
            keep &= frame[column] == wanted
    needle = (search or "").strip().casefold()
    if needle:
        keep &= frame["model_name"].astype(str).str.casefold().str.contains(needle, regex=False)
    if keep.all():
        return frame
    shown = frame[keep].reset_index(drop=True)
    columns = [c for c in frame.attrs["columns"] if shown[c["column"]].notna().any()]
    dropped = {c["column"] for c in frame.attrs["columns"]} - {c["column"] for c in columns}
    shown = shown.drop(
        columns=[name for c in dropped for name in (c, *(f"{c} {f}" for f in CELL_FIELDS))]
    )
    shown.attrs["columns"] = columns
    return shown


def build_overview(
    rows: pd.DataFrame,
    suite: str | None = None,
    task: str | None = None,
    search: str | None = None,
    wanted: Iterable[Condition] | None = None,
    model_type: str | None = None,
    size: str | None = None,
    license: str | None = None,
) -> pd.DataFrame:
    """The overview of `rows` (overview_table), filtered (filter_overview)."""
    return filter_overview(
        overview_table(rows, suite, task, wanted), model_type, size, license, search
    )


def overview_stem(filters, revision: str) -> str:
    """`download_stem` of an overview view's filters (leaderboard.readpath.Filters): the API's and
    the Overview tab's name for the same file."""
    return download_stem(
        revision,
        filters.suite,
        filters.task,
        filters.model_type,
        filters.size,
        filters.license,
        filters.search,
    )


def download_stem(
    revision: str,
    suite: str | None = None,
    task: str | None = None,
    model_type: str | None = None,
    size: str | None = None,
    license: str | None = None,
    search: str | None = None,
) -> str:
    """A download's file name without its extension, saying what it holds and at which revision
    (`overview-prefeval-generative-3f2a9c1d4e5f`); safe in a header and on any file system."""
    parts = [
        "overview",
        suite or "all-suites",
        task,
        model_type,
        size,
        license,
        f"q-{search}" if search else None,
        revision[:12] if revision else None,
    ]
    return "-".join(re.sub(r"[^A-Za-z0-9_.+-]", "_", p)[:60] for p in parts if p)


def counts_of(frame: pd.DataFrame) -> dict[str, int]:
    """Models per column (for captions)."""
    return {c["column"]: int(np.sum(frame[c["column"]].notna())) for c in frame.attrs["columns"]}
