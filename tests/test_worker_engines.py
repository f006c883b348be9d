"""The service's worker class in real `rq worker` processes on a real redis-server:
- each worker takes its share of the cores for compute threads (read inside the job);
- it imports torch only once it ran a model job (its later work-horses inherit it);
- with warm engines on, a second job for the same model gets the engine the first one loaded."""

from __future__ import annotations

import os
import subprocess

import pytest
from rq import Queue

from backend import processes
from submissions.queue import connect
from submissions.settings import QUEUE_NAME
from submissions.worker import THREADS_ENV, WARM_ENV

# How long a burst worker may take to drain its jobs: generous, as each model job forks a horse that
# imports torch and transformers (~5 CPU s each; the torch-once test's five jobs took over 120 s on a
# 2-core machine also running two busy loops), and under the suite's 600 s per-test timeout.
BURST_TIMEOUT_S = 450


def threads_in_job() -> dict:
    import torch

    return {"torch": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}


@pytest.mark.parametrize("workers", [1, 2])
def test_each_worker_uses_its_share_of_the_cores(redis_server, service_env, workers):
    cores = len(os.sched_getaffinity(0))
    queue = Queue(QUEUE_NAME, connection=connect(redis_server))
    job = queue.enqueue(
        "tests.test_worker_engines.threads_in_job"
    )  # as the worker imports it (root on its path)
    argv = processes.worker_argv()
    argv.insert(-1, "--burst")  # drain the queue, then exit
    env = {**service_env, "PERSONABOARD_WORKERS": str(workers), "RQ_REDIS_URL": redis_server}
    env.pop("OMP_NUM_THREADS", None)
    env.pop(THREADS_ENV, None)
    done = subprocess.run(argv, env=env, timeout=BURST_TIMEOUT_S, capture_output=True, text=True)
    job.refresh()
    assert job.get_status() == "finished", done.stdout[-2000:] + done.stderr[-2000:]
    expected = max(1, cores // workers)
    assert job.return_value() == {"torch": expected, "omp": str(expected)}
    assert expected * workers <= max(cores, workers)  # together the workers use the cores once


def torch_in_worker() -> bool:
    import sys

    return "torch" in sys.modules  # a forked work-horse holds what its worker had imported


def model_job(snapshot: dict) -> int:
    import torch

    return torch.get_num_threads()


def test_a_worker_imports_torch_only_once_it_ran_a_model_job(redis_server, service_env):
    queue = Queue(QUEUE_NAME, connection=connect(redis_server))
    jobs = [
        queue.enqueue("tests.test_worker_engines.torch_in_worker"),
        queue.enqueue("tests.test_worker_engines.model_job", snapshot={"kind": "predictions"}),
        queue.enqueue("tests.test_worker_engines.torch_in_worker"),
        queue.enqueue("tests.test_worker_engines.model_job", snapshot={"kind": "model"}),
        queue.enqueue("tests.test_worker_engines.torch_in_worker"),
    ]
    argv = processes.worker_argv()
    argv.insert(-1, "--burst")
    env = {**service_env, "PERSONABOARD_WORKERS": "1", "RQ_REDIS_URL": redis_server}
    env.pop(THREADS_ENV, None)
    done = subprocess.run(argv, env=env, timeout=BURST_TIMEOUT_S, capture_output=True, text=True)
    for job in jobs:
        job.refresh()
        assert job.get_status() == "finished", done.stdout[-2000:] + done.stderr[-2000:]
    found = [job.return_value() for job in jobs]
    cores = len(os.sched_getaffinity(0))
    # an upload's job leaves the worker without torch; after a model job the next horse has it
    assert found == [False, cores, False, cores, True]


def engine_in_job(folder: str) -> dict:
    from evaluator.backends import ModelSpec
    from evaluator.backends.pool import shared_pool

    engine, warm = shared_pool().acquire(
        ModelSpec("tiny", folder, "generative", revision="r1"), "transformers"
    )
    return {"warm": warm, "pid": os.getpid(), "engine": id(engine)}


@pytest.mark.parametrize("warm_engines", ["1", "0"])
@pytest.mark.model
def test_a_second_job_gets_the_warm_engine(redis_server, service_env, tmp_path, warm_engines):
    from tests.tiny_models import build_tiny_model

    folder = str(build_tiny_model(tmp_path / "tiny"))
    queue = Queue(QUEUE_NAME, connection=connect(redis_server))
    jobs = [queue.enqueue("tests.test_worker_engines.engine_in_job", folder) for _ in range(2)]
    argv = processes.worker_argv()
    argv.insert(-1, "--burst")
    env = {**service_env, WARM_ENV: warm_engines, "RQ_REDIS_URL": redis_server}
    done = subprocess.run(argv, env=env, timeout=BURST_TIMEOUT_S, capture_output=True, text=True)
    for job in jobs:
        job.refresh()
        assert job.get_status() == "finished", done.stdout[-2000:] + done.stderr[-2000:]
    first, second = (job.return_value() for job in jobs)
    if warm_engines == "1":  # run in the worker's own process: the same engine, warm
        assert (first["warm"], second["warm"]) == (False, True)
        assert first["pid"] == second["pid"] and first["engine"] == second["engine"]
    else:  # a forked work-horse per job: each loads its own
        assert (first["warm"], second["warm"]) == (False, False) and first["pid"] != second["pid"]
