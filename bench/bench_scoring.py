"""Benchmark: validate + score a 100,000-line predictions file with the workers' own code path.

    python bench/bench_scoring.py [--items 100000] [--repeats 3] [--profile]

A synthetic 4-choice task (two tier groups: form x3, topic x20) is built in code and put in the
split cache, so `evaluator.scoring.score_predictions_file` (what the workers and the CLI call)
scores it unchanged. Each repeat runs in a fresh subprocess, so its peak RSS (ru_maxrss) is that
of one process that imported the code, built the split and scored once; the baseline (after the
imports, and after building the split) is reported beside it, with the increase due to scoring.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 2.0
GOAL_PEAK_MB = 500.0
LETTERS = "ABCD"
FORMS = ("explicit", "implicit_choice", "implicit_persona")
TOPICS = tuple(f"topic_{i:02d}" for i in range(20))
SEED = 1234


def item_fields(i: int) -> tuple[str, str, str, str]:
    """(id, form, topic, gold) of item i: deterministic, so the parent and children agree."""
    rng = random.Random(SEED * 1_000_003 + i)
    return f"item-{i:06d}", FORMS[i % 3], TOPICS[rng.randrange(20)], LETTERS[rng.randrange(4)]


def build_task(n_items: int):
    from evaluator import suite as suite_module
    from evaluator.suite import Item, Split, Suite, Task, TierGroup

    suite = Suite(
        name="bench",
        title="Bench",
        version="0",
        description="",
        citation="",
        license="",
        homepage="",
        settings={"zero_shot": ""},
        folder=Path("."),
    )
    task = Task(
        suite=suite,
        name="mcq",
        title="Bench MCQ",
        description="",
        answer_field="answer",
        answer_labels=tuple(LETTERS),
        metric="accuracy",
        tier_groups=(TierGroup("form", "Form", FORMS, {}), TierGroup("topic", "Topic", TOPICS, {})),
        # a module with none of the optional hooks: the default label check and exact-match scoring
        hooks_module="evaluator.metrics",
        options={"split": "test"},
    )
    suite.tasks["mcq"] = task
    items = []
    for i in range(n_items):
        item_id, form, topic, gold = item_fields(i)
        public = {
            "id": item_id,
            "form": form,
            "topic": topic,
            "context": [{"role": "user", "content": f"I prefer option set {i % 97} for {topic}."}],
            "question": f"Question {i}: which recommendation fits?",
            "options": {letter: f"Option {letter} for item {i}" for letter in LETTERS},
        }
        items.append(
            Item(id=item_id, tiers={"form": form, "topic": topic}, public=public, gold=gold)
        )
    suite_module._SPLIT_CACHE[task.key] = Split(name="test", items=items)
    return task


def write_predictions(path: Path, n_items: int, accuracy: float = 0.7) -> int:
    """Shuffled lines, `accuracy` of them right; returns the number of right answers."""
    rng = random.Random(SEED)
    order = list(range(n_items))
    rng.shuffle(order)
    right = 0
    with path.open("w", encoding="utf-8") as out:
        for i in order:
            item_id, _, _, gold = item_fields(i)
            if rng.random() < accuracy:
                answer, right = gold, right + 1
            else:
                answer = LETTERS[(LETTERS.index(gold) + rng.randrange(1, 4)) % 4]
            out.write(json.dumps({"id": item_id, "answer": answer}) + "\n")
    return right


def current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(path: str, n_items: int, profile: bool) -> None:
    import evaluator.scoring  # noqa: F401  (the imports belong to the baseline)
    from evaluator.scoring import score_predictions_file

    after_imports = current_rss_mb()
    task = build_task(n_items)
    before_scoring = current_rss_mb()
    peak_before = peak_rss_mb()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        started, cpu_started = time.perf_counter(), time.process_time()
        result = profiler.runcall(score_predictions_file, task, path)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(18)
    else:
        started, cpu_started = time.perf_counter(), time.process_time()
        result = score_predictions_file(task, path)  # cold: first scoring in this process
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    peak = peak_rss_mb()
    started = time.perf_counter()
    score_predictions_file(task, path)  # warm: split.by_id and split.sha256 already cached
    warm = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "warm_seconds": warm,
                "rss_after_imports_mb": after_imports,
                "rss_before_scoring_mb": before_scoring,
                "peak_before_scoring_mb": peak_before,
                "peak_mb": peak,
                "increase_mb": peak - before_scoring,
                "total": result["total"]["accuracy"],
            }
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one extra run, print the top to stderr"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.items, args.profile)
        return 0

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.jsonl"
        right = write_predictions(path, args.items)
        print(
            f"{args.items} items, predictions file {path.stat().st_size / 2**20:.1f} MiB, "
            f"{right} right (expected accuracy {right / args.items:.4f})"
        )
        runs = []
        for repeat in range(args.repeats + (1 if args.profile else 0)):
            profile = args.profile and repeat == args.repeats
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(path), "--items", str(args.items)]
                + (["--profile"] if profile else []),
                cwd=root,
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(root)},
            )
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            if profile:
                print("\n--- cProfile of one cold scoring (cumulative) ---\n" + proc.stderr)
                continue
            assert run["total"]["value"] == right / args.items, run["total"]
            runs.append(run)
            print(
                f"run {repeat + 1}: {run['seconds']:.3f} s cold (CPU {run['cpu_seconds']:.3f} s; {run['warm_seconds']:.3f} s warm), "
                f"RSS after imports {run['rss_after_imports_mb']:.0f} MB, with split {run['rss_before_scoring_mb']:.0f} MB, "
                f"peak {run['peak_mb']:.0f} MB (+{run['increase_mb']:.0f} MB scoring)"
            )
    seconds = statistics.median(r["seconds"] for r in runs)
    cpu = statistics.median(r["cpu_seconds"] for r in runs)
    peak = statistics.median(r["peak_mb"] for r in runs)
    increase = statistics.median(r["increase_mb"] for r in runs)
    print(
        f"median: {seconds:.3f} s wall, {cpu:.3f} s CPU (goal < {GOAL_SECONDS:.0f} s: {'ok' if seconds < GOAL_SECONDS else 'MISSED'}), "
        f"peak RSS {peak:.0f} MB (goal < {GOAL_PEAK_MB:.0f} MB: {'ok' if peak < GOAL_PEAK_MB else 'MISSED'}), "
        f"scoring adds {increase:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
