"""Daily quotas per identity and suite: prediction uploads, model runs and failed validations.

Days are UTC calendar days, so every client sees the same reset time. Failed validations have
their own, larger budget: a mistake costs a little, while a probe that needs a scored upload
costs a slot of the upload quota. Comparisons that touch a hidden split have a budget of their
own (submissions/compare.py says why they are metered, and why not on the upload quota).

A model run counts what it costs: a whole run 1, a smoke run (`limit`) its share of the split's
items, at least a tenth of a run (it loads its model whatever its size), so trying a model on a
few items does not spend the day: four smoke runs of 30, 60, 12 and 4 items on a 3,000-item split
take 0.4 of a quota of 4 (`model_run_cost`, counted by `ModelRunBudget`).

Each is counted in the write transaction that decides it, never read first and written later:
uploads and model runs by records.SubmissionStore.admit() (intake.budgets_for lists the budgets,
with the daily budget new Hugging Face accounts share), a failed validation by
IdentityStore.take_failed_validation, a comparison by IdentityStore.take_comparison.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from submissions.records import Budget


@dataclass(frozen=True)
class QuotaLimits:
    predictions: int = 10  # prediction files accepted per identity, suite and UTC day
    model: int = 4  # model runs per identity, suite and UTC day (a smoke run: its share)
    failed_validations: int = 50  # files refused by validation per identity, suite and UTC day
    comparisons: int = 20  # comparisons answered on a hidden split per identity, suite and UTC day

    def for_user(self, overrides: dict[str, int]) -> "QuotaLimits":
        return replace(
            self, **{k: v for k, v in overrides.items() if k in self.__dataclass_fields__}
        )

    def of(self, kind: str) -> int:
        return getattr(self, kind)


@dataclass(frozen=True)
class Window:
    start: str  # ISO timestamp, comparable with records.utc_now() strings
    resets_at: str
    retry_after_s: int


def today(now: datetime | None = None) -> Window:
    now = now or datetime.now(timezone.utc)
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    reset = start + timedelta(days=1)
    return Window(
        start.isoformat(timespec="milliseconds"),
        reset.isoformat(timespec="seconds"),
        max(1, int((reset - now).total_seconds()) + 1),
    )


QUOTA_LABELS = {
    "predictions": "prediction uploads",
    "model": "model runs",
    "failed_validations": "failed validations",
    "comparisons": "comparisons on a hidden split",
}


RUN_UNITS = 1000  # a model run's cost is counted in thousandths of a run (integers in SQL)
MIN_SMOKE_RUN_COST = 0.1  # a run loads its model whatever its size


def model_run_cost(limit: int | None, split_items: int) -> float:
    """What a model run takes of the daily model-run quota, in runs: a whole run (no `limit`, or
    one covering the split) 1; a smoke run its share of the split's items, rounded up to a
    thousandth, at least MIN_SMOKE_RUN_COST."""
    if limit is None or split_items <= 0 or limit >= split_items:
        return 1.0
    share = math.ceil(limit * RUN_UNITS / split_items) / RUN_UNITS
    return max(MIN_SMOKE_RUN_COST, share)


@dataclass(frozen=True)
class ModelRunBudget(Budget):
    """The identity's model-run quota on a suite, counted in thousandths of a run (`limit` too):
    the sum of its runs' costs today (details.quota_cost, written by the intake; a run recorded
    before costs were, 1). Counted by admit() in its transaction like any Budget: a run is
    admitted while less than the quota is spent."""

    def used(self, db: sqlite3.Connection, owner: str | None, suite: str, kind: str) -> int | None:
        query = (
            "SELECT COALESCE(SUM(CAST(ROUND(COALESCE(json_extract(details, '$.quota_cost'), 1) "
            f"* {RUN_UNITS}) AS INTEGER)), 0) FROM submissions WHERE owner = ? AND suite = ? "
            "AND kind = 'model' AND created_at >= ?"
        )
        return int(db.execute(query, (owner, suite, self.since)).fetchone()[0])


def runs(units: int) -> int | float:
    """Thousandths of a run as runs (a whole number stays an int: 3, not 3.0)."""
    value = round(units / RUN_UNITS, 3)
    return int(value) if value == int(value) else value
