"""Re-Centering stage 2 intervals before and after two-way clustering: the 95 % interval width of
accuracy (and F1) when the relevance task clusters by prompt only (before) and by prompt and user,
crossed (after: `bootstrap_unit: {name: prompt, crossed_with: user}`, the Cameron-Gelbach-Miller
variance). Prints figures; asserts nothing.

    .venv/bin/python bench/crossed_intervals.py [--seed 0] [--user-sd 0.8] [--replicates 300]

No stage-2 data with users is here (the paper's is unreleased; the test fixture names no user),
so the split is generated in the paper's shape (Sec. 5.1): 41 prompts, each paired with 4 of 47
users, 24 attributes per prompt-user pair (3,936 items; the paper has 3,969). Gold: the majority
of three votes, YES about 20 %; a simulated judge answers from the same latent relevance plus a
prompt effect (sd 0.8), a user effect (sd --user-sd) and its own noise, so its correctness is
shared within prompts and within users. The two splits are the same file with and without the
`user_id` field, scored through evaluator/scoring.py score_answers (the service's path).

Then coverage: over --replicates data sets drawn on the same design, how often each interval
covers the judge's expected accuracy (the mean over the generating process).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluator.registry import get_suite  # noqa: E402
from evaluator.scoring import score_answers  # noqa: E402
from evaluator.statistics import crossed_units, share_stats  # noqa: E402
from evaluator.suite import Split  # noqa: E402

PROMPTS, USERS, USERS_PER_PROMPT, PER_CELL = 41, 47, 4, 24


def design(rng: np.random.Generator) -> list[tuple[int, int]]:
    """(prompt, user) per item: 4 users drawn for each prompt, 24 attributes per pair."""
    cells = [
        (p, int(u)) for p in range(PROMPTS) for u in rng.choice(USERS, USERS_PER_PROMPT, False)
    ]
    return [cell for cell in cells for _ in range(PER_CELL)]


def simulate(cells, rng: np.random.Generator, user_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Gold YES (about 20 %) and the judge's answer YES, per item."""
    p = np.array([c[0] for c in cells])
    u = np.array([c[1] for c in cells])
    relevance = (
        rng.normal(0, 1, PROMPTS)[p] + rng.normal(0, 0.6, USERS)[u] + rng.normal(0, 1, len(cells))
    )
    gold = relevance > 1.1
    # the judge over-selects (LLMs mark 40-60 % relevant), more so for some prompts and users
    bias = rng.normal(0, 0.8, PROMPTS)[p] + rng.normal(0, user_sd, USERS)[u]
    judged = relevance + bias + rng.normal(0, 0.8, len(cells)) > 0.6
    return gold, judged


def write_split(folder: Path, cells, gold, with_users: bool) -> None:
    lines = []
    for i, ((p, u), yes) in enumerate(zip(cells, gold)):
        record = {
            "id": f"r{i:05d}",
            "prompt": f"LIMA prompt {p}: what should I know about this?",
            "attribute": f"The user has trait {i % PER_CELL} (user {u}).",
            "votes": ["YES", "YES", "NO"] if yes else ["NO", "NO", "YES"],
        }
        if with_users:
            record["user_id"] = f"wildchat-{u:02d}"
        lines.append(json.dumps(record))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "relevance.jsonl").write_text("\n".join(lines) + "\n")


def width(stats: dict) -> float:
    return stats["ci95"][1] - stats["ci95"][0]


def scored_widths(seed: int, user_sd: float) -> None:
    task = get_suite("recentering").tasks["relevance"]
    rng = np.random.default_rng(seed)
    cells = design(rng)
    gold, judged = simulate(cells, rng, user_sd)
    answers = {f"r{i:05d}": "YES" if yes else "NO" for i, yes in enumerate(judged)}
    print(
        f"generated split: {PROMPTS} prompts x {USERS_PER_PROMPT} of {USERS} users x {PER_CELL} "
        f"attributes = {len(cells)} items; gold YES {gold.mean():.1%}, judge YES {judged.mean():.1%}"
    )
    print(
        f"  {'clustered by':<16} {'metric':<9} {'value':>7} {'95% CI':>17} {'width':>7} {'n_eff':>8} {'s':>5}"
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, with_users in (("prompt (before)", False), ("prompt x user", True)):
            write_split(Path(tmp) / label, cells, gold, with_users)
            split = Split("test", task.hooks.build_items(task, Path(tmp) / label))
            started = time.perf_counter()
            result = score_answers(task, split, answers)
            seconds = time.perf_counter() - started
            results[label] = result
            for metric in ("accuracy", "f1"):
                stats = result["total"][metric]
                low, high = stats["ci95"]
                n_eff = stats.get("n_effective", "")
                print(
                    f"  {label:<16} {metric:<9} {stats['value']:>7.3f} [{low:.3f}, {high:.3f}]"
                    f" {width(stats):>7.3f} {n_eff!s:>8} {seconds:>5.2f}"
                )
    before, after = results["prompt (before)"]["total"], results["prompt x user"]["total"]
    for metric in ("accuracy", "f1"):
        print(
            f"  {metric} width after / before: {width(after[metric]) / width(before[metric]):.2f}"
        )


def coverage(seed: int, user_sd: float, replicates: int) -> None:
    """Share of intervals covering the expected accuracy, design fixed, everything else redrawn."""
    cells = design(np.random.default_rng(seed))
    units = crossed_units([(str(p), str(u)) for p, u in cells], ("prompt", "user"))
    draws = []
    for r in range(replicates):
        gold, judged = simulate(cells, np.random.default_rng(10_000 + r), user_sd)
        draws.append(gold == judged)
    truth = float(np.mean([d.mean() for d in draws]))  # the expected accuracy, to MC error
    covered = {"prompt (before)": 0, "prompt x user": 0}
    widths = {name: [] for name in covered}
    for r, correct in enumerate(draws):
        for name, u in (("prompt (before)", units.factors[0]), ("prompt x user", units)):
            stats = share_stats(correct.astype(float), u, np.random.default_rng(r))
            covered[name] += stats["ci95"][0] <= truth <= stats["ci95"][1]
            widths[name].append(width(stats))
    print(f"coverage of the expected accuracy ({truth:.3f}) over {replicates} data sets:")
    for name in covered:
        print(
            f"  {name:<16} {covered[name] / replicates:6.1%}   mean width {np.mean(widths[name]):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--user-sd", type=float, default=0.8, help="sd of the judge's user effect")
    parser.add_argument("--replicates", type=int, default=300)
    args = parser.parse_args()
    scored_widths(args.seed, args.user_sd)
    if args.replicates:
        coverage(args.seed, args.user_sd, args.replicates)


if __name__ == "__main__":
    main()
