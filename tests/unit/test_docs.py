"""The docs hold: docs/configuration.md lists every PERSONABOARD_* variable the code reads (and
nothing else); no comment or doc points at a tracker number a reader cannot open; every relative
link and anchor of the docs lands, as GitHub renders them, and every repository path they name
exists; the docs' commands that run offline run as written (DOC_COMMANDS says which); the settings
they list are the manifests'.

A variable is "read by the code" when its full name appears in a Python file, a Dockerfile or the
Makefile of the project (a read through a constant, `FOO_ENV = "PERSONABOARD_FOO"`, counts too):
an operator who finds it in the code must find it, with its default, in the doc.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
NAME = re.compile(r"\bPERSONABOARD_[A-Z0-9_]*[A-Z0-9]\b")
SKIP_DIRS = {".venv", ".git", "node_modules", "var", "build", "dist"}


@functools.cache
def project_files() -> tuple[Path, ...]:
    """Every file of the project, outside the skipped and hidden folders (never entered: the venv
    alone holds more files than the project)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if d not in SKIP_DIRS and not d.startswith(".")]
        found += [Path(folder, name) for name in files if not name.startswith(".")]
    return tuple(sorted(found))


def code_files() -> list[Path]:
    return [
        path
        for path in project_files()
        if path != Path(__file__).resolve()  # this file names variables as examples
        and (path.suffix == ".py" or path.name.startswith("Dockerfile") or path.name == "Makefile")
    ]


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
    texts = code_files() + [path for path in project_files() if path.suffix == ".md"]
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in texts
        if path != Path(__file__).resolve()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if TRACKER.search(line)
    ]
    assert not hits, "\n".join(hits)


# --- links and anchors -------------------------------------------------------------------------
# Every relative link of the docs a reader follows on GitHub must land: the file exists and, for a
# link into a Markdown file, the anchor is one of its headings' slugs as GitHub makes them.

LINKED_DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bench" / "README.md",
    ROOT / "docker" / "README.md",
    ROOT / "evaluator" / "suites" / "README.md",
]
FENCE = re.compile(r"^ {0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) or ![alt](target), with an optional "title"; the text may hold `code`
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1 (a heading or link in code is text)."""
    lines, fenced = [], None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if fence and (fenced is None or fence.group(1) == fenced):
            fenced = fence.group(1) if fenced is None else None
            continue
        if fenced is None:
            lines.append((number, line))
    return lines


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): the rendered text lower-cased, punctuation
    other than '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file: one per heading, a repeated slug numbered -1, -2."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = github_slug(heading.group(2))
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        found.add(slug)
    return found


def relative_links(path: Path) -> list[tuple[int, str]]:
    links = []
    for number, line in prose_lines(path):
        prose = INLINE_CODE.sub("", line)
        targets = LINK.findall(prose) + REFERENCE.findall(prose)
        links += [(number, t) for t in targets if not EXTERNAL.match(t)]
    return links


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken_links(path: Path) -> list[str]:
    broken = []
    for number, target in relative_links(path):
        where = f"{shown(path)}:{number}: ({target})"
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        if not file_part:
            linked = path
        elif file_part.startswith("/"):  # relative to the repository's root, as GitHub reads it
            linked = ROOT / file_part.lstrip("/")
        else:
            linked = (path.parent / file_part).resolve()
        if not linked.exists():
            broken.append(f"{where}: no file {shown(linked)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{where}: no heading with anchor #{anchor} in {shown(linked)}")
    return broken


def test_every_relative_link_and_anchor_of_the_docs_lands():
    broken = [problem for doc in LINKED_DOCS for problem in broken_links(doc)]
    assert not broken, "\n".join(broken)


# A path of this repository in a code span (`leaderboard/store.py`): a reader opens it
REPO_PATH = re.compile(
    r"`((?:backend|space|submissions|leaderboard|evaluator|bench|tests|docker|docs)/[^`\s<>*{}]*)`"
)


def test_every_repository_path_the_docs_name_exists():
    missing = [
        f"{doc.relative_to(ROOT)}:{number}: {path}"
        for doc in LINKED_DOCS
        for number, line in prose_lines(doc)
        for path in REPO_PATH.findall(line)
        if not (ROOT / path.split(":")[0]).exists()
    ]
    assert not missing, "the docs name files that are not there:\n" + "\n".join(missing)


def test_the_link_check_reads_what_github_renders(tmp_path):
    """The slug rules on the docs' own kinds of headings, and a broken link or anchor is caught
    while one inside code is not a link."""
    assert github_slug("PrefEval (`prefeval`)") == "prefeval-prefeval"
    assert (
        github_slug("Who may submit by signing in with Hugging Face (on a Space)")
        == "who-may-submit-by-signing-in-with-hugging-face-on-a-space"
    )
    assert github_slug("`bench_gpu.py`: the service's protocol at an 8B shape") == (
        "bench_gpupy-the-services-protocol-at-an-8b-shape"
    )
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Title\n## Same\n## Same\n"
        "[ok](#same-1) [ok](doc.md#title) [bad](#nowhere) [gone](missing.md)\n"
        "`[code](not-a-link.md)`\n```\n[code](not-a-link-either.md)\n# not a heading\n```\n"
    )
    assert anchors(doc) == {"title", "same", "same-1"}
    problems = broken_links(doc)
    assert len(problems) == 2, problems
    assert "#nowhere" in problems[0] and "missing.md" in problems[1]


def test_the_docs_have_links_to_check():
    """A link pattern that stopped matching would pass every doc: the docs link to each other."""
    links = [target for doc in LINKED_DOCS for _, target in relative_links(doc)]
    assert len(links) >= 25 and any("#" in target for target in links), links


# --- the docs' commands ------------------------------------------------------------------------
# The commands of the docs that run offline, in seconds and with no service, run as written, in the
# order a reader meets them, in an empty folder with an empty data folder. The others need a running
# service (curl, `workers list`), a model (`evaluate`, `models add`), the Hub (`splits install`) or
# another machine (`worker`), and are exercised by the service, model and deploy tests instead.
# They run in this process, through the `personaboard` script's own main (a start of the script
# costs about as much as all of them; tests/unit/test_cli.py runs the script itself).
DOC_COMMANDS = [  # (doc, command as the doc writes it, a piece of what it prints)
    ("README.md", "personaboard users add alice", '"token": "pb_'),
    ("docs/operating.md", "personaboard users token alice", '"token": "pb_'),
    ("docs/operating.md", "personaboard users list", '"name": "alice"'),
    ("docs/operating.md", "personaboard users role alice admin", '"role": "admin"'),
    (
        "docs/operating.md",
        "personaboard users quota alice --predictions 50 --model-runs 10 --failed-validations 200",
        '"predictions": 50',
    ),
    ("docs/operating.md", "personaboard users revoke alice", '"revoked"'),
    ("docs/operating.md", "personaboard names list", "[]"),
    ("docs/operating.md", "personaboard inputs --suite prefeval --task mcq -o inputs.jsonl", ""),
    # between these two the reader writes preds.jsonl: the test answers "B" to every input
    ("README.md", "personaboard score --suite prefeval --task mcq preds.jsonl", '"accuracy"'),
    ("docs/suites.md", "personaboard suites", '"name": "prefeval"'),
    ("docs/suites.md", ".venv/bin/personaboard splits list", '"prefeval"'),
    ("evaluator/suites/README.md", "personaboard suites check", "suites hold"),
]


def flat(text: str) -> str:
    """A doc's text with each run of whitespace one space: a command may wrap in the doc."""
    return " ".join(text.split())


def test_the_docs_commands_that_run_offline_run(tmp_path, monkeypatch, capsys):
    from backend.cli import main

    # the script the docs call is the one this environment installs (pyproject's [project.scripts])
    assert Path(sys.executable).with_name("personaboard").exists()
    monkeypatch.setenv("PERSONABOARD_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    for doc, command, printed in DOC_COMMANDS:
        assert command in flat((ROOT / doc).read_text()), (
            f"{doc} no longer says `{command}`: update DOC_COMMANDS with what it says now"
        )
        if " score " in command:
            with (tmp_path / "inputs.jsonl").open() as inputs:
                ids = [json.loads(line)["id"] for line in inputs]
            (tmp_path / "preds.jsonl").write_text(
                "".join(json.dumps({"id": id_, "answer": "B"}) + "\n" for id_ in ids)
            )
        program, *args = shlex.split(command)
        assert Path(program).name == "personaboard", command
        exit_code = main(args)
        out, err = capsys.readouterr()
        assert exit_code == 0, f"{doc}: `{command}` exited {exit_code}:\n{err}"
        assert printed in out + err, f"{doc}: `{command}` printed:\n{out[:2000]}{err[:2000]}"
    assert len((tmp_path / "inputs.jsonl").read_text().splitlines()) == 3000


def test_the_settings_the_docs_list_are_the_manifests():
    """docs/suites.md's table names each suite's settings, and the upload walk-through PrefEval's."""
    from evaluator.registry import all_suites

    suites = all_suites()
    table = (ROOT / "docs" / "suites.md").read_text().splitlines()
    for name, suite in suites.items():
        row = next((line for line in table if line.startswith(f"| `{name}` |")), None)
        assert row, f"docs/suites.md's table has no row for {name}"
        listed = [re.sub(r"\(.*?\)", "", part).strip() for part in row.split("|")[4].split(",")]
        assert listed == list(suite.settings), f"docs/suites.md, {name}: {listed}"
    walk_through = (ROOT / "docs" / "operating.md").read_text()
    missing = [s for s in suites["prefeval"].settings if f"`{s}`" not in walk_through]
    assert not missing, f"docs/operating.md's upload walk-through omits PrefEval's {missing}"
