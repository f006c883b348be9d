"""RealPref multiple choice: pick the one of four options aligned with the user's preference.

Items, histories, prompts and the n/a rule live in common.py (shared with true_false and open_ended).
"""

from __future__ import annotations

import re

from evaluator.suites.realpref.common import (  # noqa: F401 - the task's hooks
    build_items,
    build_requests,
    fit_model,
    public_companion,
)

# The prompt asks for `<choice>[A/B/C/D]</choice>`: instruct models write `<choice>B</choice>`,
# copy the brackets (`<choice>[B]</choice>`) or stop before the closing tag (8 tokens).
_TAG = re.compile(r"<choice>(.*?)(?:</choice>|$)", re.IGNORECASE | re.DOTALL)
# a letter standing alone: not part of a word, nor of the template's `A/B/C/D` copied back
_LETTER = re.compile(r"(?<![A-Za-z/])([A-D])(?![A-Za-z/])")
# no tag: a reply that starts with the letter (`B`, `B)`, `A. A karaoke night`, `(B)`, `**B**`,
# `Answer: B`); "A good option" starts with an article, not an answer, so the letter must end the
# reply's first line or be followed by punctuation
_BARE = re.compile(
    r"^\W*(?:(?i:answer|option|choice)\s*(?:is\s*)?:?\s*\W*)?([A-D])(?:[ \t]*(?:\n|\Z)|[).:\]*])"
)


def parse_answer(text: str) -> str | None:
    """The first lone letter A-D in the first <choice> tag (brackets allowed), else a bare letter."""
    tag = _TAG.search(text)
    if tag:
        letter = _LETTER.search(tag.group(1))
        return letter.group(1) if letter else None
    bare = _BARE.match(text)
    return bare.group(1) if bare else None
