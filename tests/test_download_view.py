"""Downloads equal the view, over HTTP against the live service: each of the
board's filters (search, type, size, license), its header sort and its column chooser narrow
GET /api/v1/leaderboard's JSON page and its CSV, parquet and complete JSON downloads to the same
rows, which are the rows the filter keeps of the unfiltered board; a query parameter a table route
does not take is a 422 naming it; a paged download says which page in its file name and names the
next in its Link header; the Items download pages with Link headers or serves every item."""

from __future__ import annotations

import csv
import html
import io
import re

import pandas as pd
import pytest
from board_fixture import board_record
from live_helpers import explicit_only, submit_ok, wait_finished

from leaderboard.store import LocalDatasetStore

pytestmark = pytest.mark.service

LEADERBOARD = "/api/v1/leaderboard"
VIEW = {"suite": "prefeval", "task": "mcq", "setting": "zero_shot"}
PREFIX = "dlv-"


def records() -> list[dict]:
    """Six rows with every fact varied; their names all start with `zq` (no other row's does)."""
    return [
        board_record(
            "dlv-a", "zq-alpha", 0.80, 0.76, 0.84, parameters=7_000_000_000, license="apache-2.0"
        ),
        board_record("dlv-b", "zq-beta", 0.78, 0.74, 0.82, parameters=135_000_000, license="mit"),
        board_record(
            "dlv-g", "ZQ-Gamma", 0.70, 0.66, 0.74, parameters=70_000_000_000, license="llama3"
        ),
        board_record("dlv-d", "zq-delta", 0.50, 0.45, 0.55),  # an uploaded file: facts unknown
        board_record(
            "dlv-r",
            "zq-reward",
            0.60,
            0.57,
            0.63,
            parameters=8_000_000_000,
            license="mit",
            model_type="reward",
        ),
        board_record(
            "dlv-p",
            "zq-partial",
            0.90,
            0.60,
            1.0,
            n=6,
            row_kind="partial",
            parameters=1_000_000,
            license="mit",
            tier_n=3,
        ),
    ]


@pytest.fixture(scope="module")
def service(module_live_service):
    store = LocalDatasetStore(module_live_service.data_dir / "results-dataset")
    store.sync_group(PREFIX, records(), "download-view fixture rows")
    return module_live_service


def answers(http, params: dict) -> dict[str, list[dict]]:
    """The rows of the JSON page and of each download for the same query (all must be 200)."""
    got = {}
    for name, extra in (
        ("page", {}),
        ("json", {"complete": "true"}),
        ("csv", {"format": "csv"}),
        ("parquet", {"format": "parquet"}),
    ):
        response = http.get(LEADERBOARD, params={**params, **extra})
        assert response.status_code == 200, (params, name, response.text)
        if name == "csv":
            frame = pd.read_csv(io.StringIO(response.text), dtype=str, keep_default_na=False)
        elif name == "parquet":
            frame = pd.read_parquet(io.BytesIO(response.content))
        else:
            frame = pd.DataFrame(response.json())
        got[name] = frame
    return got


def ids(frame: pd.DataFrame) -> list[str]:
    return [str(i) for i in frame["submission_id"]]


def mine(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["submission_id"].astype(str).str.startswith(PREFIX)]


# (the query's own parameters, what the board keeps of the unfiltered rows, the fixture's rows kept)
FILTERS = [
    ({"search": "GAMMA"}, lambda r: "gamma" in r["model_name"].casefold(), ["dlv-g"]),
    ({"search": "ta"}, lambda r: "ta" in r["model_name"].casefold(), ["dlv-b", "dlv-d"]),
    (
        {"search": "zq", "type": "reward"},
        lambda r: "zq" in r["model_name"].casefold() and r["model_type"] == "reward",
        ["dlv-r"],
    ),
    ({"type": "predictions file"}, lambda r: r["model_type"] == "predictions file", ["dlv-d"]),
    ({"size": "1B-10B"}, lambda r: r["size"] == "1B-10B", ["dlv-a", "dlv-r"]),
    ({"license": "mit"}, lambda r: r["license"] == "mit", ["dlv-b", "dlv-r", "dlv-p"]),
]


@pytest.mark.parametrize(
    "query,keeps,expected", FILTERS, ids=lambda v: "rule" if callable(v) else str(v)[:40]
)
def test_each_filter_narrows_every_download_to_the_views_rows(service, query, keeps, expected):
    with service.http() as http:
        everything = answers(http, VIEW)["json"]
        got = answers(http, {**VIEW, **query})
    wanted = [i for i, r in zip(ids(everything), everything.to_dict("records")) if keeps(r)]
    assert 0 < len(wanted) < len(everything)  # the filter changes the rows
    for name, frame in got.items():
        assert ids(frame) == wanted, (name, query)  # the view's rows, in the board's order
    assert ids(mine(got["csv"])) == expected
    # ranks are those of the whole view: a kept row keeps its rank
    ranks = dict(zip(ids(everything), everything["rank"]))
    for i, rank in zip(ids(got["json"]), got["json"]["rank"]):
        assert (pd.isna(rank) and pd.isna(ranks[i])) or rank == ranks[i], i


SORTS = [
    # within each section (verified, then partial), as a click on the header sorts; blanks last
    ("total:asc", ["dlv-d", "dlv-r", "dlv-g", "dlv-b", "dlv-a", "dlv-p"]),
    ("model_name:desc", ["dlv-r", "dlv-g", "dlv-d", "dlv-b", "dlv-a", "dlv-p"]),
    ("size:asc", ["dlv-b", "dlv-a", "dlv-r", "dlv-g", "dlv-d", "dlv-p"]),
    ("size:desc", ["dlv-g", "dlv-r", "dlv-a", "dlv-b", "dlv-d", "dlv-p"]),
]


@pytest.mark.parametrize("sort,expected", SORTS)
def test_the_header_sort_orders_every_download_as_the_board_does(service, sort, expected):
    with service.http() as http:
        default = answers(http, {**VIEW, "search": "zq"})
        got = answers(http, {**VIEW, "search": "zq", "sort": sort})
    assert ids(default["json"]) == ["dlv-a", "dlv-b", "dlv-g", "dlv-r", "dlv-d", "dlv-p"]
    for name, frame in got.items():
        assert ids(frame) == expected, (name, sort)


def test_the_column_chooser_keeps_its_columns_in_every_download(service):
    with service.http() as http:
        every = answers(http, VIEW)
        chosen = answers(http, {**VIEW, "columns": "license,tiers"})
        bare = answers(http, {**VIEW, "columns": "none", "tier": "form/explicit"})
    columns = list(every["csv"].columns)
    assert {"total_ci_low", "license", "source", "form/explicit"} <= set(columns)
    for name, frame in chosen.items():
        kept = list(frame.columns)
        assert "license" in kept and "form/explicit" in kept, name
        assert not {"total_ci_low", "above_reference", "source", "size"} & set(kept), name
        assert {"rank", "model_name", "total", "submission_id"} <= set(kept), name
        assert kept == [c for c in columns if c in kept], name  # the board's order
    for name, frame in bare.items():
        # none of the chooser's columns; the ranking tier stays, with the ones always shown
        assert "form/explicit" in frame.columns and "form/implicit_choice" not in frame.columns
        assert not {"license", "source", "row_kind", "setting"} & set(frame.columns), name


def test_a_query_parameter_a_table_route_does_not_take_is_a_422_naming_it(service):
    with service.http() as http:
        for path, params in (
            (LEADERBOARD, {**VIEW, "serach": "zq"}),
            (LEADERBOARD, {"format": "csv", "q": "zq"}),
            ("/api/v1/overview", {"kind": "reward"}),
            ("/api/v1/submissions/no-such-id/details", {"page": "2"}),
        ):
            for _ in range(2):  # the second time the fast path has parsed the query already
                response = http.get(path, params=params)
                assert response.status_code == 422, (path, params, response.text)
                detail = response.json()["detail"]
                unknown = next(k for k in params if k not in VIEW and k != "format")
                assert [p["field"] for p in detail["problems"]] == [unknown], detail
                assert f"unknown query parameter '{unknown}'" in detail["message"], detail
                assert detail["problems"][0]["line"] is None
        for params, parameter, status in (
            ({**VIEW, "sort": "total:up"}, "sort", 422),
            ({**VIEW, "sort": "turns/10:asc"}, "sort", 404),  # a tier of another task
            ({**VIEW, "columns": "ci,nope"}, "columns", 422),
            ({**VIEW, "type": "robot"}, "type", 422),
            ({**VIEW, "license": "no-such-license"}, "license", 404),
        ):
            response = http.get(LEADERBOARD, params=params)
            assert response.status_code == status, (params, response.text)
            assert response.json()["detail"]["problems"][0]["field"] == parameter


def test_a_paged_download_names_its_page_and_links_the_next(service):
    query = {**VIEW, "search": "zq", "format": "csv", "limit": 2}
    with service.http() as http:
        whole = http.get(LEADERBOARD, params={**VIEW, "search": "zq", "format": "csv"})
        assert "page-" not in whole.headers["content-disposition"] and "link" not in whole.headers
        every = [r["submission_id"] for r in csv.DictReader(io.StringIO(whole.text))]
        walked, url, k = [], http.get(LEADERBOARD, params=query).url, 1
        while url is not None:
            page = http.get(url)
            assert page.status_code == 200, page.text
            name = page.headers["content-disposition"]
            assert "-q-zq-" in name and f"-page-{k}-of-3-rows-{2 * k - 1}-{2 * k}.csv" in name
            walked += [r["submission_id"] for r in csv.DictReader(io.StringIO(page.text))]
            url = page.links.get("next", {}).get("url")
            if url is not None:
                assert "search=zq" in url and f"offset={2 * k}" in url  # the filters carried on
            k += 1
        assert walked == every and k == 4


def test_the_items_download_pages_with_links_or_serves_every_item(service):
    with service.http() as http:
        sid = submit_ok(http, explicit_only().body, model_name="dlv-items")
        wait_finished(http, sid, logs=service.logs)
        path = f"/api/v1/submissions/{sid}/details"
        page = http.get(path, params={"limit": 1000})
        assert page.status_code == 200 and len(page.json()) == 1000
        assert page.headers["x-total-count"] == "3000"
        assert page.links["next"]["url"].endswith("limit=1000&offset=1000")
        whole = http.get(path, params={"complete": "true"})
        assert (
            whole.status_code == 200 and len(whole.json()) == 3000 and "link" not in whole.headers
        )
        assert whole.headers["content-disposition"].endswith(f'details-prefeval-mcq-{sid}.json"')
        second = http.get(path, params={"format": "csv", "limit": 1000, "offset": 1000})
        assert second.headers["content-disposition"].endswith(
            f'{sid}-page-2-of-3-rows-1001-2000.csv"'
        )
        assert set(second.links) == {"next", "prev"}


class TabServices:
    """What the board tab reads of the services, over the live service's own results store."""

    def __init__(self, folder):
        from leaderboard.board import manifest_tier_order
        from leaderboard.readpath import LeaderboardCache

        self.results = LocalDatasetStore(folder)
        self.board = LeaderboardCache(self.results, manifest_tier_order)

    def results_head(self) -> str | None:
        return self.results.head_revision()


@pytest.mark.parametrize(
    "changes",
    [
        {"search": "ta"},
        {"model_type": "reward"},
        {"size": "< 1B", "columns": ("license",)},
        {"license": "mit", "search": "ZQ", "tier": "form/explicit"},
    ],
    ids=str,
)
def test_the_boards_own_links_download_the_rows_it_shows(service, changes):
    """The board tab draws the view (in process, from the same store); its CSV link, fetched from
    the service, holds exactly the rows the table shows, in its order."""
    from space.tabs.leaderboard import BoardControls, board_view

    controls = BoardControls("prefeval", "mcq", "zero_shot", **changes)
    view = board_view(TabServices(service.data_dir / "results-dataset"), controls)
    shown = [part.split('"', 1)[0] for part in view.table.split('data-id="')[1:]]
    href = html.unescape(re.search(r'href="([^"]+format=csv[^"]*)"', view.downloads).group(1))
    with service.http() as http:
        response = http.get(href)
    assert response.status_code == 200, response.text
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert 0 < len(shown) < 6 and [r["submission_id"] for r in rows] == shown, (shown, href)
    if "columns" in changes:
        assert "license" in rows[0] and "source" not in rows[0]
