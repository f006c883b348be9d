"""The board tables of the results dataset: each task's ranked board, as the API's downloads carry it.

    boards/<suite>/<task>.parquet    one row per result of the task, in the board's columns
                                     (leaderboard/columns.yaml: rank, rank_group, above_reference,
                                     model facts, scores, provenance), every setting in one file
    boards/stale.json                the boards that lack results published since they were written:
                                     {"lagging": {"<suite>/<task>": UTC time of the first such change}}

The long scores table (data/scores/) is what a result *is*; these are what the board *shows*, so
that `datasets.load_dataset(<repo>, "board-<suite>-<task>")` gives a reader the ranks and the
reference-line verdicts without re-implementing the ranking.

They are derived, so they are rewritten in batches, not by every publish: re-ranking a task and
hashing its file costs ~0.45 s at 20,000 results, which made the publish rate fall 4.5x between 100
and 20,000 rows (bench/README.md). A publish (or withdrawal, or sync of the papers' rows) only marks
its task in boards/stale.json, in its own commit; the publisher (leaderboard/outbox.py) rewrites the
due lagging boards from the scores table in one commit of its own ("Boards: ...") once a board's
oldest missing change is PERSONABOARD_BOARDS_EVERY_S old (30 s by default) AND the records and
details published into its task since weigh BOARDS_ADDED_SHARE times its board file (a withdrawal:
by the time alone; a task's first board: at once), and a named release always carries current
boards. Why the size rule: each refresh stores the whole board in the dataset's history again
(5.6 MB at 20,000 results), so by time alone a slow trickle of results grew the history by a board
per interval; with it the boards' bytes in the history stay within about 1 / BOARDS_ADDED_SHARE
times the results' own (bench/bench_history.py). A task in stale.json lags, a task not in it is
exact; the live API never lags.

Each setting is ranked on its own, as the board's default view ranks (zero_shot and reminder rows
are different experiments): the rows of setting X are exactly the API's download of
`?suite=S&task=T&setting=X` less the task's reference rows, which that download lists in every
setting and the file once, under setting `reference` (same values; the file's columns are the
union over its settings, the API's `?suite=S&task=T` download's columns, so a column another
setting lacks is empty). One file per task, not per setting: a judged setting's name holds its
judge's model id ("zero_shot+judge:org/model"), no file name, and a reader filters one table by
its `setting` column.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable

import pandas as pd

from evaluator.metrics import known_metrics
from leaderboard.board import REFERENCE_KIND, board_download, manifest_tier_order
from leaderboard.columns import board_download_columns, registry
from leaderboard.readpath import rank_cells
from leaderboard.result_record import REFERENCE_SETTING
from leaderboard.table import (
    CELL_COLUMNS,
    TOTAL,
    WideRows,
    finish_view,
    wide_rows,
)

BOARDS_DIR = "boards"
STALE_PATH = f"{BOARDS_DIR}/stale.json"
BOARDS_EVERY_S = 30.0  # default: how old the oldest change a board lacks may get before a refresh
BOARDS_MESSAGE = "Boards:"  # a refresh commit's message starts so (bookkeeping, not a result)
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


def _setting_order(settings: pd.Series) -> list[str]:
    return sorted({str(s) for s in settings.unique()})


def ranked_settings(parts: list[WideRows], suite: str, task: str, settings: Iterable[str]):
    """{setting: its board}, each ranked as the API ranks `?suite&task&setting` (board_download)."""
    order = manifest_tier_order()
    # only the cells a board ranks on (the whole view's: tier None), ids as Python strings: the
    # same ranks, without an `isin` over every cell's arrow string per setting (leaderboard/readpath.py)
    cells = [c for c in (rank_cells(part, None) for part in parts) if len(c)]
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

    def board(setting: str) -> pd.DataFrame:
        ranked = board_download(
            finish_view(parts, suite, task, setting, None, tier_order=order), all_cells, lines, None
        )
        if setting == REFERENCE_SETTING:
            return ranked
        # a setting's view lists the task's reference rows too (table.in_slice); the file holds
        # them once, under their own setting
        return ranked[ranked["setting"] != REFERENCE_SETTING].reset_index(drop=True)

    return {setting: board(setting) for setting in settings}


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


def rebuild(scores: pd.DataFrame, suite: str, task: str) -> pd.DataFrame:
    """A task's board from its scores-table rows: every setting ranked afresh."""
    own = scores[(scores["suite"] == suite) & (scores["task"] == task)]
    return rebuild_from_parts([wide_rows(own)] if not own.empty else [], suite, task)


def rebuild_from_parts(parts: list[WideRows], suite: str, task: str) -> pd.DataFrame:
    """A task's board from the table's parts, each pivoted (table.wide_rows; a result's rows never
    span parts): the same file as `rebuild` of the whole table, with each part pivoted once by
    whoever keeps them (the stores' PartCache) rather than the whole table per refresh."""
    own = task_part(parts, suite, task)
    if own is None:
        return assemble([])
    mine = own.columns[(own.columns["suite"] == suite) & (own.columns["task"] == task)]
    settings = _setting_order(mine["setting"])
    return assemble(ranked_settings([own], suite, task, settings).values())


def task_part(parts: list[WideRows], suite: str, task: str) -> WideRows | None:
    """The parts that hold the task's rows as one part (None: none does), so that each setting's
    view concatenates one frame, not every part's; rows of other tasks a part holds are left to
    finish_view's filter, as in any view."""
    own = [
        p
        for p in parts
        if len(p.columns) and ((p.columns["suite"] == suite) & (p.columns["task"] == task)).any()
    ]
    if not own:
        return None
    if len(own) == 1:
        return own[0]
    return WideRows(
        pd.concat([p.rows for p in own], ignore_index=True),
        pd.concat([p.columns for p in own], ignore_index=True),
        pd.concat([p.cells for p in own], ignore_index=True),
    )


# -- which boards lag, and their refresh ------------------------------------------------------------
# boards/stale.json:
#   "lagging":     {"<suite>/<task>": UTC time of the first change its board lacks}
#   "added_bytes": {"<suite>/<task>": bytes of the records and details published into it since}
#   "rewritten":   ["<suite>/<task>", ...] lagging by a change other than an added result (a
#                  withdrawal, a sync of the papers' rows): refreshed at the interval, whatever its size
#   "board_bytes": {"<suite>/<task>": size of its board file as last written}
def stale_state(stale: bytes | None) -> dict:
    """boards/stale.json parsed, every key present (files written before a key existed lack it)."""
    state = json.loads(stale) if stale else {}
    return {
        "lagging": dict(state.get("lagging", {})),
        "added_bytes": dict(state.get("added_bytes", {})),
        "rewritten": sorted(state.get("rewritten", [])),
        "board_bytes": dict(state.get("board_bytes", {})),
    }


def lagging(stale: bytes | None) -> dict[str, str]:
    """{"<suite>/<task>": UTC time of the first change its board lacks} from boards/stale.json."""
    return stale_state(stale)["lagging"]


def stale_file(
    lagging: dict[str, str],
    added_bytes: dict[str, int] | None = None,
    rewritten: list[str] | None = None,
    board_bytes: dict[str, int] | None = None,
) -> bytes:
    """boards/stale.json's bytes; "lagging" always, the other keys when not empty."""
    state: dict = {"lagging": dict(sorted(lagging.items()))}
    if added_bytes:
        state["added_bytes"] = dict(sorted(added_bytes.items()))
    if rewritten:
        state["rewritten"] = sorted(rewritten)
    if board_bytes:
        state["board_bytes"] = dict(sorted(board_bytes.items()))
    return (json.dumps(state, indent=1) + "\n").encode()


def _utc_now() -> datetime:
    """The clock of the lag times (bench/bench_history.py runs a stream on a clock of its own)."""
    return datetime.now(timezone.utc)


def mark_lagging(
    stale: bytes | None,
    tasks: Iterable[tuple[str, str]],
    now: datetime | None = None,
    added_bytes: int = 0,
    rewritten: bool = False,
) -> bytes | None:
    """boards/stale.json with `tasks` added (lagging since `now`), or None when nothing in it
    changes: a task keeps the time of its first missing change, so its age says how far behind.

    `added_bytes`: the bytes a publish adds to its task (its record and details), summed per task
    until the board is written again (the refresh's size rule, refresh_tasks). `rewritten`: the
    change is not an added result (a withdrawal, a sync of the papers' rows): the board is due at
    the interval whatever the bytes, so a withdrawn result leaves the board within it."""
    state = stale_state(stale)
    keys = [f"{suite}/{task}" for suite, task in tasks]
    since = (now or _utc_now()).isoformat(timespec="seconds")
    changed = False
    for key in keys:
        if key not in state["lagging"]:
            state["lagging"][key] = since
            changed = True
        if added_bytes:
            state["added_bytes"][key] = state["added_bytes"].get(key, 0) + added_bytes
            changed = True
        if rewritten and key not in state["rewritten"]:
            state["rewritten"] = sorted({*state["rewritten"], key})
            changed = True
    return stale_file(**state) if changed else None


# a lagging board is due once the records and details published into its task since weigh this
# many times its board file (refresh_tasks): the boards' bytes in the history <= ~1/this the results'
BOARDS_ADDED_SHARE = 1.0


def refresh_tasks(
    stale: bytes | None,
    older_than_s: float,
    now: datetime | None = None,
    added_share: float = 0.0,
) -> list[tuple[str, str]]:
    """The lagging tasks whose board is due: its oldest missing change is at least `older_than_s`
    old, and (when `added_share` > 0) the records and details published into the task since the
    board was written weigh at least `added_share` times the board file. A board written before
    its size was kept, and one lagging a withdrawal, is due by the time alone.

    Why the size rule: a refresh stores the whole board again (5.6 MB at 20,000 results), so
    boards refreshed by time alone grow the history by a board per interval however few results
    arrived; with it, the boards' bytes in the history are at most ~1/added_share times the bytes
    of the results themselves (bench/bench_history.py)."""
    state = stale_state(stale)
    moment = now or _utc_now()
    due = []
    for key, since in sorted(state["lagging"].items()):
        if moment - datetime.fromisoformat(since) < timedelta(seconds=older_than_s):
            continue
        size = state["board_bytes"].get(key)
        added = state["added_bytes"].get(key, 0)
        if (
            added_share <= 0
            or size is None
            or key in state["rewritten"]
            or added >= added_share * size
        ):
            suite, task = key.split("/", 1)
            due.append((suite, task))
    return due


def refresh_due(
    stale: bytes | None, older_than_s: float, now: datetime | None = None, added_share: float = 0.0
) -> bool:
    """Whether some board is due (refresh_tasks)."""
    return bool(refresh_tasks(stale, older_than_s, now, added_share))


def refreshed_boards(
    stale: bytes | None,
    listed: Iterable[tuple[str, str]],
    parts: Callable[[], list[WideRows]],
    card: bytes | None,
    older_than_s: float = 0.0,
    added_share: float = 0.0,
    now: datetime | None = None,
) -> tuple[dict[str, bytes], str]:
    """The files a refresh writes, and its commit message (no files: nothing due): each due task's
    board (refresh_tasks) ranked afresh from the whole table (`parts()`: its parts pivoted), the
    dataset card when it changes (a new board, or a card an older version wrote: `card` is the
    current one), and the stale file without those tasks, with their boards' sizes."""
    from leaderboard.layout import dataset_card, parquet_bytes

    tasks = refresh_tasks(stale, older_than_s, now, added_share)
    if not tasks:
        return {}, ""
    table = parts()
    files = {
        board_path(suite, task): parquet_bytes(rebuild_from_parts(table, suite, task))
        for suite, task in tasks
    }
    described = dataset_card(set(listed) | set(tasks)).encode()
    if card != described:
        files["README.md"] = described
    state = stale_state(stale)
    for suite, task in tasks:
        key = f"{suite}/{task}"
        state["lagging"].pop(key, None)
        state["added_bytes"].pop(key, None)
        state["rewritten"] = [k for k in state["rewritten"] if k != key]
        state["board_bytes"][key] = len(files[board_path(suite, task)])
    files[STALE_PATH] = stale_file(**state)
    shown = ", ".join(f"{suite}/{task}" for suite, task in tasks)
    return files, f"{BOARDS_MESSAGE} refresh {shown}"
