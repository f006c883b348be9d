"""Shared pieces of the Re-Centering Humans hooks: reading the installed JSONL files with the
manifest's field names, tier normalisation, the prompt texts and the answer-line parser.

Every problem in a split file raises evaluator.splits.SplitFormatError naming the file, the line
and the field (as the manifest declares it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from evaluator.splits import SplitFormatError, read_jsonl, require
from evaluator.suite import Task, load_prompts

ANSWER_LINE = re.compile(
    r"^\W*answer\W*:\s*\**\s*([A-Za-z][A-Za-z' ]*?)[\s.*!\"']*$", re.IGNORECASE | re.MULTILINE
)


class Row:
    """One line of a split file; `get(name)` reads our field `name` via the manifest's mapping."""

    id: str  # set by rows() once checked

    def __init__(self, task: Task, path: Path, line: int, record: dict):
        self.fields = task.suite.split_fields
        self.path, self.line, self.record = path, line, record
        self.where = f"{path.name}, line {line}"

    def their(self, name: str) -> str:
        return self.fields.get(name, name)

    def get(self, name: str) -> Any:
        return require(self.record, self.their(name), self.where)

    def text(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str) or not value.strip():
            self.fail(name, "expected a non-empty string")
        return value

    def fail(self, name: str, message: str):
        raise SplitFormatError(f"{self.where}: field '{self.their(name)}': {message}")


def rows(task: Task, folder: Path) -> list[Row]:
    """The task's file (options.file), with unique string ids."""
    path = Path(folder) / task.options["file"]
    out: list[Row] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        row = Row(task, path, line, record)
        raw = row.get("id")
        if isinstance(raw, bool) or not isinstance(raw, (str, int)) or not str(raw).strip():
            row.fail("id", "expected a non-empty string or an integer")
        item_id = str(raw)
        if item_id in seen:
            row.fail("id", f"duplicate id {item_id!r} (first on line {seen[item_id]})")
        seen[item_id] = line
        row.id = item_id
        out.append(row)
    return out


def tier_key(value: str) -> str:
    """'Llama-3.3-70B' -> 'llama_3_3_70b', 'WildChat' -> 'wildchat'."""
    return re.sub(r"[^a-z0-9]+", "_", value.lower()).strip("_")


def tier_of(row: Row, name: str, task: Task, group: str) -> str:
    tiers = task.tier_group(group).tiers
    value = row.text(name)
    key = tier_key(value)
    if key not in tiers:
        row.fail(name, f"{value!r} is not one of {', '.join(tiers)}")
    return key


def prompts() -> dict:
    """This suite's prompt texts (prompts.yaml), read once."""
    return load_prompts(Path(__file__).parent)


def prompt_for(task: Task, setting: str) -> dict:
    """The prompt a model run uses in `setting`; a setting the task has no prompt for is refused."""
    from evaluator.backends.base import BackendError

    table = task.options.get("prompt_for_setting", {})
    if setting not in table:
        raise BackendError(
            f"{task.key} has no model prompt for setting {setting!r}; "
            f"model runs take: {', '.join(table)}"
        )
    return prompts()[table[setting]]


def final_answer(text: str) -> str | None:
    """The word(s) after the LAST 'Answer:' line, upper-cased ('Answer: no' -> 'NO'); None if none."""
    found = ANSWER_LINE.findall((text or "").replace("\u2019", "'"))
    return found[-1].strip().upper() if found else None
