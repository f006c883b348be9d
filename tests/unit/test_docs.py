"""The docs hold: docs/configuration.md lists every PERSONABOARD_* variable the code reads (and
nothing else), and no comment or doc points at a tracker number a reader cannot open.

A variable is "read by the code" when its full name appears in a Python file, a Dockerfile or the
Makefile of the project (a read through a constant, `FOO_ENV = "PERSONABOARD_FOO"`, counts too):
an operator who finds it in the code must find it, with its default, in the doc.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
NAME = re.compile(r"\bPERSONABOARD_[A-Z0-9_]*[A-Z0-9]\b")
SKIP_DIRS = {".venv", ".git", "node_modules", "var", "build", "dist"}


def code_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        if any(part in SKIP_DIRS or part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue
        if path == Path(__file__).resolve():  # this file names variables as examples
            continue
        if path.is_file() and (
            path.suffix == ".py" or path.name.startswith("Dockerfile") or path.name == "Makefile"
        ):
            found.append(path)
    return found


def variables_in_code() -> dict[str, str]:
    """Each variable name -> the first file that mentions it."""
    seen: dict[str, str] = {}
    for path in sorted(code_files()):
        for name in NAME.findall(path.read_text(errors="replace")):
            seen.setdefault(name, str(path.relative_to(ROOT)))
    return seen


def documented() -> set[str]:
    """The variables in the first column of the doc's tables."""
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `PERSONABOARD_")]
    return {name for row in rows for name in NAME.findall(row.split("|")[1])}


def test_every_variable_the_code_reads_is_documented():
    missing = {
        name: where for name, where in variables_in_code().items() if name not in documented()
    }
    assert not missing, f"add these to docs/configuration.md with their default: {missing}"


def test_the_doc_lists_no_variable_the_code_no_longer_reads():
    stale = documented() - set(variables_in_code())
    assert not stale, f"docs/configuration.md lists variables no code reads: {sorted(stale)}"


def test_the_scan_finds_the_variables_read_through_constants():
    found = variables_in_code()
    # read as os.environ.get(TOKEN_ENV) / env.get(THREADS_ENV): the name is only in the constant
    assert {"PERSONABOARD_METRICS_TOKEN", "PERSONABOARD_WORKER_THREADS"} <= set(found)
    assert len(found) >= 30


TRACKER = re.compile(r"\b[Ii]ssues? #?\d+|\bissue \d+'s\b|§\d")


def test_no_code_comment_or_doc_points_at_a_tracker_number():
    """ "issue 7" means nothing to a reader without the tracker: say the why in words."""
    texts = code_files() + [
        p
        for p in ROOT.rglob("*.md")
        if not any(part in SKIP_DIRS or part.startswith(".") for part in p.relative_to(ROOT).parts)
    ]
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in texts
        if path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if TRACKER.search(line)
    ]
    assert not hits, "\n".join(hits)
