"""Dropdown choices, all read from the suites' manifests (no suite is named in the UI's code)."""

from __future__ import annotations

from evaluator.registry import all_suites, check_setting, get_task
from evaluator.splits import PRIVATE_PART, PRIVATE_TIER_GROUP, PUBLIC_PART, release_tier_columns

RELEASE_TIER_LABELS = {
    f"{PRIVATE_TIER_GROUP}/{PUBLIC_PART}": "Part: public (the live number)",
    f"{PRIVATE_TIER_GROUP}/{PRIVATE_PART}": "Part: private (from a named release)",
}

ALL = "(all)"


def pretty(name: str, label: str) -> str:
    """A manifest label; a bare identifier (`lifestyle_dietary`) is made readable (`Lifestyle dietary`)."""
    if label == name and "_" in name and " " not in name:
        words = name.replace("_", " ").strip()
        return words[:1].upper() + words[1:]
    return label


NOT_INSTALLED = " (split not installed here)"


def suite_choices(mark_unavailable: bool = False) -> list[tuple[str, str]]:
    """(title, name) per suite; with mark_unavailable, suites that take no submissions here say so."""
    ready = set(ready_suites()) if mark_unavailable else set(all_suites())
    return [
        (suite.title + ("" if name in ready else NOT_INSTALLED), name)
        for name, suite in all_suites().items()
    ]


def ready_suites() -> list[str]:
    """Suites that take submissions here: at least one task's split is installed."""
    return [
        name
        for name, suite in all_suites().items()
        if any(t.split_available() for t in suite.tasks.values())
    ]


def task_choices(suite: str | None) -> list[tuple[str, str]]:
    if not suite or suite == ALL:
        return []
    return [(task.title, name) for name, task in all_suites()[suite].tasks.items()]


def setting_choices(suite: str | None) -> list[str]:
    if not suite or suite == ALL:
        return sorted({s for suite_ in all_suites().values() for s in suite_.settings})
    return list(all_suites()[suite].settings)


def task_setting_choices(suite: str | None, task: str | None) -> list[str]:
    """The suite's settings (its manifest) that `task` accepts: the task's own check_setting hook,
    the rule the server applies to a submission, so no form offers what the server then refuses
    (a task may refuse some of its suite's settings; today every task takes all of them)."""
    if not suite or suite == ALL or suite not in all_suites():
        return setting_choices(suite)
    found = all_suites()[suite]
    if not task or task not in found.tasks:
        return list(found.settings)
    accepted = []
    for setting in found.settings:
        try:
            check_setting(found.tasks[task], setting)
        except Exception:  # noqa: BLE001 - refused (or not checkable here): not offered
            continue
        accepted.append(setting)
    return accepted


def tier_choices(suite: str | None, task: str | None) -> list[tuple[str, str]]:
    choices: list[tuple[str, str]] = []
    for suite_name, suite_ in all_suites().items():
        if suite and suite != ALL and suite_name != suite:
            continue
        for task_name, task_ in suite_.tasks.items():
            if task and task != ALL and task_name != task:
                continue
            for group in task_.tier_groups:
                choices.extend(
                    (f"{group.label}: {pretty(t, group.label_of(t))}", f"{group.name}/{t}")
                    for t in group.tiers
                )
            # a divided hidden split: its parts, filled in by a named release
            choices.extend((RELEASE_TIER_LABELS[c], c) for c in release_tier_columns(task_))
    return list(dict.fromkeys(choices))


def protocol_choices(suite: str | None, task: str | None) -> list[str]:
    if not suite or not task:
        return ["default"]
    return ["default", *get_task(suite, task).model_protocols]
