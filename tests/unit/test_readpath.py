"""The leaderboard cache: one table per head revision, rebuilt once when any process publishes."""
from __future__ import annotations

import multiprocessing
import threading

import pytest

from leaderboard.readpath import Filters, LeaderboardCache
from leaderboard.store import LocalDatasetStore, StoreError


def make_record(submission_id: str, value: float) -> dict:
    stats = {"accuracy": {"value": value, "ci95": [None, None], "n": 4}}
    return {
        "submission_id": submission_id, "suite": "prefeval", "task": "mcq", "setting": "zero_shot",
        "model_name": submission_id, "model_link": "", "source": "predictions", "row_kind": "computed",
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

    proc = multiprocessing.get_context("fork").Process(target=_publish_elsewhere, args=(store.root, "s2"))
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
    assert json_body.matches(json_body.etag) and json_body.matches(f'"x", W/{json_body.etag}') and json_body.matches("*")
    assert not json_body.matches('"x"') and not json_body.matches(None) and not json_body.matches(csv_body.etag)
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
