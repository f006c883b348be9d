"""The RQ worker class the service runs: a forking worker that imports the job code once.

RQ forks a fresh work-horse for every job, and the horse inherits whatever its worker had already
imported. Importing the job's code (numpy, pandas, the results store, the suites) and building the
splits take about a second; done once in the worker, before the first fork, instead of in every
horse, that second comes off the start of every job (see bench/bench_queue_latency.py). torch
(the model backends) is imported only once the worker ran a model job: a worker that only scores
uploaded files never pays for it (a worker's start 2.3 -> 1.4 s of CPU, 380 -> 200 MB resident).
"""

from __future__ import annotations

import ctypes
import logging
import os
import secrets
import signal
import socket
import sys

from rq import SimpleWorker, Worker

from evaluator.phases import add_phase_reporter

log = logging.getLogger(__name__)


def report_job_phase(phase: str) -> None:
    """A model run's phase (evaluator/phases.py) into the running job's progress, which the status
    views read (submissions/queue.py live_status): "loading the model" instead of "0 of 30"."""
    from rq import get_current_job

    job = get_current_job()
    if job is None:
        return
    progress = dict(job.meta.get("progress") or {})
    progress["phase"] = phase
    job.meta["progress"] = progress
    job.save_meta()


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


THREADS_ENV = (
    "PERSONABOARD_WORKER_THREADS"  # explicit compute threads per worker (overrides the share)
)


def compute_threads(cores: int | None = None, workers: int | None = None) -> int:
    """This worker's share of the cores: all workers of a machine together use every core once
    (torch's default, one thread per core in every worker, runs N x cores threads on the cores)."""
    if explicit := os.environ.get(THREADS_ENV):
        return max(1, int(explicit))
    cores = cores or len(os.sched_getaffinity(0))
    # The supervisor's worker count on this machine (backend/settings.py reads the same variable);
    # a worker started by hand on another node is told its machine's count the same way.
    workers = workers or int(os.environ.get("PERSONABOARD_WORKERS", "2"))
    return max(1, cores // max(1, workers))


def set_compute_threads() -> int:
    """Set this worker's share of the cores for compute threads, in OMP_NUM_THREADS and
    MKL_NUM_THREADS: torch reads them when it starts (so does OpenMP in other libraries), in this
    process or in a forked work-horse; a torch already imported is told directly."""
    threads = compute_threads()
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    return threads


def needs_torch(job) -> bool:
    """Whether the job was a model run (torch's backends); an uploaded file's job is not."""
    snapshot = (job.kwargs or {}).get("snapshot") or {}
    return snapshot.get("kind") == "model"


def preload_model_code() -> None:
    """Import torch and transformers' model code in the worker once it ran a model job, so that
    later work-horses inherit them instead of importing them again: torch ~1.6 CPU s, and
    transformers.modeling_utils (what loading any model class imports) ~3.3 s more, per model job;
    the worker grows to ~370 MB, paid only by workers that run models. The thread count comes from
    OMP_NUM_THREADS (set_compute_threads). A failure only costs speed."""
    if "evaluator.backends.hf_transformers" in sys.modules:
        return
    try:
        import torch  # noqa: F401
        import transformers.modeling_utils  # noqa: F401 - what loading any model class imports

        import evaluator.backends.hf_transformers  # noqa: F401
    except ImportError:  # a worker for prediction files only
        pass
    except Exception:
        log.exception("preloading the model code failed; each model job will import it itself")


def drain_outbox() -> None:
    """Push this machine's waiting publishes (a result whose publish met a Hub outage goes out when
    the Hub is back, even if no job runs here meanwhile). Non-blocking: if another process of this
    machine is publishing, it carries on."""
    try:
        from submissions.jobs import publishing_outbox

        outbox = publishing_outbox()
        if outbox.backlog():
            outbox.drain()
    except Exception:  # noqa: BLE001 - maintenance must never stop the worker
        log.exception("draining the outbox failed; the next maintenance pass tries again")


class QuietMaintenance(logging.Filter):
    """Drops RQ's "cleaning registries" lines: RQ writes them at INFO on every maintenance pass
    (every 5 s, every second in the tests: 1,311 lines in 35 minutes) whether or not the pass did
    anything. PreloadWorker.clean_registries logs what a pass changed instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        return not ("cleaning" in message and "registries" in message)


QUIET_MAINTENANCE = QuietMaintenance()


def maintenance_state(queues) -> dict[str, tuple[set[str], int]]:
    """Per queue: the started jobs whose heartbeat expired (what the pass hands on: retried or
    failed) and how many workers the queue's registry lists (the pass removes dead ones)."""
    from rq import worker_registration
    from rq.registry import StartedJobRegistry

    state = {}
    for queue in queues:
        started = StartedJobRegistry(queue.name, connection=queue.connection)
        workers = len(worker_registration.get_keys(queue))
        state[queue.name] = (set(started.get_expired_job_ids()), workers)
    return state


def log_maintenance(before: dict, queues) -> None:
    """One line per queue where the pass changed something; a quiet pass writes nothing."""
    from rq import worker_registration
    from rq.registry import StartedJobRegistry

    for queue in queues:
        expired, workers = before.get(queue.name, (set(), 0))
        started = StartedJobRegistry(queue.name, connection=queue.connection)
        moved = sorted(j for j in expired if j not in started)
        dead = workers - len(worker_registration.get_keys(queue))
        if moved or dead > 0:
            log.info(
                "maintenance of queue %s: %d abandoned job(s) handed on (retried or failed: %s), "
                "%d dead worker(s) removed from the registry",
                queue.name,
                len(moved),
                ", ".join(moved[:5]) or "none",
                max(0, dead),
            )


WARM_ENV = "PERSONABOARD_WARM_ENGINES"
# How long a running job's heartbeat outlives its worker: after that a dead worker's job is retried.
# RQ's 60 s unless set (the tests shorten it, tests/conftest.py).
HEARTBEAT_GRACE_ENV = "PERSONABOARD_JOB_HEARTBEAT_GRACE_S"
RQ_HEARTBEAT_GRACE_S = 60


def keeps_engines_warm() -> bool:
    """Whether this worker runs jobs in its own process, keeping loaded engines (and vLLM's prefix
    cache) for the next job: on by default for vLLM workers (a CUDA engine cannot be handed to a
    forked child anyway, and a load costs minutes), off for CPU workers, which keep a forked
    work-horse per job so that a crashing job cannot take the worker with it."""
    default = "1" if os.environ.get("PERSONABOARD_BACKEND", "transformers") == "vllm" else "0"
    return os.environ.get(WARM_ENV, default) == "1"


def _die_with_worker(worker_pid: int) -> None:
    """In every child the worker forks (its scheduler, its work-horses): SIGKILL when the worker dies.

    Without this a worker killed on its own leaves its RQ scheduler running (and enqueueing) with no
    worker, and the supervisor's replacement starts a second one. PR_SET_PDEATHSIG is tied to the
    forking thread, which is the worker's main thread for both kinds of child.
    """
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 == PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: nothing to do
        return
    if os.getppid() != worker_pid:  # the worker died before the prctl: go now
        os._exit(1)


def readable_worker_name() -> str:
    """`host-pid-xxxx` instead of RQ's 32-hex uuid, so the status line and /api/v1/workers say which
    machine and process a worker is. The random suffix keeps a restarted container (same hostname,
    same pid) from clashing with its dead predecessor's key while that key has not expired."""
    host = (
        "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname())[:40] or "host"
    )
    return f"{host}-{os.getpid()}-{secrets.token_hex(2)}"


# How long one worker's lock on a queue's maintenance pass holds if that worker dies inside it (the
# pass itself takes milliseconds): then another worker cleans, and retries the dead worker's job.
MAINTENANCE_LOCK_S = 30


class PreloadWorker(Worker):
    """Forks a work-horse per job, or (keeps_engines_warm) runs jobs in its own process, as RQ's
    SimpleWorker does, with the engine pool (evaluator/backends/pool.py) living as long as it. A
    worker killed mid-job is then restarted by the supervisor and its job resumes from its checkpoint.
    Also this machine's outbox publisher between jobs: RQ runs maintenance every few seconds while idle."""

    def __init__(self, queues, name: str | None = None, *args, **kwargs):
        # RQ builds Worker objects for workers it only reads back (Worker.all, find_by_key) with their
        # name; only a worker starting up without --name gets a new one.
        super().__init__(queues, name or readable_worker_name(), *args, **kwargs)
        self.log.addFilter(QUIET_MAINTENANCE)  # (once: a logger keeps one copy of a filter)

    def execute_job(self, job, queue):
        if keeps_engines_warm():
            # SimpleWorker's way on this worker (not one): the job runs in this process
            return SimpleWorker.execute_job(self, job, queue)  # type: ignore[arg-type]
        try:
            return super().execute_job(job, queue)
        finally:
            if needs_torch(job):  # between jobs, before the next fork: later horses inherit it
                preload_model_code()

    def get_heartbeat_ttl(self, job, working_time: float = 0.0) -> int:
        if keeps_engines_warm():  # no horse monitor sends heartbeats during the job
            return SimpleWorker.get_heartbeat_ttl(self, job, working_time)  # type: ignore[arg-type]
        # RQ's TTL is the monitoring interval + 60 s: a job whose worker died is retried after that
        grace = int(os.environ.get(HEARTBEAT_GRACE_ENV) or RQ_HEARTBEAT_GRACE_S)
        return super().get_heartbeat_ttl(job, working_time) - RQ_HEARTBEAT_GRACE_S + grace

    def work(self, *args, **kwargs):
        threads = set_compute_threads()
        log.info("worker %s: %d compute thread(s)", self.name, threads)
        add_phase_reporter(report_job_phase)  # forked work-horses inherit it
        preload()
        if sys.platform.startswith("linux"):
            worker_pid = os.getpid()
            os.register_at_fork(after_in_child=lambda: _die_with_worker(worker_pid))
        return super().work(*args, **kwargs)

    def clean_registries(self):
        """RQ's pass, logged only when it changed something (QuietMaintenance), under a lock that
        lapses after MAINTENANCE_LOCK_S (RQ's own lasts 899 s)."""
        try:
            before = maintenance_state(self.queues)
        except Exception:  # noqa: BLE001 - a failed read only costs the log line
            before = {}
        self._clean_registries_briefly_locked()
        try:
            log_maintenance(before, self.queues)
        except Exception:  # noqa: BLE001 - maintenance must never stop the worker
            log.debug("reading what maintenance changed failed", exc_info=True)

    def _clean_registries_briefly_locked(self) -> None:
        """RQ's Worker.clean_registries, but its lock (one worker cleans a queue at a time) expires
        after MAINTENANCE_LOCK_S: RQ's expires after 899 s, so a worker SIGKILLed inside the pass
        kept every other worker from cleaning for 15 minutes, and the job it was running (abandoned
        in the started registry) from being retried (seen under load in tests/test_faults.py)."""
        from rq import worker_registration
        from rq.registry import clean_registries
        from rq.utils import now

        for queue in self.queues:
            if not self.connection.set(
                queue.registry_cleaning_key, 1, nx=True, ex=MAINTENANCE_LOCK_S
            ):
                continue
            try:
                clean_registries(queue, self._exc_handlers)
                worker_registration.clean_worker_registry(queue)
                queue.intermediate_queue.cleanup(self, queue)
            finally:
                queue.release_maintenance_lock()
        self.last_cleaned_at = now()  # type: ignore[assignment]

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        drain_outbox()
