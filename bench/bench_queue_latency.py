"""Queue latency: from the POST /api/v1/submissions answer to the job started on an idle worker.

Starts its own service (real redis-server, real `rq worker` processes, the web app) under a temp
dir, submits N valid predictions files one at a time (each waits until the previous finished, so
a worker is always idle), and measures for each:

    record  the submission record's started_at (set when the job begins its work) minus the
            wall-clock time the client received the 201
    rq      RQ's job.started_at (the worker took the job off the queue) minus the same time

Prints median and p90 in ms for both. The goal is a median under 1 s.

    .venv/bin/python bench/bench_queue_latency.py [--n 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import start_live_service  # noqa: E402
from live_helpers import explicit_only, reordered, submit_ok, wait_finished  # noqa: E402

GOAL_MS = 1000.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def epoch(value) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(value).timestamp()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="submissions to measure (default 20)")
    parser.add_argument("--workers", type=int, default=2, help="RQ workers (default 2)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="unmeasured submissions first (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    args = parser.parse_args(argv)

    from rq.job import Job

    from submissions.queue import job_id_for

    body = explicit_only().body
    with tempfile.TemporaryDirectory(prefix="pb-bench-") as tmp:
        started = time.monotonic()
        svc = start_live_service(Path(tmp), n_workers=args.workers)
        print(
            f"service up in {time.monotonic() - started:.1f} s: {svc.base_url}, {args.workers} workers"
        )
        record_ms, rq_ms = [], []
        try:
            redis = svc.redis_client()
            with svc.http() as http:
                for i in range(args.warmup + args.n):
                    sid = submit_ok(
                        http, reordered(body, i), model_name=f"bench-{i}"
                    )  # identical files: 409
                    answered = time.time()  # the 201 has arrived
                    final = wait_finished(http, sid, timeout=120, logs=svc.logs)
                    if i < args.warmup:
                        continue
                    record_ms.append((epoch(final["started_at"]) - answered) * 1000)
                    job = Job.fetch(job_id_for(sid), connection=redis)
                    if job.started_at is not None:
                        rq_ms.append((epoch(job.started_at) - answered) * 1000)
        finally:
            svc.stop()

    def line(name: str, values: list[float]) -> str:
        if not values:
            return f"{name:>6}: no data"
        return (
            f"{name:>6}: median {statistics.median(values):7.1f} ms   p90 {percentile(values, 0.9):7.1f} ms"
            f"   min {min(values):7.1f}   max {max(values):7.1f}   (n={len(values)})"
        )

    print("POST answered -> job started, idle worker")
    print(line("record", record_ms))
    print(line("rq", rq_ms))
    if args.json:
        print(json.dumps({"record_ms": record_ms, "rq_ms": rq_ms}))
    median = statistics.median(record_ms)
    verdict = "OK" if median < GOAL_MS else "OVER GOAL"
    print(f"goal: median < {GOAL_MS:.0f} ms -> {verdict}")
    return 0 if median < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
