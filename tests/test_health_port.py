"""Health on a port of its own (PERSONABOARD_HEALTH_PORT): the web app started as `make serve` starts
it answers GET /api/v1/health on both ports with the same report, follows a publish and a Redis
that goes away, and serves nothing else on the health port; a web event loop that stops beating
is reported as stalled (503)."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from board_fixture import minimal_record
from live_helpers import wait_until

from backend import health
from backend.health import PATH, HealthListener, LoopHeartbeat, QueueProbe
from backend.processes import (
    base_url,
    child_env,
    free_port,
    start_redis,
    start_web,
    stop_process,
    wait_http,
)
from leaderboard.store import LocalDatasetStore

pytestmark = pytest.mark.service


@pytest.fixture
def web_with_health_port(tmp_path):
    redis = start_redis(free_port(), tmp_path / "redis")
    port, health_port = free_port(), free_port()
    env = child_env(tmp_path, redis.url, extra={"PERSONABOARD_HEALTH_PORT": str(health_port)})
    web = start_web("127.0.0.1", port, env, log_path=tmp_path / "web.log")
    try:
        wait_http(base_url("127.0.0.1", port), timeout=180, proc=web, log_path=tmp_path / "web.log")
        yield tmp_path, base_url("127.0.0.1", port), base_url("127.0.0.1", health_port), redis
    finally:
        stop_process(web, timeout=20)
        redis.stop(timeout=20)


def test_health_port_answers_the_same_report_and_follows_publishes_and_redis(web_with_health_port):
    data_dir, web, health_url, redis = web_with_health_port
    with httpx.Client(timeout=10) as http:
        on_web, on_port = http.get(web + PATH), http.get(health_url + PATH)
        assert on_web.status_code == on_port.status_code == 200
        assert on_port.json() == on_web.json() and on_port.json()["queue"] == "ok"
        assert on_port.headers["content-type"] == "application/json"

        revision = LocalDatasetStore(data_dir / "results-dataset").publish(
            minimal_record("health-port", 0.5)
        )
        assert http.get(health_url + PATH).json()["results_revision"] == revision

        for other in (
            "/api/v1/leaderboard",
            "/",
            PATH + "/x",
        ):  # the health port serves health only
            assert http.get(health_url + other).status_code == 404
        assert http.post(health_url + PATH).status_code == 404
        assert http.head(health_url + PATH).status_code == 200

        redis.stop(timeout=20)
        started = time.monotonic()
        down = http.get(health_url + PATH)
        assert down.status_code == 200 and down.json()["queue"] == "unreachable"
        assert time.monotonic() - started < health.PING_TIMEOUT_S + 2.0
        assert http.get(web + PATH).json()["queue"] == "unreachable"  # the web port says the same


def test_a_web_loop_that_stops_beating_is_reported_stalled(tmp_path, monkeypatch):
    """The listener runs in its own thread: only the heartbeat tells it the web loop is stuck."""
    from backend.settings import load_settings
    from submissions.service import Services

    redis = start_redis(free_port(), tmp_path / "redis")
    monkeypatch.setenv("PERSONABOARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PERSONABOARD_REDIS_URL", redis.url)
    monkeypatch.setattr(health, "LOOP_STALL_S", 2.0)  # room for a slow GET
    services = Services.create(load_settings())
    heartbeat = LoopHeartbeat()
    loop = asyncio.new_event_loop()
    heartbeat.start(loop)  # beats only while this loop runs
    listener = HealthListener(
        services, QueueProbe(services.redis), heartbeat, "127.0.0.1", free_port()
    )
    listener.start()
    url = f"http://127.0.0.1:{listener.server.config.port}{PATH}"
    try:
        with httpx.Client(timeout=10) as http:
            loop.run_until_complete(asyncio.sleep(0.6))  # the loop runs: it beat moments ago
            assert http.get(url).status_code == 200
            # the loop does not run: once it has not beaten for LOOP_STALL_S, health says so
            stalled = wait_until(
                lambda: (answer := http.get(url)).status_code == 503 and answer,
                30,
                "health to report the stalled loop",
                interval=0.2,
            )
            assert heartbeat.silent_for() > health.LOOP_STALL_S  # not before
            assert stalled.json()["status"] == "stalled"
            assert "event loop" in stalled.json()["message"]
            loop.run_until_complete(asyncio.sleep(0.3))  # running again
            assert http.get(url).status_code == 200
    finally:
        listener.stop()
        assert not listener.thread.is_alive()
        heartbeat.stop()
        loop.close()
        services.stop()
        redis.stop(timeout=20)
