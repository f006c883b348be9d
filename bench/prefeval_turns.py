"""SmolLM2-135M-Instruct on PrefEval mcq_turns: accuracy at each distractor turn count on a sample
of preference pairs (all three forms of each pair), the majority line, and the interval over pairs
against the interval over items. Prints figures; asserts nothing.

    .venv/bin/python bench/prefeval_turns.py [--pairs 40] [--seed 0] [--turns 0,10] [--batch 8]

Each turn count's line is printed as soon as it is done (a bounded run still reports the short ones).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_model_eval import model_folder  # noqa: E402

from evaluator.backends.base import ModelSpec  # noqa: E402
from evaluator.backends.hf_transformers import TransformersBackend  # noqa: E402
from evaluator.baselines import reference_lines  # noqa: E402
from evaluator.model_eval import ModelTools  # noqa: E402
from evaluator.protocols import choose_by_logprobs  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.statistics import Units, share_stats  # noqa: E402
from evaluator.suite import Split  # noqa: E402
from evaluator.suites.prefeval import mcq_turns  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", default="", help="comma-separated turn counts (default: all)")
    parser.add_argument(
        "--batch",
        type=int,
        default=8,
        help="prompts per forward pass (long prompts: keep it small)",
    )
    args = parser.parse_args()
    task = get_task("prefeval", "mcq_turns")
    split = task.load_split()
    units = sorted({item.unit for item in split.items})
    chosen = set(random.Random(args.seed).sample(units, args.pairs))
    sample = Split("sample", [item for item in split.items if item.unit in chosen])
    backend = TransformersBackend(
        ModelSpec("SmolLM2-135M-Instruct", str(model_folder()), "generative")
    )
    kept, not_applicable = mcq_turns.fit_model(task, sample, "zero_shot", backend)
    tools = ModelTools(backend, "choice_logprobs")
    print(
        f"SmolLM2-135M-Instruct, PrefEval mcq_turns, zero_shot, choice_logprobs; {args.pairs} pairs x 3 forms "
        f"(seed {args.seed}); context window {backend.context_window()}",
        flush=True,
    )
    rng = np.random.default_rng(0)
    wanted = [t for t in args.turns.split(",") if t] or task.tier_group("turns").tiers
    for turns in task.tier_group("turns").tiers:
        if turns not in wanted:
            continue
        if turns in not_applicable:
            print(f"  {turns:>3} turns: n/a ({not_applicable[turns]})", flush=True)
            continue
        items = [i for i in kept.items if i.tiers["turns"] == turns]
        correct: dict[str, bool] = {}
        started = time.monotonic()
        for start in range(0, len(items), args.batch):
            chunk = items[start : start + args.batch]
            requests = task.hooks.build_requests(
                task, [i.public for i in chunk], "zero_shot", tools
            )
            for item, decision in zip(chunk, choose_by_logprobs(backend, requests)):
                correct[item.id] = decision.answer == item.gold
            print(
                f"  {turns} turns: {len(correct)}/{len(items)} items, {time.monotonic() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        values = np.array([correct[i.id] for i in items], dtype=float)
        by_pair = share_stats(values, Units.of([i.unit for i in items], len(items)), rng)
        by_item = share_stats(values, Units.of(None, len(items)), rng)
        w_pair, w_item = (
            (by_pair["ci95"][1] - by_pair["ci95"][0]),
            (by_item["ci95"][1] - by_item["ci95"][0]),
        )
        print(
            f"  {turns:>3} turns: accuracy {values.mean():.3f} (n={len(items)}), 95% CI over pairs "
            f"[{by_pair['ci95'][0]:.3f}, {by_pair['ci95'][1]:.3f}] width {w_pair:.3f}; over items width "
            f"{w_item:.3f}; ratio {w_pair / w_item:.2f}; {time.monotonic() - started:.0f} s",
            flush=True,
        )
    chance, majority = reference_lines(get_task("prefeval", "mcq"))
    print(
        f"  reference (whole mcq split): chance {chance['metrics']['total']['accuracy']['value']:.3f}, "
        f"majority (always {majority['label']}) {majority['metrics']['total']['accuracy']['value']:.3f}"
    )


if __name__ == "__main__":
    main()
