"""RealPref true-or-false: is one option (statement) suitable for the user? One item per statement.

Items, histories, prompts and the n/a rule live in common.py. Models answer with the labels
`True`/`False` (single tokens in common tokenizers); the stored answer is "true"/"false".
"""

from __future__ import annotations

import re

from evaluator.suites.realpref.common import (  # noqa: F401 - the task's hooks
    build_items,
    build_requests,
    fit_model,
    public_companion,
)

_WORD = re.compile(r"\b(true|false)\b", re.IGNORECASE)


def parse_answer(text: str) -> str | None:
    match = _WORD.search(text)
    return match.group(1).lower() if match else None


def decision_answer(decision) -> str | None:
    return decision.answer.lower() if isinstance(decision.answer, str) else None
