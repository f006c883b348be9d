"""The read path's cheaper inputs to the ranking (each part's ranking cells and reference rows,
derived once per part) give the same bytes as ranking from every cell and every row, and the first
request after a publish (through the HTTP fast path's cache) answers with the new row."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from leaderboard import boards
from leaderboard.board import board_download, manifest_tier_order
from leaderboard.readpath import Filters, LeaderboardCache, Page
from leaderboard.store import LocalDatasetStore
from leaderboard.table import CELL_COLUMNS, export, finish_view
from leaderboard.view_query import keep_columns, keep_rows, sort_rows

TIERS = {"form": ["explicit", "implicit_choice"], "topic": ["shop_home", "travel_hotel"]}
KINDS = ("computed", "computed", "computed", "reference", "partial", "reported")


def _record(i: int, task: str = "mcq") -> dict:
    """Results of two tasks, two settings and every kind, with intervals (rank groups that
    overlap), repeated answers (copies), two licenses and model sizes, and ties."""
    # a low reference line (the majority answer), so most verified rows are ranked above it
    value = 0.3 if KINDS[i % len(KINDS)] == "reference" else round(0.3 + 0.05 * (i % 9), 3)

    def stats(shift: float = 0.0) -> dict:
        v = round(min(1.0, value + shift), 3)
        return {"accuracy": {"value": v, "ci95": [max(0.0, v - 0.08), min(1.0, v + 0.08)], "n": 50}}

    tiers = {
        group: {tier: stats(0.01 * k) for k, tier in enumerate(names)}
        for group, names in TIERS.items()
    }
    if task == "mcq_turns":
        tiers = {"turns": {"0": stats(), "10": stats(-0.02)}}
    return {
        "submission_id": f"s{i:03d}-{task}",
        "suite": "prefeval",
        "task": task,
        "setting": ("zero_shot", "reminder")[i % 2],
        "model_name": f"Model {'Alpha' if i % 3 else 'Beta'} {i}",
        "model_link": "",
        "source": "predictions",
        "row_kind": KINDS[i % len(KINDS)],
        "submitted_at": f"2026-01-01T00:00:{i % 7:02d}+00:00",
        "provenance": {
            "predictions_sha256": f"sha{i % 13}",
            "model": {"license": ("mit", "apache-2.0")[i % 2], "parameters": 10 ** (8 + i % 4)},
        },
        "metrics": {"metric": "accuracy", "total": stats(), "tiers": tiers},
    }


def _slow_board(table, filters: Filters) -> pd.DataFrame:
    """The board as the read path computed it before: ranked from every cell of the revision, each
    task's reference line from a view of every row; then the reader's filters, sort and columns."""
    parts = table.parts
    view = finish_view(
        parts,
        filters.suite,
        filters.task,
        filters.setting,
        filters.tier,
        tier_order=table.tier_order,
    )
    cells = [p.cells for p in parts if len(p.cells)]

    def references(suite: str, task: str) -> pd.DataFrame:
        return finish_view(parts, suite, task, None, filters.tier, tier_order=table.tier_order)

    ranked = board_download(
        view,
        pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(columns=CELL_COLUMNS),
        references,
        filters.tier,
    )
    if filters == filters.board_base:
        return ranked
    shown = keep_rows(ranked, filters.model_type, filters.size, filters.license, filters.search)
    return keep_columns(sort_rows(shown, filters.sort), filters.columns, filters.tier)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A store of many parts (seeded once for the module; tests that publish take a copy)."""
    from leaderboard import store as store_module

    root = tmp_path_factory.mktemp("readpath-fast") / "results"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "SHARD_RECORDS", 4)  # many parts, merged as they fill
        store = LocalDatasetStore(root)
        store.sync_group("s", [_record(i) for i in range(30)], "seed")
        for i in range(30, 36):  # parts of one result each, as publishes write them
            store.publish(_record(i))
        store.publish(_record(40, "mcq_turns"))
        store.publish(_record(41, "mcq_turns"))
        # a result without a total: the whole view's `n_items` is then a float column, a view of
        # the other task's rows whole numbers (as finish_view gives each)
        untotalled = _record(42, "mcq_turns")
        untotalled["metrics"]["total"] = {}
        store.publish(untotalled)
    return root


@pytest.fixture
def store(seeded, tmp_path):
    root = tmp_path / "results"
    shutil.copytree(seeded, root, symlinks=True)
    return LocalDatasetStore(root)


@pytest.fixture(scope="module")
def table(seeded):
    return LeaderboardCache(LocalDatasetStore(seeded), manifest_tier_order).table()


VIEWS = (
    Filters(),
    Filters(suite="prefeval"),
    Filters(suite="prefeval", task="mcq"),
    Filters(suite="prefeval", task="mcq", setting="zero_shot"),
    Filters(suite="prefeval", task="mcq", setting="reminder", tier="form/implicit_choice"),
    Filters(suite="prefeval", task="mcq", tier="travel_hotel"),
    Filters(suite="prefeval", task="mcq_turns", tier="turns/10"),
    Filters(suite="prefeval", task="mcq", search="beta", sort="total:asc"),
    Filters(
        suite="prefeval", task="mcq", license="mit", columns=("tiers",), sort="model_name:desc"
    ),
    Filters(suite="prefeval", task="mcq", size="1B-10B", columns=()),
)


@pytest.mark.parametrize("filters", VIEWS, ids=lambda f: repr(f)[8:70])
def test_every_view_answers_the_bytes_the_slow_computation_gives(table, filters):
    expected = _slow_board(table, filters)
    assert len(expected) > 0
    for fmt in ("json", "csv", "parquet"):
        for page in (None, Page(), Page(3, 5)):
            rows = expected.iloc[page.offset : page.end] if page else expected
            body = table.body(filters, fmt, page=page)
            assert body.content == export(rows, fmt), (fmt, page)
            assert body.total == len(expected)
            assert table.body(filters, fmt, page=page) is body  # built once per revision


def test_the_views_ranks_and_reference_lines_are_those_of_all_rows(table):
    """Not vacuous: the data has rank groups, copies, rows below the reference line, unranked ones."""
    assert table.view(Filters())["n_items"].dtype.kind == "f"
    assert table.view(Filters("prefeval", "mcq"))["n_items"].dtype == "int64"
    board = table.board(Filters("prefeval", "mcq"))
    assert board.attrs["reference_line"] is not None
    ranks = board["rank"].dropna()
    assert ranks.nunique() > 1 and ranks.duplicated().any()
    assert (board["duplicate_of"] != "").any() and board["above_reference"].eq(False).any()


def test_a_result_held_twice_keeps_the_reference_line_of_its_first_row(store):
    """A result published twice counts as its first row: when one's first row is not a reference
    row, the line must not come from its later reference row (the read path then ranks from all)."""
    first = {**_record(50), "row_kind": "computed"}
    again = {**first, "row_kind": "reference", "submitted_at": "2026-02-01T00:00:00+00:00"}
    again["metrics"] = _record(8)["metrics"]  # the best value: would be the line if counted
    store.sync_group("dup", [first], "first")
    store.sync_group("dup2", [again], "again")
    table = LeaderboardCache(store, manifest_tier_order).table()
    filters = Filters("prefeval", "mcq")
    assert table.body(filters, "csv").content == export(_slow_board(table, filters), "csv")


def test_the_boards_file_ranks_as_from_every_cell(seeded):
    """boards.rebuild ranks each setting from its ranking cells only: the same file."""
    scores = LocalDatasetStore(seeded).scores()
    own = scores[(scores["suite"] == "prefeval") & (scores["task"] == "mcq")]
    parts = [boards.wide_rows(own)]
    expected = []
    references = finish_view(parts, "prefeval", "mcq", None, None)  # every setting's
    for setting in ("reminder", "zero_shot"):
        expected.append(
            board_download(
                finish_view(
                    parts, "prefeval", "mcq", setting, None, tier_order=manifest_tier_order()
                ),
                parts[0].cells,
                lambda _s, _t: references,
                None,
            )
        )
    assert export(boards.rebuild(scores, "prefeval", "mcq"), "csv") == export(
        boards.assemble(expected), "csv"
    )


def test_a_refresh_ranks_each_task_from_its_pivoted_parts_as_from_the_whole_table(
    store, monkeypatch
):
    """The boards refresh ranks a task from the table's parts, each pivoted once per store object
    (changes.pivoted_parts), and writes the file `boards.rebuild` of the whole table gives, parts
    that hold two tasks included; a later refresh pivots only the parts new since."""
    from leaderboard import changes

    def mixed() -> bool:
        with store._view(store.head_revision()) as view:
            return any(p.columns["task"].nunique() > 1 for p in changes.pivoted_parts(view))

    for i in range(60, 80):  # single-result parts of both tasks, until ten merge into one
        store.publish(_record(i, "mcq_turns" if i % 2 else "mcq"))
        if mixed():
            break
    assert mixed(), "a part holding two tasks"
    with store._view(store.head_revision()) as view:
        parts, whole = changes.pivoted_parts(view), changes.scores(view)
        for task in ("mcq", "mcq_turns"):
            assert export(boards.rebuild_from_parts(parts, "prefeval", task), "csv") == export(
                boards.rebuild(whole, "prefeval", task), "csv"
            )
        assert boards.rebuild_from_parts(parts, "prefeval", "nosuch").empty
        before = set(changes.part_blobs(view).values())

    pivots: list[int] = []
    real = changes.wide_rows
    monkeypatch.setattr(changes, "wide_rows", lambda frame: pivots.append(1) or real(frame))
    store.publish(_record(90))
    with store._view(store.head_revision()) as view:
        changes.pivoted_parts(view)
        new = set(changes.part_blobs(view).values()) - before
    assert len(new) >= 1 and len(pivots) == len(new)


def test_the_first_request_after_a_publish_answers_with_the_new_row(store):
    cache = LeaderboardCache(store, manifest_tier_order)
    filters = Filters(suite="prefeval", task="mcq")
    before = cache.table()
    assert b"s060-mcq" not in before.body(filters, "json", page=Page()).content
    store.publish({**_record(60), "row_kind": "computed"})  # the best score: on the first page
    assert cache.cached_head() is None  # the head moved: the fast path does not answer from memory
    table = cache.table()
    assert table is not before and cache.cached_head() is table
    assert b"s060-mcq" in table.cached_body(Filters(), "json", page=Page()).content  # prebuilt
    assert b"s060-mcq" in table.body(filters, "json", page=Page()).content


def test_a_publish_ranks_only_the_task_it_changed(store, monkeypatch):
    """A new head reuses the ranked board of every task whose parts it shares with the head before
    (PartMemo.task_board): a publish into mcq ranks mcq alone, and the views are the same bytes
    as the slow computation's."""
    import leaderboard.readpath as readpath

    calls: list[str] = []
    real = readpath.rank_rows
    monkeypatch.setattr(
        readpath, "rank_rows", lambda rows, *a: calls.append(rows["task"].iloc[0]) or real(rows, *a)
    )
    store.publish(_record(60))  # the copy's parts of 4 results merge into one (parts of 500 here)
    cache = LeaderboardCache(store, manifest_tier_order)
    cache.table()
    assert sorted(calls) == ["mcq", "mcq_turns"]
    store.publish({**_record(61), "row_kind": "computed"})  # a part of its own, nothing merged
    table = cache.table()
    assert calls[2:] == ["mcq"]  # mcq_turns' parts are the same: its board is the one ranked before
    for filters in (Filters(), Filters("prefeval"), Filters("prefeval", "mcq_turns")):
        assert table.body(filters, "csv").content == export(_slow_board(table, filters), "csv")
    store.publish({**_record(62, "mcq_turns"), "row_kind": "computed"})
    cache.table()
    assert calls[3:] == ["mcq_turns"]


def test_a_tasks_board_is_ranked_once_for_the_whole_board_its_suite_and_itself(seeded, monkeypatch):
    import leaderboard.readpath as readpath

    calls: list[str] = []
    real = readpath.rank_rows
    monkeypatch.setattr(
        readpath, "rank_rows", lambda rows, *a: calls.append(rows["task"].iloc[0]) or real(rows, *a)
    )
    table = LeaderboardCache(LocalDatasetStore(seeded), manifest_tier_order).table()
    assert sorted(calls) == ["mcq", "mcq_turns"]  # the head's default page ranks every task once
    table.body(Filters("prefeval", "mcq_turns"), "json", page=Page())
    table.body(Filters("prefeval"), "csv")
    assert len(calls) == 2  # the same boards
    # mcq's own view has whole-number n_items where the whole view's are floats (another task's
    # row has no total): its board is the one the whole board ranked all the same
    table.body(Filters("prefeval", "mcq"), "json", page=Page())
    assert len(calls) == 2
    table.body(Filters("prefeval", "mcq", "zero_shot"), "json", page=Page())
    assert calls[2:] == ["mcq"]  # a setting's rows are ranked among themselves
