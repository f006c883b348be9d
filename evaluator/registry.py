"""Finds suites: every `evaluator/suites/<name>/manifest.yaml` is one suite, checked as it is found.

Adding a suite means adding a folder; nothing else in the service changes. Discovery, in order:
the suite's own metrics and protocols (metrics.py / protocols.py register with the decorators,
metrics.yaml declares), then the manifest (typed: evaluator/manifest.py), then the names it uses
against the registries, its reported.yaml columns against its tier groups and metrics, and every
task's hooks against the hooks contract (evaluator/hooks.py). Any problem is a ManifestError that
names the file, the key and the allowed values: at app and worker start and in
`personaboard suites check`, never at scoring time.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path

from evaluator.manifest import ManifestError, check_names
from evaluator.metrics import MetricError, known_metrics, load_metric_table
from evaluator.protocols import known_protocols
from evaluator.splits import SplitFormatError
from evaluator.suite import Suite, Task, load_suite
from evaluator.yaml_files import read_yaml

SUITES_DIR = Path(__file__).parent / "suites"
SUITE_EXTENSIONS = ("metrics", "protocols")  # modules a suite folder may add to the registries
TOTAL_COLUMN = "total"


class UnknownSuiteError(LookupError):
    pass


def _load_extensions(folder: Path, package: str) -> None:
    """A suite's own metrics and protocols, registered before its manifest is checked."""
    if any(folder.glob("*.py")) and not (folder / "__init__.py").exists():
        raise ManifestError(
            f"{folder}: has Python modules but no __init__.py, so a normal (non-editable) "
            "install would leave them out; add an empty __init__.py"
        )
    for name in SUITE_EXTENSIONS:
        if (folder / f"{name}.py").exists():
            importlib.import_module(f"{package}.{name}")
    if (folder / "metrics.yaml").exists():
        try:
            load_metric_table(folder / "metrics.yaml")
        except MetricError as exc:
            raise ManifestError(str(exc)) from None


def _check_reported(suite: Suite) -> None:
    """reported.yaml columns name the task's metrics, `total`, or `group/tier` of its tier groups."""
    path = suite.folder / "reported.yaml"
    if not path.exists():
        return
    spec = read_yaml(path) or {}
    for index, table in enumerate(spec.get("tables", [])):
        where = f"{path}: tables[{index}]"
        task = suite.tasks.get(table.get("task"))
        if task is None:
            raise ManifestError(
                f"{where}.task: unknown task {table.get('task')!r}; allowed: {', '.join(suite.tasks)}"
            )
        for printed, key in (table.get("columns") or {}).items():
            if key == TOTAL_COLUMN or key in task.metrics:
                continue
            group, _, tier = str(key).partition("/")
            groups = {g.name: g for g in task.tier_groups}
            if not tier or group not in groups:
                raise ManifestError(
                    f"{where}.columns.{printed}: {key!r} is neither total, a metric of {task.key} "
                    f"({', '.join(task.metrics)}) nor group/tier of a tier group ({', '.join(groups)})"
                )
            if tier not in groups[group].tiers:
                raise ManifestError(
                    f"{where}.columns.{printed}: unknown tier {tier!r} of {group!r}; "
                    f"allowed: {', '.join(groups[group].tiers)}"
                )


def discover_suite(manifest: Path, package: str | None = None) -> Suite:
    """Load and check one suite folder (see the module docstring for the order)."""
    package = package or f"evaluator.suites.{manifest.parent.name}"
    _load_extensions(manifest.parent, package)
    suite = load_suite(manifest, package)
    assert suite.manifest is not None  # load_suite keeps the manifest it read
    check_names(suite.manifest, manifest, known_metrics(), known_protocols())
    _check_reported(suite)
    for task in suite.tasks.values():
        task.hooks  # noqa: B018 - binds and checks the hooks now, not at the first request
    return suite


@lru_cache(maxsize=1)
def all_suites() -> dict[str, Suite]:
    suites: dict[str, Suite] = {}
    for manifest in sorted(SUITES_DIR.glob("*/manifest.yaml")):
        suite = discover_suite(manifest)
        if suite.name in suites or suite.name != manifest.parent.name:
            raise ManifestError(
                f"{manifest}: name: {suite.name!r} must be the folder's name ({manifest.parent.name!r}) "
                "and unique"
            )
        suites[suite.name] = suite
    return suites


def check_suites(suites_dir: Path | None = None) -> list[str]:
    """Every suite folder checked on its own: one line per problem (empty: all hold). A suite whose
    split ships in its folder (bundled) also has its items built, so a data line the manifest does
    not fit is named here (file, line and field), not later by the contract test or a worker."""
    problems = []
    for manifest in sorted((suites_dir or SUITES_DIR).glob("*/manifest.yaml")):
        try:
            suite = discover_suite(manifest)
        except (ManifestError, ImportError, SyntaxError) as exc:
            problems.append(f"{manifest.parent.name}: {exc}")
            continue
        if suite.split_spec.get("source", "bundled") != "bundled":
            continue  # installed by the operator: checked by `personaboard splits install`
        for task in suite.tasks.values():
            try:
                task.load_split()
            except (SplitFormatError, KeyError, TypeError, ValueError) as exc:
                problems.append(f"{task.key}: {manifest.parent / 'data'}: {exc}")
    return problems


def get_suite(name: str) -> Suite:
    suites = all_suites()
    if name not in suites:
        raise UnknownSuiteError(
            f"unknown suite {name!r}; known suites: {', '.join(sorted(suites))}"
        )
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
    # A setting the manifest declares may still be unavailable for the installed split (e.g. `rag`
    # without memory data): the task's check_setting hook says why, or None.
    problem = task.hooks.check_setting(task, setting)
    if problem:
        raise UnknownSuiteError(problem)
