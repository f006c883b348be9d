"""A worker that dies inside RQ's maintenance pass must not keep the other workers from cleaning
(and from retrying the job it was running) for long: RQ's own lock lasts 899 s; ours
(submissions/worker.py MAINTENANCE_LOCK_S) lapses within seconds. A real worker process dies
(os._exit, as a SIGKILL would leave it) in the middle of the pass; the lock it left is read from a
real Redis."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from redis import Redis
from rq import Queue

from submissions.worker import MAINTENANCE_LOCK_S

pytestmark = pytest.mark.service

DIES_INSIDE_THE_PASS = textwrap.dedent(
    """
    import os, sys
    import rq.registry
    from redis import Redis
    from rq import Queue
    from submissions.worker import PreloadWorker

    def killed(*args, **kwargs):
        os._exit(9)  # no finally, no release: what a SIGKILL leaves

    rq.registry.clean_registries = killed
    queue = Queue("personaboard", connection=Redis.from_url(sys.argv[1]))
    PreloadWorker([queue], connection=queue.connection).clean_registries()
    """
)


def test_a_worker_dying_inside_maintenance_leaves_a_short_lock(redis_server):
    died = subprocess.run(
        [sys.executable, "-c", DIES_INSIDE_THE_PASS, redis_server],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == 9, died.stderr[-2000:]
    redis = Redis.from_url(redis_server)
    key = Queue("personaboard", connection=redis).registry_cleaning_key
    ttl = redis.ttl(key)
    assert 0 < ttl <= MAINTENANCE_LOCK_S < 899, ttl  # held by the dead worker, briefly
