"""Finds suites: every `evaluator/suites/<name>/manifest.yaml` is one suite.

Adding a suite means adding a folder; nothing else in the service changes.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from evaluator.suite import Suite, Task, load_suite

SUITES_DIR = Path(__file__).parent / "suites"


class UnknownSuiteError(LookupError):
    pass


@lru_cache(maxsize=1)
def all_suites() -> dict[str, Suite]:
    suites = {}
    for manifest in sorted(SUITES_DIR.glob("*/manifest.yaml")):
        suite = load_suite(manifest)
        suites[suite.name] = suite
    return suites


def get_suite(name: str) -> Suite:
    suites = all_suites()
    if name not in suites:
        raise UnknownSuiteError(f"unknown suite {name!r}; known suites: {', '.join(sorted(suites))}")
    return suites[name]


def get_task(suite: str, task: str) -> Task:
    found = get_suite(suite)
    if task not in found.tasks:
        raise UnknownSuiteError(
            f"suite {suite!r} has no task {task!r}; its tasks: {', '.join(sorted(found.tasks))}"
        )
    return found.tasks[task]


def check_setting(task: Task, setting: str) -> None:
    if setting not in task.suite.settings:
        raise UnknownSuiteError(
            f"suite {task.suite.name!r} has no setting {setting!r}; "
            f"its settings: {', '.join(task.suite.settings)}"
        )
    # Optional hook: a setting the manifest declares may still be unavailable for the installed
    # split (e.g. `rag` without memory data); the hook returns why, or None.
    hook = getattr(task.hooks, "check_setting", None)
    problem = hook(task, setting) if hook is not None else None
    if problem:
        raise UnknownSuiteError(problem)
