"""Shared fixtures: a real redis-server, the service's environment, and a live service.

Everything listens on 127.0.0.1 on free ports under pytest's tmp dirs, and everything started
here is stopped by PID at teardown (children also get SIGTERM if pytest itself dies).

    redis_server            -> str, a redis:// URL to a fresh, empty server (function scope)
    service_env             -> dict, environment for the app/CLI/workers: data dir + that Redis
    live_service            -> LiveService: Redis + 2 workers + web app (function scope)
    shared_live_service     -> the same, started once per test session (do not break it)
    hub_server              -> HubServerProcess: a local Hub-API server (tests/hub_server.py), with a token

`make test` runs the suite in 3 processes (pytest-xdist, `--dist loadfile`: a file's tests stay in one
process, so its module-scoped service starts once; a session-scoped service starts once per process
that needs it). At the end every run prints the seconds per marker and the live services started.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
if str(PROJECT_ROOT) not in sys.path:  # works without `pip install -e .` too
    sys.path.insert(0, str(PROJECT_ROOT))

# The app reads these at import time in some libraries: set them before anything imports gradio.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Workers started by the tests (children inherit these) run maintenance and job monitoring every
# second instead of every 5 (backend/processes.py), and a killed worker's job is retried 15 s after
# its last heartbeat instead of RQ's 60 (submissions/worker.py): the fault tests wait less.
os.environ.setdefault("PERSONABOARD_WORKER_TTL", "16")
os.environ.setdefault("PERSONABOARD_JOB_HEARTBEAT_GRACE_S", "15")
# Every service this process starts reads the chance and majority rows from one cache folder
# (leaderboard/reference.py): scored once per test process, not at each of ~50 web app starts;
# the unit tests' stores write there too, never into the checkout's ./var.
_REFERENCE_CACHE = tempfile.TemporaryDirectory(prefix="personaboard-test-cache-")
os.environ.setdefault("PERSONABOARD_CACHE_DIR", _REFERENCE_CACHE.name)

from live_service import (  # noqa: E402
    LIVE_SERVICE_STARTUPS,
    LiveService,
    start_live_service,
)

from backend import processes  # noqa: E402

# What a test needs beyond the Python packages, read from the fixtures it uses (directly or through
# other fixtures), so a new test that starts a service or builds a model is marked without anyone
# remembering to: `pytest -m "not service and not model"` then runs exactly the in-process tests.
# Tests that start processes or build models inline carry the mark themselves (see pyproject.toml).
NEEDS_BY_FIXTURE = {
    "service": {
        "redis_server",
        "service_env",
        "live_service",
        "shared_live_service",
        "module_live_service",
        "hub_server",
    },
    "browser": {"browser", "page"},
    "model": {"tiny", "folders", "tiny_folder", "llama_server"},
}


# Under pytest-xdist (`make test` runs `-n 3 --dist loadfile`) a file that starts last must not
# keep the run waiting: files with slow tests go first, then model, browser and service files, then
# the in-process ones; each file keeps its own order.
LONG_FIRST = ("slow", "model", "browser", "service")


def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in NEEDS_BY_FIXTURE.items():
            if used & fixtures:
                item.add_marker(marker)
    if hasattr(config, "workerinput"):  # every xdist worker sorts alike: they must agree
        rank: dict[str, int] = {}
        for item in items:
            names = {mark.name for mark in item.iter_markers()}
            mine = next((i for i, name in enumerate(LONG_FIRST) if name in names), len(LONG_FIRST))
            path = _file_of(item.nodeid)
            rank[path] = min(rank.get(path, mine), mine)
        items.sort(key=lambda item: rank[_file_of(item.nodeid)])


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _in_process_file(nodeid: str) -> bool:
    """What the xdist controller, which sees node ids only, takes for a quick file: tests/unit's."""
    return "/unit/" in _file_of(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (one worker runs all of a file: its module-scoped service starts once) in
    the order above, with one change: a worker must hold its next test before it runs the current
    one, so while it runs a long file's last tests it is handed a quick file next, not another long
    one that would wait behind a test of minutes while other workers idle."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongFilesAsideScheduling(LoadFileScheduling):
        def _assign_work_unit(self, node):
            pending = [
                nodeid
                for tests in self.assigned_work.get(node, {}).values()
                for nodeid, done in tests.items()
                if not done
            ]
            want_quick = any(not _in_process_file(nodeid) for nodeid in pending)
            for scope in self.workqueue:
                if _in_process_file(scope) == want_quick:
                    self.workqueue.move_to_end(scope, last=False)
                    break
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False  # keep the order above, not the most tests first
    return LongFilesAsideScheduling(config, log)


# -- the time per marker, printed at the end of every run (pytest-xdist's controller included) -----
SUMMARY_MARKERS = ("service", "browser", "model", "slow", "container")


class _RunTally:
    """Seconds (setup + call + teardown) and tests per marker, and the live services started,
    added up from the test reports: under pytest-xdist they reach the controller from every worker."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.seconds: dict[str, float] = {}
        self.tests: dict[str, set[str]] = {}
        self.startups: list[float] = []
        self.reported_startups = 0  # of LIVE_SERVICE_STARTUPS, those a report already carries

    def add(self, report) -> None:
        props = dict(report.user_properties)
        markers = props.get("markers") or ["unmarked"]
        for name in [*markers, "all"]:
            self.seconds[name] = self.seconds.get(name, 0.0) + report.duration
            self.tests.setdefault(name, set()).add(report.nodeid)
        self.startups += props.get("live_service_startups", [])


RUN_TALLY = _RunTally()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each report carries its test's markers and the live services started in that phase, so the
    process that prints the summary (xdist's controller) can add them up."""
    report = yield
    markers = sorted({mark.name for mark in item.iter_markers()} & set(SUMMARY_MARKERS))
    startups = LIVE_SERVICE_STARTUPS[RUN_TALLY.reported_startups :]
    RUN_TALLY.reported_startups = len(LIVE_SERVICE_STARTUPS)
    # a new list: the report shares item.user_properties with the test's other phases
    report.user_properties = [
        *report.user_properties,
        ("markers", markers),
        ("live_service_startups", startups),
    ]
    return report


def pytest_runtest_logreport(report):
    RUN_TALLY.add(report)


@pytest.hookimpl(trylast=True)  # after --durations: the last block before the result line
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):  # an xdist worker: its reports reach the controller
        return
    tally = RUN_TALLY
    if "all" not in tally.seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.write_sep("=", "time per marker")
    write("setup + call + teardown, summed over tests; a test counts under each of its markers")
    for name in [*SUMMARY_MARKERS, "unmarked", "all"]:
        write(
            f"{name:<10} {len(tally.tests.get(name, ())):>5} tests {tally.seconds.get(name, 0.0):>9.1f} s"
        )
    write(f"wall time {time.monotonic() - tally.started:.1f} s")
    write(
        f"live services started: {len(tally.startups)}, {sum(tally.startups):.1f} s in start-up"
        + (f" (slowest {max(tally.startups):.1f} s)" if tally.startups else "")
    )


@pytest.fixture(scope="session", autouse=True)
def gold_canary_watch(tmp_path_factory):
    """Hidden gold stays hidden: the gold canary (tests/canary.py) never reaches a response or a log in this run."""
    import httpx
    from canary import GOLD_CANARY, leaks_in_tree

    seen: list[str] = []
    original = httpx.Client.send

    def watched_send(self, request, *args, **kwargs):
        response = original(self, request, *args, **kwargs)
        if not kwargs.get("stream") and GOLD_CANARY.encode() in response.content:
            seen.append(f"{request.method} {request.url}")
        return response

    httpx.Client.send = watched_send
    try:
        yield
    finally:
        httpx.Client.send = original
    leaks = seen + leaks_in_tree(tmp_path_factory.getbasetemp())
    assert not leaks, f"the gold canary of the hidden fixture split leaked into: {leaks}"


@pytest.fixture
def redis_server(tmp_path_factory):
    """A real, empty redis-server (append-only persistence) on a free port; yields its URL."""
    server = processes.start_redis(processes.free_port(), tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def service_env(tmp_path, redis_server) -> dict:
    """Environment for running the app, CLI or a worker: data dir tmp_path/data, Redis from redis_server."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    return processes.child_env(data_dir, redis_server)


@pytest.fixture
def live_service(tmp_path):
    """Redis + an RQ worker + the web app (backend.app:create_app) on free ports; stopped at teardown."""
    svc = start_live_service(tmp_path / "service")
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="session")
def shared_live_service(tmp_path_factory):
    """One live service for the whole session, for tests that only submit and read. Two workers: a
    model run one test leaves behind (or kills a worker of) does not hold the next test's jobs."""
    svc = start_live_service(tmp_path_factory.mktemp("shared-service"), n_workers=2)
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def module_live_service(tmp_path_factory):
    """A live service shared by the tests of one module (e.g. one suite's end-to-end tests)."""
    svc = start_live_service(tmp_path_factory.mktemp("module-service"))
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture
def start_service():
    """start(root, n_workers=1, extra_env) -> LiveService, stopped at teardown (e.g. a web node with
    no worker of its own, or one with a Space's environment)."""
    started: list[LiveService] = []

    def start(
        root: Path, n_workers: int = 1, extra_env: dict[str, str] | None = None
    ) -> LiveService:
        started.append(start_live_service(root, n_workers, extra_env))
        return started[-1]

    try:
        yield start
    finally:
        for svc in started:
            svc.stop()


@pytest.fixture
def hub_server(tmp_path_factory):
    """tests/hub_server.py on a free port, accepting hub_server.TEST_TOKEN; stopped by PID at teardown."""
    from hub_server import TEST_TOKEN as HUB_TEST_TOKEN
    from hub_server import HubServerProcess

    root = tmp_path_factory.mktemp("hub")
    server = HubServerProcess(root / "state", [HUB_TEST_TOKEN], root / "hub.log").start()
    try:
        yield server
    finally:
        server.stop()
