"""Running a model on a task's hidden split: suite hooks -> protocol -> backend, with checkpoints.

The same function serves the queue workers and `personaboard evaluate`. Decisions are appended
to a checkpoint file as batches finish, so a worker killed mid-run resumes where it stopped.
The checkpoint holds the model's answers only; gold labels stay in the split, read by the scorer.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from evaluator.backends.base import Backend, BackendError, Messages
from evaluator.protocols import PROTOCOL_VERSION, Decision, default_protocol, get_protocol, protocol_problem
from evaluator.suite import Item, Split, Task

BATCH_ITEMS = 64


class ModelTools:
    """What suite hooks may ask of the model while building requests (e.g. PrefEval's explicit
    form needs the model's own reply to the preference; `rag` needs retrieval)."""

    def __init__(self, backend: Backend, protocol: str, embedder_factory: Callable[[], Any] | None = None):
        self.backend = backend
        self.protocol = protocol
        self._embedder_factory = embedder_factory
        self._embedder = None
        self.generated_tokens = 0

    def generate(self, conversations: list[Messages], max_new_tokens: int) -> list[str]:
        return self.backend.generate([self.backend.render(m) for m in conversations], max_new_tokens)

    def retrieve(self, query: str, passages: list[str], k: int) -> list[str]:
        if self._embedder is None:
            from evaluator.backends.embedding import shared_embedder

            self._embedder = (self._embedder_factory or shared_embedder)()
        return self._embedder.top_k(query, passages, k)


class Checkpoint:
    """Append-only JSONL of finished decisions; a torn last line (killed mid-write) is ignored."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> dict[str, dict]:
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        with open(self.path, encoding="utf-8") as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                done[record["id"]] = record
        return done

    def append(self, decisions: list[Decision]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = False
        if self.path.exists() and self.path.stat().st_size:
            with open(self.path, "rb") as existing:
                existing.seek(-1, os.SEEK_END)
                torn = existing.read(1) != b"\n"  # a write cut short: end it, or the next record joins it
        with open(self.path, "a", encoding="utf-8") as stream:
            if torn:
                stream.write("\n")
            for d in decisions:
                stream.write(json.dumps({"id": d.id, "answer": d.answer, "prompt_tokens": d.prompt_tokens}) + "\n")
            stream.flush()
            os.fsync(stream.fileno())


@dataclass
class ProgressMeter:
    total: int
    done: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    resumed: int = 0

    def report(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        fresh = self.done - self.resumed
        rate = fresh / elapsed if fresh else 0.0
        return {
            "done": self.done, "total": self.total, "tokens_per_s": self.tokens / elapsed,
            "items_per_s": rate, "eta_s": (self.total - self.done) / rate if rate else None,
        }


@dataclass
class ModelRun:
    split: Split  # the items evaluated (the whole split, or a deterministic subset for --limit)
    answers: dict[str, str | None]
    stats: dict[str, Any]
    partial: bool


def select_items(split: Split, limit: int | None, seed: int = 0) -> Split:
    """The whole split, or `limit` items for a smoke run: a seeded random sample that takes the
    tiers of the first tier group in turn (every form represented), the same every time.

    Random rather than every k-th item: where the gold letters follow a pattern along the split
    (PrefEval's official shuffle repeats per topic), a regular stride can pick items that all share
    one answer and make a constant answerer look perfect.
    """
    if not limit or limit >= len(split.items):
        return split
    import random

    rng = random.Random(seed)
    first_group = next(iter(split.items[0].tiers), None) if split.items else None
    pools: dict[str, list[Item]] = {}
    for item in split.items:
        pools.setdefault(item.tiers.get(first_group, ""), []).append(item)
    for pool in pools.values():
        rng.shuffle(pool)
    chosen: list[Item] = []
    queues = list(pools.values())
    while len(chosen) < limit:
        for pool in queues:
            if pool and len(chosen) < limit:
                chosen.append(pool.pop())
    order = {item.id: i for i, item in enumerate(split.items)}
    chosen.sort(key=lambda item: order[item.id])
    return Split(name=f"{split.name}[{limit} of {len(split.items)}]", items=chosen)


def _by_item(records) -> dict[str, Any]:
    """Answers per item. A request id `item::variant` (e.g. both orders of a pairwise judgment)
    contributes `{variant: answer}` to its item; a plain id is the item's answer."""
    answers: dict[str, Any] = {}
    for record in records:
        item, _, variant = record["id"].partition("::")
        if variant:
            answers.setdefault(item, {})[variant] = record["answer"]
        else:
            answers[item] = record["answer"]
    return answers


def prompt_template_hash(task: Task) -> str:
    """Hash of what shapes the prompts: every module of the suite's folder (a task's hooks may
    import shared code from it) and its prompt texts."""
    digest = hashlib.sha256()
    folder = task.suite.folder
    for path in sorted([*folder.glob("*.py"), *folder.glob("prompts.yaml")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def run_model(
    task: Task,
    setting: str,
    backend: Backend,
    protocol: str | None = None,
    limit: int | None = None,
    checkpoint: Checkpoint | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    tools: ModelTools | None = None,
    batch_items: int = BATCH_ITEMS,
) -> ModelRun:
    logprobs = getattr(backend, "supports_logprobs", True)  # an endpoint may return none
    protocol = protocol or default_protocol(task, backend.spec.model_type, logprobs)  # the same rule as at intake
    problem = protocol_problem(task, protocol, backend.spec.model_type, logprobs)
    if problem:
        raise BackendError(problem)
    run_protocol = get_protocol(protocol).run
    full = task.load_split()
    # a suite may skip items the model cannot run (n/a, never truncated)
    full, not_applicable = task.hooks.fit_model(task, full, setting, backend)
    split = select_items(full, limit)
    tools = tools or ModelTools(backend, protocol)
    done = _by_item(checkpoint.load().values()) if checkpoint else {}
    answers: dict[str, Any] = {i.id: done[i.id] for i in split.items if i.id in done}
    meter = ProgressMeter(total=len(split.items), done=len(answers), resumed=len(answers))
    todo: list[Item] = [i for i in split.items if i.id not in answers]
    to_answer = task.hooks.decision_answer
    started = time.monotonic()
    for start in range(0, len(todo), batch_items):
        chunk = todo[start : start + batch_items]
        requests = task.hooks.build_requests(task, [i.public for i in chunk], setting, tools)

        def count(_items: int, tokens: int) -> None:
            meter.tokens += tokens

        decisions = run_protocol(backend, requests, task, count)
        for d in decisions:
            d.answer = to_answer(d)
        if checkpoint:
            checkpoint.append(decisions)
        answers.update(_by_item({"id": d.id, "answer": d.answer} for d in decisions))
        meter.done += len(chunk)
        if on_progress:
            on_progress(meter.report())
    stats = {
        "protocol": protocol,
        "protocol_version": PROTOCOL_VERSION,
        "prompt_template_sha256": prompt_template_hash(task),
        "items": len(split.items),
        "items_resumed": meter.resumed,
        "unparsed": sum(1 for a in answers.values() if a is None),
        "prompt_tokens": meter.tokens,
        "seconds": time.monotonic() - started,
        **backend.describe(),
    }
    if not_applicable:
        stats["not_applicable"] = not_applicable
    return ModelRun(split=split, answers=answers, stats=stats, partial=len(split.items) < len(task.load_split().items))
