"""Durable submission records in SQLite."""

from __future__ import annotations

import sqlite3

import pytest

from submissions.records import PublicSubmission, Submission, SubmissionStore, new_submission_id


def make(sid: str, created_at: str, state: str = "queued", **extra) -> Submission:
    return Submission(
        id=sid,
        created_at=created_at,
        kind="predictions",
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name=f"model {sid}",
        state=state,
        **extra,
    )


@pytest.fixture
def store(tmp_path):
    return SubmissionStore(tmp_path / "db" / "submissions.sqlite3")


def test_add_and_get_round_trip(store):
    sub = make(
        "s1",
        "2025-01-01T00:00:00.000+00:00",
        file_sha256="ab" * 32,
        file_bytes=123,
        file_path="/data/uploads/s1.jsonl",
        progress_total=3000,
    )
    store.add(sub)
    assert store.get("s1") == sub
    assert store.get("nope") is None
    public = store.get("s1").public()
    assert "file_path" not in public and public["file_sha256"] == "ab" * 32
    assert set(public) == set(PublicSubmission.__annotations__)  # the type the UI reads it by


def test_duplicate_id_rejected(store):
    store.add(make("s1", "2025-01-01T00:00:00+00:00"))
    with pytest.raises(sqlite3.IntegrityError):
        store.add(make("s1", "2025-01-02T00:00:00+00:00"))
    assert store.get("s1").created_at == "2025-01-01T00:00:00+00:00"


def test_update_including_result_json(store):
    store.add(make("s1", "2025-01-01T00:00:00+00:00"))
    result = {"total": {"accuracy": {"value": 0.5, "ci95": [0.4, 0.6], "n": 4}}}
    store.update("s1", state="finished", result=result, revision="abc", progress_done=4)
    got = store.get("s1")
    assert (got.state, got.result, got.revision, got.progress_done) == (
        "finished",
        result,
        "abc",
        4,
    )
    store.update("s1", error="boom", result=None)
    assert store.get("s1").result is None and store.get("s1").error == "boom"


def test_list_newest_first_with_state_filter_and_limit(store):
    store.add(make("old", "2025-01-01T00:00:00+00:00", state="finished"))
    store.add(make("mid", "2025-01-02T00:00:00+00:00", state="queued"))
    store.add(make("new", "2025-01-03T00:00:00+00:00", state="running"))
    assert [s.id for s in store.list()] == ["new", "mid", "old"]
    assert [s.id for s in store.list(states=("queued", "running"))] == ["new", "mid"]
    assert [s.id for s in store.list(states=("failed",))] == []
    assert [s.id for s in store.list(limit=1)] == ["new"]


def test_start_attempt_counts_and_skips_finished(store):
    store.add(make("s1", "2025-01-01T00:00:00+00:00"))
    first = store.start_attempt("s1")
    assert (
        first is not None and first.state == "running" and first.attempts == 1 and first.started_at
    )
    store.update("s1", error="worker died")
    second = store.start_attempt("s1")
    assert second.attempts == 2 and second.error is None
    store.update("s1", state="finished")
    assert store.start_attempt("s1") is None
    assert store.get("s1").attempts == 2 and store.get("s1").state == "finished"
    assert store.start_attempt("missing") is None


def test_failed_submission_can_be_retried(store):
    store.add(make("s1", "2025-01-01T00:00:00+00:00", state="failed"))
    retried = store.start_attempt("s1")
    assert retried is not None and retried.attempts == 1


def test_records_survive_reopening(tmp_path):
    path = tmp_path / "s.sqlite3"
    SubmissionStore(path).add(make("s1", "2025-01-01T00:00:00+00:00"))
    assert SubmissionStore(path).get("s1").model_name == "model s1"
    assert len(new_submission_id()) == 16 and new_submission_id() != new_submission_id()
