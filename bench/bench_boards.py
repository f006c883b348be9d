"""What the results dataset's board tables cost a publish: rewriting one task's board
(leaderboard/boards.py) as the task grows.

For each N in --rows: N results of PrefEval mcq (the read-path bench's records: four settings, 23
tiers), their board built once from the scores table (`rebuild`: a task's first board, or a sync of
the papers' rows), then --publishes single additions the way a publish makes them (`board_changes`:
the previous board file's bytes in, the new file's bytes out; only the added row's setting is ranked
again). Prints milliseconds per step and the file's size, then the ratios between sizes.

    .venv/bin/python bench/bench_boards.py                      # 100, 2,000, 20,000 rows
    .venv/bin/python bench/bench_boards.py --rows 100,20000 --publishes 5
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

from leaderboard.boards import board_changes, board_path, rebuild  # noqa: E402
from leaderboard.store import parquet_bytes  # noqa: E402
from leaderboard.table import records_to_scores  # noqa: E402

SUITE, TASK = read_bench.SUITE, read_bench.TASK


def measure(n_rows: int, publishes: int) -> dict[str, float]:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows)
    scores = records_to_scores(read_bench.make_record(i, groups, rng) for i in range(n_rows))
    started = time.perf_counter()
    board = parquet_bytes(rebuild(scores, SUITE, TASK))
    full_ms = (time.perf_counter() - started) * 1000
    steps = []
    for i in range(publishes):
        record = read_bench.make_record(n_rows + i, groups, rng)
        started = time.perf_counter()
        files = board_changes(SUITE, TASK, board, [(SUITE, TASK)], None, added=[record])
        steps.append((time.perf_counter() - started) * 1000)
        board = files[board_path(SUITE, TASK)]
    return {
        "rows": n_rows,
        "full_ms": full_ms,
        "publish_ms": statistics.median(steps),
        "publish_max_ms": max(steps),
        "bytes": len(board),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="100,2000,20000")
    parser.add_argument("--publishes", type=int, default=9)
    args = parser.parse_args(argv)
    results = []
    for n in (int(x) for x in args.rows.split(",")):
        result = measure(n, args.publishes)
        results.append(result)
        print(
            f"{n:>7,} rows  board from the table {result['full_ms']:8.0f} ms   "
            f"per publish (previous file + 1 row) median {result['publish_ms']:6.0f} ms, "
            f"max {result['publish_max_ms']:6.0f} ms   file {result['bytes'] / 1e6:6.2f} MB",
            flush=True,
        )
    first, last = results[0], results[-1]
    if last is not first:
        print(
            f"per publish at {last['rows']:,} / at {first['rows']:,} rows: "
            f"{last['publish_ms'] / first['publish_ms']:.1f}x; "
            f"full rebuild / per publish at {last['rows']:,}: "
            f"{last['full_ms'] / last['publish_ms']:.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
