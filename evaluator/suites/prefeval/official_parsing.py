"""PrefEval's answer parsing, rule for rule as the official code reads model and judge replies.

The official code (github.com/amazon-science/PrefEval @ 50795054) parses with BeautifulSoup's
html.parser, so its behaviour on malformed text (unclosed tags, nested tags, upper-case tag names,
entities, comments) is html.parser's. Reimplementing that with a regex would differ at the edges;
these functions go through the same parser and apply the same rules, and
tests/unit/test_prefeval_official_diff.py compares them with the official functions' outputs on
hundreds of strings (tests/fixtures/prefeval_official/).
"""

from __future__ import annotations

import re
import warnings

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning


def _soup(text: str) -> BeautifulSoup:
    # a short answer such as "B." looks like a file name to BeautifulSoup, which warns: it is markup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        return BeautifulSoup(text, "html.parser")


CHOICE_LETTER = re.compile(r"[ABCD]")  # case-sensitive: "<choice>b</choice>" is no answer


def extract_choice(text: str) -> str | None:
    """The MCQ answer: the text of the FIRST <choice> element, when that element holds exactly one
    string (BeautifulSoup's `.string`), and the first of A-D in it. Anything else is no answer,
    which counts as wrong (utils/utils_mcq.py, extract_choice)."""
    tag = _soup(text).find("choice")
    if not tag or tag.string is None:
        return None
    match = CHOICE_LETTER.search(tag.string)
    return match.group(0) if match else None


def tag_text(reply: str, name: str) -> str:
    """The stripped text of the first <name> element of a judge reply, "" when there is none
    (generation_task/llm_based_evaluation_errortypes.py, parse_*_and_answer)."""
    tag = _soup(reply).find(name)
    return tag.text.strip() if tag else ""


def says_yes(answer: str) -> bool:
    """How the official scoring reads the acknowledge, violate and hallucinate checks: "yes"
    anywhere in the answer, any case ("[Yes]" counts; no answer at all counts as not yes)."""
    return "yes" in answer.lower()


def says_no(answer: str) -> bool:
    """How it reads the helpful check: "no" anywhere in the answer means unhelpful, so a reply with
    no answer at all counts as helpful, and "Not sure" or "None" as unhelpful."""
    return "no" in answer.lower()
