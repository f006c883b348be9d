"""Every data file the packages carry in git is in the installed package too.

The images install the project without -e (docker/Dockerfile), so a file read at run time that
pyproject's package-data does not name is missing there: the board's column registry was, and the
container's CLI failed at import (FileNotFoundError: leaderboard/columns.yaml).
"""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PACKAGED = {"README.md"}  # a folder's notes for the next engineer, read in the repository


def package_data_globs() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["package-data"]


def packaged(path: str, globs: dict[str, list[str]]) -> bool:
    package, _, inner = path.partition("/")
    # setuptools' "**" spans folders; fnmatch's "*" already matches "/", so one rule serves both
    return any(fnmatch.fnmatch(inner, g.replace("**/", "")) for g in globs.get(package, []))


def test_every_tracked_data_file_of_a_package_is_package_data():
    packages = ("backend", "evaluator", "leaderboard", "space", "submissions")
    tracked = subprocess.run(
        ["git", "ls-files", *packages], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [p for p in tracked if not p.endswith(".py") and Path(p).name not in NOT_PACKAGED]
    assert "leaderboard/columns.yaml" in data and data  # what the rule is about is there
    globs = package_data_globs()
    missing = [p for p in data if not packaged(p, globs)]
    assert not missing, f"add to [tool.setuptools.package-data] in pyproject.toml: {missing}"
