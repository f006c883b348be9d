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

    assert sorted(reconcile(conn, store)) == ["missing", "stranded"]
    assert sorted(queue.get_job_ids()) == sorted(
        job_id_for(s) for s in ("waiting", "stranded", "missing")
    )
    assert reconcile(conn, store) == []  # nothing left to repair: every job is in its queue once
    assert len(queue.get_job_ids()) == 3
