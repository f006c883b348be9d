"""Hostile predictions files: every limit refuses with its name, the line and the field, in
bounded time, and nothing reaches json.loads that would make it raise (RecursionError, the
4,300-digit int limit) or run long."""

from __future__ import annotations

import io
import json

import pytest
from unit_helpers import jsonl

from evaluator.predictions import (
    EXTRA_LINES,
    MAX_DEPTH,
    MAX_FIELD_CHARS,
    MAX_ID_CHARS,
    MAX_LINE_BYTES,
    MAX_NUMBER_DIGITS,
    OverlongLine,
    PredictionsError,
    iter_lines,
    read_predictions,
)

GOOD = [
    {"id": "q1", "answer": "A"},
    {"id": "q2", "answer": "B"},
    {"id": "q3", "answer": "C"},
    {"id": "q4", "answer": "D"},
]


def problems_of(task, lines):
    with pytest.raises(PredictionsError) as info:
        read_predictions(lines, task, task.load_split(), "preds.jsonl")
    return info.value.problems


def test_deep_nesting_is_refused_before_the_parser(tiny_task):
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        deep = opener * 100_000 + "1" + closer * 100_000  # json.loads raises RecursionError on this
        (problem,) = [p for p in problems_of(tiny_task, jsonl(*GOOD, deep)) if p.line == 5]
        assert problem.field is None and "limit: nesting depth" in problem.message, problem
    # brackets inside strings do not count; MAX_DEPTH levels are fine
    fine = {
        "id": "q1",
        "answer": "A",
        "note": "[" * 1000,
        "nested": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)),
    }
    assert read_predictions(jsonl(fine, *GOOD[1:]), tiny_task, tiny_task.load_split())["q1"] == "A"


def test_huge_integer_is_refused_before_the_parser(tiny_task):
    line = (
        '{"id": "q1", "answer": "A", "n": ' + "9" * 5000 + "}"
    )  # json.loads: ValueError (int digits limit)
    (problem,) = [p for p in problems_of(tiny_task, jsonl(line, *GOOD[1:])) if p.line == 1]
    assert "limit: number size" in problem.message
    # digits inside a string are not a number; a 100-digit number is fine
    ok = {"id": "q1", "answer": "A", "s": "9" * 5000, "n": int("9" * MAX_NUMBER_DIGITS)}
    assert read_predictions(jsonl(ok, *GOOD[1:]), tiny_task, tiny_task.load_split())["q1"] == "A"


def test_long_fields_are_named(tiny_task):
    (problem,) = [
        p
        for p in problems_of(
            tiny_task, jsonl(*GOOD, {"id": "x" * (MAX_ID_CHARS + 1), "answer": "A"})
        )
    ]
    assert (problem.line, problem.field) == (5, "id") and "limit: field length" in problem.message
    long_note = {"id": "q1", "answer": "A", "note": "n" * (MAX_FIELD_CHARS + 1)}
    (problem,) = [p for p in problems_of(tiny_task, jsonl(long_note, *GOOD[1:])) if p.line == 1]
    assert problem.field == "note" and "limit: field length" in problem.message


def test_overlong_line_is_cut_while_streaming(tiny_task):
    body = (
        "\n".join(json.dumps(r) for r in GOOD[:2])
        + "\n"
        + "x" * (3 * MAX_LINE_BYTES)
        + "\n"
        + "\n".join(json.dumps(r) for r in GOOD[2:])
        + "\n"
    ).encode()
    lines = list(iter_lines(io.BytesIO(body), chunk_size=4096))
    assert [len(line) for line in lines[:2]] == [len(json.dumps(r)) for r in GOOD[:2]]
    assert isinstance(lines[2], OverlongLine) and len(lines[2]) == MAX_LINE_BYTES
    assert [json.loads(line) for line in lines[3:]] == GOOD[2:]
    (problem,) = problems_of(tiny_task, iter_lines(io.BytesIO(body), chunk_size=4096))
    assert problem.line == 3 and "limit: line length" in problem.message
    # a file that is one endless line, no newline at all: one problem, memory bounded by the limit
    endless = iter_lines(io.BytesIO(b"{" * (5 * MAX_LINE_BYTES)), chunk_size=65536)
    assert [type(line) for line in endless] == [OverlongLine]


def test_iter_lines_matches_split_on_ordinary_files():
    body = b'{"a": 1}\n\n{"b": 2}\r\n  \n{"c": 3}'
    for chunk in (1, 2, 3, 7, 1 << 20):
        assert list(iter_lines(io.BytesIO(body), chunk_size=chunk)) == body.split(b"\n"), chunk


def test_too_many_lines_stops_reading(tiny_task):
    count = {"n": 0}

    def endless():  # a file of `{}` lines that never ends: reading must stop by itself
        while True:
            count["n"] += 1
            yield b"{}"

    with pytest.raises(PredictionsError) as info:
        read_predictions(endless(), tiny_task, tiny_task.load_split(), "preds.jsonl")
    limit = len(tiny_task.load_split().items) + EXTRA_LINES
    assert count["n"] == limit + 1  # the generator was not read past the first line over the limit
    assert f"line {limit + 1}: more than {limit} lines" in str(
        info.value
    ) and "limit: line count" in str(info.value)


def test_no_input_makes_the_parser_raise(tiny_task, monkeypatch):
    """Whatever a line holds, read_predictions raises PredictionsError or returns: fuzz a few shapes."""
    shapes = [
        "[" * 5000,
        "{" * 5000,
        '{"id": ' + "1" * 4400 + "}",
        "-" + "1" * 10_000,
        "1e999999",
        "NaN",
        '{"id": "q1", "answer": "A"' + ', "k": []' * 5000 + "}",
        "\x00",
        '"\\ud800"',
    ]
    for shape in shapes:
        try:
            read_predictions(jsonl(*GOOD, shape), tiny_task, tiny_task.load_split())
        except PredictionsError:
            pass


def _hostile_lines(size: int) -> list[str]:
    """Lines built to make a backtracking string regex scan to the end from every quote."""
    pairs = (size - 41) // 2
    return [
        '"' + '\\"' * pairs + "[" * 40,  # an unterminated string of escaped quotes
        '{"id": "' + '\\"' * pairs + "{" * 33,
        '["' + '\\\\"' * ((size - 40) // 3) + "[" * 33,
        '"' * (size - 40) + "[" * 40,
    ]


def test_worst_lines_at_the_limit_are_refused_in_linear_time(tiny_task):
    """Every string and bracket scan is linear: the quadratic string regex took 27.8 s on a
    100 KB line of `"` and `\\"` (minutes at 256 KiB) and held the interpreter lock meanwhile."""
    import time

    for hostile in _hostile_lines(MAX_LINE_BYTES - 1):
        assert len(hostile.encode()) <= MAX_LINE_BYTES
        started = time.process_time()
        problems = problems_of(tiny_task, jsonl(hostile, *GOOD))
        cpu = time.process_time() - started
        assert cpu < 1.0, (hostile[:20], cpu)
        assert problems[0].line == 1 and problems[0].field is None, problems[0]


def test_a_utf8_byte_order_mark_is_accepted(tiny_task):
    lines = jsonl(*GOOD)
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    assert read_predictions(lines, tiny_task, tiny_task.load_split())["q1"] == "A"
    # only at the start of the file: a BOM inside is still an error naming its line
    later = jsonl(*GOOD)
    later[2] = b"\xef\xbb\xbf" + later[2]
    assert problems_of(tiny_task, later)[0].line == 3


def test_the_same_problem_on_every_line_is_said_once(tiny_task):
    wrong = [{"id": g["id"], "answer": "yes"} for g in GOOD]
    with pytest.raises(PredictionsError) as info:
        read_predictions(jsonl(*wrong), tiny_task, tiny_task.load_split(), "p.jsonl")
    (problem,) = info.value.problems
    assert (problem.count, problem.lines, problem.field) == (4, (1, 2, 3, 4), "answer")
    assert (
        str(info.value)
        == "p.jsonl rejected: 4 lines (1, 2, 3, 4), field 'answer': 'yes' is not one of A-D"
    )
    assert info.value.as_dict()["problems"][0]["count"] == 4 and info.value.total == 4
