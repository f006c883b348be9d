"""The reconciler re-enqueues what Redis lost: a missing job, and a job left "queued" in no queue
(Redis killed between writing the job and pushing its id). A real redis-server, no worker."""

from __future__ import annotations

import redis
from rq import Queue

from submissions.queue import enqueue, job_id_for, reconcile
from submissions.records import Submission, SubmissionStore


def submission(sid: str) -> Submission:
    return Submission(
        id=sid,
        created_at="2026-11-23T00:00:00+00:00",
        kind="predictions",
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name=f"model {sid}",
        state="queued",
    )


def test_missing_and_stranded_jobs_are_requeued_and_queued_ones_left_alone(tmp_path, redis_server):
    conn = redis.Redis.from_url(redis_server)
    store = SubmissionStore(tmp_path / "submissions.sqlite3")
    for sid in ("waiting", "stranded", "missing"):
        store.add(submission(sid))
    jobs = {sid: enqueue(conn, store.get(sid)) for sid in ("waiting", "stranded")}
    queue = Queue(jobs["stranded"].origin, connection=conn)
    conn.lrem(
        queue.key, 0, job_id_for("stranded")
    )  # the push Redis lost; the job hash says "queued"
    assert job_id_for("stranded") not in queue.get_job_ids()

    assert sorted(reconcile(conn, store, stranded_after_s=0.5)) == ["missing", "stranded"]
    assert sorted(queue.get_job_ids()) == sorted(
        job_id_for(s) for s in ("waiting", "stranded", "missing")
    )
    assert reconcile(conn, store) == []  # nothing left to repair: every job is in its queue once
    assert len(queue.get_job_ids()) == 3


def test_a_job_a_worker_is_taking_is_not_enqueued_again(tmp_path, redis_server):
    """A worker listening to several queues pops the id (BLPOP: in no list) and registers the
    execution a moment later; on a busy machine the reconciler saw that moment as "stranded" and
    enqueued the job again, so two workers ran it. A real worker takes it here while reconcile waits.
    """
    import threading

    from rq import Worker

    conn = redis.Redis.from_url(redis_server)
    store = SubmissionStore(tmp_path / "submissions.sqlite3")
    store.add(submission("taken"))
    job = enqueue(conn, store.get("taken"))
    queue = Queue(job.origin, connection=conn)
    conn.lrem(queue.key, 0, job.id)  # popped by a worker that has not registered it yet

    answer: list[list[str]] = []
    reconciling = threading.Thread(
        target=lambda: answer.append(reconcile(conn, store, stranded_after_s=60))
    )
    reconciling.start()
    worker = Worker([queue], connection=conn)
    worker.prepare_execution(job)  # what the worker does next: the job is in the started registry
    reconciling.join(timeout=120)
    assert answer == [[]], answer
    assert queue.get_job_ids() == []  # not queued a second time


def test_a_stranded_job_waits_out_the_grace_then_is_requeued(tmp_path, redis_server):
    import time

    conn = redis.Redis.from_url(redis_server)
    store = SubmissionStore(tmp_path / "submissions.sqlite3")
    store.add(submission("stranded"))
    job = enqueue(conn, store.get("stranded"))
    queue = Queue(job.origin, connection=conn)
    conn.lrem(queue.key, 0, job.id)
    started = time.monotonic()
    assert reconcile(conn, store, stranded_after_s=1.0) == ["stranded"]
    assert time.monotonic() - started >= 1.0
    assert queue.get_job_ids() == [job.id]
