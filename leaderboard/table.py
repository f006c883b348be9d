"""The leaderboard table: result records -> long scores table -> filtered wide view.

The long table (one row per result x tier x metric) is what the store keeps, because suites have
different tiers; the wide view (one row per result, one column per tier) is derived on read,
with its tier columns driven by the suites' manifests.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.columns import (
    MODEL_REVISION,
    PARSE_WARNING,
    SPLIT_SHA256,
    TOTAL_CI_HIGH,
    TOTAL_CI_LOW,
)
from leaderboard.result_record import (
    KIND_COMPUTED,
    KIND_PARTIAL,
    KIND_REFERENCE,
    KIND_REPORTED,
    REFERENCE_SETTING,
    JudgeProvenance,
    ModelProvenance,
    SplitProvenance,
    provenance_of,
)

TOTAL = "total"
UNKNOWN = "unknown"
# What a result is and what its number depends on, in every row, so the table alone can be
# filtered by it (e.g. `datasets.load_dataset(...).filter(lambda r: r["model_type"] == "generative"
# and r["judge"] == ...)`); the column registry (leaderboard/columns.yaml) marks them `stored`.
# predictions_sha256: an uploaded file's hash (a model run: its answers' hash), so rows of identical
# predictions can be told apart.
PROVENANCE_COLUMNS = [
    "model_type",
    "parameters",
    "license",
    MODEL_REVISION,
    "protocol",
    "judge",
    "backend",
    SPLIT_SHA256,
    "predictions_sha256",
    # how the row's answers parsed: unparsed answers and judge replies, and the mark of a row
    # where more than PARSE_WARNING_SHARE of either failed
    "unparsed",
    "judge_unparsed",
    PARSE_WARNING,
]
# What a table part written before a column existed reads as
PROVENANCE_MISSING: dict[str, Any] = {
    "model_type": UNKNOWN,
    "parameters": None,
    "license": UNKNOWN,
    "unparsed": None,
    "judge_unparsed": None,
    PARSE_WARNING: False,
}
PARSE_WARNING_SHARE = 0.1  # more than this share unparsed: the row is marked on the board
SCORE_COLUMNS = [
    "submission_id",
    "suite",
    "task",
    "setting",
    "model_name",
    "model_link",
    "source",
    "row_kind",
    "tier_group",
    "tier",
    "metric",
    "primary",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "submitted_at",
    *PROVENANCE_COLUMNS,
]
ID_COLUMNS = ["model_name", "suite", "task", "setting", "source", "row_kind", "metric"]
TRAILING_COLUMNS = ["n_items", "submitted_at", "submission_id", "model_link"]
ROW_KIND_RANK = {
    KIND_COMPUTED: 0,
    KIND_PARTIAL: 1,
    KIND_REFERENCE: 2,
    KIND_REPORTED: 3,
}  # the papers' rows last


def model_type_of(record: Mapping[str, Any], model: ModelProvenance) -> str:
    """generative | reward for a model run (from the resolved model); what the row is otherwise."""
    kind = record.get("row_kind")
    if kind in (KIND_REPORTED, KIND_REFERENCE):
        return "paper" if kind == KIND_REPORTED else "reference line"
    if model:
        return model.get("model_type") or UNKNOWN
    return "predictions file"


def _count(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parse_warning(record: Mapping[str, Any]) -> bool:
    """More than PARSE_WARNING_SHARE of the run's answers, or of its judge's replies, could not
    be parsed."""
    provenance = provenance_of(record)
    unparsed, items = _count(provenance.get("unparsed")), _count(provenance.get("items"))
    items = items or _count(record.get("n_items"))
    judged, outputs = (
        _count(provenance.get("judge_unparsed")),
        _count(provenance.get("judge_outputs")),
    )
    return bool(
        (unparsed and items and unparsed / items > PARSE_WARNING_SHARE)
        or (judged and outputs and judged / outputs > PARSE_WARNING_SHARE)
    )


def provenance_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's PROVENANCE_COLUMNS: the one reading of its provenance for the table, the board's
    model facts and the downloads."""
    provenance = provenance_of(record)
    model = provenance.get("model") or ModelProvenance()
    parameters = model.get("parameters")
    return {
        "model_type": model_type_of(record, model),
        "parameters": float(parameters) if isinstance(parameters, (int, float)) else None,
        "license": model.get("license") or UNKNOWN,
        MODEL_REVISION: model.get("revision") or provenance.get("revision") or "",
        "protocol": provenance.get("protocol") or "",
        "judge": provenance.get("judge", JudgeProvenance()).get("model") or "",
        "backend": provenance.get("backend") or "",
        SPLIT_SHA256: provenance.get("split", SplitProvenance()).get("sha256") or "",
        # an upload's file hash, or a model run's answers hash (submissions/jobs.py)
        "predictions_sha256": provenance.get("predictions_sha256")
        or provenance.get("answers_sha256")
        or "",
        "unparsed": _count(provenance.get("unparsed")),
        "judge_unparsed": _count(provenance.get("judge_unparsed")),
        PARSE_WARNING: parse_warning(record),
    }


SUMMARY_COLUMNS = [
    "submission_id",
    "suite",
    "task",
    "setting",
    "model_name",
    "row_kind",
    "metric",
    "value",
    "submitted_at",
]


def result_summaries(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per result, in the table's order: who and where, and its total on its primary
    metric (what a list of results shows, e.g. the results to compare a model's with)."""
    totals = scores[(scores["tier_group"] == TOTAL) & (scores["tier"] == TOTAL)]
    first = totals.sort_values("primary", ascending=False, kind="stable")
    return first.drop_duplicates("submission_id").sort_index()[SUMMARY_COLUMNS]


def records_to_scores(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    rows = []
    for record in records:
        base = {
            "submission_id": record["submission_id"],
            "suite": record["suite"],
            "task": record["task"],
            "setting": record["setting"],
            "model_name": record["model_name"],
            "model_link": record.get("model_link") or "",
            "source": record["source"],
            "row_kind": record.get("row_kind", KIND_COMPUTED),
            "submitted_at": record["submitted_at"],
            **provenance_columns(record),
        }
        metrics = record["metrics"]
        primary = metrics.get("metric") or next(iter(metrics["total"]), None)
        blocks = [(TOTAL, TOTAL, metrics["total"])]
        for group, tiers in metrics["tiers"].items():
            blocks.extend((group, tier, values) for tier, values in tiers.items())
        for group, tier, values in blocks:
            for metric, stats in values.items():
                low, high = stats.get("ci95") or [None, None]
                rows.append(
                    {
                        **base,
                        "tier_group": group,
                        "tier": tier,
                        "metric": metric,
                        "primary": metric == primary,
                        "value": stats["value"],
                        "ci_low": low,
                        "ci_high": high,
                        "n": stats["n"] or 0,
                    }
                )
    frame = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    return frame.astype(
        {
            "value": "float64",
            "parameters": "float64",
            "unparsed": "float64",
            "judge_unparsed": "float64",
            PARSE_WARNING: "bool",
            "ci_low": "float64",
            "ci_high": "float64",
            "n": "int64",
            "primary": "bool",
        }
    )


def column_name(
    group: str, tier: str, metric: str | None = None, primary: bool = True
) -> str | None:
    """`total` for the primary metric's total, the metric's name for other metrics of the total
    (precision, f1, ...), `group/tier` for the primary metric on a tier; None for the rest."""
    if group == TOTAL:
        return TOTAL if primary else metric
    return f"{group}/{tier}" if primary else None


# An empty view has the columns a non-empty one always has, provenance included: the board ranks by
# `protocol` whether or not any row is there (a task with no results answered a KeyError).
EMPTY_VIEW_COLUMNS = [
    *ID_COLUMNS,
    TOTAL,
    "n_items",
    "submitted_at",
    "submission_id",
    "model_link",
    *PROVENANCE_COLUMNS,
]
SLICE_COLUMNS = ["suite", "task", "setting"]  # what a view filters rows by (one value per result)


def in_slice(frame: pd.DataFrame, column: str, wanted: str) -> np.ndarray:
    """Which rows of `frame` a view of `column` = `wanted` keeps. A setting's view keeps its task's
    reference rows too (setting `reference`: chance and majority hold in every setting), so an
    empty board still shows them, and the board, the API and the downloads list the same rows."""
    keep = (frame[column] == wanted).fillna(False).to_numpy(dtype=bool)
    if column == "setting" and wanted != REFERENCE_SETTING:
        keep = keep | (frame[column] == REFERENCE_SETTING).fillna(False).to_numpy(dtype=bool)
    return keep


@dataclass(frozen=True)
class WideRows:
    """A long scores table (or one part of it) pivoted to one row per result, before any filter.

    A result's rows never span table parts, so each part is pivoted once (the read path caches it
    by the part's blob id) and a view of the whole table is a cheap `finish_view` over the parts.
    `columns` says which value columns each (suite, task, setting) slice has: a view keeps exactly
    the columns its rows have, as the pivot of the filtered table would."""

    rows: pd.DataFrame
    columns: pd.DataFrame  # distinct (suite, task, setting, column)
    cells: pd.DataFrame  # each value's interval and item count (cell_stats): what ranks use


def named_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """The long table with each row's wide-view `column` (None: not a column of the view)."""
    # column_name, vectorised: a loop over the rows took 0.75 s of a 20,000-result board's 1.4 s
    primary = (
        scores["primary"].to_numpy(dtype=bool)
        if "primary" in scores
        else np.ones(len(scores), dtype=bool)  # older tables
    )
    group = scores["tier_group"]
    total = (group == TOTAL).to_numpy(dtype=bool)
    tier = (group + "/" + scores["tier"]).to_numpy(dtype=object)
    metric = scores["metric"].to_numpy(dtype=object)
    column = np.where(total, np.where(primary, TOTAL, metric), np.where(primary, tier, None))
    return scores.assign(column=pd.Series(column, index=scores.index))


CELL_COLUMNS = ["submission_id", "column", "ci_low", "ci_high", "n"]


def cell_stats(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (submission, column) of the wide view with its interval and item count."""
    if scores.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    frame = named_scores(scores)
    return frame.loc[frame["column"].notna(), CELL_COLUMNS]


def wide_rows(scores: pd.DataFrame) -> WideRows:
    """One row per result: ids, every value column it has (`total`, other metrics, `group/tier`),
    the total's interval, item count and trailing columns; unfiltered and unordered."""
    if scores.empty:
        return WideRows(
            pd.DataFrame(columns=[*EMPTY_VIEW_COLUMNS, TOTAL_CI_LOW, TOTAL_CI_HIGH]),
            pd.DataFrame(columns=[*SLICE_COLUMNS, "column"]),
            pd.DataFrame(columns=CELL_COLUMNS),
        )
    primary = (
        scores["primary"] if "primary" in scores else pd.Series(True, index=scores.index)
    )  # older tables
    frame = named_scores(scores)
    ids = frame.drop_duplicates("submission_id").set_index("submission_id")
    totals = frame[frame["column"] == TOTAL].set_index("submission_id")
    # the primary metric each row's `total` and tier columns are in
    ids = ids.drop(columns=["metric"]).join(
        frame[primary].drop_duplicates("submission_id").set_index("submission_id")["metric"]
    )
    named = frame[frame["column"].notna()]
    wide = ids[ID_COLUMNS].join(_first_values(named))
    wide[TOTAL_CI_LOW] = totals["ci_low"]
    wide[TOTAL_CI_HIGH] = totals["ci_high"]
    wide["n_items"] = totals["n"]
    wide["submitted_at"] = ids["submitted_at"]
    wide["model_link"] = ids["model_link"]
    # What a result was run under, for views across tasks (leaderboard/overview.py); board views
    # (finish_view) keep only their own columns. Parts written before a column existed lack it.
    for column in PROVENANCE_COLUMNS:
        wide[column] = ids[column] if column in ids else PROVENANCE_MISSING.get(column, "")
    return WideRows(
        wide.reset_index(),
        named[[*SLICE_COLUMNS, "column"]].drop_duplicates().reset_index(drop=True),
        named[CELL_COLUMNS].reset_index(drop=True),
    )


def _first_values(named: pd.DataFrame) -> pd.DataFrame:
    """One row per submission (sorted ids), one column per wide-view column (sorted names), each
    cell its first non-missing value: what `pivot_table(index="submission_id", columns="column",
    values="value", aggfunc="first", dropna=False)` gives, without its fixed ~8 ms a call (a
    publish pivots a part of one result; a cold start every part)."""
    ids, id_names = pd.factorize(named["submission_id"], sort=True)
    columns, column_names = pd.factorize(named["column"], sort=True)
    value = named["value"].to_numpy(dtype=float, na_value=np.nan)
    present = ~np.isnan(value)
    cell = ids * len(column_names) + columns
    first = present & ~pd.Series(np.where(present, cell, -1)).duplicated().to_numpy()
    grid = np.full((len(id_names), len(column_names)), np.nan)
    grid[ids[first], columns[first]] = value[first]
    return pd.DataFrame(
        grid,
        index=pd.Index(id_names, name="submission_id"),
        columns=pd.Index(column_names, name="column"),
    )


def finish_view(
    parts: list[WideRows],
    suite: str | None = None,
    task: str | None = None,
    setting: str | None = None,
    tier: str | None = None,
    tier_order: list[str] | None = None,
) -> pd.DataFrame:
    """The filtered, ordered wide view of the parts' results (see `wide_view`)."""
    rows = [part.rows for part in parts if len(part.rows)]
    slices = [part.columns for part in parts if len(part.columns)]
    wide = pd.concat(rows, ignore_index=True) if len(rows) > 1 else rows[0] if rows else None
    present = (
        pd.concat(slices, ignore_index=True) if len(slices) > 1 else slices[0] if slices else None
    )
    for column, wanted in zip(SLICE_COLUMNS, (suite, task, setting)):
        if wanted and wide is not None and present is not None:
            wide = wide[in_slice(wide, column, wanted)]
            present = present[in_slice(present, column, wanted)]
    if wide is None or wide.empty or present is None:  # a part's rows come with its columns
        return pd.DataFrame(columns=EMPTY_VIEW_COLUMNS)
    wide = wide.drop_duplicates("submission_id")  # a result published twice counts once (the first)
    value_columns = set(present["column"])
    metric_columns = [c for c in known_metrics() if c in value_columns]
    tier_columns = [c for c in value_columns if c != TOTAL and c not in metric_columns]
    if tier_order:
        rank = {name: i for i, name in enumerate(tier_order)}
        tier_columns.sort(key=lambda c: (rank.get(c, len(rank)), c))
    else:
        tier_columns.sort()
    if tier:
        tier_columns = [c for c in tier_columns if c == tier or c.split("/", 1)[-1] == tier]
    sort_by = tier_columns[0] if tier and tier_columns else TOTAL
    ordered = [
        *ID_COLUMNS,
        TOTAL,
        TOTAL_CI_LOW,
        TOTAL_CI_HIGH,
        *metric_columns,
        *tier_columns,
        *TRAILING_COLUMNS,
        *PROVENANCE_COLUMNS,
    ]
    wide = wide.reindex(columns=ordered)  # `total` is NaN where no row has one
    if wide["n_items"].dtype.kind == "f" and wide["n_items"].notna().all():
        wide["n_items"] = wide["n_items"].astype("int64")  # parts without a total made it float
    # Only full computed runs are ranked; partial runs (smoke tests, n/a configurations) follow them,
    # and the papers' reported rows come last: never ranked as if verified here. submission_id
    # breaks the remaining ties, so the order does not depend on how the table is split in parts.
    kind_rank = wide["row_kind"].map(ROW_KIND_RANK).fillna(len(ROW_KIND_RANK))
    order = (
        wide.assign(_kind_rank=kind_rank)
        .sort_values(
            ["_kind_rank", sort_by, "submitted_at", "submission_id"],
            ascending=[True, False, True, True],
            na_position="last",
            kind="stable",
        )
        .index
    )
    return wide.loc[order].reset_index(drop=True)


def wide_view(
    scores: pd.DataFrame,
    suite: str | None = None,
    task: str | None = None,
    setting: str | None = None,
    tier: str | None = None,
    tier_order: list[str] | None = None,
) -> pd.DataFrame:
    """One row per result; columns: ids, `total`, one column per tier (`group/tier`), counts.

    `tier` keeps only the matching tier columns (by `group/tier` or bare tier name) and ranks by
    the first of them; otherwise rows rank by `total`. `tier_order` orders the tier columns
    (the manifests' order) instead of alphabetically. Ties: earlier `submitted_at`, then
    `submission_id`.
    """
    return finish_view([wide_rows(scores)], suite, task, setting, tier, tier_order)


EXPORT_FORMATS = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "parquet": "application/vnd.apache.parquet",
}


def json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The frame's rows as dicts of plain Python values, a missing value (NaN, NA, None) as None.
    Column by column (Series.tolist): what astype(object).where(notna, None).to_dict("records")
    gives, seven times faster on a 100-row page (the first request after a publish pays it)."""
    names = [str(column) for column in frame.columns]
    columns = [_cells(frame.iloc[:, i]) for i in range(frame.shape[1])]
    return [dict(zip(names, row)) for row in zip(*columns)]


def _cells(series: pd.Series) -> list[Any]:
    return [
        None if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v) else v
        for v in series.tolist()
    ]


def _json_default(value: Any) -> Any:
    """numpy scalars (and anything else with .item()) as plain Python values."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)


# A cell starting with one of these is run as a formula by spreadsheets (CSV injection, OWASP).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    """Text a spreadsheet would evaluate gets a leading apostrophe, so it is shown as typed."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) else value


def export(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        # Only text columns: numbers (negative scores included) stay numbers.
        text_columns = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
        safe = (
            frame.assign(**{c: frame[c].map(neutralise_formula) for c in text_columns})
            if text_columns
            else frame
        )
        # CRLF rows (RFC 4180): the csv writer then also quotes a field holding a lone \r
        return safe.to_csv(index=False, lineterminator="\r\n").encode()
    if fmt == "json":
        # Not DataFrame.to_json: it keeps at most 15 significant digits, so e.g. 1/3 would not
        # read back as the value the scorer computed (CSV and parquet are exact).
        return json.dumps(json_records(frame), allow_nan=False, default=_json_default).encode()
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
