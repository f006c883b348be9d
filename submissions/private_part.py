"""The private part of a hidden split: kept here, released once, when the operator names a release.

As on Kaggle, a hidden split with `split.private_fraction` in its manifest is divided
(evaluator/splits.py private_item_ids: per tier, by a salted hash): live results, and the Ladder's
bit per upload, are of the public part only. The scorer's primary metric on the private part of
every released result is kept in the submissions database, never published, until the operator
names a release (`personaboard release NAME`). Then every kept result not released before gets its
private score, rounded to the private part's own step, as the tier column `part/private` beside
`part/public` on the board (the board ranks by it with tier=private), once: a result's private
score is released in one release and never again, so probing later releases teaches nothing.

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

from evaluator.release import MIN_ITEMS, _rounded, noise_step
from evaluator.splits import PRIVATE_PART, PRIVATE_TIER_GROUP, PUBLIC_PART
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


def keep(records: SubmissionStore, submission_id: str, private: dict[str, Any]) -> None:
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


def with_private_score(record: dict[str, Any], metric: str, stats: dict, n: int) -> dict:
    """The published record with the private part's score beside the public part's, as tiers."""
    released = copy.deepcopy(record)
    metrics = released["metrics"]
    step = noise_step(n, metric)
    metrics["tiers"][PRIVATE_TIER_GROUP] = {
        PUBLIC_PART: {metric: metrics["total"][metric]},
        PRIVATE_PART: {metric: _rounded(stats, step)},
    }
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
        if row["n_items"] < MIN_ITEMS:
            reason = f"private part of {row['n_items']} items (< {MIN_ITEMS}): not released"
            log.warning("%s: %s", sid, reason)
            continue
        updated = with_private_score(
            record, row["metric"], json.loads(row["stats"]), row["n_items"]
        )
        store.withdraw(sid, f"Re-rank result {sid} on the private part ({release_name})")
        store.publish(updated)
        with closing(_connect(records)) as db, db:
            db.execute(
                "UPDATE private_scores SET released_in = ? WHERE submission_id = ?",
                (release_name, sid),
            )
        done.append(sid)
    return done
