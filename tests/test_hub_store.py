"""The Hub results store and the outbox, through a real HTTP server that speaks the Hub's API
(tests/hub_server.py): huggingface_hub's own client code runs unchanged against it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from hub_server import TEST_TOKEN as HUB_TEST_TOKEN  # noqa: E402

from evaluator.hub import DatasetRepo
from leaderboard.hub_store import HubDatasetStore
from leaderboard.outbox import Outbox
from leaderboard.store import (
    LocalDatasetStore,
    StoreError,
    dataset_card,
    request_path,
    result_path,
)
from leaderboard.table import records_to_scores

pytestmark = pytest.mark.service

REPO = "personaboard/results"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def make_record(
    submission_id: str, value: float, suite: str = "prefeval", task: str = "mcq"
) -> dict:
    stats = {
        "accuracy": {"value": value, "ci95": [max(0.0, value - 0.1), min(1.0, value + 0.1)], "n": 4}
    }
    return {
        "submission_id": submission_id,
        "suite": suite,
        "task": task,
        "setting": "zero_shot",
        "model_name": f"model-{submission_id}",
        "model_link": "",
        "source": "predictions file",
        "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "provenance": {
            "protocol": "choice_logprobs",
            "backend": "transformers",
            "judge": {"model": "judge-x"},
            "model": {"revision": "abc123"},
            "split": {"sha256": "f" * 64},
        },
        "metrics": {"metric": "accuracy", "total": stats, "tiers": {"form": {"explicit": stats}}},
    }


@pytest.fixture
def online(monkeypatch):
    """The tests run with HF_HUB_OFFLINE=1; the Hub store talks to the local server, so not offline here."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def hub_store(server, tmp_path: Path, name: str = "cache") -> HubDatasetStore:
    return HubDatasetStore(
        DatasetRepo(REPO, HUB_TEST_TOKEN, server.url, tmp_path / name), private=True
    )


def sorted_table(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["submission_id", "tier_group", "tier", "metric"]).reset_index(
        drop=True
    )


def test_hub_store_publishes_versions_and_releases(hub_server, tmp_path, online):
    store = hub_store(hub_server, tmp_path)
    store.ensure()
    created = store.head()
    r1 = store.publish(
        make_record("s1", 0.5),
        request={"submission_id": "s1", "suite": "prefeval", "task": "mcq", "status": "finished"},
    )
    r2 = store.publish(make_record("s2", 0.75))
    assert len({created, r1, r2}) == 3
    assert store.publish(make_record("s1", 0.5)) == r1  # a retried job publishes once
    assert [v.revision for v in store.versions()] == [r2, r1, created]
    assert set(store.scores(r1)["submission_id"]) == {"s1"}
    assert set(store.scores()["submission_id"]) == {"s1", "s2"}
    assert sorted(r["submission_id"] for r in store.records()) == ["s1", "s2"]
    # the table carries the provenance a user filters by
    row = store.scores().iloc[0]
    assert (
        row["protocol"],
        row["backend"],
        row["judge"],
        row["model_revision"],
        row["split_sha256"],
    ) == ("choice_logprobs", "transformers", "judge-x", "abc123", "f" * 64)

    release = store.release("v1", notes="first public release")
    assert store.resolve_revision("v1") == release.revision
    assert [(r.name, r.notes) for r in store.releases()] == [("v1", "first public release")]
    with pytest.raises(StoreError):
        store.release("v1")
    assert set(store.scores("v1")["submission_id"]) == {"s1", "s2"}
    with pytest.raises(StoreError):
        store.scores("no-such-release")

    # the repo is private: without the token it is not there
    anonymous = HubDatasetStore(DatasetRepo(REPO, None, hub_server.url, tmp_path / "anon"))
    with pytest.raises(StoreError):
        anonymous.head()
    # what the Hub holds: the local store's layout
    files = set(store.repo.files(store.head()))
    assert {
        "README.md",
        "data/scores/part-00000.parquet",
        result_path("prefeval", "mcq", "s1"),
        result_path("prefeval", "mcq", "s2"),
        request_path({"submission_id": "s1", "suite": "prefeval", "task": "mcq"}),
        "releases/v1.json",
    } <= files


def test_local_store_releases_and_requests(tmp_path):
    store = LocalDatasetStore(tmp_path / "results")
    r1 = store.publish(make_record("s1", 0.5))
    queued = {"submission_id": "s2", "suite": "prefeval", "task": "mcq", "status": "queued"}
    assert store.publish_requests([queued]) == store.head() != r1  # one new version
    assert store.publish_requests([queued]) is None  # unchanged: no new version
    assert store.publish_requests([{**queued, "status": "finished"}])
    assert store.publish_requests([queued]) is None  # a late "queued" never undoes "finished"
    release = store.release("v1", notes="notes here")
    assert store.resolve_revision("v1") == release.revision != r1
    assert [(r.name, r.notes, r.revision) for r in store.releases()] == [
        ("v1", "notes here", release.revision)
    ]
    assert set(store.scores("v1")["submission_id"]) == {"s1"}
    with pytest.raises(StoreError):
        store.release("v1")
    with pytest.raises(StoreError):
        store.release("--delete")  # never an option to git


PUBLISHER = textwrap.dedent(
    """
    import json, sys
    from evaluator.hub import DatasetRepo
    from leaderboard.hub_store import HubDatasetStore
    sys.path.insert(0, "tests")
    from test_hub_store import make_record
    url, token, cache, prefix, n = sys.argv[1:6]
    store = HubDatasetStore(DatasetRepo("%s", token, url, cache))
    for i in range(int(n)):
        store.publish(make_record(f"{prefix}{i:02d}", (i + 1) / 100))
    print("done", flush=True)
"""
    % REPO
)


def test_two_publishers_at_once_lose_nothing(hub_server, tmp_path, online):
    """Two processes publish into one repo at the same time: every record lands, none overwrites another,
    and the table at the head is exactly the fold of all records."""
    hub_store(hub_server, tmp_path).ensure()
    n = 8
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "0", "PYTHONPATH": str(PROJECT_ROOT)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                PUBLISHER,
                hub_server.url,
                HUB_TEST_TOKEN,
                str(tmp_path / f"c{p}"),
                p,
                str(n),
            ],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for p in ("a", "b")
    ]
    outputs = [proc.communicate(timeout=300)[0].decode() for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    assert hub_server.stats()["refused_commits"] > 0, (
        "the publishers never collided: the test proved nothing"
    )
    store = hub_store(hub_server, tmp_path, "reader")
    records = store.records()
    assert sorted(r["submission_id"] for r in records) == sorted(
        f"{p}{i:02d}" for p in "ab" for i in range(n)
    )
    assert len(store.versions()) == 2 * n + 1  # one commit per publish, plus the card
    pd.testing.assert_frame_equal(
        sorted_table(store.scores()), sorted_table(records_to_scores(records)), check_dtype=False
    )
    # and at every revision, the table is the fold of the records of that revision
    middle = store.versions()[n].revision
    pd.testing.assert_frame_equal(
        sorted_table(store.scores(middle)),
        sorted_table(records_to_scores(store.records(middle))),
        check_dtype=False,
    )


def test_hub_killed_and_restarted_mid_stream(hub_server, tmp_path, online):
    """The outbox keeps every publish while the Hub is down and sends them, in order, once it is back."""
    store = hub_store(hub_server, tmp_path)
    store.ensure()
    published: list[str] = []
    outbox = Outbox(
        tmp_path / "outbox",
        store,
        on_published=lambda entry, rev: published.append(entry["record"]["submission_id"]),
    )
    names = [f"k{i:02d}" for i in range(12)]
    for sid in names[:4]:
        outbox.put("result", {"record": make_record(sid, 0.5)})
    assert outbox.drain() == 4

    hub_server.kill()
    for sid in names[4:]:
        outbox.put("result", {"record": make_record(sid, 0.5)})
    # the store is unavailable: nothing goes out, nothing is lost
    assert outbox.drain() == 0
    assert outbox.backlog() == 8

    stop = threading.Event()

    def publisher():  # the background publisher, as the web node and idle workers run it
        while not stop.is_set() and outbox.backlog():
            outbox.drain()
            time.sleep(0.2)

    thread = threading.Thread(target=publisher, daemon=True)
    thread.start()
    time.sleep(0.5)  # it tries against a dead Hub meanwhile
    hub_server.start()
    thread.join(timeout=180)
    stop.set()
    assert outbox.backlog() == 0 and outbox.rejected() == 0
    assert published == names  # order kept
    history = [v.message for v in reversed(store.versions())]
    assert [m.split()[2] for m in history if m.startswith("Add result")] == names
    assert sorted(r["submission_id"] for r in store.records()) == names


LOAD = textwrap.dedent("""
    import sys, datasets
    kwargs = {"token": sys.argv[2]} if len(sys.argv) > 2 else {}
    table = datasets.load_dataset(sys.argv[1], split="train", **kwargs)
    print(sorted(set(table["submission_id"])), sorted(set(table["judge"])), table.column_names)
""")


def test_load_dataset_reads_the_table_from_the_folder_and_the_hub(hub_server, tmp_path, online):
    local = LocalDatasetStore(tmp_path / "results")
    local.publish(make_record("l1", 0.5))
    env = {
        **__import__("os").environ,
        "PYTHONPATH": str(PROJECT_ROOT),
        "HF_DATASETS_CACHE": str(tmp_path / "dcache"),
    }
    out = subprocess.run(
        [sys.executable, "-c", LOAD, str(local.root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "['l1'] ['judge-x']" in out.stdout and "'split_sha256'" in out.stdout

    store = hub_store(hub_server, tmp_path)
    store.publish(make_record("h1", 0.5))
    store.publish(make_record("h2", 0.25))
    env.update(
        {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub_server.url, "HF_HOME": str(tmp_path / "hf")}
    )
    out = subprocess.run(
        [sys.executable, "-c", LOAD, REPO, HUB_TEST_TOKEN],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "['h1', 'h2'] ['judge-x']" in out.stdout and "'model_revision'" in out.stdout


def test_read_path_pivots_one_hub_part_per_publish(hub_server, tmp_path, online, monkeypatch):
    from leaderboard import store as store_module
    from leaderboard.readpath import Filters, LeaderboardCache
    from leaderboard.table import wide_view

    monkeypatch.setattr(store_module, "SHARD_RECORDS", 2)  # the one part size of both stores
    store = hub_store(hub_server, tmp_path)
    for i in range(3):
        store.publish(make_record(f"part-{i}", 0.5 + i / 10))
    cache = LeaderboardCache(store, lambda: [])
    assert len(cache.table().parts) == 2 and cache.parts_pivoted == 2
    store.publish(make_record("part-3", 0.25))  # fills the second part: only it is pivoted again
    table = cache.table(store.head_revision(fresh=True))
    assert len(table.parts) == 2 and cache.parts_pivoted == 3
    pd.testing.assert_frame_equal(table.view(Filters()), wide_view(store.scores(table.revision)))


SIGNALLED_PUBLISHER = textwrap.dedent(
    """
    import sys
    from evaluator.hub import DatasetRepo
    from leaderboard.head_signal import RedisHeadSignal
    from leaderboard.hub_store import HubDatasetStore
    sys.path.insert(0, "tests")
    from test_hub_store import make_record
    url, token, cache, redis_url = sys.argv[1:5]
    store = HubDatasetStore(DatasetRepo("%s", token, url, cache), head_signal=RedisHeadSignal(redis_url))
    while sid := sys.stdin.readline().strip():  # one publish per line; its id is printed once it returned
        store.publish(make_record(sid, 0.5))
        print(sid, flush=True)
"""
    % REPO
)


def test_a_publish_by_another_process_is_in_the_next_read(
    hub_server, redis_server, tmp_path, online, monkeypatch
):
    """The leaderboard is never served stale, with the Hub store: the web node's read path keeps the Hub's
    head (no Hub call per request), yet a publish another process made is in the very next read
    after that publish returned, because the publisher renewed the head signal in Redis first."""
    from leaderboard import hub_store as hub_store_module
    from leaderboard.head_signal import RedisHeadSignal
    from leaderboard.readpath import Filters, LeaderboardCache

    # the kept head never expires here: only the signal can tell the reader that the head moved
    monkeypatch.setattr(hub_store_module, "HEAD_TTL_S", 600.0)
    reader = HubDatasetStore(
        DatasetRepo(REPO, HUB_TEST_TOKEN, hub_server.url, tmp_path / "reader"),
        private=True,
        head_signal=RedisHeadSignal(redis_server),
    )
    reader.ensure()
    hub_reads = []
    resolve = reader.repo.resolve
    monkeypatch.setattr(reader.repo, "resolve", lambda *a: hub_reads.append(a) or resolve(*a))
    cache = LeaderboardCache(reader, lambda: [])
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "0", "PYTHONPATH": str(PROJECT_ROOT)}
    publisher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SIGNALLED_PUBLISHER,
            hub_server.url,
            HUB_TEST_TOKEN,
            str(tmp_path / "publisher"),
            redis_server,
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        shown = set()
        for sid in ("other-0", "other-1", "other-2"):
            kept = (
                cache.table()
            )  # the reader holds the head it read (a request just before the publish)
            assert sid not in set(kept.view(Filters())["submission_id"])
            publisher.stdin.write(f"{sid}\n")
            publisher.stdin.flush()
            assert (
                publisher.stdout.readline().strip() == sid
            )  # the other process's publish returned
            table = cache.table()  # the next read
            shown = set(table.view(Filters())["submission_id"])
            assert sid in shown and table.revision != kept.revision
        assert shown == {"other-0", "other-1", "other-2"}
        # main's head is read from the Hub once per publish (and once at the start), not per request;
        # many reads without a publish read it never
        head_reads = [a for a in hub_reads if not a]
        assert len(head_reads) <= 1 + 3, head_reads
        before = len(hub_reads)
        for _ in range(200):
            assert cache.table() is table
        assert len(hub_reads) == before
    finally:
        publisher.stdin.close()
        publisher.wait(timeout=60)


def test_a_hub_repo_with_flat_record_folders_is_sharded_once(
    hub_server, tmp_path, online, monkeypatch
):
    from leaderboard import changes, layout

    def flat_path(record: dict) -> str:  # where stores made before id_shard kept a record
        folder = "results" if "metrics" in record else "requests"
        return f"{folder}/{record['suite']}/{record['task']}/{record['submission_id']}.json"

    request = {"submission_id": "s1", "suite": "prefeval", "task": "mcq", "status": "finished"}
    with monkeypatch.context() as old_code:
        for name in ("record_path", "request_path"):  # where the store core writes records
            old_code.setattr(changes, name, flat_path)
        for module in (changes, layout):  # the card's writers, before sharding
            old_code.setattr(
                module,
                "dataset_card",
                lambda boards=(): "---\npretty_name: the card before sharding\n---\n",
            )
        old = hub_store(hub_server, tmp_path, "old")
        first = old.publish(make_record("s1", 0.5), request=request)
        flat_head = old.publish(make_record("s2", 0.75))
    assert "results/prefeval/mcq/s1.json" in old.repo.files(flat_head)

    store = hub_store(hub_server, tmp_path)
    assert (
        store.publish(make_record("s1", 0.9)) == first
    )  # the first result stands, across the move
    head = store.head_revision(fresh=True)
    assert store.versions()[0].message.startswith("Shard the records folders")
    files = set(store.repo.files(head))
    assert {
        result_path("prefeval", "mcq", "s1"),
        result_path("prefeval", "mcq", "s2"),
        request_path(request),
    } <= files
    assert not any(p.count("/") == 3 for p in files if p.startswith(("results/", "requests/")))
    assert store.repo.read("README.md", head).decode() == dataset_card()  # no board written yet
    assert (
        [r["submission_id"] for r in store.records()]
        == [r["submission_id"] for r in store.records(flat_head)]
        == ["s1", "s2"]
    )
    assert store.current_record("s2") == make_record("s2", 0.75)
    pd.testing.assert_frame_equal(store.scores(), store.scores(flat_head))
    again = hub_store(hub_server, tmp_path, "again")
    again.ensure()
    assert again.head_revision(fresh=True) == head  # once
    assert again.withdraw("s1", "hide s1") and set(again.scores()["submission_id"]) == {"s2"}
    assert not any(
        p.endswith("/s1.json") for p in again.repo.files(again.head_revision(fresh=True))
    )
