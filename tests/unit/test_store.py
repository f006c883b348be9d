"""The results store: a git-versioned folder laid out like a Hub dataset repository."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import subprocess

import pandas as pd
import pytest
import yaml

from leaderboard import changes
from leaderboard.store import SCORES_GLOB, LocalDatasetStore, StoreError, result_path


def make_record(
    submission_id: str, value: float, model: str = "m", suite: str = "prefeval", task: str = "mcq"
) -> dict:
    stats = {
        "accuracy": {"value": value, "ci95": [max(0.0, value - 0.1), min(1.0, value + 0.1)], "n": 4}
    }
    return {
        "submission_id": submission_id,
        "suite": suite,
        "task": task,
        "setting": "zero_shot",
        "model_name": model,
        "model_link": "",
        "source": "predictions",
        "row_kind": "computed",
        "submitted_at": f"2025-01-01T00:00:{len(submission_id):02d}+00:00",
        "metrics": {
            "total": stats,
            "tiers": {"form": {"explicit": stats, "implicit_choice": stats}},
        },
    }


def commit_count(root) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, check=True
    )
    return int(out.stdout)


@pytest.fixture
def store(tmp_path):
    return LocalDatasetStore(tmp_path / "results")


def test_layout(store):
    store.ensure()
    readme = (store.root / "README.md").read_text()
    assert readme.startswith("---\n")
    card = yaml.safe_load(readme.split("---\n")[1])
    assert card["configs"] == [
        {"config_name": "scores", "data_files": SCORES_GLOB, "default": True}
    ]
    assert [p.name for p in store.root.glob(SCORES_GLOB)] == ["part-00000.parquet"]
    assert store.scores().empty

    store.publish(make_record("s1", 0.5))
    path = store.root / result_path("prefeval", "mcq", "s1")
    assert json.loads(path.read_text()) == make_record("s1", 0.5)
    scores = pd.read_parquet(store.root / "data/scores/part-00000.parquet")
    assert len(scores) == 3  # total + 2 tiers
    assert set(scores["tier"]) == {"total", "explicit", "implicit_choice"}
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=store.root, capture_output=True, check=True, text=True
    ).stdout.split()
    assert sorted(tracked) == [
        "README.md",
        "boards/stale.json",  # the task's board lags (leaderboard/boards.py)...
        "data/scores/part-00000.parquet",
        result_path("prefeval", "mcq", "s1"),
    ]
    assert list(json.loads((store.root / "boards/stale.json").read_text())["lagging"]) == [
        "prefeval/mcq"
    ]
    assert store.refresh_boards(older_than_s=3600) is None  # not due: it lags by seconds
    refreshed = store.refresh_boards()  # ...until the publisher's refresh writes it
    assert refreshed == store.head() and store.versions()[0].message.startswith("Boards:")
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=store.root, capture_output=True, check=True, text=True
    ).stdout.split()
    assert "boards/prefeval/mcq.parquet" in tracked
    assert json.loads((store.root / "boards/stale.json").read_text())["lagging"] == {}
    assert store.refresh_boards() is None  # nothing lags now: no empty commit
    card = yaml.safe_load((store.root / "README.md").read_text().split("---\n")[1])
    assert card["configs"][1] == {
        "config_name": "board-prefeval-mcq",
        "data_files": "boards/prefeval/mcq.parquet",
    }


def test_each_publish_is_a_version_newest_first(store):
    store.ensure()
    created = store.head()
    r1 = store.publish(make_record("s1", 0.5))
    r2 = store.publish(make_record("s2", 0.75))
    assert len({created, r1, r2}) == 3
    versions = store.versions()
    assert [v.revision for v in versions] == [r2, r1, created]
    assert "s2" in versions[0].message and versions[-1].message == "Create the results dataset"
    assert store.head() == r2


def test_old_revision_shows_rows_of_that_time(store):
    r1 = store.publish(make_record("s1", 0.5))
    r2 = store.publish(make_record("s2", 0.75))
    old = store.scores(r1)
    assert set(old["submission_id"]) == {"s1"}
    assert set(store.scores(r2)["submission_id"]) == {"s1", "s2"}
    assert set(store.scores()["submission_id"]) == {"s1", "s2"}
    total = old[old["tier"] == "total"]
    assert total["value"].tolist() == [0.5]
    assert [r["submission_id"] for r in store.records(r1)] == ["s1"]
    assert sorted(r["submission_id"] for r in store.records(r2)) == ["s1", "s2"]
    assert store.records(r2)[1] == make_record("s2", 0.75)  # ordered by path: s1, s2
    assert sorted(r["submission_id"] for r in store.records()) == ["s1", "s2"]
    # a short sha works too
    assert set(store.scores(r1[:10])["submission_id"]) == {"s1"}


def test_publish_is_idempotent_per_submission(store):
    r1 = store.publish(make_record("s1", 0.5))
    before = commit_count(store.root)
    again = store.publish(make_record("s1", 0.9))  # a retried job: the first result stands
    assert again == r1
    assert commit_count(store.root) == before
    assert store.records()[0]["metrics"]["total"]["accuracy"]["value"] == 0.5
    r2 = store.publish(make_record("s2", 0.5))
    assert store.publish(make_record("s1", 0.1)) == r1  # still the revision that first published it
    assert store.head() == r2


@pytest.mark.parametrize(
    "revision", ["deadbeef", "0" * 40, "", "HEAD~1", "main; rm -rf /", "--all"]
)
def test_unknown_revision_raises(store, revision):
    store.publish(make_record("s1", 0.5))
    with pytest.raises(StoreError):
        store.scores(revision)
    with pytest.raises(StoreError):
        store.records(revision)


def _publish_many(root, worker: int, count: int) -> None:
    store = LocalDatasetStore(root)
    for i in range(count):
        store.publish(make_record(f"w{worker}-{i}", (i + 1) / 10, model=f"model-{worker}"))


def test_concurrent_publishers(tmp_path):
    root = tmp_path / "results"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_publish_many, args=(root, w, 5)) for w in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    store = LocalDatasetStore(root)
    records = store.records()
    assert len(records) == 10
    assert {r["submission_id"] for r in records} == {
        f"w{w}-{i}" for w in range(2) for i in range(5)
    }
    assert commit_count(root) == 11
    assert len(store.versions()) == 11
    scores = store.scores()
    assert scores["submission_id"].nunique() == 10 and len(scores) == 30
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""


def test_publish_finishes_a_publish_that_died_before_its_commit(tmp_path):
    """A record file written but never committed (publisher killed in between) is committed by the retry."""
    import json as _json

    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(tmp_path / "ds")
    store.ensure()
    record = _sample_record_for_crash_test()
    target = store.root / store.record_path(record)
    target.parent.mkdir(parents=True)
    target.write_text(_json.dumps(record))
    revision = store.publish(record)
    assert len(revision) == 40
    assert [v.revision for v in store.versions()][0] == revision
    assert len(store.records(revision)) == 1
    assert store.publish(record) == revision  # and idempotent afterwards


def test_a_dead_publishers_record_is_never_committed_under_another_submission(store):
    """Publishing survives a killed worker: a killed attempt's record, written but not committed, must not be folded into the
    next submission's commit; its own retried job publishes it, in a commit of its own."""
    store.publish(make_record("first", 0.5))
    orphan = make_record("orphan", 0.9, model="killed-attempt")
    target = store.root / store.record_path(orphan)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(orphan)
    )  # the dead writer got this far (and half-rebuilt the table)
    (store.root / "data/scores/part-00000.parquet").write_bytes(b"half-written parquet")
    (store.root / "data/scores/part-00001.parquet").write_bytes(b"a part it started")
    (store.root / "results" / "prefeval" / "mcq" / "other.tmp").write_text("{")

    revision = store.publish(make_record("second", 0.25))
    changed = subprocess.run(
        ["git", "show", "--name-only", "--format=", revision],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(changed) == [  # its board lags since the first publish: no board file
        "boards/stale.json",  # the bytes added to the lagging task (leaderboard/boards.py)
        "data/scores/part-00001.parquet",  # its rows: a part of their own (changes._appended)
        result_path("prefeval", "mcq", "second"),
    ]
    assert set(store.scores(revision)["submission_id"]) == {"first", "second"}
    assert "orphan" not in set(store.scores()["submission_id"])  # nor in the files on disk

    own = store.publish(orphan)  # the retry of the killed job
    changed = subprocess.run(
        ["git", "show", "--name-only", "--format=%s", own],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert changed[0].startswith("Add result orphan ")
    assert (
        result_path("prefeval", "mcq", "orphan") in changed
        and result_path("prefeval", "mcq", "second") not in changed
    )


def _publish_and_die_before_the_commit(root, record: dict) -> None:
    plain = LocalDatasetStore._git

    def dying(self, *args, **kwargs):
        if args[0] == "write-tree":  # its record and table part are written and staged: killed here
            os._exit(9)
        return plain(self, *args, **kwargs)

    LocalDatasetStore._git = dying
    LocalDatasetStore(root).publish(record)


def test_a_writer_killed_after_staging_leaves_nothing_in_the_next_commit(store):
    store.publish(make_record("first", 0.5))
    orphan = make_record("orphan", 0.9, model="killed-attempt")
    child = multiprocessing.get_context("fork").Process(
        target=_publish_and_die_before_the_commit, args=(store.root, orphan)
    )
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 9
    staged = subprocess.run(
        ["git", "diff", "--cached", "--name-only"],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert result_path("prefeval", "mcq", "orphan") in staged  # what the next writer finds

    revision = store.publish(make_record("second", 0.25))
    changed = subprocess.run(
        ["git", "show", "--name-only", "--format=", revision],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(changed) == [  # its board lags since the first publish: no board file
        "boards/stale.json",  # the bytes added to the lagging task (leaderboard/boards.py)
        "data/scores/part-00001.parquet",  # its rows: a part of their own (changes._appended)
        result_path("prefeval", "mcq", "second"),
    ]
    assert (
        set(store.scores()["submission_id"]) == {"first", "second"} and git_status(store.root) == ""
    )
    assert store.publish(orphan) != revision  # its retried job publishes it in a commit of its own
    assert set(store.scores()["submission_id"]) == {"first", "second", "orphan"}


def _sample_record_for_crash_test() -> dict:
    total = {"accuracy": {"value": 0.5, "ci95": [0.4, 0.6], "n": 2}}
    return {
        "submission_id": "crashed0001",
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": "m",
        "source": "predictions file",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "metrics": {"metric": "accuracy", "total": total, "tiers": {"form": {"explicit": total}}},
    }


def test_sync_group_adds_rewrites_and_removes_only_its_prefix(tmp_path):
    from leaderboard.store import LocalDatasetStore

    store = LocalDatasetStore(tmp_path / "ds")
    other = _sample_record_for_crash_test()  # a computed row: sync must never touch it
    store.publish(other)

    def reported(rid: str, value: float) -> dict:
        record = _sample_record_for_crash_test()
        record["submission_id"] = rid
        record["metrics"]["total"]["accuracy"]["value"] = value
        return record

    first = store.sync_group(
        "reported-", [reported("reported-a", 0.5), reported("reported-b", 0.6)], "sync 1"
    )
    assert first and {r["submission_id"] for r in store.records()} == {
        "crashed0001",
        "reported-a",
        "reported-b",
    }
    assert (
        store.sync_group(
            "reported-", [reported("reported-a", 0.5), reported("reported-b", 0.6)], "again"
        )
        is None
    )
    second = store.sync_group(
        "reported-", [reported("reported-a", 0.55)], "sync 2"
    )  # a corrected value, b dropped
    assert second != first
    now = {r["submission_id"]: r for r in store.records()}
    assert set(now) == {"crashed0001", "reported-a"}
    assert now["reported-a"]["metrics"]["total"]["accuracy"]["value"] == 0.55
    assert {r["submission_id"] for r in store.records(first)} == {
        "crashed0001",
        "reported-a",
        "reported-b",
    }


def _tree(root, revision: str) -> dict[str, str]:
    """path -> blob id of the table parts at a revision."""
    out = subprocess.run(
        ["git", "ls-tree", "-r", revision, "--", "data"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines()}


def test_publish_appends_to_the_newest_part_only(store, monkeypatch):
    import leaderboard.store as store_module

    monkeypatch.setattr(store_module, "SHARD_RECORDS", 2)
    revisions = [store.publish(make_record(f"s{i}", i / 10)) for i in range(5)]
    parts = _tree(store.root, revisions[-1])
    assert sorted(parts) == [f"data/scores/part-0000{i}.parquet" for i in range(3)]
    # a publish rewrites only the part it appends to: full parts keep their blob ids
    assert (
        _tree(store.root, revisions[3])["data/scores/part-00000.parquet"]
        == parts["data/scores/part-00000.parquet"]
    )
    assert (
        _tree(store.root, revisions[3])["data/scores/part-00001.parquet"]
        == parts["data/scores/part-00001.parquet"]
    )
    assert set(store.scores()["submission_id"]) == {f"s{i}" for i in range(5)}
    assert set(store.scores(revisions[2])["submission_id"]) == {"s0", "s1", "s2"}
    # each publish commits only the paths it wrote: a stray file in the folder stays out of the dataset
    (store.root / "stray.txt").write_text("not a result")
    revision = store.publish(make_record("s9", 0.9))
    assert (
        "stray.txt"
        not in subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", revision],
            cwd=store.root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )
    # a full rebuild (the one a store made before parts gets) writes the same table
    before = store.scores().sort_values(["submission_id", "tier"]).reset_index(drop=True)
    rebuilt = changes.table_files(store.records(), store_module.SHARD_RECORDS)
    assert sorted(rebuilt) == sorted(parts)
    pd.testing.assert_frame_equal(
        pd.concat([pd.read_parquet(io.BytesIO(data)) for data in rebuilt.values()])
        .sort_values(["submission_id", "tier"])
        .reset_index(drop=True),
        before,
    )


def test_store_with_one_scores_file_is_split_into_parts(tmp_path):
    root = tmp_path / "old"
    store = LocalDatasetStore(root)
    r1 = store.publish(make_record("s1", 0.5))
    store.publish(make_record("s2", 0.6))
    # make it look like a store written before parts: data/scores.parquet only
    legacy = store.scores()
    subprocess.run(["git", "rm", "-rq", "data/scores"], cwd=root, check=True)
    (root / "data").mkdir(exist_ok=True)
    legacy.to_parquet(root / "data/scores.parquet", index=False)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old layout"],
        cwd=root,
        check=True,
    )
    old_revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()

    migrated = LocalDatasetStore(root)
    migrated.ensure()
    assert not (root / "data/scores.parquet").exists() and migrated.head() != old_revision
    assert set(migrated.scores(old_revision)["submission_id"]) == {
        "s1",
        "s2",
    }  # the old layout still reads
    assert set(migrated.scores()["submission_id"]) == {"s1", "s2"}
    migrated.publish(make_record("s3", 0.7))
    assert set(migrated.scores()["submission_id"]) == {"s1", "s2", "s3"}
    assert set(migrated.scores(r1)["submission_id"]) == {"s1"}


def test_head_revision_reads_refs_even_when_packed(store):
    revision = store.publish(make_record("s1", 0.5))
    assert store.head_revision() == revision
    subprocess.run(["git", "pack-refs", "--all", "--prune"], cwd=store.root, check=True)
    assert not (store.root / ".git/refs/heads/main").exists()
    assert store.head_revision() == revision
    assert store.resolve_revision(revision[:12]) == revision
    second = store.publish(make_record("s2", 0.5))
    assert store.head_revision() == second != revision


def test_head_revision_follows_every_publish_by_another_store_object(store):
    """A reader's head is remembered by the ref file's stat: each publish (a new file renamed over
    the ref) must still be seen, however quickly they follow one another."""
    reader = LocalDatasetStore(store.root)  # as a web process beside a worker
    seen = []
    for i in range(6):
        revision = store.publish(make_record(f"h{i}", 0.5))
        seen.append(reader.head_revision() == revision == reader.head_revision())
    assert seen == [True] * 6
    assert (
        reader.head_revision()
        == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=store.root, check=True, capture_output=True, text=True
        ).stdout.strip()
    )


def flat_path(record: dict) -> str:
    """Where stores made before id_shard kept a record."""
    return f"{'results' if 'metrics' in record else 'requests'}/{record['suite']}/{record['task']}/{record['submission_id']}.json"


def test_a_store_with_flat_record_folders_is_sharded_once_and_reads_the_same(tmp_path, monkeypatch):
    from leaderboard import store as store_module

    root = tmp_path / "results"
    with (
        monkeypatch.context() as old_code
    ):  # the store as it was: records flat in results/<suite>/<task>/
        old_code.setattr(changes, "record_path", flat_path)
        old_code.setattr(changes, "request_path", flat_path)
        old = LocalDatasetStore(root)
        first = old.publish(make_record("s1", 0.5))
        old.publish_requests(
            [{"submission_id": "s1", "suite": "prefeval", "task": "mcq", "status": "finished"}]
        )
        flat_head = old.publish(make_record("s2", 0.75, suite="recentering", task="relevance"))
        (root / ".git" / store_module.LAYOUT_MARKER).unlink()
    flat_files = sorted(git_files(root, flat_head))
    assert (
        "results/prefeval/mcq/s1.json" in flat_files
        and "requests/prefeval/mcq/s1.json" in flat_files
    )

    store = LocalDatasetStore(root)
    assert (
        store.publish(make_record("s1", 0.9)) == first
    )  # a retried job, across the move: the first result stands
    moved = store.head()
    assert [v.message for v in store.versions()][0].startswith("Shard the records folders")
    assert sorted(git_files(root, moved)) == sorted(
        [
            "README.md",
            "boards/stale.json",
            "data/scores/part-00000.parquet",
            "data/scores/part-00001.parquet",
            result_path("prefeval", "mcq", "s1"),
            result_path("recentering", "relevance", "s2"),
            store_module.request_path({"submission_id": "s1", "suite": "prefeval", "task": "mcq"}),
        ]
    )
    assert git_status(root) == ""
    assert (
        [r["submission_id"] for r in store.records()]
        == [r["submission_id"] for r in store.records(flat_head)]
        == ["s1", "s2"]
    )
    assert store.current_record("s2") == make_record(
        "s2", 0.75, suite="recentering", task="relevance"
    )
    pd.testing.assert_frame_equal(store.scores(), store.scores(flat_head))
    store.ensure()
    assert store.head() == moved  # once

    store.publish(make_record("s3", 0.1))
    assert store.withdraw("s1", "hide s1")
    assert sorted(git_files(root, store.head())) == sorted(
        [
            "README.md",
            "boards/stale.json",
            "data/scores/part-00000.parquet",  # s1's part, emptied by the withdrawal
            "data/scores/part-00001.parquet",
            "data/scores/part-00002.parquet",
            result_path("recentering", "relevance", "s2"),
            result_path("prefeval", "mcq", "s3"),
        ]
    )
    assert set(store.scores()["submission_id"]) == {"s2", "s3"}


def git_files(root, revision: str) -> list[str]:
    return subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", revision],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def git_status(root) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def test_publishes_run_git_gc_auto_as_git_commit_did(store, monkeypatch):
    """commit-tree leaves loose objects to pile up unless someone runs `git gc --auto` (git commit did)."""
    from leaderboard import store as store_module

    monkeypatch.setattr(store_module, "SHARD_RECORDS", 3)  # parts of 1 result merge by three
    calls = []
    plain = LocalDatasetStore._git
    monkeypatch.setattr(
        LocalDatasetStore,
        "_git",
        lambda self, *args, **kw: calls.append(args) or plain(self, *args, **kw),
    )
    ran = []
    for i in range(7):
        calls.clear()
        store.publish(make_record(f"s{i}", 0.1))
        ran.append(("gc", "--auto", "--quiet") in calls)
    assert ran == [
        False,
        False,
        True,
        False,
        False,
        True,
        False,
    ]  # the publishes that merge table parts: the 3rd and the 6th


def test_a_board_lags_until_its_oldest_missing_change_is_due():
    """boards/stale.json keeps the time of a task's first missing change: later publishes into a
    lagging task leave it (and the file) alone, and the refresh is due by the oldest change."""
    from datetime import datetime, timedelta, timezone

    from leaderboard.boards import lagging, mark_lagging, refresh_due

    t0 = datetime(2026, 11, 27, 12, 0, 0, tzinfo=timezone.utc)
    first = mark_lagging(None, [("prefeval", "mcq")], now=t0)
    assert lagging(first) == {"prefeval/mcq": "2026-11-27T12:00:00+00:00"}
    assert mark_lagging(first, [("prefeval", "mcq")], now=t0 + timedelta(seconds=5)) is None
    both = mark_lagging(
        first, [("prefeval", "mcq"), ("realpref", "mcq")], t0 + timedelta(seconds=8)
    )
    assert lagging(both) == {
        "prefeval/mcq": "2026-11-27T12:00:00+00:00",
        "realpref/mcq": "2026-11-27T12:00:08+00:00",
    }
    assert not refresh_due(both, 10, now=t0 + timedelta(seconds=9.9))
    assert refresh_due(both, 10, now=t0 + timedelta(seconds=10))
    assert not refresh_due(None, 0) and not refresh_due(b'{"lagging": {}}', 0)


def test_a_refresh_rewrites_a_card_an_older_version_wrote(store):
    from leaderboard.store import dataset_card

    store.publish(make_record("s1", 0.5))
    (store.root / "README.md").write_text("---\npretty_name: an older card\n---\n")
    subprocess.run(["git", "commit", "-qam", "an older card"], cwd=store.root, check=True)
    store.publish(make_record("s2", 0.5))
    store.refresh_boards()
    assert (store.root / "README.md").read_text() == dataset_card([("prefeval", "mcq")])


def test_the_git_view_reads_files_only(store):
    """The core's view of a commit: a file's bytes; None for a missing path and for a folder."""
    revision = store.publish(make_record("s1", 0.5))
    with store._view(revision) as view:
        assert json.loads(view.read(result_path("prefeval", "mcq", "s1"))) == make_record("s1", 0.5)
        assert view.read("results/prefeval") is None
        assert view.read("no/such/file.json") is None
        assert view.read("README.md").startswith(b"---\n")  # the process answers after a miss
        assert list(view.files("results")) == [result_path("prefeval", "mcq", "s1")]
    with store._view(None) as empty:
        assert empty.read("README.md") is None and empty.files("results") == {}


def test_the_git_view_reads_many_files_in_one_go(store):
    revision = store.publish(make_record("s1", 0.5))
    store.publish(make_record("s2", 0.5))
    paths = [result_path("prefeval", "mcq", s) for s in ("s1", "s2")]
    with store._view(revision) as view:
        assert view.read_many([paths[0], "results", paths[1], "README.md"]) == [
            view.read(paths[0]),
            None,
            None,  # s2 came after this revision
            view.read("README.md"),
        ]


def test_the_publisher_leaves_a_board_lagging_until_its_task_gained_a_boards_worth(store, tmp_path):
    """The outbox's boards check (leaderboard/boards.py refresh_tasks): a board that exists is
    rewritten once the records published into its task since weigh as much as the board file;
    a forced refresh (no size rule: a release, an operator) writes it at once."""
    from leaderboard.boards import lagging, stale_state
    from leaderboard.outbox import Outbox

    outbox = Outbox(tmp_path / "outbox", store, boards_every_s=0)
    outbox.put("result", {"record": make_record("s1", 0.5)})
    assert outbox.drain() == 1
    assert store.versions()[0].message == "Boards: refresh prefeval/mcq"  # its first board: at once
    outbox.put("result", {"record": make_record("s2", 0.6)})
    assert outbox.drain() == 1
    stale = stale_state(store._show(store.head(), "boards/stale.json"))
    assert list(stale["lagging"]) == ["prefeval/mcq"]
    assert stale["added_bytes"]["prefeval/mcq"] < stale["board_bytes"]["prefeval/mcq"]
    assert store.versions()[0].message.startswith("Add result s2")  # not due: too few bytes
    assert store.refresh_boards() is not None
    assert lagging(store._show(store.head(), "boards/stale.json")) == {}


def test_records_of_reads_the_named_results_at_a_revision(store):
    """A page about a few results reads those by path: None where that version holds none (not
    yet published, another task, an unknown id)."""
    first = store.publish(make_record("r1", 0.5))
    store.publish(make_record("r2", 0.7, suite="prefeval", task="mcq_turns"))
    keys = [("prefeval", "mcq", "r1"), ("prefeval", "mcq_turns", "r2"), ("prefeval", "mcq", "r2")]
    found = store.records_of(keys)
    assert [r and r.submission_id for r in found] == ["r1", "r2", None]
    assert found[1] is not None and found[1].metrics.total["accuracy"].value == 0.7
    assert found[1].published() == make_record("r2", 0.7, suite="prefeval", task="mcq_turns")
    assert [r and r.submission_id for r in store.records_of(keys, first)] == ["r1", None, None]
    assert store.records_of([]) == []


def test_records_of_reads_a_hand_edited_file_as_none_and_names_it(store, caplog):
    """The stores write only checked records; a file someone edited into another shape reads as
    no result (its page a 404), with a warning naming the file, not as a page's 500."""
    store.publish(make_record("r1", 0.5))
    path = store.root / result_path("prefeval", "mcq", "r1")
    path.write_text('{"submission_id": "r1", "suite": "prefeval"}')
    subprocess.run(["git", "-C", str(store.root), "commit", "-qam", "hand edit"], check=True)
    with caplog.at_level("WARNING", logger="leaderboard.changes"):
        assert store.records_of([("prefeval", "mcq", "r1")]) == [None]
    assert "r1.json is not a result record" in caplog.text and "metrics" in caplog.text


def test_a_change_of_many_files_asks_git_to_pack(store):
    """commit-tree runs no `git gc --auto` (`git commit` does): the store asks after a change of
    GC_AFTER_FILES files or more, so a sync's loose objects are packed then, not at some later
    publish in the middle of a stream (git's own threshold, lowered here, still decides)."""
    from leaderboard.store import GC_AFTER_FILES

    store.ensure()
    for key, value in (("gc.auto", "50"), ("gc.autoDetach", "false")):
        subprocess.run(["git", "config", key, value], cwd=store.root, check=True)

    def packed() -> int:
        out = subprocess.run(
            ["git", "count-objects", "-v"], cwd=store.root, capture_output=True, text=True
        ).stdout
        return int(dict(line.split(": ") for line in out.splitlines())["in-pack"])

    store.sync_group("few-", [make_record(f"few-{i}", 0.5) for i in range(60)], "60 results")
    assert packed() == 0  # a small change: git is not asked, whatever its count
    many = [make_record(f"many-{i}", 0.5) for i in range(GC_AFTER_FILES)]
    store.sync_group("many-", many, f"{GC_AFTER_FILES} results")
    assert packed() > GC_AFTER_FILES
