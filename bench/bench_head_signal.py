"""What the results head signal costs a reader, and what it buys (leaderboard/head_signal.py).

Starts a redis-server and the local Hub-API server (tests/hub_server.py) on free ports, then with
two Hub store objects that share nothing but the Hub and Redis (a publisher, a reader: two processes
in effect), in one run, interleaved, for the reader without a signal and with one:

  - head_revision() per call while nothing is published (the read path calls it on every request):
    median / p99 microseconds, and how many times it read the Hub's head in those calls;
  - after each publish returns: whether the reader's next head_revision() has it, and if not, how
    long until it does (polled every 10 ms; bounded by HEAD_TTL_S).

    .venv/bin/python bench/bench_head_signal.py [--calls 5000] [--publishes 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ["HF_HUB_OFFLINE"] = "0"

from hub_server import TEST_TOKEN, HubServerProcess  # noqa: E402
from test_hub_store import make_record  # noqa: E402

from backend import processes  # noqa: E402
from evaluator.hub import DatasetRepo  # noqa: E402
from leaderboard import hub_store  # noqa: E402
from leaderboard.head_signal import RedisHeadSignal  # noqa: E402
from leaderboard.hub_store import HubDatasetStore  # noqa: E402

REPO = "bench/results"


def per_call(reader: HubDatasetStore, calls: int) -> tuple[float, float, int]:
    resolves = []
    original = reader.repo.resolve
    reader.repo.resolve = lambda *a: resolves.append(a) or original(*a)
    try:
        reader.head_revision()
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            reader.head_revision()
            times.append(time.perf_counter() - started)
    finally:
        reader.repo.resolve = original
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.99)] * 1e6, len(resolves)


def publish_then_read(
    publisher: HubDatasetStore, reader: HubDatasetStore, sid: str
) -> tuple[bool, float]:
    reader.head_revision()  # the reader holds the head (a request just before the publish)
    revision = publisher.publish(make_record(sid, 0.5))
    returned = time.perf_counter()
    if reader.head_revision() == revision:
        return True, 0.0
    while reader.head_revision() != revision:
        time.sleep(0.01)
    return False, (time.perf_counter() - returned) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--publishes", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        redis = processes.start_redis(processes.free_port(), tmp / "redis")
        hub = HubServerProcess(tmp / "hub", [TEST_TOKEN], tmp / "hub.log").start()
        try:

            def store(name: str, signal: bool) -> HubDatasetStore:
                return HubDatasetStore(
                    DatasetRepo(REPO, TEST_TOKEN, hub.url, tmp / name),
                    head_signal=RedisHeadSignal(redis.url) if signal else None,
                )

            publisher = store("publisher", True)
            publisher.ensure()
            readers = {
                "no signal": store("reader-plain", False),
                "signal": store("reader-signal", True),
            }
            print(
                f"load average {os.getloadavg()[0]:.2f}; HEAD_TTL_S {hub_store.HEAD_TTL_S}; {args.calls} calls"
            )
            for name, reader in [*readers.items(), *readers.items()]:  # interleaved, twice
                median, p99, hub_reads = per_call(reader, args.calls)
                print(
                    f"head_revision() {name:9}: median {median:7.1f} us, p99 {p99:7.1f} us, "
                    f"Hub head reads {hub_reads} in {args.calls} calls"
                )
            for name, reader in readers.items():
                outcomes = [
                    publish_then_read(publisher, reader, f"{name[:2]}-{i}")
                    for i in range(args.publishes)
                ]
                seen = sum(1 for at_once, _ in outcomes if at_once)
                waits = [ms for at_once, ms in outcomes if not at_once]
                print(
                    f"after a publish, {name:9}: next read has it {seen}/{args.publishes}; "
                    + (
                        f"else seen after {min(waits):.0f}-{max(waits):.0f} ms"
                        if waits
                        else "never stale"
                    )
                )
            print(f"load average {os.getloadavg()[0]:.2f}")
        finally:
            hub.stop()
            redis.stop()


if __name__ == "__main__":
    main()
