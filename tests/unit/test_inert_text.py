"""Text users supply is inert where it is shown: Markdown in the UI, spreadsheets opening the CSV."""

from __future__ import annotations

import csv
import html
import io

import pandas as pd

from leaderboard.table import export, neutralise_formula
from space.ui import format_error, format_status, inert
from submissions.intake import SubmissionError

PAYLOADS = [
    '<img src=x onerror="alert(1)">',
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![x](https://evil.example/x.png)",
    "https://evil.example/a",
    "www.evil.example",
    "**bold** _em_ `code`",
    '=HYPERLINK("https://evil.example","x")',
    "&lt;b&gt;",
    "a\nb\r\nc",
    "\u202eevil",
]


def test_inert_keeps_the_text_and_drops_every_syntax_character():
    for payload in PAYLOADS:
        out = inert(payload)
        assert html.unescape(out) == payload  # shown exactly as typed
        assert not set(out) & set("<>[]()!*_`:/\\\n\r="), (
            out
        )  # nothing Markdown or HTML could act on


def test_status_and_errors_quote_user_text_inertly():
    status = {
        "id": "abc123",
        "model_name": PAYLOADS[0],
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "state": "failed",
        "error": PAYLOADS[2],
    }
    shown = format_status(status)
    assert "<img" not in shown and "](javascript" not in shown
    assert html.unescape(shown).count(PAYLOADS[0]) == 1 and PAYLOADS[2] in html.unescape(shown)
    error = SubmissionError(422, f"unknown suite {PAYLOADS[1]!r}", field="suite")
    assert "<script" not in format_error(error) and PAYLOADS[1] in html.unescape(
        format_error(error)
    )


def test_csv_export_neutralises_formulas_but_not_numbers():
    names = ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "plain", "a=b"]
    frame = pd.DataFrame({"model_name": names, "total": [-0.5] * len(names)})
    rows = list(csv.DictReader(io.StringIO(export(frame, "csv").decode(), newline="")))
    assert [r["model_name"] for r in rows] == ["'" + n if n[0] in "=+-@\t\r" else n for n in names]
    assert {r["total"] for r in rows} == {"-0.5"}
    assert neutralise_formula(3) == 3 and neutralise_formula("x=1") == "x=1"
    # JSON and parquet are data, not spreadsheets: unchanged
    assert pd.read_parquet(io.BytesIO(export(frame, "parquet")))["model_name"].tolist() == names
