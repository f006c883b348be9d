"""The read path through the live service: a publish from another process (as a worker does) is
seen by the very next request, and the leaderboard revalidates with ETag / If-None-Match."""
from __future__ import annotations

import pytest

from leaderboard.store import LocalDatasetStore
from live_helpers import client

LEADERBOARD = "/api/v1/leaderboard"


def make_record(submission_id: str, value: float) -> dict:
    stats = {"accuracy": {"value": value, "ci95": [None, None], "n": 10}}
    return {
        "submission_id": submission_id, "suite": "prefeval", "task": "mcq", "setting": "zero_shot",
        "model_name": f"model-{submission_id}", "model_link": "", "source": "predictions", "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "metrics": {"metric": "accuracy", "total": stats, "tiers": {"form": {"explicit": stats}}},
    }


@pytest.fixture(scope="module")
def service(module_live_service):
    return module_live_service


@pytest.fixture
def store(service):
    return LocalDatasetStore(service.data_dir / "results-dataset")  # this process publishes, like a worker


def ids(response) -> set[str]:
    return {row["submission_id"] for row in response.json()}


def test_next_request_after_a_publish_sees_the_new_row(service, store):
    with client(service.base_url) as http:
        before = http.get(LEADERBOARD, params={"suite": "prefeval"})
        assert before.status_code == 200
        etags = {before.headers["etag"]}
        for i in range(4):
            revision = store.publish(make_record(f"readpath-{i}", i / 4))
            after = http.get(LEADERBOARD, params={"suite": "prefeval"})
            assert f"readpath-{i}" in ids(after), f"publish {i} not seen by the next request"
            assert after.headers["x-results-revision"] == revision
            assert after.headers["etag"] not in etags  # the ETag changes with the revision
            etags.add(after.headers["etag"])
            # the unfiltered table and the CSV of the same revision agree
            assert f"readpath-{i}" in http.get(LEADERBOARD, params={"format": "csv"}).text
        assert http.get("/api/v1/health").json()["results_revision"] == revision


def test_etag_revalidation_gives_304_until_a_publish(service, store):
    with client(service.base_url) as http:
        params = {"suite": "prefeval", "task": "mcq"}
        first = http.get(LEADERBOARD, params=params)
        etag, revision = first.headers["etag"], first.headers["x-results-revision"]
        assert first.headers["cache-control"] == "no-cache"

        again = http.get(LEADERBOARD, params=params, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        listed = http.get(LEADERBOARD, params=params, headers={"If-None-Match": f'"other", W/{etag}'})
        assert listed.status_code == 304
        csv = http.get(LEADERBOARD, params={**params, "format": "csv"}, headers={"If-None-Match": etag})
        assert csv.status_code == 200 and csv.headers["etag"] != etag  # another representation
        assert http.get(LEADERBOARD, params=params, headers={"If-None-Match": '"stale"'}).status_code == 200

        store.publish(make_record("readpath-etag", 0.9))
        changed = http.get(LEADERBOARD, params=params, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and "readpath-etag" in ids(changed)
        assert changed.headers["etag"] != etag and changed.headers["x-results-revision"] != revision

        # a revision named by its full id is immutable: cacheable for good, and without the new row
        pinned = http.get(LEADERBOARD, params={**params, "revision": revision})
        assert pinned.status_code == 200 and "readpath-etag" not in ids(pinned)
        assert "immutable" in pinned.headers["cache-control"] and pinned.headers["etag"] == etag
        assert http.get(LEADERBOARD, params={**params, "revision": revision},
                        headers={"If-None-Match": etag}).status_code == 304
        missing = http.get(LEADERBOARD, params={"revision": "0" * 40})
        assert missing.status_code == 404 and "unknown revision" in missing.json()["detail"]["message"]
