"""Health's Redis probe runs on the event loop: it answers for a live Redis, and a Redis that
accepts connections but never answers costs one short timeout, not one per health request."""

from __future__ import annotations

import socket
import time

import pytest
from redis import Redis

from backend.health import PING_BACKOFF_S, PING_TIMEOUT_S, QueueProbe
from backend.processes import free_port, start_redis

pytestmark = pytest.mark.service  # starts redis-server itself


def test_probe_answers_for_a_live_redis_and_follows_it_down(tmp_path):
    port = free_port()
    server = start_redis(port, tmp_path / "redis", password="s3cret")
    try:
        probe = QueueProbe(Redis.from_url(f"redis://:s3cret@127.0.0.1:{port}/0", socket_timeout=5))
        assert probe.answers() and probe.answers()
    finally:
        server.stop(timeout=20)
    assert not probe.answers()  # stopped: refused at once


def test_a_silent_redis_costs_one_timeout_then_none_until_the_backoff_ends():
    with socket.socket() as silent:  # accepts (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        probe = QueueProbe(Redis(host="127.0.0.1", port=silent.getsockname()[1], socket_timeout=30))
        started = time.monotonic()
        assert not probe.answers()
        first = time.monotonic() - started
        assert first < PING_TIMEOUT_S + 2.0  # its own short timeout, not the client's 30 s
        started = time.monotonic()
        for _ in range(100):
            assert not probe.answers()
        assert (
            time.monotonic() - started < min(first, PING_BACKOFF_S) / 2
        )  # no ping while backing off
