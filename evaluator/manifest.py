"""A suite's manifest (manifest.yaml) as typed objects, checked when the suite is discovered.

Every mapping refuses keys it does not know; answer kinds and split sources are closed sets;
metric and protocol names are checked against their registries (evaluator/metrics.py,
evaluator/protocols.py, after the suite's own additions are loaded); tier groups named elsewhere
(reported.yaml columns, generic items) must be declared. Every refusal is a ManifestError naming
the file, the key and the allowed values, raised at discovery (`personaboard suites check`, app
start, worker start), never at scoring time.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evaluator.yaml_files import YAMLError, read_yaml


class ManifestError(ValueError):
    """A manifest (or a file it refers to) that the service refuses: file, key, allowed values."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class AnswerSpec(Strict):
    field: str = Field(description="the predictions file's answer field")
    kind: Literal["label", "rating"] = "label"
    labels: tuple[
        str, ...
    ] = ()  # label: the allowed answers (a suite with its own parse_prediction may omit them)
    range: tuple[int | float, int | float] = (
        1,
        5,
    )  # rating: the inclusive range (ints stay ints in messages)

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_as_text(cls, value: Any) -> Any:
        return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else value


class TierGroupSpec(Strict):
    label: str | None = None
    tiers: tuple[str, ...]
    labels: dict[str, str] = {}

    @field_validator("tiers", mode="before")
    @classmethod
    def _tiers_as_text(cls, value: Any) -> Any:
        return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else value

    @model_validator(mode="after")
    def _labels_name_tiers(self) -> "TierGroupSpec":
        if len(set(self.tiers)) != len(self.tiers):
            raise ValueError(
                f"tiers are listed twice: {', '.join(sorted({t for t in self.tiers if self.tiers.count(t) > 1}))}"
            )
        unknown = sorted(set(self.labels) - set(self.tiers))
        if unknown:
            raise ValueError(
                f"labels name tier {unknown[0]!r}, which is not one of tiers: {', '.join(self.tiers)}"
            )
        return self


class ModelRunSpec(Strict):
    protocols: tuple[str, ...] = ()
    default_protocol: str | None = None
    max_new_tokens: int = Field(16, ge=1)
    # settings that would ask for reasoning elsewhere but whose prompt here asks for the bare answer
    # (PrefEval's cot): run with max_new_tokens, not refused (protocols.setting_problem)
    direct_answer_settings: tuple[str, ...] = ()
    # The protocol that reproduces the authors' runs, per model type (generative, reward), where
    # their code or paper states it; a model type missing here: they state none, every protocol
    # for it is ours. The default for generative models must be the authors' where stated.
    # `authors_note`: where they state it, what is left unstated (the About tab shows both).
    authors_protocols: dict[str, str] = {}
    authors_note: str = ""


class BootstrapUnitSpec(Strict):
    """What a task's items cluster in: intervals resample these units, not items. `within`: a
    larger unit this one nests in (RealPref: preference within user); items then name both,
    outermost first, and the outermost is resampled. `crossed_with`: a second unit crossed with
    this one (Re-Centering stage 2: prompt x user, users recur across prompts); items then name
    both, (name, crossed_with), and intervals use the two-way variance (evaluator/statistics.py)."""

    name: str
    description: str = ""
    within: str | None = None
    crossed_with: str | None = None

    @model_validator(mode="after")
    def _levels_differ(self) -> "BootstrapUnitSpec":
        if self.within == self.name:
            raise ValueError(f"within: a unit cannot nest in itself ({self.name!r})")
        if self.crossed_with == self.name:
            raise ValueError(f"crossed_with: a unit cannot cross itself ({self.name!r})")
        if self.within and self.crossed_with:
            raise ValueError(
                f"give within ({self.within!r}) or crossed_with ({self.crossed_with!r}), not both: "
                "units are nested or crossed"
            )
        return self

    @property
    def levels(self) -> tuple[str, ...]:
        """The declared levels, innermost first."""
        return (self.name, self.within) if self.within else (self.name,)


class GenericItemsSpec(Strict):
    """Items read straight from a JSONL file by the generic hooks (evaluator/generic_hooks.py): no Python."""

    file: str  # in the split's folder (bundled: the suite's data/)
    id: str = "id"
    gold: str  # the field holding the gold answer (never public)
    public: tuple[str, ...]  # the fields submitters see, besides the id
    tiers: dict[str, str] = {}  # tier group -> the field holding the item's tier
    options: str | None = (
        None  # a field holding a list of option texts, lettered with answer.labels in order
    )
    # A pairwise task judged in both orders (position bias cancels): the two public fields whose
    # places are swapped for the second order. A model then answers each item twice; the item's
    # accuracy is the mean of the two orders, and `position_consistency` says how often they agree.
    both_orders: tuple[str, str] | None = None

    @model_validator(mode="after")
    def _gold_not_public(self) -> "GenericItemsSpec":
        if self.gold in self.public:
            raise ValueError(f"the gold field {self.gold!r} cannot be public")
        if self.both_orders and not set(self.both_orders) <= set(self.public):
            raise ValueError(
                f"both_orders names {list(self.both_orders)}: both must be public fields"
            )
        return self


class TaskSpec(Strict):
    title: str | None = None
    description: str = ""
    hooks: str | None = (
        None  # module in the suite folder; default: the task's name, or the generic hooks with `items`
    )
    items: GenericItemsSpec | None = None
    answer: AnswerSpec
    metric: str | None = None  # the primary metric; default: the first of `metrics`
    metrics: tuple[str, ...] = ()
    model: ModelRunSpec | None = None
    judge: dict[str, str] | None = (
        None  # scored by the operator's judge model; these words go into the provenance
    )
    bootstrap_unit: BootstrapUnitSpec | None = None
    options: dict[
        str, Any
    ] = {}  # the suite's own settings for its hooks (split name, seeds, file layout)
    tier_groups: dict[str, TierGroupSpec]

    @model_validator(mode="after")
    def _one_metric_at_least(self) -> "TaskSpec":
        if not self.metric and not self.metrics:
            raise ValueError("give `metric` (the primary metric) or `metrics` (primary first)")
        if self.metric and self.metrics and self.metric != self.metrics[0]:
            raise ValueError(
                f"metric {self.metric!r} must be the first of metrics ({', '.join(self.metrics)})"
            )
        if self.hooks and self.items:
            raise ValueError(
                "give `hooks` (a module in the suite folder) or `items` (the generic hooks), not both"
            )
        return self

    @property
    def all_metrics(self) -> tuple[str, ...]:
        return self.metrics or ((self.metric,) if self.metric else ())


class SplitSpec(Strict):
    source: Literal["bundled", "installed"] = "bundled"
    visibility: Literal["hidden", "public"] = (
        "hidden"  # public: gold published upstream, scores released exactly
    )
    hub_id: str | None = None
    fields: dict[str, str] = {}  # our field name -> the split's field name
    # A hidden split's private part (evaluator/splits.py private_item_ids): this share of the
    # items, per tier, is scored apart and released only when the operator names a release.
    private_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    # What the division keeps together: `item` (each item on its own, per tier), or `unit`: every
    # item of one unit (the outermost level of a task's bootstrap_unit, e.g. RealPref's user) in the
    # same part, in every task of the suite; for splits where items share their gold (RealPref asks
    # one preference in 24 items, and its true/false statements are its multiple-choice options).
    private_by: Literal["item", "unit"] = "item"


class SuiteManifest(Strict):
    name: str
    title: str | None = None
    version: str
    description: str = ""
    citation: str = ""
    license: str = ""
    homepage: str = ""
    paper_url: str = ""  # the paper (arXiv abstract page, else the code repository)
    bibtex: str = ""  # the suite's citation as a BibTeX entry
    settings: dict[str, str]
    split: SplitSpec = SplitSpec()
    tasks: dict[str, TaskSpec]


# -- reading, with messages that name the file, the key and the allowed values ---------------------


def _unwrap(annotation: Any) -> Any:
    """X from X | None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model class whose field `loc` names (walking fields, dict values and tuple items)."""
    current: Any = SuiteManifest
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            if part not in current.model_fields:
                return None
            current = current.model_fields[part].annotation
        elif typing.get_origin(current) in (dict, tuple, list):
            current = typing.get_args(current)[-1]
        else:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _describe(error: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    key = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        owner = _model_at(loc[:-1])
        allowed = ", ".join(owner.model_fields) if owner else "?"
        return f"{key}: unknown key; allowed: {allowed}"
    if error["type"] == "missing":
        return f"{key}: missing (required)"
    message = error["msg"].removeprefix("Value error, ")
    return f"{key}: {message}"


def parse_manifest(data: Any, path: Path | str) -> SuiteManifest:
    try:
        return SuiteManifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors())
        raise ManifestError(f"{path}: {problems}") from None


def read_manifest(path: Path) -> SuiteManifest:
    try:
        data = read_yaml(path)
    except YAMLError as exc:
        raise ManifestError(f"{path}: not valid YAML ({exc})") from None
    return parse_manifest(data, path)


def dump_manifest(manifest: SuiteManifest) -> dict[str, Any]:
    """The manifest as plain data (only what the file set): parse_manifest(dump) == manifest."""
    return manifest.model_dump(mode="json", exclude_unset=True)


def check_names(
    manifest: SuiteManifest, path: Path | str, metrics: tuple[str, ...], protocols: tuple[str, ...]
) -> None:
    """Names the registries must know: every metric and protocol a task uses."""
    for task_name, task in manifest.tasks.items():
        where = f"{path}: tasks.{task_name}"
        for index, metric in enumerate(task.all_metrics):
            if metric not in metrics:
                key = f"metrics[{index}]" if task.metrics else "metric"
                raise ManifestError(
                    f"{where}.{key}: unknown metric {metric!r}; allowed: {', '.join(metrics)}"
                )
        if task.model is not None:
            for index, protocol in enumerate(task.model.protocols):
                if protocol not in protocols:
                    raise ManifestError(
                        f"{where}.model.protocols[{index}]: unknown protocol {protocol!r}; "
                        f"allowed: {', '.join(protocols)}"
                    )
            for model_type, protocol in task.model.authors_protocols.items():
                if model_type not in ("generative", "reward"):
                    raise ManifestError(
                        f"{where}.model.authors_protocols: unknown model type {model_type!r}; "
                        "allowed: generative, reward"
                    )
                if protocol not in task.model.protocols:
                    raise ManifestError(
                        f"{where}.model.authors_protocols.{model_type}: {protocol!r} is not one of "
                        f"this task's protocols; allowed: {', '.join(task.model.protocols)}"
                    )
            authors = task.model.authors_protocols.get("generative")
            if authors and task.model.default_protocol not in (None, authors):
                raise ManifestError(
                    f"{where}.model.default_protocol: {task.model.default_protocol!r}, but the "
                    f"authors' protocol is {authors!r} (authors_protocols.generative): the default "
                    "must be the authors' protocol where they state it"
                )
            if (
                task.model.default_protocol is not None
                and task.model.default_protocol not in task.model.protocols
            ):
                raise ManifestError(
                    f"{where}.model.default_protocol: {task.model.default_protocol!r} is not one of "
                    f"this task's protocols; allowed: {', '.join(task.model.protocols)}"
                )
        if task.items is not None:
            for group in task.items.tiers:
                if group not in task.tier_groups:
                    raise ManifestError(
                        f"{where}.items.tiers.{group}: unknown tier group; allowed: "
                        f"{', '.join(task.tier_groups)}"
                    )
            missing = [g for g in task.tier_groups if g not in task.items.tiers]
            if missing:
                raise ManifestError(
                    f"{where}.items.tiers: no field for tier group {missing[0]!r}; "
                    f"every tier group needs one ({', '.join(task.tier_groups)})"
                )
        if task.answer.kind == "label" and task.items is not None and not task.answer.labels:
            raise ManifestError(
                f"{where}.answer.labels: the generic hooks need the labels an answer may take"
            )
