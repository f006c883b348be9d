"""RealPref multiple choice: pick the one of four options aligned with the user's preference.

Items, histories, prompts and the n/a rule live in common.py (shared with true_false and open_ended).
"""

from __future__ import annotations

from evaluator.suites.realpref.common import (  # noqa: F401 - the task's hooks
    build_items,
    build_requests,
    fit_model,
    public_companion,
)


def parse_answer(text: str) -> str | None:
    from evaluator.protocols import parse_choice_tag

    return parse_choice_tag(text)
