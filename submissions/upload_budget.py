"""Upload budgets per identity: how many files and bytes one identity may send to the UI's upload
route (`/gradio_api/upload`) per hour, and how many per minute.

Without them one token stored 10 x 63 MiB in 4.2 s, each file kept until swept. The counts live in
the submissions database beside the other per-identity counts (comparisons, failed validations):
the web node, the only process that receives uploads, already writes there, it survives restarts,
and one `BEGIN IMMEDIATE` transaction both checks and counts, so concurrent uploads cannot pass a
limit together (Redis would need a Lua script for the same, and is the queue, not the record).
Bytes are the request's declared Content-Length (the server never reads past it; BodySizeLimit
caps each request), counted when the upload is let through.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass

from submissions.records import SubmissionStore

HOUR_S = 3600
MINUTE_S = 60

SCHEMA = """
CREATE TABLE IF NOT EXISTS upload_budget (
    owner TEXT NOT NULL,
    at REAL NOT NULL,
    bytes INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS upload_budget_owner ON upload_budget(owner, at);
"""


@dataclass(frozen=True)
class UploadLimits:
    """Per identity; 0 turns a limit off."""

    per_hour: int = 30
    bytes_per_hour: int = 512 * 1024 * 1024
    per_minute: int = 6


@dataclass(frozen=True)
class BudgetRefusal:
    status: int  # 429, or 413 for a single upload larger than the hourly bytes budget
    message: str
    retry_after_s: int | None  # whole seconds until the window frees enough (None: never)


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n % 2**20 == 0 else f"{n} bytes"


def refusal(
    limits: UploadLimits, history: Sequence[tuple[float, int]], nbytes: int, now: float
) -> BudgetRefusal | None:
    """Whether one more upload of `nbytes` fits, given this identity's uploads of the last hour
    (`history`: (time, bytes), oldest first). Past any limit: the refusal naming the limit with the
    longest wait, and that wait (when enough of the oldest uploads leave their window)."""
    hour = [(at, size) for at, size in history if at > now - HOUR_S]
    minute = [at for at, _ in hour if at > now - MINUTE_S]
    if limits.bytes_per_hour and nbytes > limits.bytes_per_hour:
        return BudgetRefusal(
            413,
            f"this upload ({nbytes} bytes) is larger than the upload budget of "
            f"{_mib(limits.bytes_per_hour)} per hour per identity",
            None,
        )
    waits: list[tuple[float, str]] = []
    if limits.per_minute and len(minute) >= limits.per_minute:
        frees = minute[len(minute) - limits.per_minute] + MINUTE_S
        waits.append((frees, f"at most {limits.per_minute} uploads per minute per identity"))
    if limits.per_hour and len(hour) >= limits.per_hour:
        frees = hour[len(hour) - limits.per_hour][0] + HOUR_S
        waits.append((frees, f"at most {limits.per_hour} uploads per hour per identity"))
    total = sum(size for _, size in hour)
    if limits.bytes_per_hour and total + nbytes > limits.bytes_per_hour:
        frees = hour[-1][0] + HOUR_S
        for at, size in hour:  # the oldest go first: when has enough left the window?
            total -= size
            if total + nbytes <= limits.bytes_per_hour:
                frees = at + HOUR_S
                break
        which = f"at most {_mib(limits.bytes_per_hour)} uploaded per hour per identity"
        waits.append((frees, which))
    if not waits:
        return None
    frees, which = max(waits)
    retry = max(1, math.ceil(frees - now))
    return BudgetRefusal(
        429, f"upload budget spent: {which}; try again in {retry} s", retry_after_s=retry
    )


class UploadBudget:
    """The counts, in the submissions database (its own table, created here)."""

    def __init__(self, records: SubmissionStore, limits: UploadLimits):
        self.records, self.limits = records, limits
        with closing(records._connect()) as db, db:
            db.executescript(SCHEMA)

    def take(self, owner: str, nbytes: int, now: float | None = None) -> BudgetRefusal | None:
        """Count one upload of `nbytes` by `owner` if it fits, else the refusal (nothing counted).
        One write transaction: concurrent uploads are checked and counted one after another."""
        now = time.time() if now is None else now
        with closing(self.records._connect()) as db, db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM upload_budget WHERE at <= ?", (now - HOUR_S,))
            history = [
                (row["at"], row["bytes"])
                for row in db.execute(
                    "SELECT at, bytes FROM upload_budget WHERE owner = ? ORDER BY at", (owner,)
                )
            ]
            refused = refusal(self.limits, history, nbytes, now)
            if refused is None:
                db.execute(
                    "INSERT INTO upload_budget (owner, at, bytes) VALUES (?, ?, ?)",
                    (owner, now, nbytes),
                )
        return refused

    def used(self, owner: str, now: float | None = None) -> tuple[int, int]:
        """(uploads, bytes) counted for `owner` in the last hour."""
        now = time.time() if now is None else now
        with closing(self.records._connect()) as db:
            row = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM upload_budget "
                "WHERE owner = ? AND at > ?",
                (owner, now - HOUR_S),
            ).fetchone()
        return int(row[0]), int(row[1])
