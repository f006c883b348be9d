"""What the results dataset's board tables cost the publisher: a refresh of one task's board
(leaderboard/boards.py) as the task grows.

A publish does not write boards; it marks its task lagging, and the publisher rewrites every
lagging board at most once per PERSONABOARD_BOARDS_EVERY_S (10 s). For each N in --rows: N results
of PrefEval mcq (the read-path bench's records: four settings, 23 tiers) and --repeats refreshes of
their board the way the publisher makes one (`rebuild`: every setting ranked afresh from the scores
table, then the parquet file's bytes). Prints milliseconds per refresh, the file's size and the
share of the publisher's time the boards take at the default interval under a steady stream of
publishes (refresh time / interval), then the ratio between sizes.

    .venv/bin/python bench/bench_boards.py                      # 100, 2,000, 20,000 rows
    .venv/bin/python bench/bench_boards.py --rows 100,20000 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_read_path as read_bench  # noqa: E402  (its record maker, so the benches publish alike)

from leaderboard.boards import BOARDS_EVERY_S, rebuild  # noqa: E402
from leaderboard.store import parquet_bytes  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402

SUITE, TASK = read_bench.SUITE, read_bench.TASK


def measure(n_rows: int, repeats: int) -> dict[str, float]:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows)
    scores = records_to_scores(read_bench.make_record(i, groups, rng) for i in range(n_rows))
    steps, board = [], b""
    for _ in range(repeats):
        started = time.perf_counter()
        board = parquet_bytes(rebuild(scores, SUITE, TASK))
        steps.append((time.perf_counter() - started) * 1000)
    return {"rows": n_rows, "refresh_ms": statistics.median(steps), "bytes": len(board)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="100,2000,20000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    results = []
    for n in (int(x) for x in args.rows.split(",")):
        result = measure(n, args.repeats)
        results.append(result)
        share = result["refresh_ms"] / (BOARDS_EVERY_S * 1000)
        print(
            f"{n:>7,} rows  board refresh median {result['refresh_ms']:7.0f} ms   "
            f"file {result['bytes'] / 1e6:6.2f} MB   "
            f"publisher time at one refresh per {BOARDS_EVERY_S:.0f} s: {share:.1%}",
            flush=True,
        )
    first, last = results[0], results[-1]
    if last is not first:
        print(
            f"refresh at {last['rows']:,} / at {first['rows']:,} rows: "
            f"{last['refresh_ms'] / first['refresh_ms']:.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
