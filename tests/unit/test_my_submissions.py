"""The ids a browser keeps for the status tab come back from its localStorage: anyone can write
anything there, so only well-formed ids are used, deduplicated and bounded."""

from __future__ import annotations

from space.my_submissions import MAX_REMEMBERED, remember, remembered_ids


def test_what_the_browser_sends_is_filtered_to_well_formed_ids():
    sent = [
        "0123456789abcdef",
        "../../etc/passwd",
        {"id": "x"},
        7,
        "0123456789abcdef",
        "<img src=x>",
        "fedcba9876543210",
    ]
    assert remembered_ids(sent) == ["0123456789abcdef", "fedcba9876543210"]
    assert remembered_ids({"ids": ["0123456789abcdef"]}) == [] and remembered_ids(None) == []
    assert len(remembered_ids([f"{i:016x}" for i in range(1000)])) == MAX_REMEMBERED


def test_new_ids_go_first_from_either_submit_tab():
    stored = ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"]
    assert remember("bbbbbbbbbbbbbbbb", stored) == ["bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"]
    assert remember({"ids": ["cccccccccccccccc", "dddddddddddddddd"], "messages": []}, stored)[
        :3
    ] == ["cccccccccccccccc", "dddddddddddddddd", "aaaaaaaaaaaaaaaa"]
    assert remember(None, stored) == stored and remember({}, "not a list") == []
