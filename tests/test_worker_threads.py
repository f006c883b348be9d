"""Each worker takes its share of the cores for compute threads: real redis-server, real `rq worker`
processes of the service's worker class, the thread count read inside the forked work-horse."""
from __future__ import annotations

import os
import subprocess

import pytest
from rq import Queue

from backend import processes
from submissions.settings import QUEUE_NAME
from submissions.queue import connect
from submissions.worker import THREADS_ENV


def threads_in_job() -> dict:
    import torch

    return {"torch": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}


@pytest.mark.parametrize("workers", [1, 2])
def test_each_worker_uses_its_share_of_the_cores(redis_server, service_env, workers):
    cores = len(os.sched_getaffinity(0))
    queue = Queue(QUEUE_NAME, connection=connect(redis_server))
    job = queue.enqueue("tests.test_worker_threads.threads_in_job")  # as the worker imports it (root on its path)
    argv = processes.worker_argv()
    argv.insert(-1, "--burst")  # drain the queue, then exit
    env = {**service_env, "PERSONABOARD_WORKERS": str(workers), "RQ_REDIS_URL": redis_server}
    env.pop("OMP_NUM_THREADS", None)
    env.pop(THREADS_ENV, None)
    done = subprocess.run(argv, env=env, timeout=120, capture_output=True, text=True)
    job.refresh()
    assert job.get_status() == "finished", done.stdout[-2000:] + done.stderr[-2000:]
    expected = max(1, cores // workers)
    assert job.return_value() == {"torch": expected, "omp": str(expected)}
    assert expected * workers <= max(cores, workers)  # together the workers use the cores once

