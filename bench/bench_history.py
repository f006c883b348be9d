"""How much a stream of publishes grows the results dataset's history, and of what.

Seeds --rows results of PrefEval mcq (the read-path bench's records: four settings, 23 tiers)
through the local store (`sync_group`, one version) and writes their board, then publishes
--publishes more results one by one through `store.publish`, each followed by the publisher's
boards check (`store.refresh_boards(interval, share)`, as the outbox's drain runs it), on a
simulated clock:

    fast    publishes 0.05 s apart: the whole stream inside one boards interval
    steady  publishes 1 s apart: results arriving for 100 s, a few boards intervals
    slow    publishes PERSONABOARD_BOARDS_EVERY_S + 1 s apart: every check finds the oldest
            lagging change old enough (the worst case of a time rule: a refresh per publish)

under two rules: `time` (a lagging board is refreshed once its oldest missing change is the
interval old: the rule before 2026-11-27's size rule) and `size` (and the records and details
published into its task since weigh BOARDS_ADDED_SHARE times its board file: leaderboard/boards.py).

Bytes are counted as git stores them before packing: the uncompressed size of every object the
stream added to the history (`git rev-list --objects <after> --not <before>`, then `git cat-file
--batch-check`), blobs by kind of path, trees and commits apart. The budget is the bytes of the
stream's own result records and details files (these records have no details: PrefEval mcq's
split is hidden). Printed per stream and rule: blob bytes added, the records' bytes, the ratio
(blobs only: trees and commits are printed apart, by kind), and the ratio without the table parts
(a publish's own one-result part plus the tiered merges of small parts: leaderboard/changes.py
_appended), and the table parts the head holds after the stream (results in each).

    .venv/bin/python bench/bench_history.py                     # 20,000 rows, 100 publishes
    .venv/bin/python bench/bench_history.py --rows 2000 --publishes 50 --streams fast --rules size
"""

from __future__ import annotations

import argparse
import collections
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_read_path as read_bench  # noqa: E402  (its record maker, so the benches publish alike)

from leaderboard import boards  # noqa: E402
from leaderboard.layout import as_json  # noqa: E402
from leaderboard.store import LocalDatasetStore  # noqa: E402

STREAMS = {"fast": 0.05, "steady": 1.0, "slow": boards.BOARDS_EVERY_S + 1.0}
RULES = {"time": 0.0, "size": boards.BOARDS_ADDED_SHARE}


def kind_of(path: str) -> str:
    if path.startswith("results/"):
        return "records"
    if path.startswith("details/"):
        return "details"
    if path.startswith("data/scores/"):
        return "table parts"
    if path.startswith("boards/") and path.endswith(".parquet"):
        return "boards"
    if path == boards.STALE_PATH:
        return "stale marker"
    return "other files"


def compact(sizes: list[int]) -> str:
    """1000 x20, 100 x5, 1 x3: runs of equal part sizes."""
    runs: list[list[int]] = []
    for size in sizes:
        if runs and runs[-1][0] == size:
            runs[-1][1] += 1
        else:
            runs.append([size, 1])
    return ", ".join(f"{size} x{count}" for size, count in runs)


def added_objects(root: Path, before: str, after: str) -> dict[str, int]:
    """Uncompressed bytes of the objects `after` has that `before` has not, by kind."""
    listing = subprocess.run(
        ["git", "rev-list", "--objects", after, "--not", before],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    names = {line.split(" ", 1)[0]: line.partition(" ")[2] for line in listing}
    checked = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
        cwd=root,
        input="\n".join(names) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    sizes: dict[str, int] = collections.defaultdict(int)
    for line in checked:
        sha, kind, size = line.split()
        sizes[kind_of(names[sha]) if kind == "blob" else kind + "s"] += int(size)
    return sizes


def seed(root: Path, n_rows: int) -> None:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows)
    store = LocalDatasetStore(root)
    store.ensure()
    # `git gc --auto` packs in the foreground: a copy of the folder is never taken mid-gc
    subprocess.run(["git", "config", "gc.autoDetach", "false"], cwd=root, check=True)
    store.sync_group(
        read_bench.PREFIX, [read_bench.make_record(i, groups, rng) for i in range(n_rows)], "Seed"
    )
    store.refresh_boards()  # the stream starts from a current board


def stream(root: Path, n_rows: int, publishes: int, apart_s: float, share: float) -> dict:
    groups = read_bench.tier_groups()
    rng = random.Random(n_rows + 1)
    store = LocalDatasetStore(root)
    before = store.head_revision()
    clock = [datetime.now(timezone.utc)]
    plain_clock = boards._utc_now
    boards._utc_now = lambda: clock[0]
    own_bytes = refreshes = 0
    started = time.perf_counter()
    try:
        for i in range(publishes):
            record = read_bench.make_record(n_rows + 1 + i, groups, rng)
            store.publish(record)
            own_bytes += len(as_json(record).encode())
            clock[0] += timedelta(seconds=apart_s)
            refreshes += store.refresh_boards(boards.BOARDS_EVERY_S, share) is not None
    finally:
        boards._utc_now = plain_clock
    seconds = time.perf_counter() - started
    sizes = added_objects(root, before, store.head_revision())
    parts = [frame["submission_id"].nunique() for _, frame in store.score_parts()]
    return {
        "sizes": sizes,
        "own": own_bytes,
        "refreshes": refreshes,
        "seconds": seconds,
        "parts": parts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--publishes", type=int, default=100)
    parser.add_argument("--streams", default=",".join(STREAMS))
    parser.add_argument("--rules", default=",".join(RULES))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pb-bench-history-") as tmp:
        seeded = Path(tmp) / "seeded"
        started = time.perf_counter()
        seed(seeded, args.rows)
        print(f"seeded {args.rows:,} results in {time.perf_counter() - started:.0f} s", flush=True)
        for stream_name in args.streams.split(","):
            for rule in args.rules.split(","):
                root = Path(tmp) / f"{stream_name}-{rule}"
                shutil.copytree(seeded, root, symlinks=True)
                shutil.copy(Path(tmp) / ".seeded.lock", Path(tmp) / f".{root.name}.lock")
                got = stream(root, args.rows, args.publishes, STREAMS[stream_name], RULES[rule])
                sizes, own = got["sizes"], got["own"]
                blobs = sum(v for k, v in sizes.items() if k not in ("trees", "commits"))
                parts = sizes.get("table parts", 0)
                shown = "  ".join(f"{k} {v / 1e6:.3f}" for k, v in sorted(sizes.items()))
                print(
                    f"{stream_name:>6} stream, {rule:>4} rule: {args.publishes} publishes, "
                    f"{got['refreshes']} board refreshes, {got['seconds']:.0f} s\n"
                    f"    blobs added {blobs / 1e6:.3f} MB; the results' records + details "
                    f"{own / 1e6:.3f} MB; ratio {blobs / own:.2f}x; without the table parts "
                    f"{(blobs - parts) / own:.2f}x\n"
                    f"    by kind (MB): {shown}\n"
                    f"    table parts after (results in each): {compact(got['parts'])}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
