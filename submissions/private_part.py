"""The private part of a hidden split: kept here, released once, when the operator names a release.

As on Kaggle, a hidden split with `split.private_fraction` in its manifest is divided
(evaluator/splits.py private_item_ids: per tier, by a salted hash): live results, and the Ladder's
bit per upload, are of the public part only. The scorer's primary metric on the private part of
every released result is kept in the submissions database, never published, until the operator
names a release (`personaboard release NAME`). Then every kept result not released before gets its
private score (value and interval, each rounded to the private part's own step with its own dither:
evaluator/release.py release_private) as its total, the number every view ranks it by from that
revision on, with the live public number kept beside it as the tier column `part/public`
(`part/private` repeats the total); `metrics.release.part` says "private" and names the
release. Once: a result's private score is released in one release and never again, so probing
later releases teaches nothing.

A result decided by a remote worker (submissions/remote.py) is kept here too: the worker sends its
private score to the web node as a Redis event (RemoteLedger.keep_private), which the web node's
EventFolder keeps with `keep` and then deletes from the stream.
"""

from __future__ import annotations

import copy
import json
import logging
from contextlib import closing
from typing import Any

from evaluator import release
from evaluator.registry import get_task
from evaluator.scoring import PrivatePart
from evaluator.splits import PRIVATE_PART, PRIVATE_TIER_GROUP, PUBLIC_PART
from evaluator.statistics import MetricStats
from leaderboard.result_record import RecordData
from leaderboard.store import ResultsStore
from submissions.records import SubmissionStore, utc_now

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS private_scores (
    submission_id TEXT PRIMARY KEY,
    metric        TEXT NOT NULL,
    stats         TEXT NOT NULL,  -- the exact stats block of the primary metric on the private part
    n_items       INTEGER NOT NULL,
    kept_at       TEXT NOT NULL,
    released_in   TEXT            -- the release that published it (NULL: not yet)
);
"""


def _connect(records: SubmissionStore):
    db = records._connect()
    db.executescript(SCHEMA)
    return db


def keep(records: SubmissionStore, submission_id: str, private: PrivatePart) -> None:
    """Keep a released result's private-part score (the scorer's `private` block)."""
    metric = private["metric"]
    stats = private["total"].get(metric)
    if stats is None:
        return
    with closing(_connect(records)) as db, db:
        db.execute(
            "INSERT OR IGNORE INTO private_scores VALUES (?, ?, ?, ?, ?, NULL)",
            (submission_id, metric, json.dumps(stats), private["n_items"], utc_now()),
        )


def pending(records: SubmissionStore) -> list[dict[str, Any]]:
    with closing(_connect(records)) as db:
        rows = db.execute(
            "SELECT * FROM private_scores WHERE released_in IS NULL ORDER BY kept_at"
        ).fetchall()
    return [dict(row) for row in rows]


def with_private_score(record: RecordData, private: MetricStats, release_name: str) -> RecordData:
    """The published record ranked by its private part: the private score as the total, the live
    public number beside it as the tier `part/public`. `private`: the stats block released
    (release.release_private)."""
    released = copy.deepcopy(record)
    metrics = released["metrics"]
    metric = metrics.get("metric") or next(iter(metrics["total"]))  # None: the first of total
    public = metrics["total"].get(metric)
    metrics["total"] = {metric: private}
    metrics["tiers"] = {
        PRIVATE_TIER_GROUP: {
            **({PUBLIC_PART: {metric: public}} if public is not None else {}),
            PRIVATE_PART: {metric: private},
        }
    }
    metrics["release"] = {
        **(metrics.get("release") or {}),
        "part": release.PRIVATE_RANKING,
        "release_name": release_name,
        "step": private["step"],
        "interval": "the private part's 95% interval, bounds rounded to its step",
    }
    released["n_items"] = private.get("n") or released.get("n_items", 0)
    return released


def release_private_part(
    records: SubmissionStore, store: ResultsStore, release_name: str
) -> list[str]:
    """Publish the private score of every kept, still published result not released before;
    returns their submission ids. Called by `personaboard release` before it names the version."""
    done = []
    for row in pending(records):
        sid = row["submission_id"]
        submission = records.get(sid)
        record = store.current_record(sid)
        if submission is None or submission.visibility != "public" or record is None:
            continue  # hidden, deleted or withdrawn: its private score stays here
        if row["n_items"] < release.MIN_ITEMS:
            reason = f"private part of {row['n_items']} items (< {release.MIN_ITEMS}): not released"
            log.warning("%s: %s", sid, reason)
            continue
        key = submission.file_sha256 or sid
        secret = release.installation_key(get_task(record["suite"], record["task"]))
        offsets = tuple(
            release.dither(secret, key, f"private/{field}") for field in ("value", "low", "high")
        )
        private = release.release_private(
            json.loads(row["stats"]),
            row["metric"],
            row["n_items"],
            (offsets[0], offsets[1], offsets[2]),
        )
        updated = with_private_score(record, private, release_name)
        store.withdraw(sid, f"Re-rank result {sid} on the private part ({release_name})")
        store.publish(updated)
        with closing(_connect(records)) as db, db:
            db.execute(
                "UPDATE private_scores SET released_in = ? WHERE submission_id = ?",
                (release_name, sid),
            )
        done.append(sid)
    return done
