"""The API's parameters as its schema states them: paging in every format, filter values of another
suite or task told apart from values no suite declares, and the submission form's text patterns
agreeing with what the intake accepts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.api import http_url_schema, text_schema
from backend.leaderboard_http import _fast_request, page_of
from leaderboard.readpath import DEFAULT_PAGE_ROWS, Filters, Page, UnknownFilter, check_filters
from submissions.names import InvalidName, normalise_text


def test_paging_means_the_same_in_every_format():
    # without paging: as before (the JSON's first page; the complete download)
    assert page_of("json", None, 0) == Page(0, DEFAULT_PAGE_ROWS) == Page()
    assert page_of("csv", None, 0) is None and page_of("parquet", None, 0) is None
    assert page_of("json", None, 0, complete=True) is None
    # limit and offset page every format; a download without a limit runs to the last row
    assert page_of("csv", 2, 0) == Page(0, 2) and page_of("parquet", 5, 10) == Page(10, 5)
    assert page_of("csv", None, 3) == Page(3, None) and Page(3, None).end is None
    assert page_of("json", 2, 4, complete=True) == Page(4, 2)
    assert page_of("json", None, 4, complete=True) == Page(4, None)
    assert page_of("json", None, 4) == Page(4, DEFAULT_PAGE_ROWS)


def test_the_fast_path_reads_paged_downloads_as_the_route_does():
    filters, fmt, page, _ = _fast_request(b"suite=prefeval&format=csv&limit=2")
    assert (filters.suite, fmt, page) == ("prefeval", "csv", Page(0, 2))
    assert _fast_request(b"complete=true&offset=3")[2] == Page(3, None)
    assert _fast_request(b"format=csv")[2] is None
    assert _fast_request(b"suite=nope") is None  # the route answers the 422


@pytest.mark.parametrize(
    "filters, parameter, scoped",
    [
        (Filters("nope"), "suite", False),
        (Filters("prefeval", "nope"), "task", False),
        (Filters("prefeval", "binary_choice"), "task", True),
        (Filters("personafeedback", setting="zero_shot"), "setting", True),
        (Filters("personafeedback", setting="zero_shot+judge:x"), "setting", True),
        (Filters("prefeval", setting="bogus"), "setting", False),
        (Filters("prefeval", "mcq", tier="turns/10"), "tier", True),
        (Filters("prefeval", "mcq", tier="bogus"), "tier", False),
        (Filters(task="mcq", tier="cell/specific/easy"), "tier", True),
    ],
)
def test_values_of_another_suite_are_told_apart(filters, parameter, scoped):
    """A value no suite declares: no scope (the API's 422); a real value the other filters rule
    out: the scope that lacks it (the API's 404), with that scope's allowed values."""
    with pytest.raises(UnknownFilter) as caught:
        check_filters(filters)
    assert caught.value.parameter == parameter
    assert (caught.value.scope is not None) == scoped, str(caught.value)
    assert caught.value.value not in caught.value.allowed
    assert str(caught.value).startswith(f"{parameter}: ") and "allowed: " in str(caught.value)


def test_filters_every_suite_declares_still_pass():
    check_filters(Filters("prefeval", "mcq", "zero_shot+judge:some-judge", "explicit"))
    check_filters(Filters(task="binary_choice", tier="cell/specific/easy"))


def _accepted(value: str, field: str, max_chars: int, multiline: bool = False) -> bool:
    try:
        text = normalise_text(value, field, max_chars, multiline=multiline)
    except InvalidName:
        return False
    return bool(text)


def _pattern(schema: dict) -> re.Pattern:
    return re.compile(schema["pattern"].removesuffix("$") + r"\Z")  # `$` as JSON Schema reads it


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_the_forms_text_patterns_agree_with_the_intake(value):
    """What the schema calls a valid name or description, the intake accepts, so a schema-valid
    submission is never refused for its text."""
    name = _pattern(text_schema(200, non_blank=True))
    description = _pattern(text_schema(5000, multiline=True))
    if name.search(value):
        assert _accepted(value, "model_name", 200), repr(value)
    if description.search(value):
        assert _accepted(value, "description", 5000, multiline=True) or not value.strip()

    url = _pattern(http_url_schema())
    assert url.search("https://example.org:8080/a?b#c") and not url.search("http://[")
