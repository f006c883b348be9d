"""Operator actions on submissions, each recorded in the audit log (who, when, what, why).

    hide     the row leaves every table, download and version published from now on (reversible)
    unhide   it comes back (republished from the record withdrawn when it was hidden)
    flag     a public note on the row (e.g. "predictions look copied from a public dump"); empty reason clears it
    delete   hidden for good: withdrawn, its upload deleted, its queued/running job cancelled
    cancel   stop a queued or running job
    rerun    evaluate again (its published result is withdrawn until the new run publishes)

The submissions database is the truth and the results store follows it: the database is changed
first, then a withdrawal goes through the outbox (in order with the result's own publish); one
lost to a crash in between is redone by `withdraw_stale` (the app's reconcile loop).

A result whose submission is hidden while its job runs is never published: the visibility is
mirrored in Redis (`personaboard:visibility`, for workers on other machines, which have no
database), and every outbox asks right before a result goes out (`withhold`, submissions/jobs.py);
a withheld record is kept in the audit log ("withhold"), where unhide finds it. What remains: a hide
that lands after that last check but before the commit (a commit's time): the result is published,
and withdrawn at once by the job (it checks again after publishing) and by the web node when it
folds the result's revision (submissions/remote.py), else by the reconcile loop.
"""

from __future__ import annotations

import logging
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from redis.typing import EncodableT

from leaderboard.outbox import Outbox, OutboxPayload
from leaderboard.result_record import RecordData
from leaderboard.store import StoreError
from submissions import queue
from submissions.records import ACTIVE_STATES, AuditEntry, SubmissionStore

log = logging.getLogger(__name__)

ACTIONS = ("hide", "unhide", "flag", "delete", "cancel", "rerun")
MAX_REASON = 1000
VISIBILITY = "personaboard:visibility"  # Redis hash: submission id -> public | hidden | deleted
WITHHELD = (
    "computed while the submission was hidden: kept here, not published (unhide publishes it)"
)


class ActionError(ValueError):
    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.field = status, field


class ActionEntry(AuditEntry, total=False):
    """What an operator action returns: its audit entry, and the results revision it published
    (None: nothing changed there, or the store is down and the outbox publishes it later)."""

    revision: str | None


def apply(
    action: str,
    submission_id: str,
    *,
    actor: str,
    reason: str,
    records: SubmissionStore,
    outbox: Outbox,
    redis: Redis | None,
) -> ActionEntry:
    """Do one operator action; returns its audit entry, with the results `revision` it published
    (None if nothing changed there or the store is down: the outbox publishes it later, in order).
    Raises ActionError (404/409/422)."""
    from submissions.names import InvalidName, normalise_text

    if action not in ACTIONS:
        raise ActionError(422, f"unknown action {action!r}; one of {', '.join(ACTIONS)}", "action")
    try:
        reason = normalise_text(reason, "reason", MAX_REASON, multiline=True)
    except InvalidName as exc:
        raise ActionError(422, str(exc), "reason") from None
    if not reason and action not in ("unhide", "flag"):
        raise ActionError(
            422, f"{action} needs a reason (it is recorded in the row's history)", "reason"
        )
    submission = records.get(submission_id)
    if submission is None:
        raise ActionError(404, f"no submission with id {submission_id!r}", "submission_id")
    if submission.visibility == "deleted" and action != "flag":
        raise ActionError(409, f"submission {submission_id} was deleted", "submission_id")

    def record(details: dict | None = None, **changes: Any) -> ActionEntry:
        entry: ActionEntry = {
            **records.record_action(submission_id, actor, action, reason, details, **changes)
        }
        return entry

    if action == "hide":
        if submission.visibility == "hidden":
            raise ActionError(409, f"submission {submission_id} is hidden already", "submission_id")
        withdrawn = _current_record(outbox, submission_id)
        entry = record({"record": withdrawn} if withdrawn else None, visibility="hidden")
        share_visibility(
            redis, submission_id, "hidden"
        )  # before the withdrawal: a running job checks it
        entry["revision"] = withdraw_result(outbox, submission_id, "hidden")
        return entry
    if action == "unhide":
        if submission.visibility != "hidden":
            raise ActionError(409, f"submission {submission_id} is not hidden", "submission_id")
        entry = record(
            visibility="public", request_status=None
        )  # its requests/ record goes out again
        share_visibility(redis, submission_id, "public")
        withdrawn, latest_run = _last_withdrawn_record(records, submission_id)
        # a record withheld by the latest run goes out even if its "finished" is still on its way (a
        # remote worker's event); an older record only once no run is under way
        if withdrawn is not None and (submission.state == "finished" or latest_run):
            entry["revision"] = outbox.publish_now(
                "result", {"record": withdrawn, "request": None}
            )[1]
        return entry
    if action == "flag":
        return record(flag=reason or None)
    if action == "delete":
        _stop_job(redis, submission_id, submission.state)
        changes: dict[str, Any] = {"visibility": "deleted"}
        if submission.state in ACTIVE_STATES:
            changes["state"] = "cancelled"
        entry = record(**changes)
        share_visibility(redis, submission_id, "deleted")
        entry["revision"] = withdraw_result(outbox, submission_id, "deleted")
        if submission.file_path:
            from pathlib import Path

            Path(submission.file_path).unlink(missing_ok=True)
        return entry
    if action == "cancel":
        if submission.state not in ACTIVE_STATES:
            raise ActionError(
                409,
                f"submission {submission_id} is {submission.state}: only a queued or running "
                "job can be cancelled",
                "submission_id",
            )
        entry = record(state="cancelled", error=f"cancelled by an operator: {reason}")
        _stop_job(redis, submission_id, submission.state)
        return entry
    # rerun
    if submission.state in ACTIVE_STATES:
        raise ActionError(
            409, f"submission {submission_id} is {submission.state} already", "submission_id"
        )
    entry = record(
        state="queued",
        error=None,
        result=None,
        revision=None,
        progress_done=0,
        started_at=None,
        finished_at=None,
    )
    entry["revision"] = withdraw_result(outbox, submission_id, "rerun")
    rerun = records.get(submission_id)
    if redis is not None and rerun is not None:
        try:
            queue.enqueue(redis, rerun)  # routed by its hardware, carrying its snapshot
        except (
            RedisError
        ) as exc:  # recorded as queued: the reconciler enqueues it when Redis answers
            log.warning("rerun of %s recorded, not queued yet: %s", submission_id, exc)
    return entry


def withdraw_result(outbox: Outbox, submission_id: str, why: str) -> str | None:
    """Through the outbox, so a withdrawal is never overtaken by the result's own pending publish."""
    payload: OutboxPayload = {
        "submission_id": submission_id,
        "message": f"Withdraw result {submission_id} ({why} by an operator)",
    }
    return outbox.publish_now("withdraw", payload)[1]


def _current_record(outbox: Outbox, submission_id: str) -> RecordData | None:
    """The published record (kept in the audit entry, so unhide can publish it again)."""
    try:
        return outbox.store.current_record(submission_id)
    except StoreError as exc:  # the Hub is down: hide still works; unhide then needs a rerun
        log.warning("could not read the published record of %s: %s", submission_id, exc)
        return None


def _last_withdrawn_record(
    records: SubmissionStore, submission_id: str
) -> tuple[RecordData | None, bool]:
    """The newest record taken off (hide) or kept back (withhold), and whether it is the latest run's
    own result (withheld after the last rerun)."""
    rerun_since = False
    for entry in reversed(records.history(submission_id)):
        if (entry.get("details") or {}).get("record"):
            return entry["details"]["record"], entry["action"] == "withhold" and not rerun_since
        rerun_since = rerun_since or entry["action"] == "rerun"
    return None, False


def _stop_job(redis: Redis | None, submission_id: str, state: str) -> None:
    """Take the job off the queue, or stop it where it runs (the worker's horse is killed)."""
    if redis is None or state not in ACTIVE_STATES:
        return
    from rq.command import send_stop_job_command
    from rq.exceptions import InvalidJobOperation, NoSuchJobError
    from rq.job import Job

    job_id = queue.job_id_for(submission_id)
    try:
        job = Job.fetch(job_id, connection=redis)
        if job.get_status() == "started":
            send_stop_job_command(redis, job_id)
        else:
            job.cancel()
    except (NoSuchJobError, InvalidJobOperation):
        pass  # gone already; the record's state stops any later delivery (start_attempt refuses it)
    except RedisError as exc:
        log.warning(
            "could not stop job %s (%s); its record is cancelled, so it will not run", job_id, exc
        )


def withdraw_stale(records: SubmissionStore, outbox: Outbox) -> list[str]:
    """Withdraw any hidden or deleted submission still in the current table (a crash between the
    database change and the outbox entry)."""
    done = []
    for submission_id in records.withdrawn_ids():
        if outbox.store.current_record(submission_id) is not None:
            withdraw_result(outbox, submission_id, "hidden")
            done.append(submission_id)
    return done


# -- visibility for workers without the database (submissions/remote.py), and withheld results -------


def share_visibility(redis: Redis | None, submission_id: str, visibility: str) -> None:
    """Best effort: if Redis cannot take it now, `mirror_visibility` (the reconcile loop) does later."""
    if redis is None:
        return
    try:
        redis.hset(VISIBILITY, submission_id, visibility)
    except RedisError as exc:
        log.warning(
            "could not share %s's visibility (%s) with workers: %s", submission_id, visibility, exc
        )


def shared_visibility(redis: Redis, submission_id: str) -> str | None:
    """What the web node last said (None: never hidden). Raises RedisError."""
    value = redis.hget(VISIBILITY, submission_id)
    return value.decode() if isinstance(value, bytes) else value


def mirror_visibility(redis: Redis, records: SubmissionStore) -> None:
    """Make Redis say what the database says: every hidden or deleted submission, and "public" for
    any Redis still holds as hidden (a lost write, a Redis restart). Raises RedisError."""
    withdrawn = set(records.withdrawn_ids())
    shown = {
        k.decode() if isinstance(k, bytes) else k: v for k, v in redis.hgetall(VISIBILITY).items()
    }
    changes: dict[EncodableT, str] = {
        sid: "hidden"
        for sid in withdrawn
        if sid not in shown or shown[sid] in (b"public", "public")
    }
    changes.update(
        {
            sid: "public"
            for sid, value in shown.items()
            if sid not in withdrawn and value not in (b"public", "public")
        }
    )
    if changes:
        redis.hset(VISIBILITY, mapping=changes)


def keep_withheld(
    records: SubmissionStore, submission_id: str, record: RecordData, actor: str
) -> bool:
    """A result not published because its submission was hidden: kept in the audit log, where unhide
    finds it. Returns False if the submission is public again by now (an unhide that came before
    this entry could find it): then the caller publishes it after all."""
    records.record_action(submission_id, actor, "withhold", WITHHELD, {"record": record})
    current = records.get(submission_id)
    return current is not None and current.visibility != "public"
