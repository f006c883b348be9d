"""Running a model on a task's hidden split: suite hooks -> protocol -> backend, with checkpoints.

The same function serves the queue workers and `personaboard evaluate`. Decisions are appended
to a checkpoint file as batches finish, so a worker killed mid-run resumes where it stopped.
The checkpoint holds the model's answers only; gold labels stay in the split, read by the scorer.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TypedDict

from evaluator.backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    EngineCall,
    Messages,
)
from evaluator.item_records import CheckpointEntry, checkpoint_entry
from evaluator.package import package_version
from evaluator.phases import ITEMS, WARMING, report_phase
from evaluator.protocols import (
    CIRCULAR,
    PROTOCOL_VERSION,
    UNPARSED,
    Decision,
    circular_publics,
    combine_rotations,
    default_protocol,
    get_protocol,
    protocol_problem,
    setting_problem,
)
from evaluator.suite import Item, Split, Task

BATCH_ITEMS = 64  # the default per backend call; a backend may ask for more (Backend.batch_items)
PROGRESS_EVERY_S = (
    1.0  # progress inside a chunk of items, at most this often (the UI polls each second)
)


class ModelTools:
    """What suite hooks may ask of the model while building requests (e.g. PrefEval's explicit
    form needs the model's own reply to the preference; `rag` needs retrieval)."""

    def __init__(
        self, backend: Backend, protocol: str, embedder_factory: Callable[[], Any] | None = None
    ):
        self.backend = backend
        self.protocol = protocol
        self._embedder_factory = embedder_factory
        self._embedder: Any = None  # built on the first retrieval
        self.generated_tokens = 0

        self.generation_requests = 0
        # run_model routes generation through its engine thread while it feeds the backend.
        self.route_generation: Callable[[list[Any], int], Sequence[str | None]] | None = None

    def generate(self, conversations: list[Messages], max_new_tokens: int) -> list[str]:
        self.generation_requests += 1
        prompts = [self.backend.render(m) for m in conversations]
        texts: Sequence[str | None]
        if self.route_generation is not None:
            texts = self.route_generation(prompts, max_new_tokens)
        else:
            texts = self.backend.generate(prompts, max_new_tokens)
        # None: the backend could not run that prompt (over an endpoint's window). The request built on
        # it contains this conversation and more, so it is refused too and the item becomes n/a there.
        return ["" if text is None else text for text in texts]

    def retrieve(self, query: str, passages: list[str], k: int) -> list[str]:
        if self._embedder is None:
            from evaluator.backends.embedding import shared_embedder

            self._embedder = (self._embedder_factory or shared_embedder)()
        return self._embedder.top_k(query, passages, k)


class Checkpoint:
    """Append-only JSONL of finished decisions; a torn last line (killed mid-write) is ignored."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> dict[str, CheckpointEntry]:
        """The finished requests by id; a request's later line (a resumed run's) wins."""
        done: dict[str, CheckpointEntry] = {}
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
                torn = (
                    existing.read(1) != b"\n"
                )  # a write cut short: end it, or the next record joins it
        with open(self.path, "a", encoding="utf-8") as stream:
            if torn:
                stream.write("\n")
            for d in decisions:
                stream.write(json.dumps(checkpoint_entry(d), ensure_ascii=False) + "\n")
            stream.flush()
            os.fsync(stream.fileno())


class Progress(TypedDict, total=False):
    """A model run's progress (ProgressMeter.report), as the queue, the status views and the CLI's
    progress bar read it; one read back from the submission records has done and total only."""

    done: int  # items answered (those of the current chunk already run included)
    total: int
    in_flight: int
    tokens_per_s: float
    items_per_s: float
    eta_s: float | None  # None: no rate measured yet
    phase: str  # evaluator/phases.py: "items" once the run reports items


OnProgress = Callable[[Progress], None]


class CheckpointWriter:
    """Checkpoint appends (with their fsync) and EVERY progress report on one thread, off the
    engine's path, in the order they were made: a report inside a chunk and the previous chunk's
    end are never delivered out of order, so progress never goes backwards. A failure there stops
    the run at the engine's next chunk."""

    def __init__(self, checkpoint: Checkpoint | None, on_progress: OnProgress | None):
        self.checkpoint, self.on_progress = checkpoint, on_progress
        self.error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="checkpoint-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (entry := self._queue.get()) is not None:
            if self.error is not None:
                continue  # drain: nothing after a failure is written
            decisions, report = entry
            try:
                if self.checkpoint and decisions is not None:
                    self.checkpoint.append(decisions)
                if self.on_progress:
                    self.on_progress(report)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the engine's thread
                self.error = exc

    def put(self, decisions: list[Decision], report: Progress) -> None:
        """A chunk's decisions, then the report that counts them."""
        self.raise_if_failed()
        self._queue.put((decisions, report))

    def report(self, report: Progress) -> None:
        """A progress report alone (inside a chunk), queued behind everything put before it."""
        if self.on_progress and self.error is None:
            self._queue.put((None, report))

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self.raise_if_failed()


@dataclass
class _Prepared:
    chunk: list[Item]
    requests: list
    rendered: dict[
        int, list[int]
    ]  # id(request.messages) -> token ids, rendered on the preparer thread
    generated: bool  # its build asked the model for text (the next build likely will too)


class _FedBackend:
    """The backend as the protocols see it on the engine thread: prompts come pre-rendered, and
    generations the preparer asked for ride along in the same engine call as the scoring."""

    def __init__(self, backend: Backend, rendered: dict[int, list[int]], riders: list):
        self._backend, self._rendered, self._riders = backend, rendered, riders

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def render(self, messages, add_generation_prompt: bool = True) -> list[int]:
        if add_generation_prompt and id(messages) in self._rendered:
            return self._rendered[id(messages)]
        return self._backend.render(messages, add_generation_prompt)

    def _with_riders(self, call: EngineCall, progress):
        riders, self._riders[:] = list(self._riders), []
        results = run_calls(self._backend, [call, *(r[0] for r in riders)], progress)
        for (_, future), result in zip(riders, results[1:]):
            future.set_result(result)
        return results[0]

    def choice_logprobs(self, prompts, choice_ids, progress=None):
        return self._with_riders(EngineCall("logprobs", prompts, list(choice_ids)), progress)

    def generate(self, prompts, max_new_tokens, progress=None):
        return self._with_riders(
            EngineCall("generate", prompts, max_new_tokens=max_new_tokens), progress
        )


def run_calls(backend: Backend, calls: list[EngineCall], progress=None) -> list:
    """One combined engine call where the backend has one (vLLM), else each primitive in turn
    (called on `backend` itself, so a wrapper around a backend sees every call)."""
    if getattr(type(backend), "run_calls", Backend.run_calls) is not Backend.run_calls:
        return backend.run_calls(calls, progress)
    return [
        backend.choice_logprobs(c.prompts, c.choice_ids, progress)
        if c.kind == "logprobs"
        else backend.generate(c.prompts, c.max_new_tokens, progress)
        for c in calls
    ]


def feed_engine(
    backend: Backend,
    tools: ModelTools,
    chunks: list[list[Item]],
    build,
    decide,
    finished,
    writer: CheckpointWriter,
) -> None:
    """Run the chunks so that the engine never waits on Python.

    A preparer thread builds and tokenizes the next chunk while the engine runs this one; the
    generations a build asks for (PrefEval's first replies) go to this thread, which submits them
    in the same engine call as the chunk it is scoring; checkpoints and progress are written by
    `writer` on its own thread. Only this thread calls the backend.
    """
    inbox: queue.Queue = queue.Queue()
    slots = threading.Semaphore(2)  # chunks built but not yet scored: the one running and the next
    stop = threading.Event()

    def route_generation(prompts: list[list[int]], max_new_tokens: int) -> list[str]:
        future: Future = Future()
        inbox.put(
            ("generate", EngineCall("generate", prompts, max_new_tokens=max_new_tokens), future)
        )
        return future.result()

    def prepare() -> None:
        try:
            for chunk in chunks:
                slots.acquire()
                if stop.is_set():
                    return
                asked = tools.generation_requests
                requests = build(chunk)
                rendered = {
                    id(r.messages): backend.render(r.messages) for r in requests if not r.responses
                }
                inbox.put(
                    (
                        "chunk",
                        _Prepared(chunk, requests, rendered, tools.generation_requests != asked),
                    )
                )
            inbox.put(("done",))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the engine thread
            inbox.put(("error", exc))

    tools.route_generation = route_generation
    preparer = threading.Thread(target=prepare, name="chunk-preparer", daemon=True)
    ready: list[_Prepared] = []
    riders: list = []
    done = False

    def take(message) -> None:
        nonlocal done
        if message[0] == "chunk":
            ready.append(message[1])
        elif message[0] == "generate":
            riders.append((message[1], message[2]))
        elif message[0] == "done":
            done = True
        else:
            raise message[1]

    preparer.start()
    try:
        while not done or ready or riders:
            # Wait when nothing can run, and when the chunk at hand came from a build that generated:
            # the build now under way will ask for its generation, which then rides with this chunk.
            while not done and (
                (not ready and not riders)
                or (len(ready) == 1 and ready[0].generated and not riders)
            ):
                take(inbox.get())
            while True:
                try:
                    take(inbox.get_nowait())
                except queue.Empty:
                    break
            writer.raise_if_failed()
            if ready:
                prepared = ready.pop(0)
                decisions = decide(
                    _FedBackend(backend, prepared.rendered, riders),
                    prepared.requests,
                    prepared.chunk,
                )
                slots.release()
                writer.put(decisions, finished(prepared.chunk, decisions))
            elif riders:
                call, future = riders.pop(0)
                rest = list(riders)
                riders.clear()
                results = run_calls(backend, [call, *(r[0] for r in rest)])
                for f, result in zip([future, *(r[1] for r in rest)], results):
                    f.set_result(result)
    except BaseException:
        stop.set()
        slots.release()  # a preparer waiting for a slot sees `stop` and returns
        while True:  # a preparer waiting for a generation gets an error instead
            try:
                message = inbox.get_nowait()
            except queue.Empty:
                break
            if message[0] == "generate":
                riders.append((message[1], message[2]))
        for _, future in riders:
            future.set_exception(RuntimeError("the run stopped"))
        raise
    finally:
        tools.route_generation = None
        writer.close()


@dataclass
class ProgressMeter:
    total: int
    done: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    resumed: int = 0

    def report(self, in_flight: int = 0) -> Progress:
        """`in_flight`: items of the current chunk whose prompts the backend has already run."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        done = self.done + in_flight
        fresh = done - self.resumed
        rate = fresh / elapsed if fresh else 0.0
        return {
            "phase": ITEMS,
            "done": done,
            "total": self.total,
            "in_flight": in_flight,
            "tokens_per_s": self.tokens / elapsed,
            "items_per_s": rate,
            "eta_s": (self.total - done) / rate if rate else None,
        }


class RetrievalStats(TypedDict, total=False):
    """What a `rag` row records of its retriever (submissions/jobs.py retrieval_stats)."""

    retrieval_model: str
    retrieval_deviation: str  # where the suite's paper names another retriever


class RunStats(BackendDescription, RetrievalStats, total=False):
    """What a model run records of itself (run_model), then what the job adds (submissions/jobs.py
    _evaluate_model); the result's provenance holds it all (its `model` is the job's own)."""

    protocol: str
    protocol_version: str
    package_version: str  # what `personaboard evaluate` re-runs it with
    prompt_template_sha256: str
    items: int
    items_resumed: int
    unparsed: int  # items whose output no answer could be read from (scored wrong)
    prompt_tokens: int
    seconds: float
    not_applicable: dict[str, str]  # why items were left out (n/a), by reason
    tiers_not_covered: dict[str, list[str]]  # a limited run: group -> tiers it has no item of
    # added by the job:
    answers_sha256: str  # two runs with the same answers are one row
    engine_warm: bool  # loaded by an earlier job of this worker
    seeds: dict[str, Any]


@dataclass
class ModelRun:
    split: Split  # the items evaluated (the whole split, or a deterministic subset for --limit)
    answers: dict[str, str | None]
    stats: RunStats
    partial: bool


def select_items(split: Split, limit: int | None, seed: int = 0) -> Split:
    """The whole split, or `limit` items for a smoke run: a seeded random sample that takes the
    tiers of the first tier group in turn, and within each turn prefers an item that brings a tier
    (of any group) not yet covered, so every tier of every group is represented when `limit`
    allows (`uncovered_tiers` names those it could not); the same every time.

    Random rather than every k-th item: where the gold letters follow a pattern along the split
    (PrefEval's official shuffle repeats per topic), a regular stride can pick items that all share
    one answer and make a constant answerer look perfect.
    """
    if not limit or limit >= len(split.items):
        return split
    import random

    rng = random.Random(seed)
    first_group = next(iter(split.items[0].tiers), "") if split.items else ""
    pools: dict[str, list[Item]] = {}
    for item in split.items:
        pools.setdefault(item.tiers.get(first_group, ""), []).append(item)
    for pool in pools.values():
        rng.shuffle(pool)
    missing = {pair for item in split.items for pair in item.tiers.items()}
    chosen: list[Item] = []
    queues = list(pools.values())
    while len(chosen) < limit:
        for pool in queues:
            if pool and len(chosen) < limit:
                pick = len(pool) - 1
                if (
                    missing
                ):  # the last (random) item that brings an uncovered tier, else the last one
                    pick = next(
                        (
                            i
                            for i in range(len(pool) - 1, -1, -1)
                            if not missing.isdisjoint(pool[i].tiers.items())
                        ),
                        pick,
                    )
                item = pool.pop(pick)
                missing.difference_update(item.tiers.items())
                chosen.append(item)
    order = {item.id: i for i, item in enumerate(split.items)}
    chosen.sort(key=lambda item: order[item.id])
    return Split(name=f"{split.name}[{limit} of {len(split.items)}]", items=chosen)


def _public_part(task: Task, split: Split) -> Split:
    """What a smoke run (`limit`) draws from: on a hidden split with a private part, the public
    part only. `limit` then counts the items its live score is of (at least the 50 a hidden split
    releases from: submissions/intake.py), and no item is run for a private score that would never
    be released (a partial row is never ranked, so never re-ranked)."""
    from evaluator.scoring import private_part_ids

    private = private_part_ids(task)
    if not private:
        return split
    return Split(name=split.name, items=[item for item in split.items if item.id not in private])


def uncovered_tiers(full: Split, chosen: Split) -> dict[str, list[str]]:
    """Tiers present in the full split that a limited run has no item of: group -> tiers."""
    have = {pair for item in chosen.items for pair in item.tiers.items()}
    missing: dict[str, list[str]] = {}
    for item in full.items:
        for group, tier in item.tiers.items():
            if (group, tier) not in have and tier not in missing.get(group, []):
                missing.setdefault(group, []).append(tier)
    return missing


def unparsed_items(records) -> set[str]:
    """Items with an output no answer could be read from (any of its requests: both orders of a
    pairwise judgment count once). A checkpoint written before rules were kept: a None answer."""
    return {
        record["id"].partition("::")[0]
        for record in records
        if (record.get("rule") or (UNPARSED if record.get("answer") is None else "")) == UNPARSED
    }


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
    on_progress: OnProgress | None = None,
    tools: ModelTools | None = None,
    batch_items: int | None = None,
) -> ModelRun:
    report_phase(WARMING)  # the split, the first chunk's prompts, the first engine call
    logprobs = getattr(backend, "supports_logprobs", True)  # an endpoint may return none
    protocol = protocol or default_protocol(
        task, backend.spec.model_type, logprobs
    )  # the same rule as at intake
    chat_only = getattr(backend, "chat_only", False)  # an endpoint renders its own template
    problem = protocol_problem(
        task, protocol, backend.spec.model_type, logprobs, chat_only
    ) or setting_problem(task, setting, protocol)
    if problem:
        raise BackendError(problem)
    assert protocol is not None  # protocol_problem refuses a missing one
    run_protocol = get_protocol(protocol).run
    build_requests = task.hooks.build_requests
    assert build_requests is not None  # bound whenever the manifest lists model protocols
    full = task.load_split()
    # a suite may skip items the model cannot run (n/a, never truncated)
    full, not_applicable = task.hooks.fit_model(task, full, setting, backend)
    split = select_items(_public_part(task, full) if limit else full, limit)
    tools = tools or ModelTools(backend, protocol)
    kept = list(checkpoint.load().values()) if checkpoint else []
    done = _by_item(kept)
    answers: dict[str, Any] = {i.id: done[i.id] for i in split.items if i.id in done}
    unparsed = unparsed_items(kept) & set(answers)
    meter = ProgressMeter(total=len(split.items), done=len(answers), resumed=len(answers))
    todo: list[Item] = [i for i in split.items if i.id not in answers]
    to_answer = task.hooks.decision_answer
    started = time.monotonic()

    # Touched on the engine thread only (count, decide, finished): the preparer builds chunk k+1
    # while chunk k runs, so nothing it sets may feed chunk k's reports.
    in_chunk = {"prompts": 0, "items_per_prompt": 1.0, "reported": time.monotonic()}

    def count(prompts: int, tokens: int) -> None:
        # The backend's own batches are smaller than a chunk: report between them too (at most every
        # PROGRESS_EVERY_S), so progress moves during a chunk; prompts map to items in proportion.
        # The report goes through the writer's queue, behind the previous chunk's end.
        meter.tokens += tokens
        in_chunk["prompts"] += prompts
        if on_progress and time.monotonic() - in_chunk["reported"] >= PROGRESS_EVERY_S:
            running = int(in_chunk["prompts"] * in_chunk["items_per_prompt"])
            writer.report(
                meter.report(in_flight=max(0, min(running, size - 1, meter.total - meter.done - 1)))
            )
            in_chunk["reported"] = time.monotonic()

    def decide(engine: Backend, requests: list, chunk: list[Item]) -> list[Decision]:
        in_chunk["items_per_prompt"] = len(chunk) / max(len(requests), 1)
        return run_protocol(engine, requests, task, count)

    circular = (
        protocol == CIRCULAR
    )  # every rotation of the options is asked, then combined per item

    def build(chunk: list[Item]) -> list:
        publics = [i.public for i in chunk]
        return build_requests(
            task, circular_publics(publics) if circular else publics, setting, tools
        )

    refused: set[str] = (
        set()
    )  # items whose prompts the backend could not run (over its window): n/a

    def finished(chunk: list[Item], decisions: list[Decision]) -> Progress:
        over = {d.id.partition("::")[0] for d in decisions if d.not_applicable}
        if circular:
            decisions[:] = combine_rotations([i.public for i in chunk], decisions)
        if over:  # left out of the answers and the checkpoint (a resumed run asks them again)
            refused.update(over)
            decisions[:] = [d for d in decisions if d.id.partition("::")[0] not in over]
        for d in decisions:
            d.answer = to_answer(d)
        answers.update(_by_item({"id": d.id, "answer": d.answer} for d in decisions))
        unparsed.update(
            unparsed_items({"id": d.id, "answer": d.answer, "rule": d.rule} for d in decisions)
        )
        meter.done += len(chunk)
        in_chunk["prompts"] = 0
        return meter.report()

    size: int = batch_items or backend.batch_items or BATCH_ITEMS
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    writer = CheckpointWriter(checkpoint, on_progress)  # count() reports through it too
    feed_engine(backend, tools, chunks, build, decide, finished, writer)
    if refused:
        split = Split(
            f"{split.name}[within the window]", [i for i in split.items if i.id not in refused]
        )
        if not split.items:
            raise BackendError(
                f"{backend.spec.name} refused every prompt as longer than its context window: nothing to score"
            )
        not_applicable = {
            **not_applicable,
            "over_the_context_window": (
                f"n/a: {len(refused)} items whose prompts {backend.spec.name} refused as longer than its context window "
                "(never truncated)"
            ),
        }
    stats: RunStats = {
        "protocol": protocol,
        "protocol_version": PROTOCOL_VERSION,
        "package_version": package_version(),  # what `personaboard evaluate` re-runs it with
        "prompt_template_sha256": prompt_template_hash(task),
        "items": len(split.items),
        "items_resumed": meter.resumed,
        # items whose output no answer could be read from (scored wrong): the row says how many
        "unparsed": len(unparsed & {i.id for i in split.items}),
        "prompt_tokens": meter.tokens,
        "seconds": time.monotonic() - started,
        **backend.describe(),
    }
    if not_applicable:
        stats["not_applicable"] = not_applicable
    if split is not full and (missing := uncovered_tiers(full, split)):
        stats["tiers_not_covered"] = missing  # a limit too small for every tier: said, not hidden
    return ModelRun(
        split=split,
        answers=answers,
        stats=stats,
        partial=len(split.items) < len(task.load_split().items),
    )
