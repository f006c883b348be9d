"""A result whose submission an operator hid while its job ran is never published.

Real parts: a redis-server, the local git results store, the SQLite records, the outbox folders; the
web node's and a remote worker's outboxes are two folders publishing into one store, as on two
machines. (tests/test_remote_worker.py runs the same through a worker process and the Hub server.)
"""

from __future__ import annotations

import redis
from test_store import make_record

from leaderboard.outbox import Outbox
from leaderboard.store import LocalDatasetStore
from submissions import moderation
from submissions.jobs import record_published, withhold_hidden, withhold_hidden_remote
from submissions.records import Submission, SubmissionStore
from submissions.remote import EVENTS, EventFolder, RemoteLedger, send_event


def submission(sid: str) -> Submission:
    return Submission(
        id=sid,
        created_at="2026-11-23T00:00:00+00:00",
        kind="predictions",
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name=f"model-{sid}",
        state="running",
    )


class Node:
    """The web node: records, Redis, the store, its outbox (as Services wires them)."""

    def __init__(self, tmp_path, redis_url: str, *sids: str):
        self.redis = redis.Redis.from_url(redis_url)
        self.records = SubmissionStore(tmp_path / "submissions.sqlite3")
        self.store = LocalDatasetStore(tmp_path / "results")
        self.outbox = Outbox(
            tmp_path / "web-outbox",
            self.store,
            record_published(self.records.update_revision),
            withhold_hidden(self.records),
        )
        for sid in sids:
            self.records.add(submission(sid))

    def act(self, action: str, sid: str) -> dict:
        return moderation.apply(
            action,
            sid,
            actor="ops",
            reason="test" if action != "unhide" else "",
            records=self.records,
            outbox=self.outbox,
            redis=self.redis,
        )

    def ever_published(self, sid: str) -> bool:
        return any(v.message.startswith(f"Add result {sid} ") for v in self.store.versions())


def test_hidden_before_the_publish_is_withheld_and_unhide_publishes_it(tmp_path, redis_server):
    node = Node(tmp_path, redis_server, "h1")
    node.outbox.put(
        "result", {"record": make_record("h1", 0.5), "request": None}
    )  # the job's, not out yet
    node.act("hide", "h1")  # the hide's withdrawal drains the outbox: the result entry first
    assert node.outbox.backlog() == 0
    assert node.store.current_record("h1") is None and not node.ever_published("h1")
    assert [e["action"] for e in node.records.history("h1")] == ["hide", "withhold"]
    assert moderation.shared_visibility(node.redis, "h1") == "hidden"

    node.records.update("h1", state="finished")  # the job goes on to finish
    unhidden = node.act("unhide", "h1")  # from the withheld record
    assert unhidden["revision"] and node.store.current_record("h1")["submission_id"] == "h1"
    assert moderation.shared_visibility(node.redis, "h1") == "public"

    # hidden again, then rerun: while the rerun runs, unhide does not bring back the older result
    node.act("hide", "h1")
    node.act("rerun", "h1")
    node.records.update("h1", state="running")
    assert "revision" not in node.act("unhide", "h1") and node.store.current_record("h1") is None


def test_a_remote_worker_withholds_and_the_web_node_keeps_the_record(tmp_path, redis_server):
    node = Node(tmp_path, redis_server, "r1")
    worker_outbox = Outbox(
        tmp_path / "worker-outbox", node.store, withhold=withhold_hidden_remote(node.redis)
    )
    ledger = RemoteLedger(
        node.redis,
        {"id": "r1", **{k: v for k, v in submission("r1").__dict__.items() if k != "id"}},
    )
    assert ledger.get("r1").visibility == "public"  # the snapshot, at enqueue
    node.act("hide", "r1")
    assert ledger.get("r1").visibility == "hidden"  # what the web node said since, through Redis

    worker_outbox.put("result", {"record": make_record("r1", 0.5), "request": None})
    assert worker_outbox.drain() == 0 and worker_outbox.backlog() == 0  # withheld, not published
    assert not node.ever_published("r1") and node.redis.xlen(EVENTS) == 1
    EventFolder(node.redis, node.records, outbox=node.outbox).fold(block_ms=10)
    kept = node.records.history("r1")[-1]
    assert kept["action"] == "withhold" and kept["actor"].startswith("worker:")
    assert kept["details"]["record"]["submission_id"] == "r1"
    # unhidden before the worker's "finished" event is folded (still "running" here): out from the kept record
    assert node.records.get("r1").state == "running"
    assert node.act("unhide", "r1")["revision"] and node.store.current_record("r1") is not None

    # Redis unreachable on the worker: the result waits in its outbox, never published unchecked
    dead = Outbox(
        tmp_path / "worker-outbox-2",
        node.store,
        withhold=withhold_hidden_remote(redis.Redis(port=1, socket_connect_timeout=0.5)),
    )
    dead.put("result", {"record": make_record("r2", 0.5), "request": None})
    assert dead.drain() == 0 and dead.backlog() == 1 and not node.ever_published("r2")


def test_hidden_after_the_workers_check_is_withdrawn_when_the_web_node_folds_the_revision(
    tmp_path, redis_server
):
    node = Node(tmp_path, redis_server, "race", "other")
    node.act("hide", "race")  # nothing published yet: the hide withdraws nothing
    # the worker had checked before the hide; its commit lands after it, then it reports the revision
    revision = node.store.publish(make_record("race", 0.5))
    node.store.publish(make_record("other", 0.5))
    send_event(node.redis, "race", {"revision": revision})
    send_event(node.redis, "other", {"revision": node.store.head_revision()})
    assert node.store.current_record("race") is not None
    assert EventFolder(node.redis, node.records, outbox=node.outbox).fold(block_ms=10) == 2
    assert (
        node.store.current_record("race") is None
    )  # out at once, not at the next reconcile (30 s)
    assert node.store.current_record("other") is not None  # a public one stays
    assert node.records.get("race").revision == revision


def test_reconcile_mirrors_visibility_into_redis(tmp_path, redis_server):
    node = Node(tmp_path, redis_server, "a", "b", "c")
    node.act("hide", "a")
    node.act("delete", "b")
    node.act("hide", "c")
    node.records.update("c", visibility="public")  # unhidden while Redis was away
    node.redis.hdel(moderation.VISIBILITY, "a")  # a write Redis lost
    moderation.mirror_visibility(node.redis, node.records)
    assert [moderation.shared_visibility(node.redis, s) for s in ("a", "b", "c")] == [
        "hidden",
        "deleted",
        "public",
    ]
