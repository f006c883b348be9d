"""Workers on other machines: what they share with the web node is Redis and the Hub, nothing else.

A remote worker (`personaboard worker`, PERSONABOARD_WORKER_REMOTE=1) never opens the web node's
SQLite file or folders. Its job reads the submission from the job itself (the snapshot `enqueue`
put there) and reports every change of state as an event on a Redis stream; the web node's
`EventFolder` reads the stream (a consumer group, so an event is applied even if the web node was
down when it was sent) and folds each event into its records, in order. Results go to the Hub
through the worker's own outbox; hidden splits come from the Hub at the commit the web node pinned
(`SplitPins`), installed on first use.

    personaboard:events          stream: {"id": submission id, "changes": JSON of column -> value}
                                 (or {"private_score": ...}: deleted once the web node kept it)
    personaboard:attempt:<id>    attempts counter (the web node's count is folded from events)
    personaboard:finished:<id>   set once a submission finished: a duplicate delivery does nothing
    personaboard:split-pins      hash: suite -> JSON {source, revision, secret}
    personaboard:ladder:decision:<id>            the Ladder's decision for a submission (hidden splits)
    personaboard:ladder:best:<submitter>|<scope> a submitter's best released value, every node's
    personaboard:visibility      hash: submission id -> public | hidden | deleted (submissions/moderation.py)

An operator can hide a submission while it runs elsewhere: the worker reads its visibility from
Redis right before its outbox publishes (submissions/jobs.py `withhold_hidden_remote`) and sends
the record to the web node instead (event "withheld_record", kept for unhide); a hide that comes
after that check is undone when the web node folds the result's revision.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

from redis import Redis
from redis.exceptions import RedisError, ResponseError

from leaderboard.outbox import Outbox
from submissions.moderation import keep_withheld, shared_visibility, withdraw_result
from submissions.records import Decide, Submission, SubmissionStore, utc_now

if TYPE_CHECKING:
    from evaluator.scoring import PrivatePart

log = logging.getLogger(__name__)

EVENTS = "personaboard:events"
EVENTS_MAX = 100_000  # the stream is trimmed to about this many events
GROUP = "web"
FINISHED_TTL_S = 30 * 24 * 3600
PINS = "personaboard:split-pins"
PRIVATE_SCORE = (
    "private_score"  # the event's key for a private-part score (RemoteLedger.keep_private)
)


class RemoteLedger:
    """The job's view of its submission on a remote worker: same calls as SubmissionStore's that a
    job makes (start_attempt, update, get), backed by the job snapshot and Redis events."""

    def __init__(self, redis: Redis, snapshot: dict[str, Any]):
        self.redis = redis
        known = {f.name for f in fields(Submission)}
        self.submission = Submission(**{k: v for k, v in snapshot.items() if k in known})

    def get(self, submission_id: str) -> Submission | None:
        if self.redis.exists(f"personaboard:finished:{submission_id}"):
            self.submission.state = "finished"
        if visibility := shared_visibility(
            self.redis, submission_id
        ):  # hidden by an operator since enqueue
            self.submission.visibility = visibility
        return self.submission if submission_id == self.submission.id else None

    def start_attempt(self, submission_id: str) -> Submission | None:
        if self.redis.exists(f"personaboard:finished:{submission_id}"):
            return None  # a duplicate delivery of a finished submission
        attempts = int(self.redis.incr(f"personaboard:attempt:{submission_id}"))
        self.redis.expire(f"personaboard:attempt:{submission_id}", FINISHED_TTL_S)
        started = utc_now()
        self.update(
            submission_id,
            state="running",
            attempts=max(attempts, self.submission.attempts + 1),
            started_at=started,
            error=None,
        )
        return self.submission

    def decide_release(
        self, submission_id: str, submitter: str, scope: str, decide: Decide
    ) -> tuple[bool, float | None]:
        """The Ladder step (evaluator/release.py) as SubmissionStore.decide_release, atomic in Redis
        (any machine's workers see each other's decisions); the decision is also sent to the web node,
        whose own records then count it too."""
        from redis.exceptions import WatchError

        decision_key = f"personaboard:ladder:decision:{submission_id}"
        while True:
            with self.redis.pipeline() as pipe:
                try:
                    pipe.watch(decision_key, ladder_best_key(submitter, scope))
                    found = pipe.get(decision_key)
                    if found is not None:  # a retried job gets its first decision back
                        pipe.unwatch()
                        decided = json.loads(found)
                        return decided["released"], decided["value"]
                    raw = pipe.get(ladder_best_key(submitter, scope))
                    best = float(raw) if raw is not None else None
                    released, value = decide(best)
                    shown = value if released else best
                    pipe.multi()
                    pipe.set(
                        decision_key,
                        json.dumps({"released": released, "value": shown}),
                        ex=FINISHED_TTL_S,
                    )
                    if released and value is not None:
                        pipe.set(
                            ladder_best_key(submitter, scope),
                            max(value, best) if best is not None else value,
                        )
                    pipe.execute()
                    break
                except WatchError:
                    continue  # another worker decided for this submitter meanwhile: decide again
        send_event(
            self.redis,
            submission_id,
            {
                "ladder": {
                    "submitter": submitter,
                    "scope": scope,
                    "released": released,
                    "value": shown,
                }
            },
        )
        return released, shown

    def keep_private(self, submission_id: str, private: PrivatePart) -> None:
        """A released result's private-part score (submissions/private_part.py), for the web node
        to keep: sent as its own event, which the web node deletes from the stream once kept.
        Never in a record, a log line or an error: Redis is as private as the workers, which hold
        the gold anyway (they score)."""
        send_event(self.redis, submission_id, {PRIVATE_SCORE: private})

    def update(self, submission_id: str, **changes: Any) -> None:
        for name, value in changes.items():
            setattr(self.submission, name, value)
        if changes.get("state") == "finished":
            self.redis.set(f"personaboard:finished:{submission_id}", "1", ex=FINISHED_TTL_S)
        send_event(self.redis, submission_id, changes)


def send_event(redis: Redis, submission_id: str, changes: dict[str, Any]) -> None:
    redis.xadd(
        EVENTS,
        {"id": submission_id, "changes": json.dumps(changes), "worker": socket.gethostname()},
        maxlen=EVENTS_MAX,
        approximate=True,
    )


class EventFolder:
    """The web node's side: apply the workers' events to the submission records, in order."""

    def __init__(
        self,
        redis: Redis,
        records: SubmissionStore,
        consumer: str | None = None,
        outbox: Outbox | None = None,
    ) -> None:
        self.redis = redis
        self.records = records
        self.consumer = consumer or f"web-{socket.gethostname()}"
        self.outbox = outbox  # the web node's: withdraws a result published for a hidden submission
        self._group_ready = False

    def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            self.redis.xgroup_create(EVENTS, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def fold(self, block_ms: int = 1000, count: int = 100) -> int:
        """Apply waiting events (first any this consumer took but never acknowledged); returns how many."""
        self._ensure_group()
        applied = 0
        for start in ("0", ">"):
            answer = cast(  # the RESP2 shape (the client's protocol): [[stream, [(id, fields)]]]
                "list[list[Any]] | None",
                self.redis.xreadgroup(
                    GROUP,
                    self.consumer,
                    {EVENTS: start},
                    count=count,
                    block=None if start == "0" else block_ms,
                ),
            )
            for _, entries in answer or []:
                for event_id, fields_ in entries:
                    kept_private = self._apply(fields_)
                    self.redis.xack(EVENTS, GROUP, event_id)
                    if kept_private:  # kept in the records now: no copy left in the stream
                        self.redis.xdel(EVENTS, event_id)
                    applied += 1
            if applied:
                break
        return applied

    def _apply(self, fields_: dict) -> bool:
        """Fold one event; True when it carried a private-part score (kept now)."""
        submission_id = _text(fields_.get(b"id") or fields_.get("id"))
        try:
            changes = json.loads(_text(fields_.get(b"changes") or fields_.get("changes")))
        except (TypeError, ValueError):
            log.error("malformed worker event for %s ignored", submission_id)
            return False
        current = self.records.get(submission_id)
        if PRIVATE_SCORE in changes:  # kept for a named release, as a web-node job's (jobs.py)
            from submissions.private_part import keep

            try:
                if current is not None:
                    keep(self.records, submission_id, changes[PRIVATE_SCORE])
            except (KeyError, TypeError, AttributeError, ValueError):  # not the scorer's block
                # dropped, not retried (it would stop every later event); the score stays unsaid
                log.error("malformed private score for %s dropped", submission_id)
            return True
        withheld = changes.pop("withheld_record", None)
        if (
            "ladder" in changes
        ):  # a remote worker's Ladder decision: the web node's own jobs count it too
            ladder = changes.pop("ladder")
            self.records.record_release(
                submission_id,
                ladder["submitter"],
                ladder["scope"],
                ladder["released"],
                ladder["value"],
            )
        if current is None:
            log.warning("worker event for unknown submission %s ignored", submission_id)
            return False
        if (
            withheld is not None
        ):  # not published: the submission was hidden when the worker's outbox asked
            worker = _text(fields_.get(b"worker") or fields_.get("worker") or "?")
            if (
                not keep_withheld(self.records, submission_id, withheld, f"worker:{worker}")
                and self.outbox is not None
            ):
                self.outbox.put(
                    "result", {"record": withheld, "request": None}
                )  # unhidden meanwhile: out after all
        if current.state in ("finished", "failed") and changes.get("state") in (
            "running",
            "queued",
        ):
            return False  # a late event from an attempt that was superseded; the outcome stands
        if current.state == "cancelled" and "state" in changes:
            return False  # an operator stopped it: a worker's late report does not bring it back
        allowed = {f.name for f in fields(Submission)} - {
            "id",
            "created_at",
            "kind",
            "file_path",
            "dedup_key",
        }
        changes = {k: v for k, v in changes.items() if k in allowed}
        if changes:
            self.records.update(submission_id, **changes)
        if (
            changes.get("revision")
            and self.outbox is not None
            and (now := self.records.get(submission_id)) is not None
            and now.visibility != "public"
        ):
            # published by a worker elsewhere after an operator hid it (after the worker's last check): out now
            withdraw_result(self.outbox, submission_id, "hidden")
        return False


def ladder_best_key(submitter: str, scope: str) -> str:
    return f"personaboard:ladder:best:{submitter}|{scope}"


def note_released(redis: Redis, submitter: str, scope: str, value: float) -> None:
    """A web-node job's released value, for remote workers' Ladder decisions (best effort: max)."""
    script = (
        "local v = tonumber(redis.call('GET', KEYS[1])) if v == nil or tonumber(ARGV[1]) > v then "
        "redis.call('SET', KEYS[1], ARGV[1]) end"
    )
    try:
        redis.eval(script, 1, ladder_best_key(submitter, scope), repr(float(value)))
    except RedisError as exc:
        log.warning("could not share a released value with remote workers: %s", exc)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# -- hidden splits: pinned by the web node, installed by remote workers on first use -----------------


class SplitPins:
    def __init__(self, redis: Redis):
        self.redis = redis

    def publish(self, suite: str, source: str, revision: str, secret: str) -> None:
        """The web node's installed Hub split, for workers elsewhere. The salt travels with it so a
        worker builds the very same split (same hash, same shuffles); Redis is as private as the
        workers, which see the gold anyway (they score)."""
        self.redis.hset(
            PINS, suite, json.dumps({"source": source, "revision": revision, "secret": secret})
        )

    def get(self, suite: str) -> dict | None:
        raw = self.redis.hget(PINS, suite)
        return json.loads(raw) if raw else None


def publish_installed_pins(redis: Redis) -> int:
    """Pin every split this node installed from the Hub (web node start, and after installs)."""
    from evaluator.registry import all_suites
    from evaluator.splits import SECRET_FILE, installed_dir, installed_info

    pins = SplitPins(redis)
    count = 0
    for suite in all_suites().values():
        info = installed_info(suite) if suite.split_spec.get("source") == "installed" else None
        if info and info.get("kind") == "hub":
            secret = (installed_dir(suite) / SECRET_FILE).read_text(encoding="utf-8").strip()
            try:
                pins.publish(suite.name, info["source"], info["revision"], secret)
                count += 1
            except RedisError as exc:
                log.warning("could not pin %s's split in Redis: %s", suite.name, exc)
    return count


def ensure_pinned_split(redis: Redis, suite_name: str) -> dict | None:
    """On a remote worker: install the suite's split from the Hub at the web node's pinned commit,
    unless this machine already has exactly that commit. Returns the install info, or None."""
    from evaluator.registry import get_suite
    from evaluator.split_install import install
    from evaluator.splits import installed_info

    suite = get_suite(suite_name)
    if suite.split_spec.get("source") != "installed":
        return None
    pin = SplitPins(redis).get(suite_name)
    if pin is None:
        return None  # nothing pinned: the job fails with the usual "not installed" message
    current = installed_info(suite)
    if current and current.get("kind") == "hub" and current.get("revision") == pin["revision"]:
        return None
    log.info(
        "installing %s's split from %s at %s (pinned by the web node)",
        suite_name,
        pin["source"],
        pin["revision"],
    )
    return install(suite, pin["source"], pin["revision"], secret=pin.get("secret"))


# -- workers, as the API and the UI show them ----------------------------------------------------------


def list_workers(redis: Redis) -> list[dict[str, Any]]:
    """RQ's registry of live workers (each re-registers on every heartbeat; a dead one expires)."""
    from rq import Worker

    shown = []
    for worker in Worker.all(connection=redis):
        job_id = worker.get_current_job_id()
        shown.append(
            {
                "name": worker.name,
                "queues": worker.queue_names(),
                "state": worker.get_state(),
                "last_heartbeat": worker.last_heartbeat.isoformat()
                if worker.last_heartbeat
                else None,
                "current_submission": job_id.removeprefix("submission-") if job_id else None,
                "successful_jobs": worker.successful_job_count,
                "failed_jobs": worker.failed_job_count,
            }
        )
    return sorted(shown, key=lambda w: w["name"])


def drain_worker(redis: Redis, name: str) -> bool:
    """Ask a worker to finish its current job and then stop (RQ's shutdown command: a warm stop)."""
    from rq import Worker
    from rq.command import send_shutdown_command

    if Worker.find_by_key(Worker.redis_worker_namespace_prefix + name, connection=redis) is None:
        return False
    send_shutdown_command(redis, name)
    return True
