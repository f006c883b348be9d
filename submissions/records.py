"""Durable submission records (SQLite in the data folder).

A submission is written here, with its file already on disk, before it is put on the queue:
Redis is the queue, this is the record. If Redis loses a job, `submissions.queue.reconcile`
finds the record still queued and enqueues it again.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
import uuid
from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypedDict, cast

from evaluator.statistics import MetricStats
from leaderboard.layout import RequestModel, RequestRecord, RequestStatus

STATES = ("queued", "running", "finished", "failed", "cancelled")
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
    ("owner", "TEXT"),  # the identity that submitted it (NULL: before identities existed)
    ("idempotency_key", "TEXT"),  # the client's Idempotency-Key, written in the same transaction
    (
        "visibility",
        "TEXT NOT NULL DEFAULT 'public'",
    ),  # public | hidden | deleted (operator actions)
    ("flag", "TEXT"),  # an operator's public note on the row (flag action)
    ("raw_sha256", "TEXT"),  # an upload's bytes' sha256 (file_sha256: its answers', the identity)
]
# what requests/ records show: queued (running included: a commit per start would be noise), finished, failed
REQUEST_STATUS: dict[str, RequestStatus] = {
    "queued": "queued",
    "running": "queued",
    "finished": "finished",
    "failed": "failed",
    "cancelled": "cancelled",
}

# Identities, model-name ownership, failed validations and the operator's audit log live in the
# same database, so a submission, its name claim, its quota check and its idempotency key are
# written in one transaction.
IDENTITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name       TEXT PRIMARY KEY,
    role       TEXT NOT NULL DEFAULT 'user',
    provider   TEXT NOT NULL DEFAULT 'token',
    created_at TEXT NOT NULL,
    quotas     TEXT
);
CREATE TABLE IF NOT EXISTS tokens (
    id           TEXT PRIMARY KEY,
    user         TEXT NOT NULL REFERENCES users(name),
    token_sha256 TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE TABLE IF NOT EXISTS model_names (
    name_key   TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    owner      TEXT NOT NULL,
    claimed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS validation_failures (
    owner TEXT NOT NULL,
    suite TEXT NOT NULL,
    at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS validation_failures_owner ON validation_failures(owner, suite, at);
CREATE TABLE IF NOT EXISTS comparisons (
    owner TEXT NOT NULL,
    suite TEXT NOT NULL,
    at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS comparisons_owner ON comparisons(owner, suite, at);
CREATE TABLE IF NOT EXISTS audit_log (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    at            TEXT NOT NULL,
    actor         TEXT NOT NULL,
    action        TEXT NOT NULL,
    submission_id TEXT,
    reason        TEXT NOT NULL DEFAULT '',
    details       TEXT
);
CREATE INDEX IF NOT EXISTS audit_log_submission ON audit_log(submission_id);
"""


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_submission_id() -> str:
    return uuid.uuid4().hex[:16]


# The Ladder's decision (evaluator/release.py): the submitter's best released value so far (None:
# none yet) -> (released, the value shown)
Decide = Callable[[float | None], tuple[bool, float | None]]


class ModelDetails(TypedDict, total=False):
    """Submission.details of a model run: written by the intake, run from by the worker."""

    model: dict[str, Any]  # evaluator.models.ResolvedModel as a dict (the path only on this node)
    protocol: str | None
    limit: int | None  # at most this many items (None: the whole split)
    requested_revision: str | None  # as the submitter asked (model.revision: what it resolved to)
    quota_cost: float  # what it took of the daily model-run quota (submissions/quotas.py)


class SubmissionResult(TypedDict, total=False):
    """Submission.result: a finished run's published metrics (the record's `metrics`,
    leaderboard/result_record.py MetricsData), or, where the Ladder withheld a hidden split's
    score, why (evaluator/release.py Withheld.as_result: `released` False and its `message`)."""

    metric: str | None
    total: dict[str, MetricStats]
    tiers: dict[str, dict[str, dict[str, MetricStats]]]
    release: dict[str, Any] | None
    released: bool  # withheld only
    best: float | None
    step: float
    mechanism: str
    message: str


class AuditEntry(TypedDict):
    """One operator action on a submission (the audit log: record_action, history)."""

    at: str
    actor: str
    action: str
    submission_id: str
    reason: str
    details: dict[str, Any] | None


class PublicSubmission(TypedDict):
    """Submission.public(): what the API and the UI show of a submission (no server-side paths,
    keys, or the request record's bookkeeping)."""

    id: str
    created_at: str
    kind: str
    suite: str
    task: str
    setting: str
    model_name: str
    model_link: str
    description: str
    filename: str
    file_sha256: str
    file_bytes: int
    state: str
    attempts: int
    progress_done: int
    progress_total: int
    error: str | None
    result: SubmissionResult | None
    revision: str | None
    started_at: str | None
    finished_at: str | None
    details: ModelDetails | None
    owner: str | None
    visibility: str
    flag: str | None
    raw_sha256: str | None


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
    # predictions: the identity of the answers (evaluator/predictions.py answers_sha256), not of the
    # bytes, so the same answers sent with a BOM, CRLF or keys reordered are one submission
    file_sha256: str = ""
    file_bytes: int = 0
    state: str = "queued"
    attempts: int = 0
    progress_done: int = 0
    progress_total: int = 0
    error: str | None = None
    result: SubmissionResult | None = field(default=None)
    revision: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    details: ModelDetails | None = None  # model runs only
    dedup_key: str | None = None
    request_status: str | None = None
    owner: str | None = None
    idempotency_key: str | None = None
    visibility: str = "public"
    flag: str | None = None
    raw_sha256: str | None = None  # the uploaded bytes' sha256: the stored file's provenance

    def request_record(self, status: RequestStatus) -> RequestRecord:
        """The `requests/` record the results dataset keeps for every submission (as the Open LLM
        Leaderboard's requests dataset): public metadata and status only, never files, paths or errors."""
        details = self.details or {}
        model = details.get("model") or {}
        return {
            "submission_id": self.id,
            "submitted_at": self.created_at,
            "status": status,
            "kind": self.kind,
            "suite": self.suite,
            "task": self.task,
            "setting": self.setting,
            "model_name": self.model_name,
            "model_link": self.model_link,
            "model": RequestModel(
                source=model.get("source"),
                revision=model.get("revision"),
                model_type=model.get("model_type"),
                parameters=model.get("parameters"),
                license=model.get("license"),
            )
            if model
            else None,
            "protocol": details.get("protocol"),
            "limit": details.get("limit"),
            "predictions_sha256": self.file_sha256 or None,
        }

    def job_snapshot(self) -> dict[str, Any]:
        """What the job needs to run without this database (a worker on another machine)."""
        return asdict(self)

    def public(self) -> PublicSubmission:
        """What the API and the UI show: no server-side paths. A shallow copy, to be read (and sent)
        only: its nested values are the record's own. asdict's deep copy of the result's tiers cost
        half of a status request's ~5 ms, the request every waiting client polls."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        data.pop("file_path")
        data.pop("dedup_key")
        data.pop("request_status")
        data.pop("idempotency_key")
        model = (data.get("details") or {}).get("model")
        if model:
            data["details"] = {
                **data["details"],
                "model": {k: v for k, v in model.items() if k != "path"},
            }
        return cast(PublicSubmission, data)  # its keys: tests/unit/test_records.py


class Refused(Exception):
    """admit() refused a submission; the subclasses say why."""


class Replayed(Refused):
    """The same identity already sent this Idempotency-Key: `submission` is the first answer."""

    def __init__(self, submission: Submission):
        super().__init__(submission.id)
        self.submission = submission


class Duplicate(Refused):
    def __init__(self, submission: Submission):
        super().__init__(submission.id)
        self.submission = submission


class NameTaken(Refused):
    def __init__(self, name: str, owner: str):
        super().__init__(name)
        self.name, self.owner = name, owner


class QuotaUsed(Refused):
    """A Budget was spent: `used` of `limit`; `quota` names it (a kind, or "new_accounts")."""

    def __init__(self, used: int, limit: int, quota: str = ""):
        super().__init__(f"{quota} {used}/{limit}".strip())
        self.used, self.limit, self.quota = used, limit, quota


@dataclass(frozen=True)
class Budget:
    """A daily limit that admit() counts inside its write transaction, where the row it admits is
    written: two concurrent requests cannot both see the last slot free. `quota` names it (in
    QuotaUsed, and in the refusal's `quota` field); `scope` says what is counted since `since`:

        own       the owner's submissions of the submitted kind on the submitted suite
        failed    the owner's failed validations on the suite (spent: nothing more there today)
        provider  every submission (any suite, any kind) of the identities whose provider is
                  `provider`; applies only when the owner is one of them, as read in the same
                  transaction (the daily budget shared by all new Hugging Face accounts)
    """

    quota: str
    limit: int
    since: str
    scope: str = "own"
    provider: str | None = None

    def used(self, db: sqlite3.Connection, owner: str | None, suite: str, kind: str) -> int | None:
        """How many are taken (None: this budget does not apply to `owner`)."""
        if self.scope == "own":
            query = (
                "SELECT COUNT(*) FROM submissions WHERE owner = ? AND suite = ? AND kind = ? "
                "AND created_at >= ?"
            )
            return db.execute(query, (owner, suite, kind, self.since)).fetchone()[0]
        if self.scope == "failed":
            query = (
                "SELECT COUNT(*) FROM validation_failures WHERE owner = ? AND suite = ? AND at >= ?"
            )
            return db.execute(query, (owner, suite, self.since)).fetchone()[0]
        if self.scope == "provider":
            row = db.execute("SELECT provider FROM users WHERE name = ?", (owner,)).fetchone()
            if row is None or row["provider"] != self.provider:
                return None
            query = (
                "SELECT COUNT(*) FROM submissions s JOIN users u ON s.owner = u.name "
                "WHERE u.provider = ? AND s.created_at >= ?"
            )
            return db.execute(query, (self.provider, self.since)).fetchone()[0]
        raise ValueError(f"unknown budget scope {self.scope!r}")


def _check_budgets(
    db: sqlite3.Connection, budgets: Sequence[Budget], owner: str | None, suite: str, kind: str
) -> None:
    """QuotaUsed for the first spent budget, in the order given."""
    for budget in budgets:
        used = budget.used(db, owner, suite, kind)
        if used is not None and used >= budget.limit:
            raise QuotaUsed(used, budget.limit, budget.quota)


HIDDEN = ("hidden", "deleted")
NOT_DUPLICATES = ("failed", "cancelled")  # a resubmission of these is a fresh attempt


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
            db.execute(
                "CREATE INDEX IF NOT EXISTS submissions_owner ON submissions(owner, suite, created_at)"
            )
            db.execute(
                "CREATE UNIQUE INDEX IF NOT EXISTS submissions_idempotency "
                "ON submissions(owner, idempotency_key) WHERE idempotency_key IS NOT NULL"
            )
            db.executescript(IDENTITY_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=FULL")  # an answered submission survives a power cut
        return db

    def add(self, submission: Submission) -> None:
        with closing(self._connect()) as db, db:
            self._insert(db, submission)

    def admit(
        self,
        submission: Submission,
        *,
        name_key: str | None,
        quota: int | None = None,
        since: str = "",
        budgets: Sequence[Budget] = (),
    ) -> Submission:
        """Record a new submission after every fair-play rule, in one write transaction (so two
        concurrent requests cannot both take the last slot of a budget or both claim a name):

        1. the owner's Idempotency-Key seen before -> Replayed(the first submission)
        2. the same owner already sent these answers (file_sha256, whatever the file's encoding)
           for this suite/task/setting (predictions) or this model run exists (dedup_key) ->
           Duplicate(the earlier one)
        3. `name_key` (a model name) claimed by another identity -> NameTaken
        4. the first of `budgets` that is spent -> QuotaUsed naming it (`quota`: shorthand for
           an "own" Budget of that limit since `since`, checked last)
        then the row is inserted together with its key and name claim.
        """
        s = submission
        if quota is not None:
            budgets = [*budgets, Budget(s.kind, quota, since)]
        with closing(self._connect()) as db, db:
            db.execute("BEGIN IMMEDIATE")
            if s.idempotency_key is not None:
                row = db.execute(
                    "SELECT * FROM submissions WHERE owner = ? AND idempotency_key = ?",
                    (s.owner, s.idempotency_key),
                ).fetchone()
                if row:
                    raise Replayed(self._from_row(row))
            skip = ", ".join(f"'{state}'" for state in NOT_DUPLICATES)
            if s.kind == "predictions":
                # a row from before answers were hashed holds its bytes' hash: the same bytes match it
                identities = (s.file_sha256, s.raw_sha256 or s.file_sha256)
                row = db.execute(
                    f"SELECT * FROM submissions WHERE owner IS ? AND file_sha256 IN (?, ?) AND suite = ? "
                    f"AND task = ? AND setting = ? AND kind = 'predictions' AND state NOT IN ({skip}) "
                    "ORDER BY created_at LIMIT 1",
                    (s.owner, *identities, s.suite, s.task, s.setting),
                ).fetchone()
            else:
                row = db.execute(
                    f"SELECT * FROM submissions WHERE dedup_key = ? AND state NOT IN ({skip}) "
                    "ORDER BY created_at LIMIT 1",
                    (s.dedup_key,),
                ).fetchone()
            if row:
                raise Duplicate(self._from_row(row))
            if name_key is not None:
                claim = db.execute(
                    "SELECT owner FROM model_names WHERE name_key = ?", (name_key,)
                ).fetchone()
                if claim and claim["owner"] != s.owner:
                    raise NameTaken(s.model_name, claim["owner"])
                if not claim:
                    db.execute(
                        "INSERT INTO model_names (name_key, name, owner, claimed_at) VALUES (?, ?, ?, ?)",
                        (name_key, s.model_name, s.owner, s.created_at),
                    )
            _check_budgets(db, budgets, s.owner, s.suite, s.kind)
            self._insert(db, s)
        return s

    def check_budgets(self, owner: str, suite: str, kind: str, budgets: Sequence[Budget]) -> None:
        """QuotaUsed when one of `budgets` is spent now: an early, unlocked read that spares the
        work of a request bound to be refused (admit() decides, in its transaction)."""
        with closing(self._connect()) as db:
            _check_budgets(db, budgets, owner, suite, kind)

    def _insert(self, db: sqlite3.Connection, submission: Submission) -> None:
        row = asdict(submission)
        for name in JSON_COLUMNS:
            row[name] = json.dumps(row[name]) if row[name] is not None else None
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        db.execute(f"INSERT INTO submissions ({columns}) VALUES ({marks})", row)

    def get(self, submission_id: str) -> Submission | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM submissions WHERE id = ?", (submission_id,)).fetchone()
        return self._from_row(row) if row else None

    def list(
        self, states: tuple[str, ...] | None = None, limit: int = 1000, public_only: bool = False
    ) -> list[Submission]:
        query, args, where = "SELECT * FROM submissions", [], []
        if states:
            where.append(f"state IN ({', '.join('?' for _ in states)})")
            args = list(states)
        if public_only:  # rows an operator hid or deleted are gone from public listings
            where.append("visibility = 'public'")
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY created_at DESC LIMIT ?"
        with closing(self._connect()) as db:
            rows = db.execute(query, [*args, limit]).fetchall()
        return [self._from_row(row) for row in rows]

    def find_idempotent(self, owner: str, idempotency_key: str) -> Submission | None:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT * FROM submissions WHERE owner = ? AND idempotency_key = ?",
                (owner, idempotency_key),
            ).fetchone()
        return self._from_row(row) if row else None

    def find_duplicate(self, dedup_key: str) -> Submission | None:
        """A submission with this key that is queued, running or finished (a failed one may be retried)."""
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT * FROM submissions WHERE dedup_key = ? AND state NOT IN ('failed', 'cancelled') "
                "ORDER BY created_at LIMIT 1",
                (dedup_key,),
            ).fetchone()
        return self._from_row(row) if row else None

    def update(self, submission_id: str, **changes: Any) -> None:
        for name in JSON_COLUMNS:
            if changes.get(name) is not None:
                changes[name] = json.dumps(changes[name])
        assignments = ", ".join(f"{name} = :{name}" for name in changes)
        with closing(self._connect()) as db, db:
            db.execute(
                f"UPDATE submissions SET {assignments} WHERE id = :_id",
                {**changes, "_id": submission_id},
            )

    def update_revision(self, submission_id: str, revision: str) -> None:
        self.update(submission_id, revision=revision)

    def requests_to_publish(self, limit: int = 100) -> builtins.list[Submission]:
        """Submissions whose requests/ record does not show their current status yet."""
        cases = " ".join(
            f"WHEN '{state}' THEN '{shown}'" for state, shown in REQUEST_STATUS.items()
        )
        with closing(self._connect()) as db:
            rows = db.execute(
                f"SELECT * FROM submissions WHERE visibility = 'public' AND "  # hidden: its request record was withdrawn
                f"(request_status IS NULL OR request_status != CASE state {cases} END) "
                "ORDER BY created_at LIMIT ?",
                (limit,),
            ).fetchall()
        return [self._from_row(row) for row in rows]

    def record_action(
        self,
        submission_id: str,
        actor: str,
        action: str,
        reason: str,
        details: dict[str, Any] | None = None,
        **changes: Any,
    ) -> AuditEntry:
        """An operator action: the submission's `changes` and its audit entry, in one transaction."""
        entry = AuditEntry(
            at=utc_now(),
            actor=actor,
            action=action,
            submission_id=submission_id,
            reason=reason,
            details=details,
        )
        with closing(self._connect()) as db, db:
            if changes:
                assignments = ", ".join(f"{name} = :{name}" for name in changes)
                db.execute(
                    f"UPDATE submissions SET {assignments} WHERE id = :_id",
                    {**changes, "_id": submission_id},
                )
            db.execute(
                "INSERT INTO audit_log (at, actor, action, submission_id, reason, details) "
                "VALUES (:at, :actor, :action, :submission_id, :reason, :details)",
                {**entry, "details": json.dumps(details) if details else None},
            )
        return entry

    def history(self, submission_id: str) -> builtins.list[AuditEntry]:
        """The operator actions on a submission, oldest first."""
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT * FROM audit_log WHERE submission_id = ? ORDER BY seq", (submission_id,)
            ).fetchall()
        return [
            AuditEntry(
                at=r["at"],
                actor=r["actor"],
                action=r["action"],
                submission_id=r["submission_id"],
                reason=r["reason"],
                details=json.loads(r["details"]) if r["details"] else None,
            )
            for r in rows
        ]

    def withdrawn_ids(self) -> builtins.list[str]:
        """Submissions an operator hid or deleted: none of them may stay in the published table."""
        with closing(self._connect()) as db:
            return [
                r[0] for r in db.execute("SELECT id FROM submissions WHERE visibility != 'public'")
            ]

    def start_attempt(self, submission_id: str) -> Submission | None:
        """Mark running and count the attempt; None if it already finished (a duplicate delivery)
        or an operator cancelled it."""
        with closing(self._connect()) as db, db:
            db.execute(
                "UPDATE submissions SET state='running', attempts=attempts+1, started_at=?, error=NULL "
                "WHERE id=? AND state NOT IN ('finished', 'cancelled')",
                (utc_now(), submission_id),
            )
        found = self.get(submission_id)
        return found if found and found.state == "running" else None

    def decide_release(
        self, submission_id: str, submitter: str, scope: str, decide: Decide
    ) -> tuple[bool, float | None]:
        """The Ladder step for one submission, atomically: `decide(best)` -> (released, value) with
        best this submitter's best released value in scope (None: none yet). Recorded once: a
        retried job gets its first decision back, so a retry never competes with its own result."""
        with closing(self._connect()) as db:
            db.execute(
                "BEGIN IMMEDIATE"
            )  # two workers finishing at once see each other's decisions
            try:
                row = db.execute(
                    "SELECT released, value FROM releases WHERE submission_id = ?", (submission_id,)
                ).fetchone()
                if row is not None:
                    db.rollback()
                    return bool(row["released"]), row["value"]
                best = db.execute(
                    "SELECT MAX(value) AS best FROM releases WHERE submitter = ? AND scope = ? "
                    "AND released = 1",
                    (submitter, scope),
                ).fetchone()["best"]
                released, value = decide(best)
                db.execute(
                    "INSERT INTO releases VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        submission_id,
                        submitter,
                        scope,
                        int(released),
                        value if released else best,
                        utc_now(),
                    ),
                )
                db.commit()
            except BaseException:
                db.rollback()
                raise
        return released, (value if released else best)

    def record_release(
        self, submission_id: str, submitter: str, scope: str, released: bool, value: float | None
    ) -> None:
        """A Ladder decision made elsewhere (a remote worker, submissions/remote.py), counted here too."""
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT OR IGNORE INTO releases VALUES (?, ?, ?, ?, ?, ?)",
                (submission_id, submitter, scope, int(released), value, utc_now()),
            )

    @staticmethod
    def _from_row(row: sqlite3.Row) -> Submission:
        data = dict(row)
        for name in JSON_COLUMNS:
            data[name] = json.loads(data[name]) if data[name] else None
        return Submission(**data)
