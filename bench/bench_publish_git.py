"""Where a local-store publish spends its time as the results grow: milliseconds per publish in each
git command `LocalDatasetStore.publish` runs, and the whole publish, at each row count.

    .venv/bin/python bench/bench_publish_git.py --rows 100,20000 --publishes 10

Rows are seeded through the store's own API (`sync_group`) with the read-path bench's records.
The goal: a publish rate at 20,000 rows within 2x of the rate at 100 rows.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_read_path as read_bench  # noqa: E402  (its record maker, so both benches publish alike)

from leaderboard import store as store_module  # noqa: E402


def measure(n_rows: int, publishes: int) -> tuple[float, dict[str, float]]:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows)
    spent: dict[str, float] = collections.defaultdict(float)
    plain_git = store_module.LocalDatasetStore._git

    def timed_git(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return plain_git(self, *args, **kwargs)
        finally:
            spent[args[0]] += time.perf_counter() - started

    with tempfile.TemporaryDirectory(prefix="pb-bench-publish-") as tmp:
        store = store_module.LocalDatasetStore(Path(tmp) / "results-dataset")
        store.sync_group(
            read_bench.PREFIX,
            [read_bench.make_record(i, groups, rng) for i in range(n_rows)],
            "Seed",
        )
        store.publish(
            read_bench.make_record(n_rows, groups, rng)
        )  # first publish pays one-off work
        store_module.LocalDatasetStore._git = timed_git
        try:
            started = time.perf_counter()
            for i in range(publishes):
                store.publish(read_bench.make_record(n_rows + 1 + i, groups, rng))
            per_publish = (time.perf_counter() - started) / publishes
        finally:
            store_module.LocalDatasetStore._git = plain_git
    return per_publish, {command: seconds / publishes for command, seconds in spent.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100,20000", help="comma-separated row counts")
    parser.add_argument("--publishes", type=int, default=10)
    args = parser.parse_args(argv)
    results = {}
    for n_rows in (int(r) for r in args.rows.split(",")):
        per_publish, per_command = measure(n_rows, args.publishes)
        results[n_rows] = per_publish
        commands = "  ".join(f"{c} {s * 1000:.1f}" for c, s in per_command.items())
        print(
            f"{n_rows:>7} rows: publish {per_publish * 1000:7.1f} ms  (git ms: {commands};"
            f" other {1000 * (per_publish - sum(per_command.values())):.1f})",
            flush=True,
        )
    base = min(results)
    for n_rows, per_publish in results.items():
        if n_rows != base:
            print(
                f"  publish time at {n_rows} / at {base} rows: {per_publish / results[base]:.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
