"""Validation of predictions files: every problem names its line and field, and never a gold label."""

from __future__ import annotations

import io
import re

import pytest
from unit_helpers import item, jsonl, make_task

from evaluator import suite as suite_module
from evaluator.predictions import (
    MAX_REPORTED_PROBLEMS,
    PredictionsError,
    iter_lines,
    read_predictions,
)
from evaluator.suite import TierGroup

GOOD = [
    {"id": "q1", "answer": "A"},
    {"id": "q2", "answer": "B"},
    {"id": "q3", "answer": "C"},
    {"id": "q4", "answer": "D"},
]


def check(task, lines):
    return read_predictions(lines, task, task.load_split(), "preds.jsonl")


def rejected(task, lines) -> PredictionsError:
    with pytest.raises(PredictionsError) as info:
        check(task, lines)
    return info.value


def only_problem(task, lines):
    error = rejected(task, lines)
    assert error.total == len(error.problems) == 1, error.problems
    return error.problems[0]


def test_valid_file_gives_answers(tiny_task):
    wrong = [
        {"id": "q1", "answer": "D"},
        {"id": "q2", "answer": "D"},
        {"id": "q3", "answer": "D"},
        {"id": "q4", "answer": "D"},
    ]
    assert check(tiny_task, jsonl(*wrong)) == {"q1": "D", "q2": "D", "q3": "D", "q4": "D"}
    # any order, extra fields ignored, blank and whitespace-only lines are fine
    lines = jsonl(GOOD[3], "", {**GOOD[0], "note": "x"}, "   ", GOOD[2], GOOD[1], "\r")
    assert check(tiny_task, lines) == {"q1": "A", "q2": "B", "q3": "C", "q4": "D"}


def test_not_json(tiny_task):
    problem = only_problem(tiny_task, jsonl(GOOD[0], "{not json", *GOOD[1:]))
    assert problem.line == 2 and problem.field is None
    assert "not valid JSON" in problem.message
    assert str(problem).startswith("line 2: ")


def test_not_utf8(tiny_task):
    lines = jsonl(*GOOD) + [b'{"id": "q9", "answer": "\xff"}']
    problem = only_problem(tiny_task, lines)
    assert problem.line == 5 and problem.field is None
    assert (
        "UTF-8" in problem.message and "byte 25 of the line" in problem.message
    )  # the 0xff is byte 25


def test_not_an_object(tiny_task):
    for value in ('["q1", "A"]', '"A"', "3", "null"):
        problem = only_problem(tiny_task, jsonl(*GOOD, value))
        assert problem.line == 5 and "expected a JSON object" in problem.message, value


def test_missing_id(tiny_task):
    problem = only_problem(tiny_task, jsonl(GOOD[0], {"answer": "B"}, *GOOD[1:]))
    assert (problem.line, problem.field, problem.message) == (2, "id", "missing")
    assert str(problem) == "line 2, field 'id': missing"


def test_unknown_id(tiny_task):
    for bad in ("q5", 1, ["q1"]):
        problem = only_problem(tiny_task, jsonl(*GOOD, {"id": bad, "answer": "A"}))
        assert (problem.line, problem.field) == (5, "id")
        assert "unknown id" in problem.message and "split test" in problem.message
    assert "'q5'" in only_problem(tiny_task, jsonl(*GOOD, {"id": "q5", "answer": "A"})).message


def test_duplicate_id_mentions_first_line(tiny_task):
    problem = only_problem(tiny_task, jsonl(*GOOD[:2], {"id": "q1", "answer": "C"}, *GOOD[2:]))
    assert (problem.line, problem.field) == (3, "id")
    assert "duplicate id 'q1'" in problem.message and "first on line 1" in problem.message


@pytest.mark.parametrize("answer", ["E", "a", " A", "", 1, None, ["A"], "AB"])
def test_answer_outside_labels(tiny_task, answer):
    problem = only_problem(tiny_task, jsonl(*GOOD[:3], {"id": "q4", "answer": answer}))
    assert (problem.line, problem.field) == (4, "answer")
    assert "is not one of A-D" in problem.message


def test_missing_answer_field(tiny_task):
    problem = only_problem(tiny_task, jsonl(*GOOD[:3], {"id": "q4", "prediction": "D"}))
    assert (problem.line, problem.field, problem.message) == (4, "answer", "missing")


@pytest.mark.parametrize(
    "line, field, misspelt",
    [
        ({"id": "q4", "anser": "D"}, "answer", "anser"),
        ({"id": "q4", "Answer": "D"}, "answer", "Answer"),
        ({"ID": "q4", "answer": "D"}, "id", "ID"),
        ({"idd": "q4", "answer": "D"}, "id", "idd"),
    ],
)
def test_a_missing_field_names_the_key_that_looks_misspelt(tiny_task, line, field, misspelt):
    problem = rejected(tiny_task, jsonl(*GOOD[:3], line)).problems[0]  # (then: q4 has none)
    assert (problem.line, problem.field) == (4, field)
    assert problem.message == f"missing (the line has {misspelt!r}: misspelt?)"


def test_answer_field_from_the_task():
    task = make_task(
        [item("a1", "yes", g="t")],
        (TierGroup("g", "G", ("t",), {}),),
        labels=("yes", "no"),
        answer_field="label",
    )
    try:
        assert check(task, jsonl({"id": "a1", "label": "no"})) == {"a1": "no"}
        problem = only_problem(task, jsonl({"id": "a1", "label": "maybe"}))
        assert problem.field == "label" and "yes/no" in problem.message
    finally:
        suite_module._SPLIT_CACHE.pop(task.key, None)


def test_empty_file(tiny_task):
    error = rejected(tiny_task, [])
    messages = [p.message for p in error.problems]
    assert "the file is empty" in messages
    assert error.problems[0].line is None
    # an empty file also misses every id
    assert any("4 of 4 item ids have no prediction" in m for m in messages)
    assert list(iter_lines(io.BytesIO(b""))) == []


def test_missing_ids_counted(tiny_task):
    problem = only_problem(tiny_task, jsonl(GOOD[0], GOOD[2]))
    assert problem.line is None and problem.field == "id"
    assert problem.message.startswith("2 of 4 item ids have no prediction")
    assert "q2" in problem.message and "q4" in problem.message and "q1" not in problem.message
    assert str(problem).startswith("file, field 'id'")


def test_missing_id_list_is_shortened():
    items = [item(f"m{i:02d}", "A", g="t") for i in range(12)]
    task = make_task(items, (TierGroup("g", "G", ("t",), {}),))
    try:
        problem = only_problem(task, jsonl({"id": "m00", "answer": "A"}))
        assert problem.message.startswith(
            "11 of 12 item ids have no prediction (m01, m02, m03, m04, m05, ...)"
        )
        assert "m06" not in problem.message
    finally:
        suite_module._SPLIT_CACHE.pop(task.key, None)


def test_problems_in_file_order(tiny_task):
    error = rejected(
        tiny_task, jsonl("nope", {"answer": "A"}, {"id": "q1", "answer": "Z"}, *GOOD[1:])
    )
    assert [(p.line, p.field) for p in error.problems] == [(1, None), (2, "id"), (3, "answer")]
    # q1 had an invalid answer but was seen: it is not also reported missing
    assert error.total == 3


def test_cap_on_reported_problems_keeps_total(tiny_task):
    # 30 distinct problems (unknown ids are one problem with a count: see test_unknown_ids.py)
    bad = [" " * i + "x" for i in range(30)]  # not JSON, at 30 different columns
    error = rejected(tiny_task, jsonl(*GOOD[:3], *bad))
    assert len(error.problems) == MAX_REPORTED_PROBLEMS == 20
    assert error.total == 31  # 30 lines not JSON + q4 missing
    assert [p.line for p in error.problems] == list(range(4, 24))
    assert "(and 11 more)" in str(error)
    body = error.as_dict()
    assert body["problem_count"] == 31 and len(body["problems"]) == 20
    assert body["problems"][0] == {
        "line": 4,
        "field": None,
        "message": body["problems"][0]["message"],
    }


def test_long_values_are_shortened(tiny_task):
    problem = only_problem(tiny_task, jsonl(*GOOD[:3], {"id": "q4", "answer": "X" * 500}))
    assert len(problem.message) < 100


BAD_FILE = [
    b"{oops",
    b"\xfe\xff",
    b"[1]",
    b'{"answer": "A"}',
    b'{"id": "nope", "answer": "A"}',
    b'{"id": "q1", "answer": "E"}',
    b'{"id": "q1", "answer": "A"}',
    b'{"id": "q2"}',
    b'{"id": "q3", "answer": 3}',
]


def test_messages_do_not_depend_on_the_gold():
    """The same bad file against two splits that differ only in gold gives identical messages,
    so no message can carry a gold label (in any form)."""
    groups = (TierGroup("g", "G", ("t",), {}),)
    gold_a = make_task(
        [
            item("q1", "A", g="t"),
            item("q2", "A", g="t"),
            item("q3", "A", g="t"),
            item("q4", "A", g="t"),
        ],
        groups,
    )
    gold_b = make_task(
        [
            item("q1", "B", g="t"),
            item("q2", "C", g="t"),
            item("q3", "D", g="t"),
            item("q4", "C", g="t"),
        ],
        groups,
    )
    try:
        errors = [rejected(task, BAD_FILE) for task in (gold_a, gold_b)]
        # suite names differ (unique per tiny task), so compare with the task key masked out
        texts = [str(e).replace(task.key, "<task>") for e, task in zip(errors, (gold_a, gold_b))]
        assert texts[0] == texts[1]
        assert errors[0].total == errors[1].total == 10  # 9 bad lines + q4 missing
        for error in errors:
            for problem in error.problems:
                assert not re.search(
                    r"(?i:gold|correct|should be)|expected \W?[A-D]\b", problem.message
                )
    finally:
        for task in (gold_a, gold_b):
            suite_module._SPLIT_CACHE.pop(task.key, None)


def test_iter_lines_splits_on_newline_only():
    stream = io.BytesIO(b'{"a": 1}\r\n{"b": 2}\n\n{"c": 3}')
    assert list(iter_lines(stream)) == [b'{"a": 1}\r', b'{"b": 2}', b"", b'{"c": 3}']
    # a line spanning chunk boundaries is reassembled
    long_line = b'{"id": "' + b"x" * 100 + b'"}'
    assert list(iter_lines(io.BytesIO(long_line + b"\n" + long_line), chunk_size=7)) == [
        long_line,
        long_line,
    ]


# Lines near the fast path's edge: each must give the same outcome with and without it.
TRICKY_LINES = [
    '{"id": "q1", "answer": "A"}',
    '{"id":"q1","answer":"A"}',
    ' \t{ "id" : "q1" ,\r"answer" : "A" } \r',
    '{"answer": "A", "id": "q1"}',
    '{"id": "q1", "answer": "A", "answer": "B"}',
    '{"id": "q1", "id": "q2", "answer": "A"}',
    '{"id": "q\\u0031", "answer": "\\u0041"}',
    '{"id": "q1", "answer": "A\\n"}',
    '{"id": "q1", "answer": "A\t"}',
    '{"id": "q1\x00", "answer": "A"}',
    '\ufeff{"id": "q1", "answer": "A"}',
    '{"id": "q1", "answer": "A"}\x0b',
    '{"id": "q1", "answer": "A"}\u00a0',
    '{"id": "q1", "answer": "A"} x',
    '{"id": "q1", "answer": "A",}',
    '{"id": "q1", "answer": "A"',
    '{"id": "q1", "Answer": "A"}',
    '{"ID": "q1", "answer": "A"}',
    '{"id": "q1", "answer": 1}',
    '{"id": "q1", "answer": null}',
    '{"id": 1, "answer": "A"}',
    '{"id": "q1", "answer": "Ä"}',
    '{"id": "q1 ", "answer": "A"}',
    "{'id': 'q1', 'answer': 'A'}",
    '{"id": "q1", "answer": "A"}\n',
    '{"id": "q1", "answer": "\\"A"}',
    '{"id": "q1", "answer": "A\\\\"}',
]


@pytest.mark.parametrize("line", TRICKY_LINES)
def test_fast_path_matches_json_loads(tiny_task, monkeypatch, line):
    from evaluator import predictions

    def outcome():
        try:
            return check(tiny_task, jsonl(line, *GOOD[1:]))
        except PredictionsError as exc:
            return str(exc)

    fast = outcome()
    monkeypatch.setattr(predictions, "_canonical_matchers", lambda answer_field: ())
    assert outcome() == fast


def test_fast_path_is_taken_for_plain_lines():
    from evaluator.predictions import _canonical_matchers

    (id_first, _, _), (answer_first, _, _) = _canonical_matchers("answer")
    assert id_first('{"id": "q1", "answer": "A"}').groups() == ("q1", "A")
    assert answer_first('{"answer":"A","id":"q1"}').groups() == ("A", "q1")
    assert id_first('{"id": "q\\u0031", "answer": "A"}') is None  # escapes go to json.loads
