"""Names people choose (model names, user names): normalised, bounded, and free of invisible tricks.

NFKC folds look-alike forms (full-width letters, ligatures) into one spelling, so "ＧＰＴ" and "GPT"
are the same name; the ownership key also folds case, so nobody can publish "gpt-4" beside another
owner's "GPT-4". Control characters, NUL and bidirectional overrides are refused, never stripped:
a name that renders differently from what it is (e.g. "\u202egnp.exe") is an attempt to deceive.
"""

from __future__ import annotations

import re
import unicodedata

# Explicit embeddings/overrides/isolates and the marks that flip display order.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


class InvalidName(ValueError):
    """A refused name; `field` is the form field it came from."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


def normalise_text(value: str, field: str, max_chars: int, multiline: bool = False) -> str:
    """NFKC, trimmed, at most `max_chars`; refuses NUL, control and bidi-override characters
    (newlines and tabs allowed where `multiline`)."""
    text = unicodedata.normalize("NFKC", value or "").strip()
    if len(text) > max_chars:
        raise InvalidName(field, f"longer than {max_chars} characters")
    allowed = "\n\t" if multiline else ""
    for position, char in enumerate(text, 1):
        if char == "\x00":
            raise InvalidName(field, f"NUL character at position {position}")
        if char in BIDI_CONTROLS:
            raise InvalidName(
                field, f"bidirectional control character U+{ord(char):04X} at position {position}"
            )
        if char not in allowed and unicodedata.category(char) in (
            "Cc",
            "Cf",
            "Cs",
            "Co",
            "Zl",
            "Zp",
        ):
            raise InvalidName(
                field, f"control or format character U+{ord(char):04X} at position {position}"
            )
    return text


def name_key(name: str) -> str:
    """The ownership key of a normalised name: case-folded, inner whitespace collapsed."""
    return " ".join(name.casefold().split())


def check_user_name(name: str, field: str = "name") -> str:
    text = normalise_text(name, field, 63)
    if not USER_NAME.fullmatch(text):
        raise InvalidName(
            field, "use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return text
