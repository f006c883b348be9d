"""The board tab's download links (space/tabs/leaderboard.py download_params, download_links) carry
every filter on screen: search, type, size, license, the chosen columns, the header sort, and the
suite, task, setting, tier and version; and every parameter they carry is one GET
/api/v1/leaderboard takes (a parameter it does not take is a 422 there, never ignored)."""

from __future__ import annotations

import html
import re
from dataclasses import fields
from urllib.parse import parse_qs, urlsplit

from backend.api import _query_names, router
from leaderboard.columns import chooser_entries
from space.choices import ALL
from space.data import LATEST
from space.tabs.leaderboard import (
    NO_TIER,
    BoardControls,
    download_links,
    download_params,
)

# Each control of the board (BoardControls' fields) and the API parameter that carries it; the
# highlighted row outlines one row and narrows nothing.
PARAMETER_OF = {
    "suite": "suite",
    "task": "task",
    "setting": "setting",
    "tier": "tier",
    "model_type": "type",
    "size": "size",
    "license": "license",
    "search": "search",
    "columns": "columns",
    "version": "revision",
}
NOT_A_FILTER = {"highlight"}

EVERYTHING = BoardControls(
    "prefeval",
    "mcq",
    "zero_shot",
    "form/explicit",
    model_type="generative",
    size="1B-10B",
    license="mit",
    search="  Llama 3 ",
    columns=("license", "ci"),
    highlight="some-id",
    version="v1",
)


def leaderboard_parameters() -> set[str]:
    route = next(r for r in router.routes if getattr(r, "path", "") == "/api/v1/leaderboard")
    return _query_names(route.dependant)


def links_of(downloads: str) -> dict[str, dict[str, str]]:
    """format -> the query of the download link of that format."""
    found = {}
    for href in re.findall(r'href="([^"]+)"', downloads):
        query = {k: v[0] for k, v in parse_qs(urlsplit(html.unescape(href)).query).items()}
        found[query["format"]] = query
    return found


def test_every_control_of_the_board_has_a_parameter():
    assert {f.name for f in fields(BoardControls)} == set(PARAMETER_OF) | NOT_A_FILTER


def test_the_links_carry_every_filter_on_screen():
    params = download_params(EVERYTHING, sort="total:desc")
    assert params == {
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "tier": "form/explicit",
        "type": "generative",
        "size": "1B-10B",
        "license": "mit",
        "search": "Llama 3",
        "columns": "license,ci",
        "sort": "total:desc",
        "revision": "v1",
    }
    assert set(params) == {*PARAMETER_OF.values(), "sort"}
    links = links_of(download_links(EVERYTHING, "abc", sort="total:desc"))
    assert set(links) == {"csv", "json", "parquet"}
    for fmt, query in links.items():
        extra = {"format": fmt, **({"complete": "true"} if fmt == "json" else {})}
        assert query == {**params, **extra}, fmt  # the JSON link: the whole table, not a page


def test_every_parameter_of_the_links_is_one_the_api_takes():
    taken = leaderboard_parameters()
    for query in links_of(download_links(EVERYTHING, "abc", sort="total:desc")).values():
        assert set(query) <= taken, set(query) - taken


def test_unset_filters_stay_out_and_the_columns_are_always_said():
    default = BoardControls("prefeval", "mcq")
    assert (default.setting, default.tier, default.version) == (ALL, NO_TIER, LATEST)
    params = download_params(default)
    # the board's default columns: a download holds what the board shows, not every column
    assert params == {"suite": "prefeval", "task": "mcq", "columns": ",".join(default.columns)}
    assert default.columns != tuple(chooser_entries())
    none = download_params(BoardControls("prefeval", "mcq", columns=()))
    assert none["columns"] == "none"
    every = download_params(BoardControls("prefeval", "mcq", columns=None))
    assert "columns" not in every


def test_the_file_names_say_the_filters():
    downloads = download_links(EVERYTHING, "abc")
    names = re.findall(r'download="([^"]+)"', downloads)
    assert names == [
        f"prefeval-mcq-zero_shot-by-form-explicit-generative-1B-10B-mit-q-Llama_3-v1.{fmt}"
        for fmt in ("csv", "json", "parquet")
    ]
