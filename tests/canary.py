"""The gold canary: a string planted in the gold-only fields of a hidden fixture split
(tests/test_probing.py) that must never reach anything a client or an operator's log sees.

tests/conftest.py watches a whole test run with it: every HTTP response a test reads through
httpx, and at the end every log file, result record, submissions database and upload the
services wrote under pytest's temporary folder. Only the split's own files (the source folder a
test builds, and the installed copy under the data folder's splits/) may hold it.
"""

from __future__ import annotations

from pathlib import Path

GOLD_CANARY = "pb-gold-canary-5e0d2f7b91c4"
SOURCE_SUFFIX = "-split"  # a test's split source folders end with this
SCANNED_SUFFIXES = {
    ".log",
    ".json",
    ".jsonl",
    ".sqlite3",
    ".sqlite3-wal",
    ".csv",
    ".txt",
    ".html",
    "",
}


def may_hold_gold(path: Path) -> bool:
    """The split itself: its installed copy (…/splits/…) and the folders tests build it in."""
    return "splits" in path.parts or any(part.endswith(SOURCE_SUFFIX) for part in path.parts)


def leaks_in_tree(root: Path) -> list[str]:
    """Files under root, other than the split's own, whose bytes contain the canary.

    git objects are compressed (the plain records they hold are scanned as files instead)."""
    needle = GOLD_CANARY.encode()
    found = []
    for path in Path(root).rglob("*"):
        if not path.is_file() or ".git" in path.parts or may_hold_gold(path):
            continue
        if path.suffix not in SCANNED_SUFFIXES and not path.name.startswith("redis"):
            continue
        try:
            with open(path, "rb") as stream:
                while chunk := stream.read(1 << 20):
                    if needle in chunk:  # (a canary split across two chunks is not looked for)
                        found.append(str(path))
                        break
        except OSError:
            continue
    return found
