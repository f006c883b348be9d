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
# The prompt asks "Is this option suitable for me? ... True or False": a reply that starts with
# Yes or No answers the question as asked. Prose ("This is not a suitable option") is not read.
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def parse_answer(text: str) -> str | None:
    """The first word True or False (any case) in the reply, or a reply starting Yes / No."""
    match = _WORD.search(text)
    if match:
        return match.group(1).lower()
    yes_no = _YES_NO.match(text)
    return None if yes_no is None else "true" if yes_no.group(1).lower() == "yes" else "false"


def decision_answer(decision) -> str | None:
    return decision.answer.lower() if isinstance(decision.answer, str) else None
