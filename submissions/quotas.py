"""Daily quotas per identity and suite: prediction uploads, model runs and failed validations.

Days are UTC calendar days, so every client sees the same reset time. Failed validations have
their own, larger budget: a mistake costs a little, while a probe that needs a scored upload
costs a slot of the upload quota. Comparisons that touch a hidden split have a budget of their
own (submissions/compare.py says why they are metered, and why not on the upload quota).

Each is counted in the write transaction that decides it, never read first and written later:
uploads and model runs by records.SubmissionStore.admit() (intake.budgets_for lists the budgets,
with the daily budget new Hugging Face accounts share), a failed validation by
IdentityStore.take_failed_validation, a comparison by IdentityStore.take_comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class QuotaLimits:
    predictions: int = 10  # prediction files accepted per identity, suite and UTC day
    model: int = 4  # model runs accepted per identity, suite and UTC day
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
