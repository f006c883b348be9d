"""Rows whose predictions are byte-identical to another row's (the same file uploaded under a second
name or setting) are marked as copies and ranked once, on the board and in the overview."""

from __future__ import annotations

import pandas as pd
from unit.test_overview import record

from leaderboard.board import model_facts, ranked_board
from leaderboard.table import records_to_scores
from space.board_view import render_board

SAME = "7" * 64


def test_the_same_file_under_a_second_setting_is_a_copy_not_a_second_rank_1():
    records = [
        record(
            "first",
            "Uploader",
            0.7,
            protocol="uploaded predictions",
            predictions=SAME,
            at="2026-01-01T00:00:00+00:00",
        ),
        record(
            "again",
            "Uploader",
            0.7,
            protocol="uploaded predictions",
            predictions=SAME,
            setting="reminder",
            at="2026-01-02T00:00:00+00:00",
        ),
        record("other", "Other", 0.5, protocol="uploaded predictions", predictions="8" * 64),
    ]
    board, cells = ranked_board(records_to_scores(records), model_facts(records), "prefeval", "mcq")
    rows = board.set_index("submission_id")
    assert rows.loc["first", "rank"] == 1
    assert pd.isna(rows.loc["again", "rank"])
    assert rows.loc["again", "duplicate_of"] == "Uploader (zero_shot)"
    assert rows.loc["other", "rank"] == 2 and rows.loc["other", "duplicate_of"] == ""
    page = render_board(board, cells)
    assert page.count("= copy") == 1 and "one result, ranked once" in page


def test_model_runs_with_the_same_answers_are_copies_too():
    from submissions.jobs import answers_sha256

    answers = {"q1": "A", "q2": "B"}
    digest = answers_sha256(answers)
    assert digest == answers_sha256({"q2": "B", "q1": "A"})  # the order answers came in: no matter
    assert digest != answers_sha256({"q1": "A", "q2": "C"})
    records = []
    for sid, name, at in (("run1", "Model", "2026-01-01"), ("run2", "Model copy", "2026-01-02")):
        rec = record(sid, name, 0.7, at=at + "T00:00:00+00:00")
        rec["provenance"]["answers_sha256"] = digest
        records.append(rec)
    board, _ = ranked_board(records_to_scores(records), model_facts(records), "prefeval", "mcq")
    rows = board.set_index("submission_id")
    assert rows.loc["run1", "rank"] == 1 and pd.isna(rows.loc["run2", "rank"])
    assert rows.loc["run2", "duplicate_of"] == "Model (zero_shot)"
