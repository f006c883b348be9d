"""The hooks a suite's task may define: one typed interface, bound and checked at discovery.

A task's hooks live in one module of its suite folder (the manifest's `hooks:`, default the task's
name), as module-level functions (or, for a module serving several tasks, returned by its
`hooks_for(task)`); a task with an `items:` block in its manifest uses the generic
hooks (evaluator/generic_hooks.py) and needs no Python. `SuiteHooks` below is the contract, one
docstring per hook. `bind_hooks` looks every hook up once, checks that each defined hook takes the
arguments its contract names and that the hooks the manifest implies exist, and fills in the
defaults, so the rest of the service calls `task.hooks.<hook>(...)` and never looks a name up.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from evaluator.manifest import ManifestError

if TYPE_CHECKING:
    from evaluator.backends.base import Backend
    from evaluator.judge import Judge
    from evaluator.protocols import ChoiceRequest, Decision
    from evaluator.suite import Item, Split, Task

GENERIC_HOOKS = "evaluator.generic_hooks"


class SuiteHooks(Protocol):
    """What a task's hooks module may define. Only `build_items` is always required."""

    def build_items(self, task: "Task", folder: Path) -> "list[Item]":
        """REQUIRED. The split's items from the split's files in `folder` (an installed split's
        files, or the suite's data/). `Item.public` is what submitters download: it must hold "id"
        and never the gold or anything that reveals it. `Item.gold` is whatever the scorer needs.
        Every item's `tiers` names one tier of each of the task's tier groups. A missing field is a
        SplitFormatError naming file, line and field (evaluator/splits.py read_jsonl, require)."""

    def parse_prediction(self, record: dict) -> Any:
        """Optional. The answer in one predictions line (a parsed JSON object), or
        PredictionProblem(field, message) (message must not reveal gold). Default: the manifest's
        `answer` check (a label of `answer.labels`, or a number in `answer.range`)."""

    def item_arrays(
        self,
        task: "Task",
        items: "list[Item]",
        answers: dict[str, Any],
        judge: "Judge | None" = None,
    ) -> dict[str, np.ndarray]:
        """Optional. Per-item arrays the metrics read (evaluator/metrics.yaml `reads`), one value per
        item in order. Default: `correct` = (answer == gold). A judge-scored task (manifest `judge:`)
        receives the operator's judge as the fourth argument; other tasks get three arguments."""

    def build_requests(
        self, task: "Task", publics: list[dict], setting: str, tools: Any
    ) -> "list[ChoiceRequest]":
        """Required when the manifest lists model protocols. The requests (chat messages, the labels
        to choose from, responses for reward models) for the public inputs of a batch, in
        `setting`; `tools.protocol` names the protocol, `tools.generate` / `tools.retrieve` reach
        the model and the retriever. Ids `item::variant` combine into {variant: answer} per item."""

    def parse_answer(self, text: str) -> str | None:
        """Required when the task runs `generate_parse`. The answer in a model's generated text, or
        None (unparsable: counts as wrong)."""

    def decision_answer(self, decision: "Decision") -> Any:
        """Optional. The stored answer for a model's decision (e.g. an expected rating). Default: decision.answer."""

    def check_setting(self, task: "Task", setting: str) -> str | None:
        """Optional. Why a setting the manifest declares is unavailable for the installed split (a
        message refuses it: 409, field "setting"), or None. None also when the split is not installed."""

    def fit_model(
        self, task: "Task", split: "Split", setting: str, backend: "Backend"
    ) -> "tuple[Split, dict]":
        """Optional. The items this model can run, and notes on what is n/a (they mark the row partial
        and go into the provenance). Called before a limit is applied. Default: every item."""

    def gold_answer(self, task: "Task", item: "Item") -> Any:
        """Optional. The answer a perfect predictions file gives for `item` (the suite contract test
        scores it: 100 %). Default: the gold itself when it is one of the answer labels; None where
        no answer is perfect by construction (e.g. judge-scored texts)."""

    def public_companion(self, task: "Task") -> dict:
        """Optional. What the public inputs refer to but do not carry (RealPref: the session texts of
        the histories; PrefEval mcq_turns: the distractor turns), served as JSON beside the inputs.
        Never gold. Default: none (the inputs carry everything)."""

    def judge_prompt_sha256(self) -> str:
        """Optional, judge-scored tasks. Hash of the suite's own judge texts, recorded with the judge
        on every judged row. Default: none."""


HOOK_NAMES = tuple(name for name in SuiteHooks.__dict__ if not name.startswith("_"))
# The positional arguments each hook takes (the judge of item_arrays is the optional fourth).
_ARITY = {
    name: len(inspect.signature(getattr(SuiteHooks, name)).parameters) - 1 for name in HOOK_NAMES
}


def _takes(function: Callable, count: int) -> bool:
    try:
        inspect.signature(function).bind(*range(count))
    except TypeError:
        return False
    return True


def _exact_match(
    task: "Task", items: "list[Item]", answers: dict[str, Any], judge: "Judge | None" = None
) -> dict[str, np.ndarray]:
    return {
        "correct": np.fromiter(
            (answers[item.id] == item.gold for item in items), dtype=bool, count=len(items)
        )
    }


@dataclass(frozen=True)
class TaskHooks:
    """A task's hooks, bound once: every hook callable, defaults filled in (parse_prediction: None =
    the manifest's answer check, done by evaluator/predictions.py)."""

    module: ModuleType
    build_items: Callable
    item_arrays: Callable
    build_requests: Callable | None
    parse_answer: Callable | None
    decision_answer: Callable
    check_setting: Callable
    fit_model: Callable
    gold_answer: Callable
    parse_prediction: Callable | None
    custom_item_arrays: bool
    public_companion: Callable | None = None
    judge_prompt_sha256: Callable | None = None


def bind_hooks(task: "Task") -> TaskHooks:
    """Import the task's hooks module and check it against SuiteHooks and the manifest."""
    try:
        module = importlib.import_module(task.hooks_module)
    except ModuleNotFoundError as exc:
        if exc.name and task.hooks_module.startswith(exc.name):
            raise ManifestError(
                f"{task.suite.folder / 'manifest.yaml'}: tasks.{task.name}.hooks: no module "
                f"{task.hooks_module!r} (a .py file in the suite folder, or give `items:` for the generic hooks)"
            ) from None
        raise
    where = f"{getattr(module, '__file__', task.hooks_module)} (hooks of {task.key})"
    # A module serving several tasks (the generic hooks) gives each task its own: hooks_for(task) -> {name: hook}.
    source = (
        module.hooks_for(task) if callable(getattr(module, "hooks_for", None)) else vars(module)
    )
    found: dict[str, Callable] = {}
    for name in HOOK_NAMES:
        function = source.get(name)
        if function is None:
            continue
        if not callable(function):
            raise ManifestError(
                f"{where}: {name} must be a function, not {type(function).__name__}"
            )
        arity = _ARITY[name] - (1 if name == "item_arrays" and not task.judge else 0)
        if not _takes(function, arity):
            params = list(inspect.signature(getattr(SuiteHooks, name)).parameters)[1 : 1 + arity]
            raise ManifestError(
                f"{where}: {name} must take ({', '.join(params)}), not {inspect.signature(function)}"
            )
        found[name] = function

    def require(name: str, why: str) -> None:
        if name not in found:
            raise ManifestError(
                f"{where}: {name} is missing; {why} (contract: evaluator/hooks.py SuiteHooks.{name})"
            )

    require("build_items", "every task builds its items")
    if task.model_protocols:
        require(
            "build_requests",
            f"the manifest lists model protocols ({', '.join(task.model_protocols)})",
        )
    if "generate_parse" in task.model_protocols:
        require("parse_answer", "the task runs generate_parse")
    if task.judge:
        require(
            "item_arrays", "a judge-scored task turns the judge's verdicts into per-item arrays"
        )
    if task.answer_kind == "label" and not task.answer_labels:
        require(
            "parse_prediction", "the manifest's answer has no labels to check predictions against"
        )

    def default_gold(task_: "Task", item: "Item") -> Any:
        return (
            item.gold if task_.answer_kind == "label" and item.gold in task_.answer_labels else None
        )

    return TaskHooks(
        module=module,
        build_items=found["build_items"],
        item_arrays=found.get("item_arrays", _exact_match),
        build_requests=found.get("build_requests"),
        parse_answer=found.get("parse_answer"),
        decision_answer=found.get("decision_answer", lambda decision: decision.answer),
        check_setting=found.get("check_setting", lambda task_, setting: None),
        fit_model=found.get("fit_model", lambda task_, split, setting, backend: (split, {})),
        gold_answer=found.get("gold_answer", default_gold),
        parse_prediction=found.get("parse_prediction"),
        custom_item_arrays="item_arrays" in found,
        public_companion=found.get("public_companion"),
        judge_prompt_sha256=found.get("judge_prompt_sha256"),
    )
