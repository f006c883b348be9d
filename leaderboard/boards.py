"""The board tables of the results dataset: each task's ranked board, as the API's downloads carry it.

    boards/<suite>/<task>.parquet    one row per result of the task, in the board's columns
                                     (leaderboard/columns.yaml: rank, rank_group, above_reference,
                                     model facts, scores, provenance), every setting in one file

The long scores table (data/scores/) is what a result *is*; these are what the board *shows*, so
that `datasets.load_dataset(<repo>, "board-<suite>-<task>")` gives a reader the ranks and the
reference-line verdicts without re-implementing the ranking. They are derived: every publish
rewrites the board of the task it touched (never another task's) in the same commit as the record.

Each setting is ranked on its own, as the board's default view ranks (zero_shot and reminder rows
are different experiments): the rows of setting X are exactly the API's download of
`?suite=S&task=T&setting=X` (same values; the file's columns are the union over its settings, the
API's `?suite=S&task=T` download's columns, so a column another setting lacks is empty). One file
per task, not per setting: a judged setting's name holds its judge's model id ("zero_shot+judge:
org/model"), no file name, and a reader filters one table by its `setting` column.

Cost: a publish ranks only its own setting's rows again; the other settings' rows are kept as the
last version has them (a ranking never crosses settings). Only a reference row, whose line every
setting is judged against, re-ranks the whole task. The rows come from the task's previous board
file, not from the whole scores table: bounded by the task's size (bench/bench_boards.py).
"""

from __future__ import annotations

import io
from typing import Any, Iterable

import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.board import REFERENCE_KIND, board_download, manifest_tier_order
from leaderboard.columns import board_download_columns, registry
from leaderboard.table import (
    CELL_COLUMNS,
    SLICE_COLUMNS,
    TOTAL,
    WideRows,
    finish_view,
    records_to_scores,
    wide_rows,
)

BOARDS_DIR = "boards"
# columns of the board that ranking adds to a result's own row (not read back as its input)
RANKING_COLUMNS = [c.name for c in registry() if c.source == "board"] + ["size"]
# the registry's types in pandas: what a parquet file of them reads back as
DTYPES = {"str": "str", "int": "Int64", "float": "float64", "bool": "boolean"}


def board_path(suite: str, task: str) -> str:
    return f"{BOARDS_DIR}/{suite}/{task}.parquet"


def config_name(suite: str, task: str) -> str:
    """The dataset card's config of a task's board: `load_dataset(repo, config_name(...))`."""
    return f"board-{suite}-{task}"


def board_tasks(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(suite, task) of each board file among dataset paths, sorted."""
    found = set()
    for path in paths:
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == BOARDS_DIR and parts[2].endswith(".parquet"):
            found.add((parts[1], parts[2][: -len(".parquet")]))
    return sorted(found)


def task_of_path(path: str) -> tuple[str, str]:
    """(suite, task) of a record's path (results|requests/<suite>/<task>/...)."""
    parts = path.split("/")
    return parts[1], parts[2]


def _is_score(column: str) -> bool:
    return column == TOTAL or "/" in column or column in known_metrics()


def _setting_order(settings: Iterable[Any]) -> list[str]:
    return sorted({str(s) for s in settings})


def ranked_settings(parts: list[WideRows], suite: str, task: str, settings: Iterable[str]):
    """{setting: its board}, each ranked as the API ranks `?suite&task&setting` (board_download)."""
    order = manifest_tier_order()
    cells = [part.cells for part in parts if len(part.cells)]
    all_cells = pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(columns=CELL_COLUMNS)
    # the reference line is the best reference row: rank those rows only, not the whole task
    references = finish_view(
        [WideRows(p.rows[p.rows["row_kind"] == REFERENCE_KIND], p.columns, p.cells) for p in parts],
        suite,
        task,
        None,
        None,
        tier_order=order,
    )

    def lines(_suite: str, _task: str) -> pd.DataFrame:
        return references  # the task's reference rows, whatever the setting (one read per publish)

    return {
        setting: board_download(
            finish_view(parts, suite, task, setting, None, tier_order=order),
            all_cells,
            lines,
            None,
        )
        for setting in settings
    }


def assemble(boards: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """One task's file from its settings' boards: settings in name order, each in its board's row
    order; the union of their columns in the registry's order; one dtype per column type."""
    frames = [b for b in boards if len(b)]
    if not frames:
        return pd.DataFrame(columns=board_download_columns([], []))
    present = {c for frame in frames for c in frame.columns}
    metrics = [c for c in known_metrics() if c in present and c != TOTAL]
    rank = {name: i for i, name in enumerate(manifest_tier_order())}
    tiers = sorted((c for c in present if "/" in c), key=lambda c: (rank.get(c, len(rank)), c))
    columns = board_download_columns(metrics, tiers)
    frames = [normalise(frame.reindex(columns=columns)) for frame in frames]
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    order = {s: i for i, s in enumerate(_setting_order(frame["setting"]))}
    frame = frame.iloc[frame["setting"].map(order).argsort(kind="stable")]
    return frame.reset_index(drop=True)


def normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """One dtype per column whichever way the rows came (fresh from ranking, or read back from
    the last file): the registry's type; score columns float; text as Python strings or None."""
    types = {c.name: c.type for c in registry() if not c.placeholder}
    out = {}
    for column in frame.columns:
        kind = "float" if _is_score(column) and column != TOTAL else types.get(column, "float")
        values, wanted = frame[column], DTYPES[kind]
        if str(values.dtype) == wanted:  # rows read back from the last file: as they were
            out[column] = values
        elif kind == "str":
            out[column] = values.astype(object).where(values.notna(), None).astype(wanted)
        else:
            out[column] = pd.array(values.astype(object).where(values.notna(), None), wanted)
    return pd.DataFrame(out, index=frame.index)


def read_back(board: pd.DataFrame) -> WideRows:
    """A task's previous board file as the rows ranking starts from (the inverse of ranking: the
    result's own columns, the total's interval as its cell, the columns each setting has)."""
    rows = board.drop(columns=[c for c in RANKING_COLUMNS if c in board])
    scores = [c for c in rows.columns if _is_score(c)]
    present = [
        {"suite": suite, "task": task, "setting": setting, "column": column}
        for (suite, task, setting), group in rows.groupby(SLICE_COLUMNS, sort=False)
        for column in scores
        if column == TOTAL or group[column].notna().any()
    ]
    cells = pd.DataFrame(
        {
            "submission_id": rows["submission_id"],
            "column": TOTAL,
            "ci_low": rows["total_ci_low"].astype("float64"),
            "ci_high": rows["total_ci_high"].astype("float64"),
            "n": rows["n_items"],
        },
        columns=CELL_COLUMNS,
    )
    # ranking reads plain dtypes (floats with NaN), as the scores table's pivot gives them
    plain = rows.astype({c: "float64" for c in [*scores, "total_ci_low", "total_ci_high"]})
    if plain["n_items"].notna().all():
        plain["n_items"] = plain["n_items"].astype("int64")
    return WideRows(
        plain.reset_index(drop=True),
        pd.DataFrame(present, columns=[*SLICE_COLUMNS, "column"]),
        cells,
    )


def rebuild(scores: pd.DataFrame, suite: str, task: str) -> pd.DataFrame:
    """A task's board from its scores-table rows (a store's first board of a task, a sync of the
    papers' rows): every setting ranked afresh."""
    own = scores[(scores["suite"] == suite) & (scores["task"] == task)]
    if own.empty:
        return assemble([])
    parts = [wide_rows(own)]
    settings = _setting_order(own["setting"])
    return assemble(ranked_settings(parts, suite, task, settings).values())


def with_changes(
    previous: pd.DataFrame,
    suite: str,
    task: str,
    added: list[dict[str, Any]] = (),  # type: ignore[assignment]
    removed: Iterable[str] = (),
) -> pd.DataFrame:
    """The board after adding result records to a task (or removing submissions from it): the
    settings they touch are ranked again, every other setting's rows stay as they were; a
    reference row re-ranks every setting (it may move the line they are judged against)."""
    removed = set(removed)
    gone = previous[previous["submission_id"].isin(removed)]
    kept = previous[~previous["submission_id"].isin(removed)]
    touched = {str(r["setting"]) for r in added} | set(gone["setting"].astype(str))
    if (
        any(r.get("row_kind") == REFERENCE_KIND for r in added)
        or (gone["row_kind"] == REFERENCE_KIND).any()
    ):
        touched |= set(kept["setting"].astype(str))
    parts = [read_back(kept)] if len(kept) else []
    if added:
        parts.append(wide_rows(records_to_scores(added)))
    if not parts:
        return assemble([])
    fresh = ranked_settings(parts, suite, task, _setting_order(touched))
    untouched = kept[~kept["setting"].astype(str).isin(touched)]
    return assemble([untouched, *fresh.values()])


def board_changes(
    suite: str,
    task: str,
    previous: bytes | None,
    listed: Iterable[tuple[str, str]],
    scores: Any,
    added: list[dict[str, Any]] = (),  # type: ignore[assignment]
    removed: Iterable[str] = (),
) -> dict[str, bytes]:
    """The files a change to one task writes beside its records: the task's board and, when the
    board is new, the dataset card that declares it. `previous`: the board file at the parent
    version (None: none yet); `listed`: the boards the parent version has; `scores()`: the whole
    scores table after the change (read only when there is no previous board to start from)."""
    from leaderboard.store import dataset_card, parquet_bytes

    if previous is None:
        board = rebuild(scores(), suite, task)
    else:
        board = with_changes(pd.read_parquet(io.BytesIO(previous)), suite, task, added, removed)
    files = {board_path(suite, task): parquet_bytes(board)}
    listed = set(listed)
    if (suite, task) not in listed:
        files["README.md"] = dataset_card(listed | {(suite, task)}).encode()
    return files
