"""Validation of an uploaded predictions file (JSONL, one object per line).

The file is read line by line, so a file of any size is checked in bounded memory, and every
problem names the line and the field. Messages quote only what the submitter sent and the public
item ids: never a gold label.

Hostile files cost bounded CPU and memory: a line is cut off at `MAX_LINE_BYTES` while it is read,
nesting depth and number length are checked before `json.loads` sees the line (it raises
RecursionError on deep nesting and ValueError on integers over 4,300 digits), reading stops at the
first line past the split's item count (plus `EXTRA_LINES`), and string fields are bounded. Every
such refusal names the limit, the line and, where there is one, the field.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Mapping

from evaluator.suite import Split, Task

MAX_REPORTED_PROBLEMS = 20  # distinct problems listed; repeats of one are counted into it
SHOWN_LINES = 5  # line numbers listed for a problem repeated on many lines
UTF8_BOM = b"\xef\xbb\xbf"

# Input limits (see the module docstring). Generous for honest files: a prediction line is a few
# short fields; the longest legitimate one is an open-ended response (realpref: 20,000 characters).
MAX_LINE_BYTES = 256 * 1024
MAX_DEPTH = 32  # levels of nested arrays/objects in one line
MAX_NUMBER_DIGITS = 100  # digits in a run inside one number
MAX_ID_CHARS = 256
MAX_FIELD_CHARS = 64 * 1024  # any string field
EXTRA_LINES = 1000  # lines allowed beyond one per item (blank lines)


@dataclass(frozen=True)
class Problem:
    line: int | None  # 1-based line number (the first, when repeated), None for whole-file problems
    field: str | None
    message: str
    count: int = 1  # how many lines had exactly this problem
    lines: tuple[int, ...] = ()  # the first few of those lines

    def __str__(self) -> str:
        if self.count > 1:
            shown = ", ".join(str(n) for n in self.lines)
            more = ", ..." if self.count > len(self.lines) else ""
            where = f"{self.count} lines ({shown}{more})"
        else:
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


def missing_message(field: str, record: Mapping) -> str:
    """The message for a missing `field`, naming the line's key that looks misspelt ("anser", "ID")."""
    others = [k for k in record if isinstance(k, str) and k not in (field, "id")]
    alike = [k for k in others if k.strip().lower() == field] or difflib.get_close_matches(
        field, others, n=1, cutoff=0.6
    )
    return f"missing (the line has {_shorten(alike[0])}: misspelt?)" if alike else "missing"


def missing(field: str, record: Mapping) -> PredictionProblem:
    """A parser's problem for a line without `field` (missing_message says what it has instead)."""
    return PredictionProblem(field, missing_message(field, record))


def default_parser(task: Task):
    """The answer check a manifest declares: a label from `answer.labels`, or a rating in a range."""
    field = task.answer_field
    if task.answer_kind == "rating":
        low, high = task.answer_range

        def parse_rating(record: dict):
            if field not in record:
                raise missing(field, record)
            value = record[field]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not low <= value <= high
            ):
                raise PredictionProblem(
                    field, f"{_shorten(value)} is not a number from {low} to {high}"
                )
            return float(value)

        return parse_rating
    labels = frozenset(task.answer_labels)
    label_text = (
        "-".join((task.answer_labels[0], task.answer_labels[-1]))
        if len(labels) > 2
        else "/".join(task.answer_labels)
    )

    def parse_label(record: dict):
        if field not in record:
            raise missing(field, record)
        value = record[field]
        if not isinstance(value, str) or value not in labels:
            raise PredictionProblem(field, f"{_shorten(value)} is not one of {label_text}")
        return value

    return parse_label


class PredictionsError(ValueError):
    """The file was rejected; `problems` lists the first problems found, in file order."""

    def __init__(
        self, problems: list[Problem], total: int | None = None, filename: str = "predictions file"
    ):
        self.problems = problems
        self.total = total if total is not None else len(problems)
        self.filename = filename
        shown = "; ".join(str(p) for p in problems)
        listed = sum(p.count for p in problems)
        more = f" (and {self.total - listed} more)" if self.total > listed else ""
        super().__init__(f"{filename} rejected: {shown}{more}")

    def as_dict(self) -> dict:
        return {
            "message": str(self),
            "problems": [
                {"line": p.line, "field": p.field, "message": p.message}
                | ({"count": p.count, "lines": list(p.lines)} if p.count > 1 else {})
                for p in self.problems
            ],
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
    id_first = re.compile(
        _WS + r"\{" + _WS + pair("id") + _WS + "," + _WS + pair(answer_field) + _WS + r"\}" + _WS
    )
    answer_first = re.compile(
        _WS + r"\{" + _WS + pair(answer_field) + _WS + "," + _WS + pair("id") + _WS + r"\}" + _WS
    )
    return ((id_first.fullmatch, 1, 2), (answer_first.fullmatch, 2, 1))


# A JSON string, or an unterminated one running to the end of the line. The optional closing quote
# matters: with a required one, a line of `"` and many `\"` fails at every start position after
# scanning to the end (quadratic: 27 s for 100 KB); this way every character is consumed once.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
_BRACKET = re.compile(r"[\[\]{}]")
_LONG_DIGITS = re.compile(r"[0-9]{%d,}" % (MAX_NUMBER_DIGITS + 1))


def structure_problem(text: str) -> str | None:
    """Why `text` must not reach json.loads (too deeply nested, a too long number), else None.

    Cheap for ordinary lines (two C-level scans); strings are blanked out only when a suspicious
    bracket count or digit run shows up, so brackets and digits inside strings never count.
    """
    suspicious_depth = text.count("[") + text.count("{") > MAX_DEPTH
    suspicious_digits = _LONG_DIGITS.search(text) is not None
    if not (suspicious_depth or suspicious_digits):
        return None
    bare = _JSON_STRING.sub('""', text)
    if suspicious_digits and _LONG_DIGITS.search(bare):
        return f"a number has more than {MAX_NUMBER_DIGITS} digits (limit: number size)"
    if suspicious_depth:
        depth = 0
        for bracket in _BRACKET.finditer(bare):
            depth += 1 if bracket.group() in "[{" else -1
            if depth > MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep (limit: nesting depth)"
    return None


def field_problem(record: dict) -> tuple[str, str] | None:
    """(field, why) for the first top-level field over its length limit, else None."""
    item_id = record.get("id")
    if isinstance(item_id, str) and len(item_id) > MAX_ID_CHARS:
        return "id", f"longer than {MAX_ID_CHARS} characters (limit: field length)"
    for name, value in record.items():
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            return _shorten(name, 60).strip(
                "'"
            ), f"longer than {MAX_FIELD_CHARS} characters (limit: field length)"
    return None


def read_predictions(
    lines: Iterable[bytes], task: Task, split: Split, filename: str = "predictions file"
) -> dict[str, object]:
    """Parse and check every line; return {item id: answer} or raise PredictionsError."""
    # Problems with the same field and message (every line 'not valid JSON' in a CSV sent by
    # mistake) are said once, with their count and first lines, not as many identical lines.
    problems: dict[tuple[str | None, str], Problem] = {}
    total = 0

    def report(
        line: int | None, field: str | None, message: str, always_shown: bool = False
    ) -> None:
        nonlocal total
        total += 1
        key = (field, message)
        seen = problems.get(key)
        if seen is not None:
            lines = seen.lines + ((line,) if len(seen.lines) < SHOWN_LINES and line else ())
            problems[key] = Problem(seen.line, field, message, seen.count + 1, lines)
        elif len(problems) < MAX_REPORTED_PROBLEMS:
            problems[key] = Problem(line, field, message, 1, (line,) if line else ())
        elif always_shown:  # why reading stopped must be in the answer, after many other problems
            problems.pop(next(reversed(problems)))
            problems[key] = Problem(line, field, message, 1, (line,) if line else ())

    known = split.by_id
    answer_field = task.answer_field
    custom = task.hooks.parse_prediction
    parse = custom or default_parser(task)
    # The regex fast path yields string answers only: it serves the default label check alone.
    matchers = (
        _canonical_matchers(answer_field) if custom is None and task.answer_kind == "label" else ()
    )
    answers: dict[str, object] = {}
    first_seen: dict[str, int] = {}
    unknown: list[object] = []  # the first UNKNOWN_SAMPLE unknown ids, for the message and hint
    unknown_fields: set[str] = set()  # the fields of their lines (which task's answer they give)
    line_no = 0
    max_lines = len(split.items) + EXTRA_LINES
    for line_no, raw in enumerate(lines, start=1):
        if line_no > max_lines:
            report(
                line_no,
                None,
                f"more than {max_lines} lines: the split has {len(split.items)} items, one line "
                f"each (limit: line count); the rest of the file was not read",
                always_shown=True,
            )
            break
        if isinstance(raw, OverlongLine):
            report(line_no, None, f"longer than {MAX_LINE_BYTES} bytes (limit: line length)")
            continue
        if line_no == 1 and raw.startswith(UTF8_BOM):  # editors on Windows write one
            raw = type(raw)(raw[len(UTF8_BOM) :])
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
            too_complex = structure_problem(text)
            if too_complex:
                report(line_no, None, too_complex)
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                report(line_no, None, f"not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            except (
                ValueError,
                RecursionError,
            ) as exc:  # a limit the pre-check missed: still a 4xx, never a 500
                report(line_no, None, f"not accepted by the JSON parser ({type(exc).__name__})")
                continue
        if not isinstance(record, dict):
            report(
                line_no,
                None,
                'expected a JSON object like {"id": ..., "' + answer_field + '": ...}',
            )
            continue
        too_long = field_problem(record)
        if too_long:
            report(line_no, *too_long)
            continue
        item_id = record.get("id")
        if item_id is None:
            report(line_no, "id", missing_message("id", record))
            continue
        if not isinstance(item_id, str) or item_id not in known:
            # one problem for all unknown ids (its message, with examples, is written at the end)
            report(line_no, "id", UNKNOWN_IDS)
            if len(unknown) < UNKNOWN_SAMPLE:
                unknown.append(item_id)
                unknown_fields.update(k for k in record if isinstance(k, str))
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
    missing = (
        []
        if len(first_seen) == len(split.items)
        else [item.id for item in split.items if item.id not in first_seen]
    )
    if missing:
        listed = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        report(
            None,
            "id",
            f"{len(missing)} of {len(split.items)} item ids have no prediction ({listed})",
        )
    if total:
        if ("id", UNKNOWN_IDS) in problems:
            seen = problems[("id", UNKNOWN_IDS)]
            message = unknown_ids_message(
                unknown, unknown_fields, seen.count, len(first_seen), task, split
            )
            problems[("id", UNKNOWN_IDS)] = Problem(
                seen.line, "id", message, seen.count, seen.lines
            )
        raise PredictionsError(list(problems.values()), total, filename)
    return answers


UNKNOWN_IDS = "unknown id"  # the key all unknown ids are reported under, then one message
UNKNOWN_SAMPLE = 200  # unknown ids kept to quote and to recognise another task by
UNKNOWN_EXAMPLES = 3


def unknown_ids_message(
    unknown: list[object],
    fields: set[str],
    count: int,
    known_count: int,
    task: Task,
    split: Split,
) -> str:
    """One problem for every unknown id: how many, a few of them whole, and, when most of the
    file's ids are unknown here but are another task's (the wrong task chosen), which one."""
    where = f"not in split {split.name} of {task.key}"
    examples: list[str] = []
    for item_id in unknown:
        text = repr(item_id) if isinstance(item_id, str) else _shorten(item_id)
        if text not in examples and len(examples) < UNKNOWN_EXAMPLES:
            examples.append(text)
    if count == 1:
        message = f"unknown id {examples[0]} ({where})"
    else:
        more = ", ..." if count > len(examples) else ""
        message = f"{count} unknown ids ({where}): {', '.join(examples)}{more}"
    if count > known_count:  # most of the file: the wrong task rather than a few stray lines
        others = tasks_with_ids([i for i in unknown if isinstance(i, str)], fields, task)
        if others:
            named = " or ".join(others)
            message += f"; these ids look like {named}: choose that task"
    return message


def tasks_with_ids(ids: list[str], fields: set[str], chosen: Task) -> list[str]:
    """The tasks (suite/task, this suite's first) whose splits hold most of `ids`, those whose
    answer field the lines give (`fields`) before the others (PrefEval's mcq and open_ended share
    their ids); splits not installed here are skipped. Item ids are public (the public inputs
    list them)."""
    from evaluator.registry import all_suites

    if not ids:
        return []
    scores: list[tuple[int, bool, bool, str]] = []
    for suite_name, suite in all_suites().items():
        for name, other in suite.tasks.items():
            if other.key == chosen.key:
                continue
            try:
                known = other.load_split().by_id
            except Exception:  # noqa: BLE001 - not installed, unreadable: not a candidate
                continue
            hits = sum(item_id in known for item_id in ids)
            if hits * 2 > len(ids):
                answers = other.answer_field in fields
                scores.append(
                    (hits, answers, suite_name == chosen.suite.name, f"{suite_name}/{name}")
                )
    best = max((s[:2] for s in scores), default=None)
    tied = [s for s in scores if s[:2] == best]
    return [s[3] for s in sorted(tied, key=lambda s: (not s[2], s[3]))]


def answers_sha256(answers: Mapping[str, object]) -> str:
    """A predictions file's identity: the sha256 of its parsed answers (read_predictions) as
    canonical JSON, item ids and every object's keys sorted. What a file's bytes add (a BOM, CRLF
    line endings, whitespace, key order, blank lines, the order of the lines, \\u escapes, fields
    the scorer ignores) changes nothing; one answer changed changes it. The same form as a model
    run's answers hash (submissions/jobs.py answers_sha256), so an upload of a run's answers is
    its copy too."""
    text = json.dumps(answers, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: a lone surrogate a free-text answer may hold (JSON's "\ud800") still hashes
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class OverlongLine(bytes):
    """What iter_lines yields in place of a line longer than its limit (the line's first bytes)."""


def iter_lines(
    stream: BinaryIO, chunk_size: int = 1 << 20, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterable[bytes]:
    """Lines of a binary stream, split on b'\\n' only (a stray \\r stays inside the JSON, where it is whitespace).

    Memory is bounded by chunk_size + max_line_bytes: a longer line is yielded once as an
    OverlongLine (its first max_line_bytes) and the rest of it is skipped as it streams past.
    """
    pending = bytearray()
    skipping = False  # inside an overlong line, already reported
    while chunk := stream.read(chunk_size):
        *complete, tail = chunk.split(b"\n")
        for part in complete:
            if skipping:
                skipping = False
            elif pending:
                pending += part
                yield (
                    OverlongLine(pending[:max_line_bytes])
                    if len(pending) > max_line_bytes
                    else bytes(pending)
                )
            else:
                yield OverlongLine(part[:max_line_bytes]) if len(part) > max_line_bytes else part
            pending.clear()
        if not skipping:
            pending += tail
            if len(pending) > max_line_bytes:
                yield OverlongLine(pending[:max_line_bytes])
                pending.clear()
                skipping = True
    if pending and not skipping:
        yield bytes(pending)
