"""Workers are named `host-pid-xxxx` (the status line and /api/v1/workers show it), and RQ reading
workers back from Redis keeps their names. A real redis-server, no job."""

from __future__ import annotations

import os
import re
import socket

import redis
from rq import Queue

from submissions.worker import PreloadWorker


def test_a_worker_without_a_name_says_where_it_runs_and_reads_back_unchanged(redis_server):
    conn = redis.Redis.from_url(redis_server)
    queue = Queue("personaboard", connection=conn)
    first, second = PreloadWorker([queue], connection=conn), PreloadWorker([queue], connection=conn)
    host = re.escape(socket.gethostname()[:40])
    assert re.fullmatch(rf"{host}-{os.getpid()}-[0-9a-f]{{4}}", first.name), first.name
    assert first.name != second.name  # same host and pid (a restarted container): still two names
    named = PreloadWorker([queue], name="gpu-box-1", connection=conn)
    assert named.name == "gpu-box-1"
    for worker in (first, named):
        worker.register_birth()
    try:
        listed = {
            w.name for w in PreloadWorker.all(connection=conn)
        }  # built by RQ with the name passed positionally
        assert listed == {first.name, "gpu-box-1"}
    finally:
        for worker in (first, named):
            worker.register_death()
