"""Benchmark: CPU seconds and peak memory to refuse hostile predictions files.

    python bench/bench_hostile_input.py [--megabytes 60]

Each file is checked in a fresh subprocess with the code path intake and the workers share
(`read_predictions(iter_lines(...))` against PrefEval mcq, 3,000 items) and reported as: the
outcome (refused with a 4xx-style PredictionsError, or the exception that would have been a 500),
CPU seconds and the peak RSS increase. To compare with an older checkout, run this same script
with PYTHONPATH pointing at it:  PYTHONPATH=/path/to/old/checkout python bench/bench_hostile_input.py
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = {
    "empty_objects": "60 MB of `{}` lines",
    "deep_arrays": "one line of 100,000 nested arrays",
    "huge_int": "an integer of 5,000 digits",
    "one_long_line": "60 MB with no newline",
    "escaped_quotes": 'one 256 KiB line: `"` then `\\"` to the limit, then 40 `[`',
    "escaped_quotes_file": "60 MB of such lines",
    "valid": "a valid 3,000-line file (the honest baseline)",
}
CASE_NAMES = tuple(CASES)


def write_case(name: str, path: Path, megabytes: int) -> None:
    from evaluator.registry import get_task

    items = get_task("prefeval", "mcq").load_split().items
    size = megabytes * 1024 * 1024
    with open(path, "wb") as out:
        if name == "empty_objects":
            out.write(b"{}\n" * (size // 3))
        elif name == "deep_arrays":
            out.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        elif name == "huge_int":
            out.write(b'{"id": ' + b"7" * 5000 + b', "answer": "A"}\n')
        elif name in ("escaped_quotes", "escaped_quotes_file"):
            # a backtracking string regex scanned to the end of this line from every quote
            line = b'"' + b'\\"' * ((256 * 1024 - 42) // 2) + b"[" * 40 + b"\n"
            out.write(line * (1 if name == "escaped_quotes" else max(1, size // len(line))))
        elif name == "one_long_line":
            out.write(b'{"id": "' + b"x" * size + b'"}')
        else:
            out.writelines(
                json.dumps({"id": item.id, "answer": "A"}).encode() + b"\n" for item in items
            )


def check(path: str) -> None:
    """Child: validate one file, print outcome, CPU seconds and peak RSS increase as JSON."""
    from evaluator.predictions import PredictionsError, iter_lines, read_predictions
    from evaluator.registry import get_task

    task = get_task("prefeval", "mcq")
    split = task.load_split()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu_before = sum(os.times()[:2])
    try:
        with open(path, "rb") as stream:
            read_predictions(iter_lines(stream), task, split, "bench.jsonl")
        outcome = "accepted"
    except PredictionsError as exc:
        outcome = "refused: " + exc.problems[0].message[:70]
    except BaseException as exc:  # noqa: BLE001 - exactly what the bench looks for: a would-be 500
        outcome = f"CRASH {type(exc).__name__}"
    cpu = sum(os.times()[:2]) - cpu_before
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    print(json.dumps({"outcome": outcome, "cpu_s": cpu, "peak_rss_increase_mb": rss / 1024}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=60)
    parser.add_argument("--check", help=argparse.SUPPRESS)
    parser.add_argument("--cases", default=",".join(CASE_NAMES), help="comma-separated case names")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per case")
    args = parser.parse_args()
    if args.check:
        check(args.check)
        return 0
    print(f"code under test: {__import__('evaluator').__path__[0]}")
    print(f"{'case':<15} {'CPU s':>8} {'peak +MB':>9}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases.split(","):
            description = CASES[name]
            path = Path(tmp) / f"{name}.jsonl"
            write_case(name, path, args.megabytes)
            try:
                proc = subprocess.run(
                    [sys.executable, __file__, "--check", str(path)],
                    capture_output=True,
                    text=True,
                    env=os.environ,
                    timeout=args.timeout,
                )
            except subprocess.TimeoutExpired:
                print(f"{name:<15} > {args.timeout:.0f} s (wall): stopped   ({description})")
                continue
            finally:
                path.unlink()
            if proc.returncode != 0:
                print(f"{name:<15} child failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"{name:<15} {result['cpu_s']:>8.2f} {result['peak_rss_increase_mb']:>9.0f}  {result['outcome']}"
                f"   ({description})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
