"""The read path through the live service: a publish from another process (as a worker does) is
seen by the very next request, and the leaderboard revalidates with ETag / If-None-Match; /metrics
is Prometheus text and moves when a job runs."""

from __future__ import annotations

import pytest
from board_fixture import minimal_record
from live_helpers import explicit_only, scrape, submit_ok, wait_finished, wait_until

from leaderboard.store import LocalDatasetStore

pytestmark = pytest.mark.service

LEADERBOARD = "/api/v1/leaderboard"


@pytest.fixture(scope="module")
def service(module_live_service):
    return module_live_service


@pytest.fixture
def store(service):
    return LocalDatasetStore(
        service.data_dir / "results-dataset"
    )  # this process publishes, like a worker


def ids(response) -> set[str]:
    return {row["submission_id"] for row in response.json()}


def test_next_request_after_a_publish_sees_the_new_row(service, store):
    with service.http() as http:
        before = http.get(LEADERBOARD, params={"suite": "prefeval"})
        assert before.status_code == 200
        etags = {before.headers["etag"]}
        for i in range(4):
            revision = store.publish(minimal_record(f"readpath-{i}", i / 4))
            after = http.get(LEADERBOARD, params={"suite": "prefeval"})
            assert f"readpath-{i}" in ids(after), f"publish {i} not seen by the next request"
            assert after.headers["x-results-revision"] == revision
            assert after.headers["etag"] not in etags  # the ETag changes with the revision
            etags.add(after.headers["etag"])
            # the unfiltered table and the CSV of the same revision agree
            assert f"readpath-{i}" in http.get(LEADERBOARD, params={"format": "csv"}).text
        assert http.get("/api/v1/health").json()["results_revision"] == revision


def test_etag_revalidation_gives_304_until_a_publish(service, store):
    with service.http() as http:
        params = {"suite": "prefeval", "task": "mcq"}
        first = http.get(LEADERBOARD, params=params)
        etag, revision = first.headers["etag"], first.headers["x-results-revision"]
        assert first.headers["cache-control"] == "no-cache"

        again = http.get(LEADERBOARD, params=params, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
        listed = http.get(
            LEADERBOARD, params=params, headers={"If-None-Match": f'"other", W/{etag}'}
        )
        assert listed.status_code == 304
        csv = http.get(
            LEADERBOARD, params={**params, "format": "csv"}, headers={"If-None-Match": etag}
        )
        assert csv.status_code == 200 and csv.headers["etag"] != etag  # another representation
        assert (
            http.get(LEADERBOARD, params=params, headers={"If-None-Match": '"stale"'}).status_code
            == 200
        )

        store.publish(minimal_record("readpath-etag", 0.9))
        changed = http.get(LEADERBOARD, params=params, headers={"If-None-Match": etag})
        assert changed.status_code == 200 and "readpath-etag" in ids(changed)
        assert changed.headers["etag"] != etag and changed.headers["x-results-revision"] != revision

        # a revision named by its full id is immutable: cacheable for good, and without the new row
        pinned = http.get(LEADERBOARD, params={**params, "revision": revision})
        assert pinned.status_code == 200 and "readpath-etag" not in ids(pinned)
        assert "immutable" in pinned.headers["cache-control"] and pinned.headers["etag"] == etag
        assert (
            http.get(
                LEADERBOARD,
                params={**params, "revision": revision},
                headers={"If-None-Match": etag},
            ).status_code
            == 304
        )
        missing = http.get(LEADERBOARD, params={"revision": "0" * 40})
        assert (
            missing.status_code == 404 and "unknown revision" in missing.json()["detail"]["message"]
        )


def test_metrics_parse_and_move_when_a_job_runs(service):
    with service.http() as http:
        before = scrape(http)
        assert before[("personaboard_queue_up", ())] == 1
        assert before[("personaboard_workers", ())] >= 1
        assert before[("personaboard_publish_backlog", ())] == 0
        finished = ("personaboard_jobs_total", (("outcome", "finished"),))
        job_count = ("personaboard_job_duration_seconds_count", ())
        publish_count = ("personaboard_publish_duration_seconds_count", ())

        sid = submit_ok(http, explicit_only().body, model_name="metrics-probe")
        wait_finished(http, sid, logs=service.logs)
        after = scrape(http)
        assert after[finished] == before[finished] + 1
        assert (
            after[job_count] == before[job_count] + 1
            and after[publish_count] == before[publish_count] + 1
        )
        assert (
            after[("personaboard_job_duration_seconds_sum", ())]
            > before[("personaboard_job_duration_seconds_sum", ())]
        )
        assert (
            after[("personaboard_queue_jobs", (("queue", "personaboard"), ("state", "queued")))]
            == 0
        )
        assert (
            after[("personaboard_job_duration_seconds_bucket", (("le", "+Inf"),))]
            == after[job_count]
        )


def test_cached_bodies_answer_like_the_route_plain_or_gzipped(service, store):
    """The second request of a kind is answered from memory before routing; it must be the same
    response the route gave: body, ETag, headers; gzip only for clients that accept it."""
    store.publish(minimal_record("readpath-fast", 0.4))
    with service.http() as http:
        for params in (
            {"suite": "prefeval"},
            {"format": "csv"},
            {"suite": "prefeval", "task": "mcq", "tier": "explicit"},
        ):
            for encoding in ("identity", "gzip"):
                first, second = (
                    http.get(LEADERBOARD, params=params, headers={"Accept-Encoding": encoding})
                    for _ in range(2)
                )
                assert first.status_code == second.status_code == 200
                assert first.content == second.content  # (httpx decompresses gzip)
                for name in (
                    "etag",
                    "content-type",
                    "content-encoding",
                    "content-disposition",
                    "cache-control",
                    "x-results-revision",
                    "vary",
                ):
                    assert first.headers.get(name) == second.headers.get(name), name
                assert (first.headers.get("content-encoding") == "gzip") == (encoding == "gzip")
            plain = http.get(LEADERBOARD, params=params, headers={"Accept-Encoding": "identity"})
            packed = http.get(LEADERBOARD, params=params, headers={"Accept-Encoding": "gzip;q=1"})
            assert (
                plain.content == packed.content and plain.headers["etag"] != packed.headers["etag"]
            )
            refused = http.get(LEADERBOARD, params=params, headers={"Accept-Encoding": "gzip;q=0"})
            assert refused.headers.get("content-encoding") is None
            assert (
                http.get(
                    LEADERBOARD,
                    params=params,
                    headers={"If-None-Match": packed.headers["etag"], "Accept-Encoding": "gzip"},
                ).status_code
                == 304
            )
        # what the fast path must leave to the route: validation, and parameters it does not know
        assert http.get(LEADERBOARD, params={"format": "xml"}).status_code == 422
        unknown = http.get(LEADERBOARD, params={"suite": "prefeval", "unknown": "1"})
        assert unknown.status_code == 422  # refused by the route, naming it (never ignored)
        assert unknown.json()["detail"]["problems"][0]["field"] == "unknown"
        repeated = http.get(LEADERBOARD + "?suite=nothing&suite=prefeval")
        assert repeated.status_code == 200 and "readpath-fast" in ids(
            repeated
        )  # as FastAPI reads it: the last


def test_json_comes_in_pages_csv_stays_complete(service, store):
    import csv
    import io

    for i in range(5):
        store.publish(minimal_record(f"readpath-page-{i}", 0.3 + i / 100))
    with service.http() as http:
        params = {"suite": "prefeval"}
        download = http.get(LEADERBOARD, params={**params, "format": "csv"})
        complete = [row["submission_id"] for row in csv.DictReader(io.StringIO(download.text))]
        assert (
            int(download.headers["x-total-count"]) == len(complete) >= 5
            and "link" not in download.headers
        )

        # walk the pages by their Link headers: every row once, in the download's order
        walked, etags, url = [], set(), http.get(LEADERBOARD, params={**params, "limit": 2}).url
        while url is not None:
            page = http.get(url)
            again = http.get(url)  # answered from memory by the fast path: the same response
            assert page.status_code == again.status_code == 200 and page.content == again.content
            for name in ("etag", "link", "x-total-count", "x-results-revision"):
                assert page.headers.get(name) == again.headers.get(name), name
            assert int(page.headers["x-total-count"]) == len(complete) and len(page.json()) <= 2
            walked += [row["submission_id"] for row in page.json()]
            etags.add(page.headers["etag"])
            url = page.links.get("next", {}).get("url")
        assert walked == complete and len(etags) == -(-len(complete) // 2)
        last = http.get(LEADERBOARD, params={**params, "limit": 2, "offset": len(complete) - 1})
        assert set(last.links) == {"prev"} and "offset=" in last.links["prev"]["url"]

        whole = http.get(LEADERBOARD)  # no limit: the first DEFAULT_PAGE_ROWS rows
        assert len(whole.json()) == min(100, int(whole.headers["x-total-count"]))
        for bad in (
            {"limit": 0},
            {"limit": 1001},
            {"offset": -1},
            {"limit": "x"},
        ):
            refused = http.get(LEADERBOARD, params=bad)
            assert refused.status_code == 422, bad
            assert "limit" in refused.text or "offset" in refused.text


def test_limit_and_offset_page_downloads_too(service, store):
    """CSV, parquet and complete=true JSON: `limit` rows from `offset` (to the last row without a
    limit); without paging they stay the complete table, byte for byte."""
    import csv
    import io

    import pandas as pd

    for i in range(5):
        store.publish(minimal_record(f"readpath-dlpage-{i}", 0.2 + i / 100))
    params = {"suite": "prefeval"}

    def rows_of(response) -> list[str]:
        if response.headers["content-type"].startswith("text/csv"):
            return [r["submission_id"] for r in csv.DictReader(io.StringIO(response.text))]
        if "parquet" in response.headers["content-type"]:
            return list(pd.read_parquet(io.BytesIO(response.content))["submission_id"])
        return [r["submission_id"] for r in response.json()]

    with service.http() as http:
        download = http.get(LEADERBOARD, params={**params, "format": "csv"})
        every = rows_of(download)
        total = len(every)
        assert total >= 5 and "rows-" not in download.headers["content-disposition"]
        for query, wanted in (
            ({"format": "csv", "limit": 2}, every[:2]),
            ({"format": "csv", "offset": total - 1}, every[-1:]),
            ({"format": "parquet", "limit": 2, "offset": 1}, every[1:3]),
            ({"complete": "true", "limit": 2, "offset": 1}, every[1:3]),
            ({"complete": "true", "offset": 3}, every[3:]),
        ):
            for _ in range(2):  # the route, then the fast path
                page = http.get(LEADERBOARD, params={**params, **query})
                assert page.status_code == 200, (query, page.text)
                assert rows_of(page) == wanted, query
                assert int(page.headers["x-total-count"]) == total, query
        csv_page = http.get(LEADERBOARD, params={**params, "format": "csv", "limit": 2})
        assert csv_page.headers["content-disposition"].endswith('-rows-1-2.csv"')
        assert csv_page.links["next"]["url"].endswith("limit=2&offset=2")
        again = http.get(LEADERBOARD, params={**params, "format": "csv"})
        assert again.content == download.content
        # the same ETag at the same revision (the service's board refresh may commit a new revision
        # meanwhile, with the same table: its ETag then names the new revision)
        same_revision = (
            again.headers["x-results-revision"] == download.headers["x-results-revision"]
        )
        assert (again.headers["etag"] == download.headers["etag"]) == same_revision


def test_the_json_download_is_the_whole_table_past_one_page(service, store):
    """What the page's "Download JSON" link asks for (complete=true): every row, as the CSV has them."""
    import csv
    import io

    store.sync_group(
        "readpath-bulk-",
        [minimal_record(f"readpath-bulk-{i:03d}", i / 1000) for i in range(120)],
        "120 rows: more than one JSON page",
    )
    with service.http() as http:
        download = http.get(LEADERBOARD, params={"format": "csv"})
        every = [row["submission_id"] for row in csv.DictReader(io.StringIO(download.text))]
        assert (
            len(every) > 120 and len(http.get(LEADERBOARD).json()) == 100
        )  # the API's default page
        for _ in range(2):  # the route, then the fast path
            downloaded = http.get(LEADERBOARD, params={"complete": "true"})
            assert (
                downloaded.status_code == 200
                and [row["submission_id"] for row in downloaded.json()] == every
            )
            assert (
                "link" not in downloaded.headers
                and "attachment" in downloaded.headers["content-disposition"]
            )
            assert int(downloaded.headers["x-total-count"]) == len(every)


def test_access_log_keeps_paths_not_query_values(service):
    """A token someone puts in a URL's query never reaches the web process's log (uvicorn logs
    every request's path with its query: backend/access_log.py drops the values)."""
    secret = "tok-" + "9f3e1c7a5b2d4e6f"
    with service.http(token="") as http:
        for path in ("/api/v1/leaderboard", "/api/v1/suites"):
            assert http.get(path, params={"token": secret, "suite": "prefeval"}).status_code < 500
    log = service.log_dir / "web.log"
    wait_until(
        lambda: "/api/v1/suites?token=…&suite=… HTTP/1.1" in log.read_text(errors="replace"),
        30,
        "the request in the access log",
    )
    assert secret not in log.read_text(errors="replace")
