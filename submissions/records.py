"""Durable submission records (SQLite in the data folder).

A submission is written here, with its file already on disk, before it is put on the queue:
Redis is the queue, this is the record. If Redis loses a job, `submissions.queue.reconcile`
finds the record still queued and enqueues it again.
"""
from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

STATES = ("queued", "running", "finished", "failed")
JSON_COLUMNS = ("result", "details")
ACTIVE_STATES = ("queued", "running")

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    id            TEXT PRIMARY KEY,
    created_at    TEXT NOT NULL,
    kind          TEXT NOT NULL,
    suite         TEXT NOT NULL,
    task          TEXT NOT NULL,
    setting       TEXT NOT NULL,
    model_name    TEXT NOT NULL,
    model_link    TEXT NOT NULL DEFAULT '',
    description   TEXT NOT NULL DEFAULT '',
    filename      TEXT NOT NULL DEFAULT '',
    file_path     TEXT NOT NULL DEFAULT '',
    file_sha256   TEXT NOT NULL DEFAULT '',
    file_bytes    INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    progress_done INTEGER NOT NULL DEFAULT 0,
    progress_total INTEGER NOT NULL DEFAULT 0,
    error         TEXT,
    result        TEXT,
    revision      TEXT,
    started_at    TEXT,
    finished_at   TEXT
);
CREATE INDEX IF NOT EXISTS submissions_state ON submissions(state);
-- The Ladder's memory on hidden splits (evaluator/release.py): one decision per submission, and
-- each submitter's best released primary score per suite/task/setting is the max over them.
CREATE TABLE IF NOT EXISTS releases (
    submission_id TEXT PRIMARY KEY,
    submitter     TEXT NOT NULL,
    scope         TEXT NOT NULL,
    released      INTEGER NOT NULL,
    value         REAL,
    decided_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS releases_best ON releases(submitter, scope, released);
"""

# Columns added after the first release: (name, declaration). Added in place on open, so a data
# folder from an older version keeps every submission it had.
ADDED_COLUMNS = [
    ("details", "TEXT"),  # JSON: for model runs, the resolved model, protocol and limit
    ("dedup_key", "TEXT"),  # same (model, revision, task, setting, protocol) => same key
    ("request_status", "TEXT"),  # the status last sent to the results dataset's requests/ record
]
# what requests/ records show: queued (running included: a commit per start would be noise), finished, failed
REQUEST_STATUS = {"queued": "queued", "running": "queued", "finished": "finished", "failed": "failed"}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_submission_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass
class Submission:
    id: str
    created_at: str
    kind: str  # "predictions" (an uploaded file) | "model" (the service runs the model)
    suite: str
    task: str
    setting: str
    model_name: str
    model_link: str = ""
    description: str = ""
    filename: str = ""
    file_path: str = ""
    file_sha256: str = ""
    file_bytes: int = 0
    state: str = "queued"
    attempts: int = 0
    progress_done: int = 0
    progress_total: int = 0
    error: str | None = None
    result: dict[str, Any] | None = field(default=None)
    revision: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    details: dict[str, Any] | None = None
    dedup_key: str | None = None
    request_status: str | None = None

    def request_record(self, status: str) -> dict[str, Any]:
        """The `requests/` record the results dataset keeps for every submission (as the Open LLM
        Leaderboard's requests dataset): public metadata and status only, never files, paths or errors."""
        details = self.details or {}
        model = details.get("model") or {}
        return {
            "submission_id": self.id, "submitted_at": self.created_at, "status": status, "kind": self.kind,
            "suite": self.suite, "task": self.task, "setting": self.setting,
            "model_name": self.model_name, "model_link": self.model_link,
            "model": {k: model.get(k) for k in ("source", "revision", "model_type", "parameters", "license")} if model else None,
            "protocol": details.get("protocol"), "limit": details.get("limit"),
            "predictions_sha256": self.file_sha256 or None,
        }

    def public(self) -> dict[str, Any]:
        """What the API and the UI show: no server-side paths."""
        data = asdict(self)
        data.pop("file_path")
        data.pop("dedup_key")
        data.pop("request_status")
        model = (data.get("details") or {}).get("model")
        if model:
            data["details"] = {**data["details"], "model": {k: v for k, v in model.items() if k != "path"}}
        return data


class SubmissionStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            present = {row["name"] for row in db.execute("PRAGMA table_info(submissions)")}
            for name, declaration in ADDED_COLUMNS:
                if name not in present:
                    db.execute(f"ALTER TABLE submissions ADD COLUMN {name} {declaration}")
            db.execute("CREATE INDEX IF NOT EXISTS submissions_dedup ON submissions(dedup_key)")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=FULL")  # an answered submission survives a power cut
        return db

    def add(self, submission: Submission) -> None:
        row = asdict(submission)
        for name in JSON_COLUMNS:
            row[name] = json.dumps(row[name]) if row[name] is not None else None
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        with closing(self._connect()) as db, db:
            db.execute(f"INSERT INTO submissions ({columns}) VALUES ({marks})", row)

    def get(self, submission_id: str) -> Submission | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM submissions WHERE id = ?", (submission_id,)).fetchone()
        return self._from_row(row) if row else None

    def list(self, states: tuple[str, ...] | None = None, limit: int = 1000) -> list[Submission]:
        query, args = "SELECT * FROM submissions", []
        if states:
            query += f" WHERE state IN ({', '.join('?' for _ in states)})"
            args = list(states)
        query += " ORDER BY created_at DESC LIMIT ?"
        with closing(self._connect()) as db:
            rows = db.execute(query, [*args, limit]).fetchall()
        return [self._from_row(row) for row in rows]

    def find_duplicate(self, dedup_key: str) -> Submission | None:
        """A submission with this key that is queued, running or finished (a failed one may be retried)."""
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT * FROM submissions WHERE dedup_key = ? AND state != 'failed' ORDER BY created_at LIMIT 1",
                (dedup_key,),
            ).fetchone()
        return self._from_row(row) if row else None

    def update(self, submission_id: str, **changes: Any) -> None:
        for name in JSON_COLUMNS:
            if changes.get(name) is not None:
                changes[name] = json.dumps(changes[name])
        assignments = ", ".join(f"{name} = :{name}" for name in changes)
        with closing(self._connect()) as db, db:
            db.execute(f"UPDATE submissions SET {assignments} WHERE id = :_id", {**changes, "_id": submission_id})

    def requests_to_publish(self, limit: int = 100) -> list[Submission]:
        """Submissions whose requests/ record does not show their current status yet."""
        cases = " ".join(f"WHEN '{state}' THEN '{shown}'" for state, shown in REQUEST_STATUS.items())
        with closing(self._connect()) as db:
            rows = db.execute(
                f"SELECT * FROM submissions WHERE request_status IS NULL OR request_status != CASE state {cases} END "
                "ORDER BY created_at LIMIT ?", (limit,)).fetchall()
        return [self._from_row(row) for row in rows]

    def start_attempt(self, submission_id: str) -> Submission | None:
        """Mark running and count the attempt; None if it already finished (a duplicate delivery)."""
        with closing(self._connect()) as db, db:
            db.execute(
                "UPDATE submissions SET state='running', attempts=attempts+1, started_at=?, error=NULL "
                "WHERE id=? AND state != 'finished'",
                (utc_now(), submission_id),
            )
        found = self.get(submission_id)
        return found if found and found.state == "running" else None

    def decide_release(self, submission_id: str, submitter: str, scope: str, decide) -> tuple[bool, float | None]:
        """The Ladder step for one submission, atomically: `decide(best)` -> (released, value) with
        best this submitter's best released value in scope (None: none yet). Recorded once: a
        retried job gets its first decision back, so a retry never competes with its own result."""
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")  # two workers finishing at once see each other's decisions
            try:
                row = db.execute("SELECT released, value FROM releases WHERE submission_id = ?",
                                 (submission_id,)).fetchone()
                if row is not None:
                    db.rollback()
                    return bool(row["released"]), row["value"]
                best = db.execute("SELECT MAX(value) AS best FROM releases WHERE submitter = ? AND scope = ? "
                                  "AND released = 1", (submitter, scope)).fetchone()["best"]
                released, value = decide(best)
                db.execute("INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?)",
                           (submission_id, submitter, scope, int(released), value if released else best, utc_now()))
                db.commit()
            except BaseException:
                db.rollback()
                raise
        return released, (value if released else best)

    @staticmethod
    def _from_row(row: sqlite3.Row) -> Submission:
        data = dict(row)
        for name in JSON_COLUMNS:
            data[name] = json.loads(data[name]) if data[name] else None
        return Submission(**data)
