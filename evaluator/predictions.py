"""Validation of an uploaded predictions file (JSONL, one object per line).

The file is read line by line, so a file of any size is checked in bounded memory, and every
problem names the line and the field. Messages quote only what the submitter sent and the public
item ids: never a gold label.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import BinaryIO, Iterable

from evaluator.suite import Split, Task

MAX_REPORTED_PROBLEMS = 20


@dataclass(frozen=True)
class Problem:
    line: int | None  # 1-based line number, None for whole-file problems (missing ids)
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class PredictionProblem(ValueError):
    """Raised by a task's `parse_prediction` hook: what is wrong with one line, and in which field."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


def default_parser(task: Task):
    """The answer check a manifest declares: a label from `answer.labels`, or a rating in a range."""
    field = task.answer_field
    if task.answer_kind == "rating":
        low, high = task.answer_range

        def parse_rating(record: dict):
            if field not in record:
                raise PredictionProblem(field, "missing")
            value = record[field]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise PredictionProblem(field, f"{_shorten(value)} is not a number from {low} to {high}")
            return float(value)

        return parse_rating
    labels = frozenset(task.answer_labels)
    label_text = "-".join((task.answer_labels[0], task.answer_labels[-1])) if len(labels) > 2 else "/".join(task.answer_labels)

    def parse_label(record: dict):
        if field not in record:
            raise PredictionProblem(field, "missing")
        value = record[field]
        if not isinstance(value, str) or value not in labels:
            raise PredictionProblem(field, f"{_shorten(value)} is not one of {label_text}")
        return value

    return parse_label


class PredictionsError(ValueError):
    """The file was rejected; `problems` lists the first problems found, in file order."""

    def __init__(self, problems: list[Problem], total: int | None = None, filename: str = "predictions file"):
        self.problems = problems
        self.total = total if total is not None else len(problems)
        self.filename = filename
        shown = "; ".join(str(p) for p in problems)
        more = f" (and {self.total - len(problems)} more)" if self.total > len(problems) else ""
        super().__init__(f"{filename} rejected: {shown}{more}")

    def as_dict(self) -> dict:
        return {
            "message": str(self),
            "problems": [{"line": p.line, "field": p.field, "message": p.message} for p in self.problems],
            "problem_count": self.total,
        }


def _shorten(value: object, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_WS = r"[ \t\n\r]*"  # JSON whitespace, exactly what json.loads skips
_STRING = r'"((?:[^"\\\x00-\x1f])*)"'  # a JSON string without escapes or control characters


def _canonical_matchers(answer_field: str):
    """Fast path for the common line shape {"id": "...", "<answer field>": "..."} (either order).

    A line these patterns match is valid JSON whose json.loads value is exactly that two-key
    object of strings, so using the captured groups changes no outcome; any other line (escapes,
    other keys, other types, invalid JSON) goes through json.loads as before.
    """
    if answer_field == "id":
        return ()
    key = lambda name: '"' + re.escape(name) + '"'  # noqa: E731
    pair = lambda name: key(name) + _WS + ":" + _WS + _STRING  # noqa: E731
    id_first = re.compile(_WS + r"\{" + _WS + pair("id") + _WS + "," + _WS + pair(answer_field) + _WS + r"\}" + _WS)
    answer_first = re.compile(_WS + r"\{" + _WS + pair(answer_field) + _WS + "," + _WS + pair("id") + _WS + r"\}" + _WS)
    return ((id_first.fullmatch, 1, 2), (answer_first.fullmatch, 2, 1))


def read_predictions(
    lines: Iterable[bytes], task: Task, split: Split, filename: str = "predictions file"
) -> dict[str, object]:
    """Parse and check every line; return {item id: answer} or raise PredictionsError."""
    problems: list[Problem] = []
    total = 0

    def report(line: int | None, field: str | None, message: str) -> None:
        nonlocal total
        total += 1
        if len(problems) < MAX_REPORTED_PROBLEMS:
            problems.append(Problem(line, field, message))

    known = split.by_id
    answer_field = task.answer_field
    custom = getattr(task.hooks, "parse_prediction", None)
    parse = custom or default_parser(task)
    # The regex fast path yields string answers only: it serves the default label check alone.
    matchers = _canonical_matchers(answer_field) if custom is None and task.answer_kind == "label" else ()
    answers: dict[str, object] = {}
    first_seen: dict[str, int] = {}
    line_no = 0
    for line_no, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            report(line_no, None, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
            continue
        for fullmatch, id_group, answer_group in matchers:
            match = fullmatch(text)
            if match is not None:
                record = {"id": match.group(id_group), answer_field: match.group(answer_group)}
                break
        else:
            if not text.strip():
                continue  # blank lines (a trailing newline) are harmless
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                report(line_no, None, f"not valid JSON ({exc.msg} at column {exc.colno})")
                continue
        if not isinstance(record, dict):
            report(line_no, None, "expected a JSON object like {\"id\": ..., \"" + answer_field + "\": ...}")
            continue
        item_id = record.get("id")
        if item_id is None:
            report(line_no, "id", "missing")
            continue
        if not isinstance(item_id, str) or item_id not in known:
            report(line_no, "id", f"unknown id {_shorten(item_id)} (not in split {split.name} of {task.key})")
            continue
        if item_id in first_seen:
            report(line_no, "id", f"duplicate id {item_id!r} (first on line {first_seen[item_id]})")
            continue
        first_seen[item_id] = line_no
        try:
            answers[item_id] = parse(record)
        except PredictionProblem as problem:
            report(line_no, problem.field, problem.message)
    if line_no == 0:
        report(None, None, "the file is empty")
    # first_seen holds only known ids, so as many of them as items means none is missing
    missing = [] if len(first_seen) == len(split.items) else [item.id for item in split.items if item.id not in first_seen]
    if missing:
        listed = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        report(None, "id", f"{len(missing)} of {len(split.items)} item ids have no prediction ({listed})")
    if total:
        raise PredictionsError(problems, total, filename)
    return answers


def iter_lines(stream: BinaryIO, chunk_size: int = 1 << 20) -> Iterable[bytes]:
    """Lines of a binary stream, split on b'\\n' only (a stray \\r stays inside the JSON, where it is whitespace)."""
    pending = b""
    while chunk := stream.read(chunk_size):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending
