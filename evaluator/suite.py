"""Suites as data: a manifest (YAML) per suite, plus a small hooks module per task.

The manifest declares everything the service needs to know about a suite (tasks, tiers, settings,
metrics, answer format, data source, license); the hooks module only builds the split's items
from the suite's raw data (and, for model runs, renders prompts and parses answers).
The web app, the queue and the store only ever see these dataclasses.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Required, TypedDict

from evaluator.hooks import GENERIC_HOOKS, TaskHooks, bind_hooks
from evaluator.manifest import SuiteManifest, read_manifest
from evaluator.splits import (
    VISIBILITY_NOTES,
    SplitFormatError,
    SplitNotInstalled,
    install_command,
    installed_info,
    split_files,
    split_marker,
    split_visibility,
)
from evaluator.yaml_files import read_yaml


@dataclass(frozen=True)
class Item:
    """One test item of a split. `public` is what submitters may see; `gold` never leaves the scorer."""

    id: str
    tiers: dict[str, str]  # tier group -> tier, e.g. {"form": "explicit", "topic": "travel_hotel"}
    public: dict[str, Any]
    gold: Any  # a label for choice tasks; a dict for judge-scored and rating tasks (hooks read it)
    # The independent unit the item belongs to when the task declares one (`bootstrap_unit`), e.g.
    # PrefEval's preference pair, asked in three forms; a tuple for nested units, outermost first
    # (RealPref: (user, preference)). Not part of the split hash: it groups, it changes no input or gold.
    unit: str | tuple[str, ...] | None = None


@dataclass(frozen=True)
class TierGroup:
    name: str
    label: str
    tiers: tuple[str, ...]
    labels: dict[str, str]

    def label_of(self, tier: str) -> str:
        return self.labels.get(tier, tier)


class SplitInfo(TypedDict, total=False):
    """What a result records of the split it was scored on (provenance.split; made by
    evaluator/scoring.py split_provenance)."""

    name: str
    sha256: str  # of the whole split, whatever part of it was scored
    n_items: int  # the items scored
    full_n_items: int  # the whole split's


class TierDescription(TypedDict):
    name: str
    label: str


class TierGroupDescription(TypedDict):
    name: str
    label: str
    tiers: list[TierDescription]


class TaskDescription(TypedDict):
    """Task.describe(): a task as GET /api/v1/suites shows it."""

    name: str
    title: str
    description: str
    metric: str
    metrics: list[str]
    model_protocols: list[str]
    answer_field: str
    answer_labels: list[str]
    bootstrap_unit: str
    tier_groups: list[TierGroupDescription]


class SplitStatus(TypedDict, total=False):
    """Suite.split_status(): where the suite's split comes from, whether it is here, and whether
    its scores are released through the Ladder."""

    source: Required[str]  # bundled | installed
    installed: Required[bool]
    visibility: Required[str]
    visibility_note: Required[str]
    hub_id: str | None
    revision: str | None  # installed: the Hub revision
    fixture: bool
    installed_at: str | None
    install: str  # not installed: the command that installs it


class SuiteDescription(TypedDict):
    """Suite.describe(): a suite as GET /api/v1/suites shows it."""

    name: str
    title: str
    version: str
    description: str
    citation: str
    license: str
    homepage: str
    paper_url: str
    bibtex: str
    settings: list[dict[str, str]]  # name, description
    split: SplitStatus
    tasks: list[TaskDescription]


@dataclass
class Split:
    """A versioned set of items. The hash covers inputs and gold, so any change to either shows."""

    name: str
    items: list[Item]

    @cached_property
    def by_id(self) -> dict[str, Item]:
        return {item.id: item for item in self.items}

    @cached_property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for item in self.items:
            digest.update(
                json.dumps([item.id, item.tiers, item.public, item.gold], sort_keys=True).encode()
            )
        return digest.hexdigest()

    def public_jsonl(self) -> bytes:
        return b"".join(
            json.dumps(item.public, ensure_ascii=False).encode() + b"\n" for item in self.items
        )


@dataclass
class Task:
    suite: "Suite"
    name: str
    title: str
    description: str
    answer_field: str
    answer_labels: tuple[str, ...]
    metric: str  # the primary metric: tier columns and ranking use it
    tier_groups: tuple[TierGroup, ...]
    hooks_module: str
    options: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)  # how models run: protocols, token caps
    metrics: tuple[str, ...] = ()  # every metric reported for the total, primary first
    answer_kind: str = (
        "label"  # "label" (one of answer_labels) | "rating" (a number in answer_range)
    )
    answer_range: tuple[float, float] = (1, 5)
    # What the items cluster in (intervals resample these): {"name": ..., "description": ...};
    # empty: every item is independent.
    bootstrap_unit: dict[str, str] = field(default_factory=dict)
    judge: dict[str, Any] = field(
        default_factory=dict
    )  # non-empty: scored by a judge model (evaluator/judge.py)
    items_spec: Any = (
        None  # the manifest's `items:` block (GenericItemsSpec): the generic hooks read it
    )

    def __post_init__(self) -> None:
        if not self.metrics:
            self.metrics = (self.metric,)

    @property
    def model_protocols(self) -> list[str]:
        return list(self.model.get("protocols", []))

    @property
    def key(self) -> str:
        return f"{self.suite.name}/{self.name}"

    @cached_property
    def hooks(self) -> TaskHooks:
        """The task's hooks, bound and checked once (evaluator/hooks.py: the contract)."""
        return bind_hooks(self)

    def load_split(self) -> Split:
        """Build the hidden test split from the suite's data (cached per process, rebuilt when an
        installed split changes). Raises SplitNotInstalled for a split the operator has not installed."""
        marker = split_marker(self.suite)
        cached = _SPLIT_CACHE.get(self.key)
        if cached is None or _SPLIT_MARKERS.get(self.key) != marker:
            items = self.hooks.build_items(self, split_files(self.suite))
            check_item_tiers(self, items)
            cached = _SPLIT_CACHE[self.key] = Split(
                name=self.options.get("split", "test"), items=items
            )
            _SPLIT_MARKERS[self.key] = marker
        return cached

    def split_available(self) -> bool:
        try:
            self.load_split()
        except SplitNotInstalled:
            return False
        return True

    def tier_group(self, name: str) -> TierGroup:
        for group in self.tier_groups:
            if group.name == name:
                return group
        raise KeyError(name)

    def describe(self) -> TaskDescription:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "metric": self.metric,
            "metrics": list(self.metrics),
            "model_protocols": self.model_protocols,
            "answer_field": self.answer_field,
            "answer_labels": list(self.answer_labels),
            "bootstrap_unit": self.bootstrap_unit.get("name", "item"),
            "tier_groups": [
                {
                    "name": g.name,
                    "label": g.label,
                    "tiers": [{"name": t, "label": g.label_of(t)} for t in g.tiers],
                }
                for g in self.tier_groups
            ],
        }


def check_item_tiers(task: Task, items: list[Item]) -> None:
    """Every item names one declared tier of each tier group (else scoring could not place it)."""
    groups = {group.name: frozenset(group.tiers) for group in task.tier_groups}
    for item in items:
        if item.tiers.keys() != groups.keys():
            raise SplitFormatError(
                f"{task.key}: item {item.id!r} has tier groups {sorted(item.tiers)}; "
                f"the manifest declares {sorted(groups)}"
            )
        for group, tier in item.tiers.items():
            if tier not in groups[group]:
                raise SplitFormatError(
                    f"{task.key}: item {item.id!r} is in tier {tier!r} of {group!r}, which the "
                    f"manifest does not declare; allowed: {', '.join(sorted(groups[group]))}"
                )


_SPLIT_CACHE: dict[str, Split] = {}
_SPLIT_MARKERS: dict[str, object] = {}


@lru_cache(maxsize=None)
def load_prompts(folder: Path) -> dict[str, Any]:
    """A suite's prompt texts (`prompts.yaml` in its folder), read once per process."""
    return read_yaml(Path(folder) / "prompts.yaml")


def clear_split_cache(suite_name: str | None = None) -> None:
    for key in [k for k in _SPLIT_CACHE if suite_name is None or k.startswith(suite_name + "/")]:
        _SPLIT_CACHE.pop(key, None)
        _SPLIT_MARKERS.pop(key, None)


@dataclass
class Suite:
    name: str
    title: str
    version: str
    description: str
    citation: str
    license: str
    homepage: str
    settings: dict[str, str]  # setting name -> description
    folder: Path
    tasks: dict[str, Task] = field(default_factory=dict)
    split_spec: dict[str, Any] = field(
        default_factory=dict
    )  # source: bundled | installed; hub_id; fields
    manifest: SuiteManifest | None = None  # the typed manifest it was built from
    paper_url: str = ""
    bibtex: str = ""

    @property
    def data_dir(self) -> Path:
        """The suite's own bundled files (data/, with their license)."""
        return self.folder / "data"

    @property
    def split_hidden(self) -> bool:
        """Scores on a hidden split are released through the Ladder (evaluator/release.py)."""
        return split_visibility(self) == "hidden"

    def split_status(self) -> SplitStatus:
        visibility = split_visibility(self)
        note = VISIBILITY_NOTES[visibility]
        if self.split_spec.get("source", "bundled") == "bundled":
            return {
                "source": "bundled",
                "installed": True,
                "visibility": visibility,
                "visibility_note": note,
            }
        info = installed_info(self)
        status: SplitStatus = {
            "source": "installed",
            "installed": info is not None,
            "hub_id": self.split_spec.get("hub_id"),
            "visibility": visibility,
            "visibility_note": note,
        }
        if info:
            status.update(
                {
                    "revision": info.get("revision"),
                    "fixture": info.get("fixture", False),
                    "installed_at": info.get("installed_at"),
                }
            )
        else:
            status["install"] = install_command(self)
        return status

    @property
    def split_fields(self) -> dict[str, str]:
        """Our field name -> the split's field name, as the manifest declares them."""
        return dict(self.split_spec.get("fields", {}))

    def describe(self) -> SuiteDescription:
        return {
            "name": self.name,
            "title": self.title,
            "version": self.version,
            "description": self.description,
            "citation": self.citation,
            "license": self.license,
            "homepage": self.homepage,
            "paper_url": self.paper_url,
            "bibtex": self.bibtex,
            "settings": [{"name": k, "description": v} for k, v in self.settings.items()],
            "split": self.split_status(),
            "tasks": [task.describe() for task in self.tasks.values()],
        }


def load_suite(manifest_path: Path, package: str | None = None) -> Suite:
    """The suite a manifest declares (typed and checked: evaluator/manifest.py). Names the
    registries must know and the hooks are checked by evaluator/registry.py at discovery."""
    spec = read_manifest(manifest_path)
    suite = Suite(
        name=spec.name,
        title=spec.title or spec.name,
        version=spec.version,
        description=spec.description.strip(),
        citation=spec.citation.strip(),
        license=spec.license,
        homepage=spec.homepage,
        settings=dict(spec.settings),
        folder=manifest_path.parent,
        split_spec=spec.split.model_dump(exclude_none=True),
        manifest=spec,
        paper_url=spec.paper_url,
        bibtex=spec.bibtex.strip(),
    )
    package = package or f"evaluator.suites.{manifest_path.parent.name}"
    for task_name, task_spec in spec.tasks.items():
        groups = tuple(
            TierGroup(
                name=group_name,
                label=group.label or group_name,
                tiers=group.tiers,
                labels=dict(group.labels),
            )
            for group_name, group in task_spec.tier_groups.items()
        )
        model = task_spec.model.model_dump(exclude_unset=True) if task_spec.model else {}
        suite.tasks[task_name] = Task(
            suite=suite,
            name=task_name,
            title=task_spec.title or task_name,
            description=task_spec.description.strip(),
            answer_field=task_spec.answer.field,
            answer_labels=task_spec.answer.labels,
            answer_kind=task_spec.answer.kind,
            answer_range=task_spec.answer.range,
            metric=task_spec.all_metrics[0],
            metrics=task_spec.all_metrics,
            tier_groups=groups,
            hooks_module=GENERIC_HOOKS
            if task_spec.items
            else f"{package}.{task_spec.hooks or task_name}",
            options=dict(task_spec.options),
            model=model,
            bootstrap_unit=task_spec.bootstrap_unit.model_dump()
            if task_spec.bootstrap_unit
            else {},
            judge=dict(task_spec.judge or {}),
            items_spec=task_spec.items,
        )
    return suite
