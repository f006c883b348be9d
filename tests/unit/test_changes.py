"""The store core (leaderboard/changes.py): each change as a pure function of a dataset view.

The view here is a real in-memory dataset (a dict of path -> bytes), not a stand-in for a store:
the stores give the same two reads of a git commit or a Hub revision (tests/unit/test_store.py,
tests/test_hub_store.py run the same changes through them)."""

from __future__ import annotations

import io
import json
import math
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from test_store import make_record

from leaderboard import changes
from leaderboard.boards import STALE_PATH, board_path, stale_state
from leaderboard.changes import Change, PartCache
from leaderboard.layout import (
    CARD_PATH,
    FIRST_PART,
    SHARD_MESSAGE,
    as_json,
    card_is_current,
    flat_result_path,
    git_blob_id,
    request_path,
    result_path,
)


class DictView:
    """A dataset revision held in memory: path -> bytes."""

    def __init__(self, files: dict[str, bytes] | None = None, revision: str = "r0"):
        self.revision = revision
        self.parts = PartCache()
        self.contents = dict(files or {})

    def read(self, path: str) -> bytes | None:
        return self.contents.get(path)

    def files(self, folder: str) -> dict[str, str]:
        prefix = folder.rstrip("/") + "/"
        return {p: git_blob_id(d) for p, d in self.contents.items() if p.startswith(prefix)}

    def read_many(self, paths: list[str]) -> list[bytes | None]:
        return [self.contents.get(path) for path in paths]

    def after(self, change: Change | None) -> DictView:
        """The next revision: this one with the change applied."""
        assert change is not None
        files = {p: d for p, d in self.contents.items() if p not in change.deletions}
        files.update(change.files)
        following = DictView(files, f"r{int(self.revision[1:]) + 1}")
        following.parts = self.parts  # one store: one part cache
        return following


def new_dataset() -> DictView:
    return DictView().after(changes.creation(DictView()))


def table(view: DictView) -> pd.DataFrame:
    return changes.scores(view)


def test_a_new_dataset_has_its_card_and_an_empty_table_once():
    empty = DictView()
    created = changes.creation(empty)
    assert created is not None and created.message == "Create the results dataset"
    assert sorted(created.files) == [CARD_PATH, FIRST_PART]
    assert card_is_current(created.files[CARD_PATH])
    view = empty.after(created)
    assert changes.creation(view) is None and table(view).empty


def test_a_publish_writes_the_record_its_rows_and_the_bytes_its_task_gained():
    view = new_dataset()
    record = make_record("s1", 0.5)
    change = changes.publish(view, record, part_size=1000)
    assert change is not None and change.message == "Add result s1 (prefeval/mcq)"
    assert sorted(change.files) == sorted(
        [result_path("prefeval", "mcq", "s1"), FIRST_PART, STALE_PATH]
    )
    assert json.loads(change.files[result_path("prefeval", "mcq", "s1")]) == record
    stale = stale_state(change.files[STALE_PATH])
    assert list(stale["lagging"]) == ["prefeval/mcq"]
    assert stale["added_bytes"] == {"prefeval/mcq": len(as_json(record).encode())}
    after = view.after(change)
    assert set(table(after)["submission_id"]) == {"s1"} and len(table(after)) == 3

    second = changes.publish(after, make_record("s2", 0.6), part_size=1000)
    assert second is not None
    assert stale_state(second.files[STALE_PATH])["added_bytes"]["prefeval/mcq"] == sum(
        len(as_json(make_record(s, v)).encode()) for s, v in (("s1", 0.5), ("s2", 0.6))
    )


def test_published_is_decided_by_the_records_path_in_either_layout():
    view = new_dataset()
    after = view.after(changes.publish(view, make_record("s1", 0.5), part_size=1000))
    assert changes.publish(after, make_record("s1", 0.9), part_size=1000) is None  # a retried job
    flat = DictView({flat_result_path("prefeval", "mcq", "old"): b"{}"})  # a store before id_shard
    assert changes.holds_result(flat, "prefeval", "mcq", "old")  # what added_in looks for


def test_with_a_part_size_of_two_parts_fill_in_pairs_and_full_parts_stay_as_they_are():
    view = new_dataset()
    revisions = [view]
    for i in range(5):
        view = view.after(changes.publish(view, make_record(f"s{i}", i / 10), part_size=2))
        revisions.append(view)
    parts = changes.part_blobs(view)
    assert sorted(parts) == [f"data/scores/part-0000{i}.parquet" for i in range(3)]
    assert changes.part_blobs(revisions[4])["data/scores/part-00000.parquet"] == parts[FIRST_PART]
    assert set(table(view)["submission_id"]) == {f"s{i}" for i in range(5)}
    # a sync's rows are new parts of their own (of at most the part size); older parts stay
    synced = changes.group_sync(
        view, "g-", [make_record(f"g-{i}", 0.5) for i in range(4)], "sync", part_size=2
    )
    assert synced is not None and not synced.deletions
    assert sorted(p for p in synced.files if p.startswith("data/")) == [
        "data/scores/part-00003.parquet",
        "data/scores/part-00004.parquet",
    ]


def part_results(view: DictView) -> list[int]:
    """Results in each part, in the table's order."""
    return [
        int(changes.part_frame(view, path, blob)["submission_id"].nunique())
        for path, blob in sorted(changes.part_blobs(view).items())
    ]


def test_publishes_write_small_parts_merged_in_tiers_and_the_table_keeps_its_order():
    """Tiered compaction (changes._appended): a publish writes a part of one result; ten parts of
    one tier merge into one of the next (1, 10, 100, then full parts of part_size that never merge
    again), so no publish rewrites more than a few tiers' rows and the parts stay few."""
    assert changes.part_tiers(1000) == [1, 10, 100, 1000]
    assert changes.part_tiers(250) == [1, 10, 100, 250] and changes.part_tiers(3) == [1, 3]
    view, ids = new_dataset(), []
    largest_rewrite = 0
    for i in range(623):  # two full parts and every tier below them (1,234 took 2 minutes)
        ids.append(f"s{i:04d}")
        change = changes.publish(view, make_record(ids[-1], (i % 97) / 97), part_size=250)
        assert change is not None
        parts = [p for p in change.files if p.startswith("data/")]
        rewritten = sum(
            pd.read_parquet(io.BytesIO(change.files[p]))["submission_id"].nunique() for p in parts
        )
        largest_rewrite = max(largest_rewrite, rewritten)
        # a merge's run keeps its first name, the rest leave; nothing else is touched
        assert len(parts) == 1 and all(d > parts[0] for d in change.deletions)
        view = view.after(change)
        sizes = part_results(view)
        assert max(sizes) <= 250 and sum(sizes) == i + 1
        if i % 101 == 0:  # the table is exact and in publish order at every revision
            assert list(table(view)["submission_id"].unique()) == ids
    # 623 = 2 full parts + 1 of 100 + 2 of 10 + 3 of 1 (a run merges once it holds a next tier)
    assert part_results(view) == [250] * 2 + [100] + [10] * 2 + [1] * 3
    assert largest_rewrite == 250  # a merge into a full part: the most a publish rewrites
    assert list(table(view)["submission_id"].unique()) == ids
    names = sorted(changes.part_blobs(view))
    assert names == [f"data/scores/part-{i:05d}.parquet" for i in range(len(names))]


def test_part_sizes_after_many_publishes_follow_the_count_in_base_ten():
    """With a power of ten for the part size, the parts after n publishes are n's digits: full
    parts, then tens, ones (the store's 1000 behaves alike one tier up; 123 publishes, not 1,234,
    keep this test under a second)."""
    view = new_dataset()
    for i in range(123):
        view = view.after(changes.publish(view, make_record(f"s{i}", 0.5), part_size=100))
    assert part_results(view) == [100] + [10] * 2 + [1] * 3


def test_parts_larger_than_the_part_size_from_an_older_layout_count_as_full_and_stay():
    """Datasets written with parts of 1,000 results keep them when the part size is 500: a part
    that reaches the part size is full, never merged, and new results go to parts after it."""
    old = [make_record(f"old{i}", 0.5) for i in range(12)]
    files = {**new_dataset().contents, **changes.table_files(old, part_size=12)}
    view = DictView(files, "r9")
    for i in range(13):
        view = view.after(changes.publish(view, make_record(f"s{i}", 0.5), part_size=5))
    assert part_results(view) == [12, 5, 5, 1, 1, 1]  # the part size 5: tiers of 1 and 5
    ids = [f"old{i}" for i in range(12)] + [f"s{i}" for i in range(13)]
    assert list(table(view)["submission_id"].unique()) == ids


def test_compaction_takes_along_small_parts_a_withdrawal_or_a_sync_left_between():
    view = new_dataset()
    for i in range(15):
        view = view.after(changes.publish(view, make_record(f"s{i}", 0.5), part_size=1000))
    assert part_results(view) == [10] + [1] * 5
    view = view.after(changes.withdrawal(view, "s3", "withdraw s3"))  # the 10-part holds 9
    synced = changes.group_sync(
        view, "g-", [make_record(f"g-{i}", 0.5) for i in range(12)], "sync", part_size=1000
    )
    view = view.after(synced)
    assert part_results(view) == [9, 1, 1, 1, 1, 1, 12]
    for i in range(15, 15 + 80):
        view = view.after(changes.publish(view, make_record(f"s{i}", 0.5), part_size=1000))
    ids = [f"s{i}" for i in range(15) if i != 3] + [f"g-{i}" for i in range(12)]
    ids += [f"s{i}" for i in range(15, 95)]
    assert list(table(view)["submission_id"].unique()) == ids
    # the 9-, 1- and 12-result parts merged along with the tens once ten 10-tier parts were there
    assert sum(part_results(view)) == len(ids) and len(part_results(view)) < 15
    assert max(part_results(view)) <= 1000


def test_a_large_sync_merges_the_small_parts_before_it_into_full_ones_in_order():
    view = new_dataset()
    for i in range(105):
        view = view.after(changes.publish(view, make_record(f"s{i}", 0.5), part_size=1000))
    assert part_results(view) == [100] + [1] * 5
    synced = [make_record(f"g-{i:03d}", 0.5) for i in range(995)]
    view = view.after(changes.group_sync(view, "g-", synced, "sync", part_size=1000))
    assert part_results(view) == [1000, 100]  # 1,100 results: cut at the part size
    ids = [f"s{i}" for i in range(105)] + [f"g-{i:03d}" for i in range(995)]
    assert list(table(view)["submission_id"].unique()) == ids
    view = view.after(changes.publish(view, make_record("last", 0.5), part_size=1000))
    assert part_results(view) == [1000, 100, 1]


def test_a_table_part_reads_back_with_the_dtypes_of_the_frame_it_was_written_from():
    """part_bytes strips pandas metadata, the arrow schema, statistics and dictionaries: the frame
    read back must still be the one written, dtypes included (an empty part too)."""
    from leaderboard.layout import parquet_bytes, part_bytes
    from leaderboard.table import records_to_scores

    for records in ([], [make_record("s1", 0.5)], [make_record(f"s{i}", i / 7) for i in range(7)]):
        frame = records_to_scores(records)
        lean, full = part_bytes(frame), parquet_bytes(frame)
        read = pd.read_parquet(io.BytesIO(lean))
        pd.testing.assert_frame_equal(read, pd.read_parquet(io.BytesIO(full)))
        assert read.dtypes.to_dict() == pd.read_parquet(io.BytesIO(full)).dtypes.to_dict()
        assert len(lean) < len(full)
    one = part_bytes(records_to_scores([make_record("s1", 0.5)]))
    assert len(one) < 6000  # a publish's own part: parquet's overhead kept small


def test_a_request_record_never_goes_back_and_an_unchanged_one_is_no_change():
    view = new_dataset()
    queued = {"submission_id": "s1", "suite": "prefeval", "task": "mcq", "status": "queued"}
    change = changes.request_records(view, [queued])
    assert change is not None and change.message == "Requests: s1 queued"
    view = view.after(change)
    assert changes.request_records(view, [queued]) is None
    finished = {**queued, "status": "finished"}
    published = changes.publish(view, make_record("s1", 0.5), 1000, request=finished)
    assert published is not None and request_path(finished) in published.files
    view = view.after(published)
    assert changes.request_records(view, [queued]) is None  # a late "queued"


def test_a_withdrawal_removes_the_result_everywhere_and_marks_its_board_rewritten():
    view = new_dataset()
    request = {"submission_id": "s1", "suite": "prefeval", "task": "mcq", "status": "finished"}
    view = view.after(changes.publish(view, make_record("s1", 0.5), 1000, request=request))
    view = view.after(changes.publish(view, make_record("s2", 0.6), 1000))
    change = changes.withdrawal(view, "s1", "hide s1")
    assert change is not None and change.message == "hide s1"
    assert sorted(change.deletions) == sorted(
        [result_path("prefeval", "mcq", "s1"), request_path(request)]
    )
    after = view.after(change)
    assert set(table(after)["submission_id"]) == {"s2"}
    assert stale_state(after.read(STALE_PATH))["rewritten"] == ["prefeval/mcq"]
    assert changes.withdrawal(after, "s1", "again") is None


def test_a_group_sync_adds_rewrites_and_removes_only_its_prefix():
    view = new_dataset()
    view = view.after(changes.publish(view, make_record("other", 0.5), 1000))
    group = [make_record("reported-a", 0.5), make_record("reported-b", 0.6)]
    view = view.after(changes.group_sync(view, "reported-", group, "sync 1", 1000))
    assert changes.group_sync(view, "reported-", group, "again", 1000) is None
    change = changes.group_sync(
        view, "reported-", [make_record("reported-a", 0.55)], "sync 2", 1000
    )
    assert change is not None and change.deletions == (
        result_path("prefeval", "mcq", "reported-b"),
    )
    after = view.after(change)
    rows = table(after)
    assert set(rows["submission_id"]) == {"other", "reported-a"}
    assert rows[(rows["submission_id"] == "reported-a") & (rows["tier"] == "total")][
        "value"
    ].tolist() == [0.55]


LATER = datetime.now(timezone.utc) + timedelta(hours=1)


def test_a_board_is_refreshed_once_its_task_gained_bytes_worth_its_board_file():
    view = new_dataset()
    view = view.after(changes.publish(view, make_record("s1", 0.5), 1000))
    assert changes.board_refresh(view, older_than_s=3600, added_share=1.0) is None  # too young
    first = changes.board_refresh(view, older_than_s=30, added_share=1.0, now=LATER)
    assert first is not None and first.message == "Boards: refresh prefeval/mcq"  # a first board
    view = view.after(first)
    board_bytes = len(view.read(board_path("prefeval", "mcq")) or b"")
    assert stale_state(view.read(STALE_PATH))["board_bytes"] == {"prefeval/mcq": board_bytes}

    record_bytes = len(as_json(make_record("s2", 0.5)).encode())
    needed = math.ceil(board_bytes / record_bytes)  # records worth one board file
    for i in range(needed - 1):
        view = view.after(changes.publish(view, make_record(f"s{i + 2}", 0.5), 1000))
        assert changes.board_refresh(view, 30, added_share=1.0, now=LATER) is None, i
    assert changes.board_refresh(view, 30, added_share=0.0, now=LATER) is not None  # by time alone
    view = view.after(changes.publish(view, make_record("last", 0.5), 1000))
    due = changes.board_refresh(view, 30, added_share=1.0, now=LATER)
    assert due is not None
    board = pd.read_parquet(io.BytesIO(due.files[board_path("prefeval", "mcq")]))
    assert len(board) == needed + 1
    assert stale_state(due.files[STALE_PATH])["lagging"] == {}


def test_a_withdrawal_is_refreshed_by_the_time_alone():
    view = new_dataset()
    for sid in ("s1", "s2"):
        view = view.after(changes.publish(view, make_record(sid, 0.5), 1000))
    view = view.after(changes.board_refresh(view))
    view = view.after(changes.withdrawal(view, "s1", "hide s1"))
    assert changes.board_refresh(view, 30, added_share=1.0) is None  # not yet 30 s
    due = changes.board_refresh(view, 30, added_share=1.0, now=LATER)
    assert due is not None
    board = pd.read_parquet(io.BytesIO(due.files[board_path("prefeval", "mcq")]))
    assert set(board["submission_id"]) == {"s2"}
    assert stale_state(due.files[STALE_PATH])["rewritten"] == []


def test_a_release_carries_every_lagging_board_and_its_notes():
    view = new_dataset()
    view = view.after(changes.publish(view, make_record("s1", 0.5), 1000))
    change, note = changes.release_files(view, "v1", "first")
    assert change.message == "Release v1" and note["table_revision"] == view.revision
    assert {"releases/v1.json", board_path("prefeval", "mcq"), STALE_PATH} <= set(change.files)


@pytest.mark.parametrize("added_at", [0, 1, 37, 99])
def test_the_revision_that_added_a_record_is_found_in_few_looks(added_at):
    revisions = [f"r{i}" for i in range(100)]  # newest first
    looks = []

    def holds(revision: str) -> bool:
        looks.append(revision)
        return int(revision[1:]) <= added_at

    assert changes.added_in(revisions, holds) == f"r{added_at}"
    assert len(looks) <= 2 * math.ceil(math.log2(100)) + 2
    assert changes.added_in(revisions, lambda revision: False) is None


def test_flat_records_move_into_their_shard_folders_once():
    flat = flat_result_path("prefeval", "mcq", "s1")
    view = new_dataset()
    view = DictView({**view.contents, flat: as_json(make_record("s1", 0.5)).encode()})
    change = changes.shard_flat_records(view)
    assert change is not None and change.message == SHARD_MESSAGE and change.deletions == (flat,)
    moved = view.after(change)
    assert moved.read(result_path("prefeval", "mcq", "s1")) == view.read(flat)
    assert changes.shard_flat_records(moved) is None
