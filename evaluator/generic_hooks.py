"""Generic hooks: a plain multiple-choice or pairwise task needs no Python, only its manifest's
`items:` block, its data (JSONL) and its prompt in the suite's prompts.yaml.

    items:                       # manifest, per task (evaluator/manifest.py GenericItemsSpec)
      file: test.jsonl           # in the split's folder (bundled: the suite's data/)
      id: id                     # the item id field
      gold: answer               # the gold answer field: one of answer.labels (never public)
      public: [question, options]  # the fields submitters see, besides the id
      tiers: {domain: domain}    # tier group -> field
      options: options           # optional: a list of option texts, lettered with answer.labels

    <task>:                      # prompts.yaml
      system: ...                # optional
      user: "{question}\n{options}\nAnswer with the letter only."   # str.format over the public fields
      settings: {cot: "Think step by step, then answer."}           # optional: appended per setting

A pairwise task is the same with two labels (e.g. [A, B]) and the two responses as public fields
named in the prompt. Models run with choice_logprobs / pairwise_logprobs (one token per label) or
generate_parse (the first label found as a whole word in the text). Scoring is exact match
(accuracy). A pairwise task may be judged in both orders: `both_orders: [response_a, response_b]`
(two public fields) asks each item a second time with the two swapped; a model run's item then
scores the mean of its two orders (0, 0.5 or 1) and `position_consistency` is the share of items
whose two answers agree (an uploaded file gives one answer per item: plain exact match). Anything
else (a reward model's responses, custom parsing) is a hooks module.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evaluator.manifest import ManifestError
from evaluator.protocols import ChoiceRequest
from evaluator.splits import SplitFormatError, read_jsonl, require
from evaluator.suite import Item, Task, load_prompts


def build_items(task: Task, folder: Path) -> list[Item]:
    spec = task.items_spec
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(Path(folder) / spec.file):
        where = f"{spec.file}, line {number}"
        item_id = str(require(record, spec.id, where))
        if item_id in seen:
            raise SplitFormatError(
                f"{where}: duplicate id {item_id!r} (first on line {seen[item_id]})"
            )
        seen[item_id] = number
        gold = require(record, spec.gold, where)
        if task.answer_kind == "rating":
            gold = float(gold)
        elif str(gold) not in task.answer_labels:
            raise SplitFormatError(
                f"{where}: field '{spec.gold}' is not one of the labels {', '.join(task.answer_labels)}"
            )
        public: dict[str, Any] = {
            "id": item_id,
            **{name: require(record, name, where) for name in spec.public},
        }
        if spec.options:
            options = require(record, spec.options, where)
            if not isinstance(options, list) or len(options) != len(task.answer_labels):
                raise SplitFormatError(
                    f"{where}: field '{spec.options}' must list {len(task.answer_labels)} options"
                )
        tiers = {group: str(require(record, name, where)) for group, name in spec.tiers.items()}
        items.append(
            Item(
                id=item_id,
                tiers=tiers,
                public=public,
                gold=gold if task.answer_kind == "rating" else str(gold),
            )
        )
    return items


def _prompt(task: Task) -> dict[str, Any]:
    prompts = load_prompts(task.suite.folder)
    if task.name not in prompts or "user" not in prompts[task.name]:
        raise SplitFormatError(
            f"{task.suite.folder / 'prompts.yaml'}: {task.name}.user: missing (the generic hooks' prompt)"
        )
    return prompts[task.name]


def _lettered(task: Task, options: list) -> str:
    return "\n".join(f"{label}. {text}" for label, text in zip(task.answer_labels, options))


ORDERS = ("ab", "ba")  # a both-order item's request ids: "<id>::ab", "<id>::ba"


def hooks_for(task: Task) -> dict[str, Callable]:
    """The hooks of one generic task (they close over the task's labels and prompt)."""
    labels = tuple(task.answer_labels)
    swap = task.items_spec.both_orders
    if swap and len(labels) != 2:
        raise ManifestError(
            f"{task.key}: items.both_orders needs a pairwise task (two answer labels), not {list(labels)}"
        )
    pattern = re.compile(
        r"(?<![A-Za-z0-9_])("
        + "|".join(re.escape(label) for label in labels)
        + r")(?![A-Za-z0-9_])"
    )

    def build_requests(
        task_: Task, publics: list[dict], setting: str, tools: Any
    ) -> list[ChoiceRequest]:
        prompt = _prompt(task_)
        extra = (prompt.get("settings") or {}).get(setting, "")
        system = [{"role": "system", "content": prompt["system"]}] if prompt.get("system") else []

        def asked(shown: dict) -> list[dict]:
            user = prompt["user"].format(**shown) + (f"\n{extra}" if extra else "")
            return [*system, {"role": "user", "content": user}]

        requests = []
        for public in publics:
            fields = dict(public)
            if task_.items_spec.options:
                fields[task_.items_spec.options] = _lettered(
                    task_, public[task_.items_spec.options]
                )
            if swap:
                a, b = swap
                swapped = {**fields, a: fields[b], b: fields[a]}
                for order, shown in zip(ORDERS, (fields, swapped)):
                    requests.append(ChoiceRequest(f"{public['id']}::{order}", asked(shown), labels))
            else:
                requests.append(ChoiceRequest(public["id"], asked(fields), labels))
        return requests

    def decision_answer(decision: Any) -> str | None:
        """The answer in the item's own order: in the swapped order the labels mean the other
        response."""
        answer = decision.answer
        if swap and answer in labels and str(decision.id).endswith("::ba"):
            return labels[1 - labels.index(answer)]
        return answer

    def item_arrays(task_: Task, items: list[Item], answers: dict[str, Any]) -> dict:
        """correct: 0/1 per item, or the mean over its two orders; consistent: 1 where both orders
        picked the same response (NaN for an item answered once)."""
        correct = np.zeros(len(items), dtype=float)
        consistent = np.full(len(items), np.nan)
        for index, item in enumerate(items):
            answer = answers.get(item.id)
            if isinstance(answer, dict):
                picks = [answer.get(order) for order in ORDERS]
                correct[index] = sum(pick == item.gold for pick in picks) / len(picks)
                consistent[index] = float(picks[0] is not None and picks[0] == picks[1])
            else:
                correct[index] = float(answer == item.gold)
        return {"correct": correct, "consistent": consistent}

    def parse_answer(text: str) -> str | None:
        match = pattern.search(text or "")
        return match.group(1) if match else None

    hooks: dict[str, Callable] = {
        "build_items": build_items,
        "build_requests": build_requests,
        "parse_answer": parse_answer,
    }
    if swap:
        hooks.update(decision_answer=decision_answer, item_arrays=item_arrays)
    return hooks
