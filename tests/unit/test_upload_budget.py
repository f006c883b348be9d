"""submissions/upload_budget.py: uploads per identity per hour (count and bytes) and per minute,
counted in the submissions database in one transaction; backend/settings.py reads the figures."""

from __future__ import annotations

import threading

import pytest

from backend.settings import load_settings
from submissions.records import SubmissionStore
from submissions.upload_budget import UploadBudget, UploadLimits, refusal

MIB = 1024 * 1024
T0 = 1_000_000.0


def test_each_limit_refuses_exactly_past_its_figure_with_the_wait():
    limits = UploadLimits(per_hour=5, bytes_per_hour=10 * MIB, per_minute=3)
    # per minute: 3 in the last minute fill it; the oldest of them frees it
    recent = [(T0 - 50, 1), (T0 - 20, 1)]
    assert refusal(limits, recent, 1, T0) is None
    full = [*recent, (T0 - 10, 1)]
    refused = refusal(limits, full, 1, T0)
    assert refused is not None and refused.status == 429 and refused.retry_after_s == 10
    assert "3 uploads per minute" in refused.message
    # per hour: 5 in the hour (none in the last minute); the oldest frees one at its hour
    hour = [(T0 - 3000 + i, 1) for i in range(5)]
    assert refusal(limits, hour[:4], 1, T0) is None
    refused = refusal(limits, hour, 1, T0)
    assert refused is not None and refused.retry_after_s == 600
    assert "5 uploads per hour" in refused.message
    # uploads older than the hour do not count
    assert refusal(limits, [(T0 - 3600, 1)] * 9, 1, T0) is None
    # bytes: 10 MiB per hour; the wait is until enough of the oldest have left
    sent = [(T0 - 3500, 4 * MIB), (T0 - 3000, 4 * MIB)]
    assert refusal(limits, sent, 2 * MIB, T0) is None
    refused = refusal(limits, sent, 2 * MIB + 1, T0)
    assert refused is not None and refused.retry_after_s == 100
    assert "10 MiB uploaded per hour" in refused.message
    refused = refusal(limits, sent, 7 * MIB, T0)  # both must leave
    assert refused is not None and refused.retry_after_s == 600
    # one upload larger than the whole hourly budget can never pass: 413, no Retry-After
    refused = refusal(limits, [], 10 * MIB + 1, T0)
    assert refused is not None and refused.status == 413 and refused.retry_after_s is None
    # several limits spent: the longest wait
    both = refusal(limits, [*hour[:2], *full], 1, T0)
    assert both is not None and both.retry_after_s == 600 and "per hour" in both.message
    # 0 turns a limit off
    assert refusal(UploadLimits(0, 0, 0), hour * 10, 50 * MIB, T0) is None


def test_concurrent_takes_never_pass_a_limit(tmp_path):
    budget = UploadBudget(
        SubmissionStore(tmp_path / "s.sqlite3"),
        UploadLimits(per_hour=7, bytes_per_hour=0, per_minute=0),
    )
    results: list[object] = []
    lock = threading.Lock()

    def take() -> None:
        outcome = budget.take("alice", 10)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=take) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r is None for r in results) == 7
    assert budget.used("alice") == (7, 70) and budget.used("bob") == (0, 0)
    assert budget.take("bob", 10) is None  # per identity


def test_refused_uploads_are_not_counted_and_the_hour_slides(tmp_path):
    budget = UploadBudget(
        SubmissionStore(tmp_path / "s.sqlite3"),
        UploadLimits(per_hour=2, bytes_per_hour=100, per_minute=0),
    )
    assert budget.take("alice", 60, now=T0) is None
    assert budget.take("alice", 50, now=T0 + 1).retry_after_s == 3599  # bytes: 110 > 100
    assert budget.take("alice", 40, now=T0 + 2) is None
    refused = budget.take("alice", 1, now=T0 + 3)
    assert refused.retry_after_s == 3597 and "2 uploads per hour" in refused.message
    assert budget.used("alice", now=T0 + 3) == (2, 100)
    assert budget.take("alice", 60, now=T0 + 3600) is None  # the first left the window


def test_settings(monkeypatch):
    monkeypatch.setenv("PERSONABOARD_UPLOAD_PER_HOUR", "12")
    monkeypatch.setenv("PERSONABOARD_UPLOAD_BYTES_PER_HOUR", "1048576")
    monkeypatch.setenv("PERSONABOARD_UPLOAD_PER_MINUTE", "0")
    monkeypatch.setenv("PERSONABOARD_UPLOAD_MAX_AGE_S", "900")
    settings = load_settings()
    assert settings.upload_limits == UploadLimits(12, MIB, 0)
    assert settings.upload_max_age_s == 900
    for key in ("PERSONABOARD_UPLOAD_PER_HOUR", "PERSONABOARD_UPLOAD_MAX_AGE_S"):
        monkeypatch.delenv(key)
    monkeypatch.delenv("PERSONABOARD_UPLOAD_BYTES_PER_HOUR")
    monkeypatch.delenv("PERSONABOARD_UPLOAD_PER_MINUTE")
    defaults = load_settings()
    assert defaults.upload_limits == UploadLimits(30, 512 * MIB, 6)
    # the disk bound: an upload is swept before its hour of budget is over
    from space.uploads import SWEEP_EVERY_S

    assert defaults.upload_max_age_s + SWEEP_EVERY_S <= 3600
    for bad in ("-1", "many"):
        monkeypatch.setenv("PERSONABOARD_UPLOAD_PER_HOUR", bad)
        with pytest.raises(ValueError, match="PERSONABOARD_UPLOAD_PER_HOUR"):
            load_settings()
    monkeypatch.delenv("PERSONABOARD_UPLOAD_PER_HOUR")
    monkeypatch.setenv("PERSONABOARD_UPLOAD_MAX_AGE_S", "5")
    with pytest.raises(ValueError, match="PERSONABOARD_UPLOAD_MAX_AGE_S"):
        load_settings()
