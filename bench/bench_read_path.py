"""Read path under load: leaderboard JSON / CSV / filtered, health beside them, and publish rate.

For each N in --rows it makes a fresh data dir, seeds N result rows through the results store's own
API (`sync_group`, one version, as the papers' reported rows are published), starts Redis and the
web app exactly as `make serve` does (backend.processes), and then, on loopback only:

    health idle      one client, sequential requests to /api/v1/health
    json / csv /     --clients concurrent keep-alive clients for --seconds each (at most
    filtered         --max-requests in all), plain GETs without If-None-Match: full bodies
                     (JSON: the API's default page since it is paged; CSV: the whole table);
    json/csv gzip    the same with Accept-Encoding: gzip (compressed bodies, as browsers get)
    health (load)    a health probe every 20 ms while the JSON load runs (from a process of its own)
    floor            (--floor, default on) the complete CSV's responses, plain and gzip, byte for
                     byte as the service sent them, served again by a bare server in a process of
                     its own (asyncio one write / 256 KiB writes / os.sendfile) to the same client
                     and load: service/floor says how much of the CSV's time is the service's own
    publish          (after every size's read scenarios, each size's web app still up)
                     --publishes single publishes to each size, one size after the other in
                     turn (the machine's drift weighs on every size alike), through
                     `store.publish` (the workers' call), each followed by the publisher's
                     boards check; the rate is then charged one
                     refresh of the boards (timed) per PERSONABOARD_BOARDS_EVERY_S, as a steady
                     stream of publishes pays it,
                     at most --publish-seconds; then the first leaderboard request after the last
                     publish (it must show the new row: checked), one 2 s after another publish,
                     and one right after a publish ("at once": it waits for the new head's build);
                     the web process's CPU per publish (its watcher builds each new head) and for
                     that first request (load on the machine moves these far less than the ms)

Prints p50/p95/p99 (ms), requests/s, failures and the server process's CPU time per request per
line (CPU per request moves far less with the other sessions' load than the milliseconds), then
the ratios the goals are about.
Every loop is bounded in count and time; the servers are stopped by PID at the end.

    .venv/bin/python bench/bench_read_path.py                       # 100, 2,000, 20,000 rows
    .venv/bin/python bench/bench_read_path.py --rows 100,2000 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.processes import (  # noqa: E402
    base_url,
    child_env,
    free_port,
    http_status,
    proc_stat,
    start_redis,
    start_web,
    stop_process,
    wait_http,
)
from leaderboard.boards import BOARDS_EVERY_S  # noqa: E402
from leaderboard.result_record import KIND_COMPUTED  # noqa: E402
from leaderboard.store import LocalDatasetStore  # noqa: E402

SUITE, TASK = "prefeval", "mcq"
SETTINGS = ("zero_shot", "reminder", "cot", "rag")
FILTER = f"suite={SUITE}&task={TASK}&setting=zero_shot&tier=explicit"
PREFIX = "bench-"
HEALTH_EVERY_S = 0.02
REQUEST_TIMEOUT_S = 120.0
PREBUILD_WAIT_S = 2.0
WEB_SETTLE_S = (
    1.0  # after the last publish: the web process's build of that head, counted in its CPU
)


# -- synthetic result records shaped like the workers' --------------------------------------------
def tier_groups() -> dict[str, list[str]]:
    from evaluator.registry import get_task

    return {group.name: list(group.tiers) for group in get_task(SUITE, TASK).tier_groups}


def make_record(i: int, groups: dict[str, list[str]], rng: random.Random) -> dict:
    def stats() -> dict:
        value = round(rng.random(), 6)
        return {
            "accuracy": {
                "value": value,
                "ci95": [max(0.0, value - 0.05), min(1.0, value + 0.05)],
                "n": 100,
            }
        }

    return {
        "submission_id": f"{PREFIX}{i:07d}",
        "suite": SUITE,
        "task": TASK,
        "setting": SETTINGS[i % len(SETTINGS)],
        "model_name": f"bench-model-{i}",
        "model_link": "",
        "source": "predictions",
        "row_kind": KIND_COMPUTED,
        "submitted_at": f"2026-01-01T00:00:00.{i:06d}+00:00",
        "metrics": {
            "metric": "accuracy",
            "total": stats(),
            "tiers": {group: {tier: stats() for tier in tiers} for group, tiers in groups.items()},
        },
    }


def ranked_first(record: dict) -> None:
    """A total of 1 with its interval at the top: on the board's first JSON page (the board
    orders by rank group, which the interval decides, not by the value alone)."""
    record["metrics"]["total"]["accuracy"].update(value=1.0, ci95=[0.999, 1.0])


# -- a small keep-alive HTTP/1.1 client: cheap enough not to be what is measured ----------------------
# A BufferedProtocol: the kernel copies each response straight into one reusable buffer per connection
# and the client only counts bytes (a StreamReader copies every byte twice more: with 7 MB bodies the
# client, not the server, was what the CSV scenarios measured).
RECV_BUFFER = 1 << 20


class ResponseReader(asyncio.BufferedProtocol):
    """Counts one response at a time: status, body bytes (Content-Length or chunked), Connection: close."""

    def __init__(self) -> None:
        self.buffer = memoryview(bytearray(RECV_BUFFER))
        self.transport = None
        self.waiter: asyncio.Future | None = None
        self.lost = False
        self._reset()

    def _reset(self) -> None:
        self.state = "head"  # head -> body | (chunk-size -> chunk -> ... -> last-crlf)
        self.head = bytearray()
        self.status = self.size = self.remaining = 0
        self.close = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection closed mid-response"))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.buffer

    def buffer_updated(self, nbytes: int) -> None:
        data = self.buffer[:nbytes]
        while data and self.waiter is not None and not self.waiter.done():
            data = self._feed(data)

    def _feed(self, data: memoryview) -> memoryview:
        """Consumes the front of `data` for the current state; returns what is left."""
        if self.state in ("head", "chunk-size"):
            self.head += data
            end = self.head.find(b"\r\n\r\n" if self.state == "head" else b"\r\n")
            if end < 0:
                return data[:0]
            line, rest = (
                bytes(self.head[:end]),
                memoryview(bytes(self.head[end + (4 if self.state == "head" else 2) :])),
            )
            self.head = bytearray()
            if self.state == "head":
                self._parse_head(line)
            else:
                size = int(line.split(b";")[0].strip(), 16)
                self.state, self.remaining = ("chunk", size + 2) if size else ("last-crlf", 2)
            if self.state == "body" and not self.remaining:
                self._done()
            return rest
        take = min(self.remaining, len(data))
        crlf_before = max(0, 2 - self.remaining)
        self.remaining -= take
        if self.state == "body":
            self.size += take
        elif self.state == "chunk":  # a chunk's trailing CRLF is not body
            self.size += take - (max(0, 2 - self.remaining) - crlf_before)
        if not self.remaining:
            if self.state == "chunk":
                self.state = "chunk-size"
            else:
                self._done()
        return data[take:]

    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        self.status = int(lines[0].split()[1])
        self.state = "body"
        for line in lines[1:]:
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                self.remaining = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                self.state = "chunk-size"
            elif name == "connection" and value == "close":
                self.close = True

    def _done(self) -> None:
        self.waiter.set_result((self.status, self.size, self.close))


class Connection:
    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.transport = self.protocol = None

    async def get(self, path: str) -> tuple[int, int]:
        """(status, body bytes) of GET path; reconnects once if the server closed the connection.
        A path may end in ` gzip`: then the request says Accept-Encoding: gzip (the body is counted
        as sent, compressed: what a browser or CDN receives)."""
        path, _, encoding = path.partition(" ")
        extra = f"Accept-Encoding: {encoding}\r\n" if encoding else ""
        request = f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{extra}\r\n".encode()
        loop = asyncio.get_running_loop()
        for attempt in (0, 1):
            if self.transport is None or self.protocol.lost:
                self.transport, self.protocol = await loop.create_connection(
                    ResponseReader, self.host, self.port
                )
            self.protocol._reset()
            self.protocol.waiter = loop.create_future()
            try:
                self.transport.write(request)
                status, size, close = await self.protocol.waiter
            except ConnectionError:
                self.close()
                if attempt:
                    raise
                continue
            if close:
                self.close()
            return status, size
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.transport = self.protocol = None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, all its threads."""
    fields = proc_stat(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(
    pid: int, window_s: float = 1.0, busy_share: float = 0.05, timeout_s: float = 120.0
) -> float:
    """Wait until the process used under `busy_share` of a core over a whole `window_s` (its start-up
    work done: the first head's table, the first paint's copy, the boards the bench refreshed);
    returns the seconds waited. The read scenarios measure the steady state; what a publish costs
    the next readers is measured apart ("next request", "at once")."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        before = process_cpu_s(pid)
        time.sleep(window_s)  # the window the CPU is read over, not a wait for a condition
        if process_cpu_s(pid) - before < busy_share * window_s:
            break
    return time.monotonic() - started


class Stats:
    def __init__(self, name: str):
        self.name, self.latencies, self.failures, self.bytes, self.seconds = name, [], 0, 0, 0.0
        self.server_cpu_s: float | None = None  # the server process's CPU time during the scenario

    def cpu_ms_per_request(self) -> float:
        return (
            self.server_cpu_s * 1000 / max(1, len(self.latencies))
            if self.server_cpu_s is not None
            else float("nan")
        )

    def p(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000

    def line(self) -> str:
        rate = len(self.latencies) / self.seconds if self.seconds else float("nan")
        size = self.bytes / max(1, len(self.latencies)) / 1024
        return (
            f"  {self.name:<16} p50 {self.p(0.5):8.1f}  p95 {self.p(0.95):8.1f}  p99 {self.p(0.99):8.1f} ms"
            f"  {rate:8.1f} req/s  n={len(self.latencies):<6} failed={self.failures:<4} body {size:8.1f} KiB"
            + (
                f"  server cpu {self.cpu_ms_per_request():6.2f} ms/req"
                if self.server_cpu_s is not None
                else ""
            )
        )


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


async def load(
    host: str,
    port: int,
    path: str,
    name: str,
    clients: int,
    seconds: float,
    max_requests: int,
    probe: Stats | None = None,
    server_pid: int | None = None,
    port_probe: tuple[int, Stats] | None = None,
) -> Stats:
    """`clients` closed-loop clients on `path` until `seconds` pass or `max_requests` were sent;
    with `probe`, a health request every HEALTH_EVERY_S on its own connection meanwhile; with
    `server_pid`, the CPU time that process used meanwhile (a cost the other sessions' load on
    this shared machine hardly moves, unlike the milliseconds)."""
    stats = Stats(name)
    cpu_before = process_cpu_s(server_pid) if server_pid else None
    sent = 0
    deadline = time.perf_counter() + seconds
    conns = [Connection(host, port) for _ in range(clients)]

    async def client(conn: Connection) -> None:
        nonlocal sent
        while time.perf_counter() < deadline and sent < max_requests:
            sent += 1
            await timed_get(conn, path, stats)

    prober = HealthProber(host, port) if probe is not None else None
    port_prober = (
        HealthProber(host, port_probe[0]) if port_probe is not None else None
    )  # the health port
    started = time.perf_counter()
    await asyncio.gather(*(client(c) for c in conns))
    stats.seconds = time.perf_counter() - started
    if server_pid:
        stats.server_cpu_s = process_cpu_s(server_pid) - cpu_before
    for running, into in ((prober, probe), (port_prober, port_probe and port_probe[1])):
        if running is not None:
            running.collect(into)
            into.seconds = stats.seconds
    for conn in conns:
        conn.close()
    return stats


class HealthProber:
    """A health request every HEALTH_EVERY_S from a process of its own until `collect`: in the load
    client's event loop, the probe's own wait for that busy loop would be counted as health's time
    (under 7 MB CSV bodies it was most of it)."""

    def __init__(self, host: str, port: int):
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self.stop, self.ready = context.Event(), context.Event()
        self.receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=self._run, args=(host, port, sender), daemon=True)
        self.process.start()
        self.ready.wait(30)

    def _run(self, host: str, port: int, sender) -> None:
        stats = Stats("health")

        async def probe() -> None:
            conn = Connection(host, port)
            self.ready.set()
            while not self.stop.is_set():
                tick = time.perf_counter()
                await timed_get(conn, "/api/v1/health", stats)
                await asyncio.sleep(max(0.0, HEALTH_EVERY_S - (time.perf_counter() - tick)))
            conn.close()

        asyncio.run(probe())
        sender.send((stats.latencies, stats.failures, stats.bytes))

    def collect(self, into: Stats) -> None:
        self.stop.set()
        latencies, failures, size = self.receiver.recv()
        self.process.join(10)
        into.latencies += latencies
        into.failures += failures
        into.bytes += size


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
@dataclass
class PublishTarget:
    """One size's store and web process, kept up for the publish phase (interleaved across sizes)."""

    n_rows: int
    store: LocalDatasetStore
    rng: random.Random
    host: str
    port: int
    web_pid: int


def run_size(
    n_rows: int, args, groups: dict[str, list[str]], stack: contextlib.ExitStack
) -> tuple[dict, PublishTarget]:
    """The read scenarios at one size; its store, Redis and web app stay up (until `stack` closes)
    for the publish phase."""
    rng = random.Random(n_rows)
    data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pb-bench-read-")))
    store = LocalDatasetStore(data_dir / "results-dataset")
    store.ensure()
    # the seed's loose objects packed before the publishes (the store asks git to after a change of
    # many files; in the foreground here, so no repack of the seed runs beside the measured publishes)
    subprocess.run(["git", "config", "gc.autoDetach", "false"], cwd=store.root, check=True)
    started = time.perf_counter()
    store.sync_group(
        PREFIX, [make_record(i, groups, rng) for i in range(n_rows)], f"Seed {n_rows} rows"
    )
    store.refresh_boards()  # the publishes start from current boards, as after a quiet while
    print(f"\n== {n_rows} rows (seeded in {time.perf_counter() - started:.1f} s)", flush=True)

    redis_port, port, host = free_port(), free_port(), "127.0.0.1"
    redis = start_redis(redis_port, data_dir / "redis")
    stack.callback(redis.stop, timeout=20)
    health_port = (
        free_port()
    )  # PERSONABOARD_HEALTH_PORT: health off the web port (trees that have it)
    env = child_env(
        data_dir,
        f"redis://127.0.0.1:{redis_port}/0",
        extra={"PERSONABOARD_HEALTH_PORT": str(health_port)},
    )
    web = start_web(host, port, env, log_path=data_dir / "web.log")
    stack.callback(stop_process, web, timeout=20)  # (stopped before Redis: last in, first out)
    result: dict = {"rows": n_rows}
    wait_http(base_url(host, port), timeout=180, proc=web, log_path=data_dir / "web.log")
    # the web app synced the papers' rows as it started (their boards lag); its publisher would
    # refresh them 30 s later, in the middle of a read scenario (0.5-1.3 s of CPU at 20,000 rows):
    # the reads are measured from current boards, a refresh's cost in the publish phase
    store.refresh_boards()
    settled = wait_until_idle(web.pid)
    print(f"  (the web process settled {settled:.1f} s after it answered)", flush=True)
    lb = "/api/v1/leaderboard"
    result["health_idle"] = asyncio.run(
        sequential(host, port, "/api/v1/health", "health idle", args.health_requests)
    )
    print(result["health_idle"].line(), flush=True)
    port_probe = None
    if http_status(base_url(host, health_port) + "/api/v1/health") == 200:
        result["health_port_idle"] = asyncio.run(
            sequential(
                host,
                health_port,
                "/api/v1/health",
                "health port idle",
                args.health_requests,
            )
        )
        print(result["health_port_idle"].line(), flush=True)
        port_probe = (health_port, Stats("health port (load)"))
    probe = Stats("health (load)")
    for key, path, name in (
        ("json", f"{lb}?format=json", "leaderboard json"),
        ("csv", f"{lb}?format=csv", "leaderboard csv"),
        ("filtered", f"{lb}?{FILTER}", "filtered json"),
        ("json_gz", f"{lb}?format=json gzip", "json, gzip"),
        ("csv_gz", f"{lb}?format=csv gzip", "csv, gzip"),
    ):
        asyncio.run(sequential(host, port, path, "warm-up", 1))  # first request of the revision
        result[key] = asyncio.run(
            load(
                host,
                port,
                path,
                name,
                args.clients,
                args.seconds,
                args.max_requests,
                probe=probe if key == "json" else None,
                server_pid=web.pid,
                port_probe=port_probe if key == "json" else None,
            )
        )
        print(result[key].line(), flush=True)
        if key == "json":
            result["health_load"] = probe
            print(probe.line(), flush=True)
            if port_probe is not None:
                result["health_port_load"] = port_probe[1]
                print(port_probe[1].line(), flush=True)
    if args.floor:
        result.update(measure_floor(host, port, args, data_dir, result))
    return result, PublishTarget(n_rows, store, rng, host, port, web.pid)


# -- the floor: the same response bytes from the cheapest server this machine can run -----------------
FLOOR_MODES = ("write", "chunks", "sendfile")
FLOOR_CHUNK_BYTES = 256 * 1024
FLOOR_SCENARIOS = (("csv", ""), ("csv_gz", "gzip"))  # (the service's scenario, Accept-Encoding)


def measure_floor(host: str, port: int, args, data_dir: Path, result: dict) -> dict:
    """The complete CSV (plain and gzip) as the service sent it, byte for byte (status line, headers,
    body), served again by a bare server in a process of its own, to the same client with the same
    load: `write` (asyncio, one transport.write per response), `chunks` (256 KiB writes, each awaiting
    the drain) and `sendfile` (os.sendfile from a file: no copy through user space). service/floor is
    how much of the CSV's time is the service's own; the floor is the best of the three."""
    out: dict = {}
    responses = {}
    for key, encoding in FLOOR_SCENARIOS:
        raw = asyncio.run(_get_raw(host, port, "/api/v1/leaderboard?format=csv", encoding))
        path = data_dir / f"floor-{key}.http"
        path.write_bytes(raw)
        responses[key] = path
    for mode in FLOOR_MODES:
        floor_port = free_port()
        server = _start_floor_server(mode, floor_port, responses)
        try:
            for key, encoding in FLOOR_SCENARIOS:
                name = f"{key.replace('_gz', ' gz')} floor {mode}"
                stats = asyncio.run(
                    load(
                        host,
                        floor_port,
                        f"/{key} {encoding}".rstrip(),
                        name,
                        args.clients,
                        args.seconds,
                        args.max_requests,
                        server_pid=server.pid,
                    )
                )
                out[f"floor_{mode}_{key}"] = stats
                print(
                    f"{stats.line()}  service/floor: p99 {result[key].p(0.99) / stats.p(0.99):5.2f}x,"
                    f" cpu/req {result[key].cpu_ms_per_request() / stats.cpu_ms_per_request():5.2f}x"
                    f"  (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        finally:
            server.terminate()
            server.join(10)
    return out


async def _get_raw(host: str, port: int, path: str, encoding: str) -> bytes:
    """One whole response (status line, headers, body) to GET path, as the service sends it."""
    reader, writer = await asyncio.open_connection(host, port)
    extra = f"Accept-Encoding: {encoding}\r\n" if encoding else ""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    body = await reader.readexactly(length)
    writer.close()
    return head + body


def _start_floor_server(mode: str, port: int, responses: dict[str, Path]):
    import multiprocessing

    ready = multiprocessing.get_context("fork").Event()
    proc = multiprocessing.get_context("fork").Process(
        target=_serve_floor,
        args=(mode, port, {f"/{k}": str(v) for k, v in responses.items()}, ready),
        daemon=True,
    )
    proc.start()
    if not ready.wait(30):
        proc.terminate()
        raise RuntimeError("floor server did not start")
    return proc


def _serve_floor(mode: str, port: int, responses: dict[str, str], ready) -> None:
    """A keep-alive HTTP/1.1 server that answers GET <path> with a stored response and nothing else."""
    blobs = {path.encode(): Path(file).read_bytes() for path, file in responses.items()}
    files = {path.encode(): file for path, file in responses.items()}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        opened = (
            {path: open(file, "rb") for path, file in files.items()} if mode == "sendfile" else {}
        )
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                path = request.split(b" ", 2)[1]
                if mode == "write":
                    writer.write(blobs[path])
                    await writer.drain()
                elif mode == "chunks":
                    view = memoryview(blobs[path])
                    for start in range(0, len(view), FLOOR_CHUNK_BYTES):
                        writer.write(view[start : start + FLOOR_CHUNK_BYTES])
                        await writer.drain()
                else:
                    await loop.sendfile(writer.transport, opened[path], 0, len(blobs[path]))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for f in opened.values():
                f.close()
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(
            handle, "127.0.0.1", port, reuse_address=True, backlog=256
        )
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def print_health_and_floor_summary(results: list[dict]) -> None:
    """Health under the JSON load against idle (p50 and p99; the web port and, where the tree has
    one, the health port), and the complete CSV against its floor (the best bare server)."""
    for r in results:
        parts = []
        for label, idle, busy in (
            ("web port", "health_idle", "health_load"),
            ("health port", "health_port_idle", "health_port_load"),
        ):
            if busy in r:
                parts.append(
                    f"{label} p50 {r[busy].p(0.5):.1f}/{r[idle].p(0.5):.1f} ms = {r[busy].p(0.5) / r[idle].p(0.5):.1f}x,"
                    f" p99 {r[busy].p(0.99):.1f}/{r[idle].p(0.99):.1f} ms = {r[busy].p(0.99) / r[idle].p(0.99):.1f}x"
                )
        print(f"  {r['rows']:>7} health under load/idle: " + "; ".join(parts))
        for key in ("csv", "csv_gz"):
            floors = [
                r[f"floor_{mode}_{key}"] for mode in FLOOR_MODES if r.get(f"floor_{mode}_{key}")
            ]
            floors = [f for f in floors if f.latencies]
            if floors:
                best = min(floors, key=lambda f: f.p(0.99))
                print(
                    f"  {r['rows']:>7} {key:<6} p99 {r[key].p(0.99):.1f} ms, floor ({best.name}) {best.p(0.99):.1f} ms:"
                    f" service/floor {r[key].p(0.99) / best.p(0.99):.2f}x; server cpu/req"
                    f" {r[key].cpu_ms_per_request():.2f} vs {best.cpu_ms_per_request():.2f} ms"
                    f" = {r[key].cpu_ms_per_request() / best.cpu_ms_per_request():.2f}x"
                )


def measure_publishes(targets: list[PublishTarget], args, groups) -> dict[int, dict]:
    """The publish rate of every size, interleaved: one publish to each size in turn, so that the
    machine's speed, which drifts over minutes on a shared host, weighs on every size alike and the
    ratio between sizes is the store's own (measured one size after another, minutes apart, the
    same code gave 1.3x to 2.9x). Then, per size, the boards' refresh and the requests after it."""
    times: dict[int, list[float]] = {t.n_rows: [] for t in targets}
    checks: dict[int, list[float]] = {t.n_rows: [] for t in targets}  # the boards check's share
    deadline = time.perf_counter() + args.publish_seconds
    # each web process's CPU while the publishes go on: its work per publish (the new head's table
    # and default page, built by its watcher), which the other sessions' load hardly moves
    cpu_before = {t.n_rows: process_cpu_s(t.web_pid) for t in targets}
    last: dict[int, dict] = {}
    rounds = 0
    while rounds < args.publishes and (rounds < 3 or time.perf_counter() < deadline):
        for target in targets if rounds % 2 == 0 else reversed(targets):  # neither always first
            record = make_record(target.n_rows + rounds, groups, target.rng)
            ranked_first(record)
            started = time.perf_counter()
            target.store.publish(record)
            published = time.perf_counter()
            # the publisher's check after each entry (mostly: not due)
            target.store.refresh_boards(BOARDS_EVERY_S)
            times[target.n_rows].append(time.perf_counter() - started)
            checks[target.n_rows].append(time.perf_counter() - published)
            last[target.n_rows] = record
        rounds += 1
    time.sleep(WEB_SETTLE_S)  # the watchers' build of the last head, counted too
    results = {}
    for target in targets:
        results[target.n_rows] = finish_publishes(
            target,
            times[target.n_rows],
            checks[target.n_rows],
            last[target.n_rows],
            cpu_before[target.n_rows],
            groups,
        )
    return results


def finish_publishes(
    target: PublishTarget,
    times: list[float],
    checks: list[float],
    last: dict,
    web_cpu_before: float,
    groups,
) -> dict:
    host, port, store, n_rows, rng = (
        target.host,
        target.port,
        target.store,
        target.n_rows,
        target.rng,
    )
    web_cpu_ms = (process_cpu_s(target.web_pid) - web_cpu_before) * 1000 / len(times)
    slowest = times.index(max(times))
    # the boards' share: one refresh (every lagging board ranked afresh, one commit) per interval
    started = time.perf_counter()
    store.refresh_boards()
    refresh_s = time.perf_counter() - started
    bare = len(times) / sum(times)
    rate = bare / (1 + refresh_s / BOARDS_EVERY_S)  # a steady stream: refresh_s every interval
    # The next request must show the row the last publish added (and pays for the new revision).
    web_cpu_next = process_cpu_s(target.web_pid)
    started = time.perf_counter()
    body = asyncio.run(
        _get_body(host, port, f"/api/v1/leaderboard?suite={SUITE}&task={TASK}&format=json")
    )
    fresh_ms = (time.perf_counter() - started) * 1000
    fresh_cpu_ms = (process_cpu_s(target.web_pid) - web_cpu_next) * 1000
    seen = any(row.get("submission_id") == last["submission_id"] for row in json.loads(body))
    # one more publish, then the same request after a pause: what readers get once the web app has
    # noticed the new head (it builds the table and the default page as soon as the head moves)
    store.publish(make_record(n_rows + len(times), groups, rng))
    time.sleep(PREBUILD_WAIT_S)
    started = time.perf_counter()
    asyncio.run(_get_body(host, port, "/api/v1/leaderboard?format=json"))
    noticed_ms = (time.perf_counter() - started) * 1000
    # and a request right after a publish (no refresh, no pause): the web app may still be building
    # the new head's table (it waits for that build), which is what a new part costs readers
    at_once = make_record(n_rows + len(times) + 1, groups, rng)
    ranked_first(at_once)
    store.publish(at_once)
    started = time.perf_counter()
    body = asyncio.run(
        _get_body(host, port, f"/api/v1/leaderboard?suite={SUITE}&task={TASK}&format=json")
    )
    at_once_ms = (time.perf_counter() - started) * 1000
    at_once_seen = any(
        row.get("submission_id") == at_once["submission_id"] for row in json.loads(body)
    )
    print(
        f"  {n_rows:>7} rows: publish {rate:6.2f} /s  (n={len(times)}, median {percentile(times, 0.5) * 1000:.0f} ms,"
        f" p90 {percentile(times, 0.9) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms (#{slowest + 1}, its boards check {checks[slowest] * 1000:.0f} ms),"
        f" {bare:.2f} /s before the boards' refresh of {refresh_s * 1000:.0f} ms every {BOARDS_EVERY_S:.0f} s)"
        f"   next request {fresh_ms:.0f} ms, new row {'seen' if seen else 'MISSING'};"
        f" {PREBUILD_WAIT_S:.0f} s after a publish {noticed_ms:.0f} ms;"
        f" right after a publish {at_once_ms:.0f} ms, new row {'seen' if at_once_seen else 'MISSING'};"
        f" web cpu {web_cpu_ms:.0f} ms per publish, {fresh_cpu_ms:.0f} ms for the next request",
        flush=True,
    )
    return {
        "publish_rate": rate,
        "publish_median_s": percentile(times, 0.5),
        "web_cpu_ms": web_cpu_ms,
        "fresh_cpu_ms": fresh_cpu_ms,
        "fresh_ms": fresh_ms,
        "fresh_seen": seen,
        "noticed_ms": noticed_ms,
        "at_once_ms": at_once_ms,
        "at_once_seen": at_once_seen,
    }


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
            out, rest = out + rest[:size], rest[size + 2 :]
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", default="100,2000,20000", help="comma-separated result-row counts"
    )
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="per load scenario (in-flight requests finish)"
    )
    parser.add_argument("--max-requests", type=int, default=5000, help="per load scenario")
    parser.add_argument("--health-requests", type=int, default=100)
    parser.add_argument("--publishes", type=int, default=30)
    parser.add_argument(
        "--floor",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also serve the complete CSV's bytes from a bare server (service/floor ratio)",
    )
    parser.add_argument(
        "--publish-seconds",
        type=float,
        default=30.0,
        help="stop publishing after this (>= 3 publishes)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.rows.split(",") if s.strip()]
    groups = tier_groups()
    print(
        f"{args.clients} clients, {args.seconds:.0f} s per scenario; rows are {SUITE}/{TASK} results "
        f"with {sum(map(len, groups.values()))} tiers each"
    )
    with contextlib.ExitStack() as stack:
        sized = [run_size(n, args, groups, stack) for n in sizes]
        results = [result for result, _ in sized]
        print(
            f"\n== publishes, one to each size in turn ({', '.join(str(n) for n in sizes)} rows)",
            flush=True,
        )
        published = measure_publishes([target for _, target in sized], args, groups)
        for result in results:
            result.update(published[result["rows"]])

    print("\nsummary (ms are p99)")
    print(
        f"  {'rows':>7} {'json':>9} {'csv':>9} {'filtered':>9} {'json gz':>9} {'csv gz':>9} {'health idle':>12}"
        f" {'health load':>12} {'load/idle':>10} {'publish/s':>10} {'json req/s':>11} {'next req':>9} {'2s after':>9} {'at once':>8}"
    )
    for r in results:
        ratio = r["health_load"].p(0.99) / r["health_idle"].p(0.99)
        rps = len(r["json"].latencies) / r["json"].seconds
        print(
            f"  {r['rows']:>7} {r['json'].p(0.99):9.1f} {r['csv'].p(0.99):9.1f} {r['filtered'].p(0.99):9.1f}"
            f" {r['json_gz'].p(0.99):9.1f} {r['csv_gz'].p(0.99):9.1f} {r['health_idle'].p(0.99):12.1f} {r['health_load'].p(0.99):12.1f} {ratio:10.2f}"
            f" {r['publish_rate']:10.2f} {rps:11.1f} {r['fresh_ms']:9.0f} {r['noticed_ms']:9.0f} {r['at_once_ms']:8.0f}"
        )
    base = results[0]
    for r in results[1:]:
        print(
            f"  publish rate at {base['rows']} / at {r['rows']}: {base['publish_rate'] / r['publish_rate']:.2f}x"
            f" (median publish {r['publish_median_s'] / base['publish_median_s']:.2f}x)"
            f"; web cpu per publish {base['web_cpu_ms']:.0f} / {r['web_cpu_ms']:.0f} ms,"
            f" for the next request {base['fresh_cpu_ms']:.0f} / {r['fresh_cpu_ms']:.0f} ms"
        )
    print_health_and_floor_summary(results)
    failed = sum(
        r[k].failures
        for r in results
        for k in ("json", "csv", "filtered", "json_gz", "csv_gz", "health_load", "health_idle")
    )
    print(
        f"  failed requests: {failed}; new row seen after publish: "
        f"{all(r['fresh_seen'] and r['at_once_seen'] for r in results)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
