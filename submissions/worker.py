"""The RQ worker class the service runs: a forking worker that imports the job code once.

RQ forks a fresh work-horse for every job, and the horse inherits whatever its worker had already
imported. Importing the job's code (numpy, pandas, the results store, the suites) and building the
splits take about a second; done once in the worker, before the first fork, instead of in every
horse, that second comes off the start of every job (see bench/bench_queue_latency.py).
"""
from __future__ import annotations

import logging

from rq import Worker

log = logging.getLogger(__name__)


def preload() -> None:
    """Import the job module and build every task's split; a failure here only costs speed."""
    try:
        import submissions.jobs  # noqa: F401
        from evaluator.registry import all_suites

        for suite in all_suites().values():
            for task in suite.tasks.values():
                if task.split_available():  # a split not installed yet is refused at intake anyway
                    _ = task.load_split().sha256  # the hash too: it is recorded with every result
    except Exception:  # the horse imports (and reports) it again
        log.exception("preloading the job code failed; each job will load it itself")


class PreloadWorker(Worker):
    def work(self, *args, **kwargs):
        preload()
        return super().work(*args, **kwargs)
