"""What the results dataset's board tables cost the publisher: a refresh of one task's board
(leaderboard/boards.py) as the task grows.

A publish does not write boards; it marks its task lagging, and the publisher rewrites every
lagging board at most once per PERSONABOARD_BOARDS_EVERY_S (30 s). For each N in --rows: N results
of PrefEval mcq (the read-path bench's records: four settings, 23 tiers) in a real local store
(seeded as one group, then --publishes single publishes: the table in parts as a live store holds
it), and --repeats refreshes of their board, each way:

    whole table     boards.rebuild of the whole scores table (the refresh before session 14)
    parts, first    boards.rebuild_from_parts with every part pivoted on the way (a publisher's
                    first refresh after it started)
    parts           the same with the parts pivoted already (the store keeps each part's pivot:
                    a later refresh pivots only the parts published since)

then the parquet file's bytes (the same for all three: checked). Prints milliseconds per refresh,
the file's size, the share of the publisher's time the boards take at the default interval under a
steady stream of publishes (refresh time / interval), and the ratios.

    .venv/bin/python bench/bench_boards.py                      # 100, 2,000, 20,000 rows
    .venv/bin/python bench/bench_boards.py --rows 100,20000 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_read_path as read_bench  # noqa: E402  (its record maker, so the benches publish alike)

from leaderboard.boards import BOARDS_EVERY_S, rebuild, rebuild_from_parts  # noqa: E402
from leaderboard.store import LocalDatasetStore, parquet_bytes  # noqa: E402

SUITE, TASK = read_bench.SUITE, read_bench.TASK


def measure(n_rows: int, repeats: int, publishes: int) -> dict[str, float]:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows)
    with tempfile.TemporaryDirectory(prefix="pb-bench-boards-") as tmp:
        store = LocalDatasetStore(Path(tmp) / "results-dataset")
        records = [read_bench.make_record(i, groups, rng) for i in range(n_rows)]
        store.sync_group(read_bench.PREFIX, records, "Seed")
        for i in range(publishes):
            store.publish(read_bench.make_record(n_rows + i, groups, rng))
        scores, parts = store.scores(), store.score_parts()
        times: dict[str, list[float]] = {"whole": [], "first": [], "warm": []}
        files = set()
        for _ in range(repeats):
            fresh = LocalDatasetStore(store.root)  # its own part cache: nothing pivoted yet
            for way in times:  # first pivots every part into fresh's cache, warm finds them there
                started = time.perf_counter()
                board = (
                    rebuild(scores, SUITE, TASK)
                    if way == "whole"
                    else rebuild_from_parts(
                        [fresh.pivoted_part(blob, frame) for blob, frame in parts], SUITE, TASK
                    )
                )
                files.add(parquet_bytes(board))
                times[way].append((time.perf_counter() - started) * 1000)
        assert len(files) == 1, "the three ways wrote different files"
    return {
        "rows": n_rows,
        "parts": len(parts),
        "whole_ms": statistics.median(times["whole"]),
        "first_ms": statistics.median(times["first"]),
        "refresh_ms": statistics.median(times["warm"]),
        "bytes": len(files.pop()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="100,2000,20000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--publishes", type=int, default=20, help="single publishes after the seed")
    args = parser.parse_args(argv)
    results = []
    for n in (int(x) for x in args.rows.split(",")):
        result = measure(n, args.repeats, args.publishes)
        results.append(result)
        share = result["refresh_ms"] / (BOARDS_EVERY_S * 1000)
        print(
            f"{n:>7,} rows in {result['parts']} parts  board refresh median: whole table "
            f"{result['whole_ms']:6.0f} ms, parts first {result['first_ms']:6.0f} ms, parts "
            f"{result['refresh_ms']:6.0f} ms ({result['whole_ms'] / result['refresh_ms']:.1f}x)   "
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
