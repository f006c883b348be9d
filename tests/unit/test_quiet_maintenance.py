"""The worker's maintenance pass (submissions/worker.py PreloadWorker) logs only when it changed
something: RQ's own "cleaning registries" line came every pass (every second in the tests, 1,311
lines in 35 minutes). A real redis-server and RQ's own maintenance; no job runs."""

from __future__ import annotations

import logging

import pytest
import redis
from rq import Queue

from submissions.worker import PreloadWorker


@pytest.fixture
def worker(service_env, monkeypatch):
    for name, value in service_env.items():
        monkeypatch.setenv(name, value)  # the data folder the outbox drain reads
    conn = redis.Redis.from_url(service_env["PERSONABOARD_REDIS_URL"])
    queue = Queue("personaboard", connection=conn)
    found = PreloadWorker([queue], connection=conn)
    found.register_birth()
    yield found
    found.register_death()


def lines(caplog) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records]


def test_a_quiet_pass_logs_nothing_and_a_pass_that_cleans_says_what(worker, caplog):
    caplog.set_level(logging.DEBUG, logger="rq")
    caplog.set_level(logging.INFO, logger="submissions")
    for _ in range(3):
        worker.run_maintenance_tasks()
    assert lines(caplog) == []
    # a worker that died without unregistering: its key is gone, its registry entry stays
    dead = PreloadWorker(worker.queues, name="dead-worker", connection=worker.connection)
    dead.register_birth()
    worker.connection.delete(dead.key)
    worker.run_maintenance_tasks()
    said = [line for line in lines(caplog) if "maintenance of queue personaboard" in line]
    assert len(said) == 1 and "1 dead worker(s) removed" in said[0], lines(caplog)
    assert not any("cleaning registries" in line for line in lines(caplog))
