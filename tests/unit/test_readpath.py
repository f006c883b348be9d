"""The leaderboard cache: one table per head revision, rebuilt once when any process publishes."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time

import pandas as pd
import pytest

from leaderboard.readpath import Filters, LeaderboardCache, Page
from leaderboard.store import LocalDatasetStore, StoreError


def make_record(submission_id: str, value: float) -> dict:
    stats = {"accuracy": {"value": value, "ci95": [None, None], "n": 4}}
    return {
        "submission_id": submission_id,
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": submission_id,
        "model_link": "",
        "source": "predictions",
        "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "metrics": {"metric": "accuracy", "total": stats, "tiers": {"form": {"explicit": stats}}},
    }


def _publish_elsewhere(root, submission_id: str) -> None:
    LocalDatasetStore(root).publish(make_record(submission_id, 0.5))  # another process: a worker


def test_cache_follows_the_head_revision_and_builds_once_per_revision(tmp_path):
    store = LocalDatasetStore(tmp_path / "results")
    first = store.publish(make_record("s1", 0.5))
    cache = LeaderboardCache(store, lambda: [])
    table = cache.table()
    assert table.revision == first and cache.builds == 1
    assert cache.table() is table and cache.cached_head() is table and cache.builds == 1

    proc = multiprocessing.get_context("fork").Process(
        target=_publish_elsewhere, args=(store.root, "s2")
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert cache.cached_head() is None  # the head moved: the old table is not served
    # a burst of readers after the publish builds the new table once, and all of them see the row
    seen, errors = [], []

    def read() -> None:
        try:
            seen.append(set(cache.table().view(Filters(suite="prefeval"))["submission_id"]))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors and seen == [{"s1", "s2"}] * 8
    assert cache.builds == 2 and cache.table().revision == store.head_revision() != first

    # an older revision by id: its own table, the head's untouched
    assert set(cache.table(first).view(Filters())["submission_id"]) == {"s1"}
    assert cache.table(first[:10]).revision == first and cache.builds == 3
    with pytest.raises(StoreError):
        cache.table("0" * 40)


def test_bodies_carry_an_etag_per_revision_and_representation(tmp_path):
    store = LocalDatasetStore(tmp_path / "results")
    store.publish(make_record("s1", 0.5))
    cache = LeaderboardCache(store, lambda: [])
    json_body = cache.table().body(Filters(), "json")
    csv_body = cache.table().body(Filters(), "csv")
    assert json_body.etag != csv_body.etag and cache.table().body(Filters(), "json") is json_body
    assert (
        json_body.matches(json_body.etag)
        and json_body.matches(f'"x", W/{json_body.etag}')
        and json_body.matches("*")
    )
    assert (
        not json_body.matches('"x"')
        and not json_body.matches(None)
        and not json_body.matches(csv_body.etag)
    )
    store.publish(make_record("s2", 0.6))
    assert cache.table().body(Filters(), "json").etag != json_body.etag


def test_accept_encoding_gzip():
    from backend.leaderboard_http import accepts_gzip

    assert accepts_gzip("gzip") and accepts_gzip("br, gzip;q=0.5") and accepts_gzip("*")
    assert not accepts_gzip(None) and not accepts_gzip("identity") and not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("gzip;q=zero")


def test_gzip_variant_is_built_once_and_small_bodies_stay_plain(tmp_path):
    import gzip

    store = LocalDatasetStore(tmp_path / "results")
    for i in range(5):
        store.publish(make_record(f"s{i}", i / 5))
    table = LeaderboardCache(store, lambda: []).table()
    plain = table.body(Filters(), "json")
    assert len(plain.content) > 1024
    packed = table.body(Filters(), "json", gzipped=True)
    assert packed.encoding == "gzip" and gzip.decompress(packed.content) == plain.content
    assert packed.etag != plain.etag and table.body(Filters(), "json", gzipped=True) is packed
    tiny = table.body(Filters(suite="none"), "json", gzipped=True)  # "[]": not worth compressing
    assert tiny.encoding is None and tiny is table.body(Filters(suite="none"), "json")


def _sent(response) -> tuple[dict, list[dict]]:
    """What an ASGI response sends: its start message and its body messages."""
    import asyncio

    messages = []

    async def send(message):
        messages.append(message)

    async def receive():
        return {"type": "http.disconnect"}

    asyncio.run(response({"type": "http", "method": "GET"}, receive, send))
    return messages[0], messages[1:]


def test_large_bodies_go_out_in_pieces_cut_once_byte_for_byte(tmp_path, monkeypatch):
    import gzip

    from backend.leaderboard_http import leaderboard_response
    from leaderboard import readpath

    monkeypatch.setattr(readpath, "SEND_PIECE_BYTES", 200)
    store = LocalDatasetStore(tmp_path / "results")
    for i in range(8):
        store.publish(make_record(f"s{i}", i / 8))
    table = LeaderboardCache(store, lambda: []).table()
    for fmt in ("csv", "json", "parquet"):
        sent = {}
        for gzipped in (False, True):
            body = table.body(Filters(), fmt, gzipped=gzipped)
            start, messages = _sent(leaderboard_response(body, fmt, False, None))
            assert (
                start["status"] == 200
                and dict(start["headers"])[b"content-length"] == str(len(body.content)).encode()
            )
            chunks = [m["body"] for m in messages]
            assert b"".join(chunks) == body.content  # byte for byte
            assert [m["more_body"] for m in messages] == [True] * (len(chunks) - 1) + [False]
            assert len(chunks) == -(-len(body.content) // 200) and all(
                len(c) <= 200 for c in chunks
            )
            assert gzipped or len(chunks) > 2
            assert all(type(c) is bytes for c in chunks)  # ASGI bodies are bytes
            _, again = _sent(leaderboard_response(body, fmt, False, None))
            assert all(
                a["body"] is b["body"] for a, b in zip(again, messages)
            )  # cut once, not copied per request
            sent[gzipped] = b"".join(chunks)
        if len(sent[False]) >= readpath.GZIP_MIN_BYTES:
            assert gzip.decompress(sent[True]) == sent[False]
    small = table.body(Filters(suite="none"), "json")  # "[]": one piece, the content itself
    assert small.pieces == (small.content,) and small.pieces[0] is small.content
    assert small.held_bytes == len(small.content) and table.body(
        Filters(), "csv"
    ).held_bytes == 2 * len(table.body(Filters(), "csv").content)


def _varied_record(i: int) -> dict:
    """Results of two settings and three kinds; scores tie in pairs and submission times tie too,
    so only the final submission_id key decides the order of tied rows."""
    record = make_record(f"r{(i * 7) % 10:02d}", round(0.1 * (i // 2), 2))
    record["setting"] = ("zero_shot", "reminder")[i % 2]
    record["row_kind"] = ("computed", "computed", "partial", "reported")[i % 4]
    if i % 3 == 0:  # a tier the others lack: the view of a slice keeps only its own columns
        record["metrics"]["tiers"]["form"]["implicit"] = record["metrics"]["total"]
    return record


def test_views_from_pivoted_parts_equal_the_pivot_of_the_whole_table(tmp_path, monkeypatch):
    from leaderboard import store as store_module
    from leaderboard.table import wide_view

    monkeypatch.setattr(store_module, "SHARD_RECORDS", 3)  # 10 results in 4 parts
    store = LocalDatasetStore(tmp_path / "results")
    for i in range(9):
        store.publish(_varied_record(i))
    cache = LeaderboardCache(store, lambda: ["form/implicit", "form/explicit"])
    table = cache.table()
    assert len(table.parts) == 3 and cache.parts_pivoted == 3

    store.publish(_varied_record(9))  # a new part
    assert (
        len(cache.table().parts) == 4 and cache.parts_pivoted == 4
    )  # each publish pivots its own part only
    store.publish({**make_record("r99", 0.4), "setting": "reminder"})  # a part of its own too
    table = cache.table()
    assert len(table.parts) == 5 and cache.parts_pivoted == 5
    scores = store.scores()
    for filters in (
        Filters(),
        Filters(setting="zero_shot"),
        Filters(setting="reminder", tier="implicit"),
        Filters(suite="prefeval", task="mcq", tier="form/explicit"),
        Filters(suite="nope"),
    ):
        expected = wide_view(
            scores,
            filters.suite,
            filters.task,
            filters.setting,
            filters.tier,
            tier_order=["form/implicit", "form/explicit"],
        )
        pd.testing.assert_frame_equal(table.view(filters), expected)
    ordered = table.view(Filters(setting="zero_shot"))
    assert "form/implicit" in ordered.columns and list(ordered["n_items"]) == [4] * len(ordered)
    # ties (same kind, value and submitted_at) come in submission_id order
    for _, tied in ordered.groupby(["row_kind", "total"], dropna=False):
        assert list(tied["submission_id"]) == sorted(tied["submission_id"])
    assert table.view(Filters(suite="nope")).empty


def test_json_pages_carry_the_total_and_their_own_etag(tmp_path):
    from leaderboard.readpath import Page

    store = LocalDatasetStore(tmp_path / "results")
    for i in range(7):
        store.publish(make_record(f"s{i}", i / 7))
    table = LeaderboardCache(store, lambda: []).table()
    full = [row["submission_id"] for row in json.loads(table.body(Filters(), "json").content)]
    pages = [table.body(Filters(), "json", page=Page(offset, 3)) for offset in (0, 3, 6, 9)]
    assert [b.total for b in pages] == [7] * 4 and len({b.etag for b in pages}) == 4
    assert [row["submission_id"] for b in pages for row in json.loads(b.content)] == full
    assert json.loads(pages[-1].content) == [] and full == [f"s{i}" for i in reversed(range(7))]
    assert table.body(Filters(), "json", page=Page(0, 3)) is pages[0]

    # concurrent askers of one body build it once
    fresh = LeaderboardCache(store, lambda: []).table()
    got = []
    threads = [
        threading.Thread(target=lambda: got.append(fresh.body(Filters(), "csv", gzipped=True)))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(got) == 6 and all(body is got[0] for body in got)


def test_the_watcher_builds_a_new_heads_default_and_recent_bodies_before_anyone_asks(tmp_path):
    from leaderboard.readpath import DEFAULT_BODIES

    store = LocalDatasetStore(tmp_path / "results")
    store.publish(make_record("s1", 0.5))
    cache = LeaderboardCache(store, lambda: [])
    cache.table().body(Filters(suite="prefeval"), "csv")  # a reader's download on the first head
    stop = threading.Event()
    watcher = threading.Thread(target=cache.watch, args=(stop, 0.02), daemon=True)
    watcher.start()
    try:
        proc = multiprocessing.get_context("fork").Process(
            target=_publish_elsewhere, args=(store.root, "s2")
        )
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        head = store.head_revision()
        deadline = time.monotonic() + 30
        while (
            cache.cached_head() is None or cache.cached_head().revision != head
        ) and time.monotonic() < deadline:
            time.sleep(0.01)
        table = cache.cached_head()
        assert table is not None and table.revision == head
        for filters, fmt, page in DEFAULT_BODIES:
            body = table.cached_body(filters, fmt, page=page)
            assert body is not None and {r["submission_id"] for r in json.loads(body.content)} == {
                "s1",
                "s2",
            }
            assert table.cached_body(filters, fmt, gzipped=True, page=page) is not None
        # then what readers asked for on the previous head is built for the new one
        while (
            table.cached_body(Filters(suite="prefeval"), "csv") is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        assert b"s2" in table.cached_body(Filters(suite="prefeval"), "csv").content
        assert (
            table.cached_body(Filters(suite="prefeval"), "parquet") is None
        )  # nobody asked for it
    finally:
        stop.set()
        watcher.join(10)
    assert not watcher.is_alive()


def test_a_commit_that_changes_no_table_part_reuses_the_table_under_its_revision(tmp_path):
    """A boards refresh commits a new head whose table parts are the old head's: its readers get
    the same views and bodies (the ETag naming the new revision) without a rebuild; a publish
    (a new part) still builds."""
    from leaderboard.readpath import Page

    store = LocalDatasetStore(tmp_path / "results")
    store.publish(make_record("s1", 0.5))
    store.publish(make_record("s2", 0.7))
    cache = LeaderboardCache(store, lambda: [])
    old = cache.table()
    plain = old.body(Filters(suite="prefeval"), "json", page=Page())
    board = old.board(Filters())
    store.refresh_boards()  # writes the boards only
    assert store.head_revision() != old.revision

    new = cache.table()
    assert new.revision == store.head_revision()
    assert (cache.builds, cache.renamed) == (1, 1)
    assert new.board(Filters()) is board  # the same view, not ranked again
    again = new.cached_body(Filters(suite="prefeval"), "json", page=Page())
    assert again is not None and again.content == plain.content
    assert again.revision == new.revision and again.etag.startswith(f'"{new.revision[:16]}-')
    assert again.etag.removeprefix(f'"{new.revision[:16]}') == plain.etag.removeprefix(
        f'"{old.revision[:16]}'
    )
    assert json.loads(new.body(Filters(), "json").content) == json.loads(
        old.body(Filters(), "json").content
    )

    store.publish(make_record("s3", 0.9))
    newest = cache.table()
    assert (cache.builds, cache.renamed) == (2, 1)
    assert set(newest.view(Filters())["submission_id"]) == {"s1", "s2", "s3"}


def test_the_watcher_warms_only_bodies_small_enough(tmp_path):
    """A large download (the complete CSV: seconds of CPU at 20,000 results) is built when it is
    asked for, not warmed for each new head (readpath.WARM_BODY_MAX_BYTES)."""
    store = LocalDatasetStore(tmp_path / "results")
    for i in range(3):
        store.publish(make_record(f"s{i}", 0.5 + i / 10))
    table = LeaderboardCache(store, lambda: []).table()
    page = table.body(Filters(), "json", page=Page(0, 1))
    download = table.body(Filters(), "csv")
    assert len(page.content) < len(download.content)
    everything = table.recent_bodies(8)
    assert (Filters(), "csv", False, None) in everything
    small = table.recent_bodies(8, max_bytes=len(page.content))
    assert (Filters(), "json", False, Page(0, 1)) in small
    assert (Filters(), "csv", False, None) not in small
