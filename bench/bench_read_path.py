"""Read path under load: leaderboard JSON / CSV / filtered, health beside them, and publish rate.

For each N in --rows it makes a fresh data dir, seeds N result rows through the results store's own
API (`sync_group`, one version, as the papers' reported rows are published), starts Redis and the
web app exactly as `make serve` does (backend.processes), and then, on loopback only:

    health idle      one client, sequential requests to /api/v1/health
    json / csv /     --clients concurrent keep-alive clients for --seconds each (at most
    filtered         --max-requests in all), plain GETs without If-None-Match: full bodies
                     (JSON: the API's default page since it is paged; CSV: the whole table);
    json/csv gzip    the same with Accept-Encoding: gzip (compressed bodies, as browsers get)
    health (load)    a health probe every 20 ms while the JSON load runs
    publish          --publishes single publishes through `store.publish` (the workers' call),
                     at most --publish-seconds; then the first leaderboard request after the last
                     publish (it must show the new row: checked), and one 2 s after another publish

Prints p50/p95/p99 (ms), requests/s and failures per line, then the ratios the goals are about.
Every loop is bounded in count and time; the servers are stopped by PID at the end.

    .venv/bin/python bench/bench_read_path.py                       # 100, 2,000, 20,000 rows
    .venv/bin/python bench/bench_read_path.py --rows 100,2000 --seconds 5
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.processes import (  # noqa: E402
    base_url, child_env, free_port, start_redis, start_web, stop_process, wait_http,
)
from leaderboard.store import LocalDatasetStore  # noqa: E402

SUITE, TASK = "prefeval", "mcq"
SETTINGS = ("zero_shot", "reminder", "cot", "rag")
FILTER = f"suite={SUITE}&task={TASK}&setting=zero_shot&tier=explicit"
PREFIX = "bench-"
HEALTH_EVERY_S = 0.02
REQUEST_TIMEOUT_S = 120.0
PREBUILD_WAIT_S = 2.0


# -- synthetic result records shaped like the workers' --------------------------------------------
def tier_groups() -> dict[str, list[str]]:
    from evaluator.registry import get_task

    return {group.name: list(group.tiers) for group in get_task(SUITE, TASK).tier_groups}


def make_record(i: int, groups: dict[str, list[str]], rng: random.Random) -> dict:
    def stats() -> dict:
        value = round(rng.random(), 6)
        return {"accuracy": {"value": value, "ci95": [max(0.0, value - 0.05), min(1.0, value + 0.05)], "n": 100}}

    return {
        "submission_id": f"{PREFIX}{i:07d}",
        "suite": SUITE, "task": TASK, "setting": SETTINGS[i % len(SETTINGS)],
        "model_name": f"bench-model-{i}", "model_link": "", "source": "predictions", "row_kind": "computed",
        "submitted_at": f"2026-01-01T00:00:00.{i:06d}+00:00",
        "metrics": {"metric": "accuracy", "total": stats(),
                    "tiers": {group: {tier: stats() for tier in tiers} for group, tiers in groups.items()}},
    }


# -- a small keep-alive HTTP/1.1 client: cheap enough not to be what is measured ----------------------
class Connection:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def get(self, path: str) -> tuple[int, int]:
        """(status, body bytes) of GET path; reconnects once if the server closed the connection.
        A path may end in ` gzip`: then the request says Accept-Encoding: gzip (the body is counted
        as sent, compressed: what a browser or CDN receives)."""
        path, _, encoding = path.partition(" ")
        extra = f"Accept-Encoding: {encoding}\r\n" if encoding else ""
        for attempt in (0, 1):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            try:
                self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{extra}\r\n".encode())
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _response(self) -> tuple[int, int]:
        status = int((await self.reader.readline()).split()[1])
        length, chunked, close = None, False, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and value == "close":
                close = True
        size = 0
        if chunked:
            while (chunk := int((await self.reader.readline()).split(b";")[0], 16)) > 0:
                size += len(await self.reader.readexactly(chunk + 2)) - 2
            await self.reader.readline()
        elif length is not None:
            size = len(await self.reader.readexactly(length))
        if close:
            self.close()
        return status, size

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


class Stats:
    def __init__(self, name: str):
        self.name, self.latencies, self.failures, self.bytes, self.seconds = name, [], 0, 0, 0.0

    def p(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000

    def line(self) -> str:
        rate = len(self.latencies) / self.seconds if self.seconds else float("nan")
        size = self.bytes / max(1, len(self.latencies)) / 1024
        return (f"  {self.name:<16} p50 {self.p(.5):8.1f}  p95 {self.p(.95):8.1f}  p99 {self.p(.99):8.1f} ms"
                f"  {rate:8.1f} req/s  n={len(self.latencies):<6} failed={self.failures:<4} body {size:8.1f} KiB")


async def timed_get(conn: Connection, path: str, stats: Stats) -> None:
    started = time.perf_counter()
    try:
        status, size = await asyncio.wait_for(conn.get(path), REQUEST_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
        conn.close()
        stats.failures += 1
        return
    if status != 200:
        stats.failures += 1
        return
    stats.latencies.append(time.perf_counter() - started)
    stats.bytes += size


async def load(host: str, port: int, path: str, name: str, clients: int, seconds: float, max_requests: int,
               probe: Stats | None = None) -> Stats:
    """`clients` closed-loop clients on `path` until `seconds` pass or `max_requests` were sent;
    with `probe`, a health request every HEALTH_EVERY_S on its own connection meanwhile."""
    stats = Stats(name)
    sent = 0
    deadline = time.perf_counter() + seconds
    conns = [Connection(host, port) for _ in range(clients)]

    async def client(conn: Connection) -> None:
        nonlocal sent
        while time.perf_counter() < deadline and sent < max_requests:
            sent += 1
            await timed_get(conn, path, stats)

    async def prober() -> None:
        conn = Connection(host, port)
        while not done.is_set():
            tick = time.perf_counter()
            await timed_get(conn, "/api/v1/health", probe)
            await asyncio.sleep(max(0.0, HEALTH_EVERY_S - (time.perf_counter() - tick)))
        conn.close()

    done = asyncio.Event()
    probe_task = asyncio.create_task(prober()) if probe is not None else None
    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in conns))
    stats.seconds = time.perf_counter() - started
    done.set()
    if probe_task is not None:
        await probe_task
        probe.seconds = stats.seconds
    for conn in conns:
        conn.close()
    return stats


async def sequential(host: str, port: int, path: str, name: str, count: int) -> Stats:
    stats = Stats(name)
    conn = Connection(host, port)
    started = time.perf_counter()
    for _ in range(count):
        await timed_get(conn, path, stats)
        await asyncio.sleep(HEALTH_EVERY_S)
    stats.seconds = time.perf_counter() - started
    conn.close()
    return stats


# -- one size -------------------------------------------------------------------------------------
def run_size(n_rows: int, args, groups: dict[str, list[str]]) -> dict:
    rng = random.Random(n_rows)
    with tempfile.TemporaryDirectory(prefix="pb-bench-read-") as tmp:
        data_dir = Path(tmp)
        store = LocalDatasetStore(data_dir / "results-dataset")
        started = time.perf_counter()
        store.sync_group(PREFIX, [make_record(i, groups, rng) for i in range(n_rows)], f"Seed {n_rows} rows")
        print(f"\n== {n_rows} rows (seeded in {time.perf_counter() - started:.1f} s)", flush=True)

        redis_port, port, host = free_port(), free_port(), "127.0.0.1"
        redis = start_redis(redis_port, data_dir / "redis")
        env = child_env(data_dir, f"redis://127.0.0.1:{redis_port}/0")
        web = start_web(host, port, env, log_path=data_dir / "web.log")
        result: dict = {"rows": n_rows}
        try:
            wait_http(base_url(host, port), timeout=180, proc=web, log_path=data_dir / "web.log")
            lb = "/api/v1/leaderboard"
            result["health_idle"] = asyncio.run(sequential(host, port, "/api/v1/health", "health idle", args.health_requests))
            print(result["health_idle"].line(), flush=True)
            probe = Stats("health (load)")
            for key, path, name in (("json", f"{lb}?format=json", "leaderboard json"),
                                    ("csv", f"{lb}?format=csv", "leaderboard csv"),
                                    ("filtered", f"{lb}?{FILTER}", "filtered json"),
                                    ("json_gz", f"{lb}?format=json gzip", "json, gzip"),
                                    ("csv_gz", f"{lb}?format=csv gzip", "csv, gzip")):
                asyncio.run(sequential(host, port, path, "warm-up", 1))  # first request of the revision
                result[key] = asyncio.run(load(host, port, path, name, args.clients, args.seconds, args.max_requests,
                                               probe=probe if key == "json" else None))
                print(result[key].line(), flush=True)
                if key == "json":
                    result["health_load"] = probe
                    print(probe.line(), flush=True)
            result.update(measure_publish(store, n_rows, args, groups, rng, host, port))
        finally:
            stop_process(web, timeout=20)
            redis.stop(timeout=20)
    return result


def measure_publish(store, n_rows: int, args, groups, rng, host: str, port: int) -> dict:
    times = []
    deadline = time.perf_counter() + args.publish_seconds
    last = None
    while len(times) < args.publishes and (len(times) < 3 or time.perf_counter() < deadline):
        last = make_record(n_rows + len(times), groups, rng)
        last["metrics"]["total"]["accuracy"]["value"] = 1.0  # ranked first: on the first JSON page
        started = time.perf_counter()
        store.publish(last)
        times.append(time.perf_counter() - started)
    rate = len(times) / sum(times)
    # The next request must show the row the last publish added (and pays for the new revision).
    started = time.perf_counter()
    body = asyncio.run(_get_body(host, port, f"/api/v1/leaderboard?suite={SUITE}&task={TASK}&format=json"))
    fresh_ms = (time.perf_counter() - started) * 1000
    seen = any(row.get("submission_id") == last["submission_id"] for row in json.loads(body))
    # one more publish, then the same request after a pause: what readers get once the web app has
    # noticed the new head (it builds the table and the default page as soon as the head moves)
    store.publish(make_record(n_rows + len(times), groups, rng))
    time.sleep(PREBUILD_WAIT_S)
    started = time.perf_counter()
    asyncio.run(_get_body(host, port, "/api/v1/leaderboard?format=json"))
    noticed_ms = (time.perf_counter() - started) * 1000
    print(f"  publish          {rate:8.2f} /s  (n={len(times)}, median {percentile(times, .5) * 1000:.0f} ms)"
          f"   next request {fresh_ms:.0f} ms, new row {'seen' if seen else 'MISSING'};"
          f" {PREBUILD_WAIT_S:.0f} s after a publish {noticed_ms:.0f} ms", flush=True)
    return {"publish_rate": rate, "fresh_ms": fresh_ms, "fresh_seen": seen, "noticed_ms": noticed_ms}


async def _get_body(host: str, port: int, path: str) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return out
            out, rest = out + rest[:size], rest[size + 2:]
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100,2000,20000", help="comma-separated result-row counts")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=8.0, help="per load scenario (in-flight requests finish)")
    parser.add_argument("--max-requests", type=int, default=5000, help="per load scenario")
    parser.add_argument("--health-requests", type=int, default=100)
    parser.add_argument("--publishes", type=int, default=30)
    parser.add_argument("--publish-seconds", type=float, default=30.0, help="stop publishing after this (>= 3 publishes)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.rows.split(",") if s.strip()]
    groups = tier_groups()
    print(f"{args.clients} clients, {args.seconds:.0f} s per scenario; rows are {SUITE}/{TASK} results "
          f"with {sum(map(len, groups.values()))} tiers each")
    results = [run_size(n, args, groups) for n in sizes]

    print("\nsummary (ms are p99)")
    print(f"  {'rows':>7} {'json':>9} {'csv':>9} {'filtered':>9} {'json gz':>9} {'csv gz':>9} {'health idle':>12}"
          f" {'health load':>12} {'load/idle':>10} {'publish/s':>10} {'json req/s':>11} {'next req':>9} {'2s after':>9}")
    for r in results:
        ratio = r["health_load"].p(.99) / r["health_idle"].p(.99)
        rps = len(r["json"].latencies) / r["json"].seconds
        print(f"  {r['rows']:>7} {r['json'].p(.99):9.1f} {r['csv'].p(.99):9.1f} {r['filtered'].p(.99):9.1f}"
              f" {r['json_gz'].p(.99):9.1f} {r['csv_gz'].p(.99):9.1f} {r['health_idle'].p(.99):12.1f} {r['health_load'].p(.99):12.1f} {ratio:10.2f}"
              f" {r['publish_rate']:10.2f} {rps:11.1f} {r['fresh_ms']:9.0f} {r['noticed_ms']:9.0f}")
    base = results[0]
    for r in results[1:]:
        print(f"  publish rate at {base['rows']} / at {r['rows']}: {base['publish_rate'] / r['publish_rate']:.2f}x")
    failed = sum(r[k].failures for r in results
                 for k in ("json", "csv", "filtered", "json_gz", "csv_gz", "health_load", "health_idle"))
    print(f"  failed requests: {failed}; new row seen after publish: "
          f"{all(r['fresh_seen'] for r in results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
