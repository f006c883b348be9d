"""Each suite's paper is a link and its citation a BibTeX entry to copy (About tab, /api/v1/suites)."""

from __future__ import annotations

import re

import pytest

from evaluator.registry import all_suites
from space.tabs.about import _suite_section

FIELD = re.compile(r"^  (\w+) = \{(.*)\},?$")


def bibtex_fields(entry: str) -> tuple[str, dict[str, str]]:
    """The entry's type and fields; fails on anything but one well-formed entry, one field a line."""
    lines = entry.strip().splitlines()
    head = re.fullmatch(r"@(\w+)\{([\w:-]+),", lines[0])
    assert head and lines[-1] == "}", lines
    fields = {}
    for line in lines[1:-1]:
        match = FIELD.fullmatch(line)
        assert match, line
        value = match.group(2)
        assert value.count("{") == value.count("}"), line  # braces balanced within the field
        fields[match.group(1)] = value
    return head.group(1), fields


@pytest.mark.parametrize("name", sorted(all_suites()))
def test_every_suite_links_its_paper_and_gives_bibtex(name):
    suite = all_suites()[name]
    kind, fields = bibtex_fields(suite.bibtex)
    assert kind in {"article", "inproceedings", "misc"} and "title" in fields
    # the BibTeX title is the citation's (case and braces aside)
    words = re.findall(r"\w+", fields["title"].lower())
    assert " ".join(words) in " ".join(re.findall(r"\w+", suite.citation.lower()))
    assert suite.paper_url.startswith("https://")
    if "eprint" in fields:  # an arXiv paper links its abstract page
        assert suite.paper_url == f"https://arxiv.org/abs/{fields['eprint']}" == fields["url"]
    section = _suite_section(suite)
    assert f"]({suite.paper_url})" in section and f"```bibtex\n{suite.bibtex}\n```" in section
    assert suite.describe()["bibtex"] == suite.bibtex
