"""RealPref intervals before and after clustering: the 95 % interval width of accuracy when items
are resampled as independent (before: RealPref declared no unit), by preference, and by user with
its preferences (the declared unit, `preference` within `user`). Prints figures; asserts nothing.

    .venv/bin/python bench/realpref_intervals.py [--seed 0] [--users 100] [--rho 0.2]

1. The fixture split (tests/fixtures/splits/realpref: 2 users, 5 preferences, 24 items per
   preference in mcq), answered by a seeded simulated model whose chance of being right depends
   on the preference (uniform in [0.1, 0.9] per preference, then each item drawn from it).
2. A paper-shaped synthetic split (100 users x 13 preferences x 24 items) with a within-preference
   correlation of `rho` (each preference's success rate drawn from a Beta with that intra-class
   correlation around 0.6): widths and the coverage of the true mean over repeated draws.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from evaluator.statistics import Units, nested_units, share_stats  # noqa: E402

ITEMS_PER_PREFERENCE = 24  # 4 expression types x 6 context configurations


def width(stats: dict) -> float:
    low, high = stats["ci95"]
    return high - low


def compare(correct: np.ndarray, labels: list[tuple[str, str]], rng_seed: int) -> dict[str, dict]:
    """Accuracy's interval over items, over preferences, and over users (nested, declared)."""
    n = len(correct)
    by = {
        "item": Units.of(None, n),
        "preference": Units.of([pref for _, pref in labels], n, "preference"),
        "user (declared)": nested_units(labels, ("preference", "user")),
    }
    return {
        name: share_stats(correct, units, np.random.default_rng(rng_seed))
        for name, units in by.items()
    }


def print_table(title: str, results: dict[str, dict]) -> None:
    base = width(results["item"])
    print(title)
    print(
        f"  {'resampled':<16} {'units':>6} {'n_eff':>8} {'95% CI':>17} {'width':>7} {'x item':>7}"
    )
    for name, stats in results.items():
        low, high = stats["ci95"]
        n_units = stats.get("n_units", stats["n"])
        print(
            f"  {name:<16} {n_units:>6} {stats.get('n_effective', stats['n']):>8} "
            f"[{low:.3f}, {high:.3f}] {width(stats):>7.3f} {width(stats) / base:>7.2f}"
        )


def fixture_split(seed: int) -> None:
    import os

    from evaluator import suite as suite_module
    from evaluator.registry import get_suite
    from evaluator.split_install import install

    with tempfile.TemporaryDirectory() as splits:
        os.environ["PERSONABOARD_SPLITS_DIR"] = splits
        suite_module.clear_split_cache()
        suite = get_suite("realpref")
        install(suite, str(ROOT / "tests" / "fixtures" / "splits" / "realpref"))
        for task_name in ("mcq", "true_false"):
            task = suite.tasks[task_name]
            items = task.load_split().items
            rng = np.random.default_rng(seed)
            prefs = sorted({item.unit[1] for item in items})
            ability = dict(zip(prefs, rng.uniform(0.1, 0.9, len(prefs))))
            correct = np.array([rng.random() < ability[item.unit[1]] for item in items], float)
            print_table(
                f"fixture split, {task.key}: {len(items)} items, {len(prefs)} preferences, "
                f"{len({i.unit[0] for i in items})} users; simulated model (seed {seed}), "
                f"accuracy {correct.mean():.3f}",
                compare(correct, [item.unit for item in items], seed),
            )
        suite_module.clear_split_cache()


def paper_shaped(users: int, rho: float, seed: int, draws: int = 100) -> None:
    prefs_per_user, mean = 13, 0.6
    # Beta(a, b) with mean m and intra-class correlation rho = 1 / (a + b + 1)
    total = 1 / rho - 1
    a, b = mean * total, (1 - mean) * total
    labels = [
        (f"u{u}", f"u{u}-p{p}")
        for u in range(users)
        for p in range(prefs_per_user)
        for _ in range(ITEMS_PER_PREFERENCE)
    ]
    rng = np.random.default_rng(seed)
    widths: dict[str, list[float]] = {}
    covered: dict[str, int] = {}
    example = None
    for draw in range(draws):
        rates = np.repeat(rng.beta(a, b, users * prefs_per_user), ITEMS_PER_PREFERENCE)
        correct = (rng.random(len(rates)) < rates).astype(float)
        results = compare(correct, labels, seed + draw)
        example = example or results
        for name, stats in results.items():
            widths.setdefault(name, []).append(width(stats))
            low, high = stats["ci95"]
            covered[name] = covered.get(name, 0) + (low <= mean <= high)
    print_table(
        f"paper-shaped synthetic split: {users} users x {prefs_per_user} preferences x "
        f"{ITEMS_PER_PREFERENCE} items = {len(labels)} items, within-preference correlation "
        f"{rho}, true accuracy {mean} (first draw)",
        example,
    )
    base = np.mean(widths["item"])
    print(f"  over {draws} draws: mean width (x item) and coverage of the true accuracy")
    for name in widths:
        print(
            f"  {name:<16} {np.mean(widths[name]):.4f} ({np.mean(widths[name]) / base:.2f}x)"
            f"  coverage {covered[name] / draws:.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--rho", type=float, default=0.2)
    parser.add_argument("--draws", type=int, default=100)
    args = parser.parse_args()
    fixture_split(args.seed)
    paper_shaped(args.users, args.rho, args.seed, args.draws)


if __name__ == "__main__":
    main()
