"""What one service start costs: Redis, two RQ workers and the web app, from the first spawn until
the web app answers and both workers are registered (what every live test service waits for: the
suite starts ~37 of them; and what `make serve` waits for).

For --runs times it prints the wall seconds to "up" and the CPU seconds (user + system) all of the
service's processes used by then and until they stopped, read from the children's rusage once they
are reaped (Redis included), and the web process's CPU share while nobody uses it (--idle-seconds
once it settled: Gradio's queue polling, the store's watcher, the publisher); then the in-process parts of the web app's start-up that are the
service's own work: the suites' discovery and the chance and majority lines
(leaderboard/reference.py reference_records, scored from the bundled splits). CPU seconds move far
less with the machine's other load than the wall seconds do.

    .venv/bin/python bench/bench_service_startup.py             # 3 runs
    .venv/bin/python bench/bench_service_startup.py --runs 5
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend import processes  # noqa: E402
from bench.bench_read_path import process_cpu_s, wait_until_idle  # noqa: E402

WORKERS = 2


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_registered(redis_url: str, pids: set[int], timeout_s: float = 120.0) -> None:
    import redis
    from rq import Worker

    connection = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout_s
    while {w.pid for w in Worker.all(connection=connection)} < pids:
        if time.monotonic() > deadline:
            raise TimeoutError(f"workers {sorted(pids)} did not register in {timeout_s:.0f} s")
        time.sleep(0.05)


def idle_share(pid: int, seconds: float) -> float:
    """The share of a core the process used over `seconds` (a measuring window, not a wait)."""
    before = process_cpu_s(pid)
    time.sleep(seconds)
    return (process_cpu_s(pid) - before) / seconds


def one_start(root: Path, idle_s: float) -> tuple[float, float, float]:
    """(seconds until up, CPU seconds of the service's processes, the idle web's core share)."""
    data_dir = root / "data"
    data_dir.mkdir(parents=True)
    cpu_before = children_cpu_s()
    started = time.monotonic()
    redis = processes.start_redis(processes.free_port(), data_dir / "redis")
    env = processes.child_env(data_dir, redis.url)
    workers = [
        processes.start_worker(redis.url, env, log_path=root / f"worker-{i}.log")
        for i in range(WORKERS)
    ]
    port = processes.free_port()
    web = processes.start_web("127.0.0.1", port, env, log_path=root / "web.log")
    try:
        processes.wait_http(
            processes.base_url("127.0.0.1", port), timeout=180, proc=web, log_path=root / "web.log"
        )
        wait_registered(redis.url, {w.pid for w in workers})
        up = time.monotonic() - started
        wait_until_idle(web.pid)  # its start-up work's tail (the first head's table) goes by
        idle = idle_share(web.pid, idle_s)
    finally:
        processes.stop_process(web, timeout=20)
        processes.stop_processes(workers, timeout=20)
        redis.stop(timeout=20)
    return up, children_cpu_s() - cpu_before, idle


def in_process_parts() -> dict[str, float]:
    started = time.perf_counter()
    from evaluator.registry import all_suites

    all_suites()
    discovered = time.perf_counter()
    from leaderboard.reference import reference_records

    reference_records()
    return {
        "suites discovered": discovered - started,
        "reference lines": time.perf_counter() - discovered,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    args = parser.parse_args()
    ups, cpus, idles = [], [], []
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="pb-bench-start-") as folder:
            up, cpu, idle = one_start(Path(folder), args.idle_seconds)
        ups.append(up)
        cpus.append(cpu)
        idles.append(idle)
        print(
            f"run {run}: up in {up:5.1f} s, CPU {cpu:5.1f} s (web, {WORKERS} workers, Redis); "
            f"the idle web process {idle:.1%} of a core"
        )
    ups.sort()
    cpus.sort()
    idles.sort()
    middle = len(ups) // 2
    print(
        f"median: up in {ups[middle]:.1f} s, CPU {cpus[middle]:.1f} s, "
        f"idle web {idles[middle]:.1%} of a core"
    )
    for part, seconds in in_process_parts().items():
        print(f"in process: {part} {seconds:.2f} s")


if __name__ == "__main__":
    main()
