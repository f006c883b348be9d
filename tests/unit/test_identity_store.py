"""Identities, tokens, name normalisation, the admission transaction and withdrawing a result."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from leaderboard.store import LocalDatasetStore
from submissions.identity import IdentityError, IdentityStore
from submissions.names import InvalidName, name_key, normalise_text
from submissions.records import (
    Duplicate,
    NameTaken,
    QuotaUsed,
    Replayed,
    Submission,
    SubmissionStore,
)


@pytest.fixture
def records(tmp_path):
    return SubmissionStore(tmp_path / "submissions.sqlite3")


def make(
    sid: str, owner: str = "alice", sha: str = "f" * 64, key: str | None = None, name: str = "m"
) -> Submission:
    return Submission(
        id=sid,
        created_at=f"2026-01-01T00:00:0{len(sid) % 10}.000+00:00",
        kind="predictions",
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name=name,
        file_sha256=sha,
        owner=owner,
        idempotency_key=key,
    )


def test_tokens_are_stored_hashed_and_revocable(records, tmp_path):
    identities = IdentityStore(records)
    identities.add_user("alice")
    token_id, token = identities.issue_token("alice")
    assert identities.authenticate(token).name == "alice"
    assert identities.authenticate(token + "x") is None and identities.authenticate("") is None
    with sqlite3.connect(records.path) as db:
        dump = "\n".join(db.iterdump())
    assert token not in dump and token_id in dump  # only the hash (and the public id) is stored
    assert identities.revoke("alice", token_id) == 1
    assert identities.authenticate(token) is None
    with pytest.raises(IdentityError):
        identities.add_user("alice")
    with pytest.raises(IdentityError):
        identities.add_user("bad name!")


@pytest.mark.parametrize(
    "raw, field_error",
    [
        ("a\u202eb", "U+202E"),
        ("a\u2066b", "U+2066"),
        ("a\x00b", "NUL"),
        ("a\x1bb", "U+001B"),
        ("a\u200bb", "U+200B"),
    ],
)
def test_hidden_characters_refused(raw, field_error):
    with pytest.raises(InvalidName) as refused:
        normalise_text(raw, "model_name", 200)
    assert refused.value.field == "model_name" and field_error in str(refused.value)


def test_normalisation_and_name_key():
    assert normalise_text("  ＧＰＴ－４  ", "model_name", 200) == "GPT-4"
    assert name_key(normalise_text("GPT-4", "m", 200)) == name_key(
        normalise_text(" gpt-4 ", "m", 200)
    )
    assert normalise_text("two\nlines", "description", 50, multiline=True) == "two\nlines"
    with pytest.raises(InvalidName):
        normalise_text("x" * 201, "model_name", 200)


def test_admit_rules(records):
    records.admit(make("a1", key="k1"), name_key="m", quota=2, since="2026-01-01")
    with pytest.raises(Replayed) as replay:
        records.admit(make("a2", key="k1", sha="e" * 64), name_key="m", quota=2, since="2026-01-01")
    assert replay.value.submission.id == "a1"
    with pytest.raises(Duplicate) as dup:
        records.admit(make("a3"), name_key="m", quota=2, since="2026-01-01")
    assert dup.value.submission.id == "a1"
    with pytest.raises(NameTaken):
        records.admit(
            make("b1", owner="bob", sha="d" * 64), name_key="m", quota=2, since="2026-01-01"
        )
    records.admit(make("a4", sha="c" * 64), name_key="m", quota=2, since="2026-01-01")
    with pytest.raises(QuotaUsed):
        records.admit(make("a5", sha="b" * 64), name_key="m", quota=2, since="2026-01-01")
    assert sorted(s.id for s in records.list()) == ["a1", "a4"]


def test_admit_is_one_transaction_under_concurrency(records):
    """Eight threads race for a quota of 3 (and one name): exactly 3 are recorded."""
    outcomes = []

    def one(i: int) -> None:
        try:
            records.admit(make(f"r{i}", sha=f"{i:064x}"), name_key="m", quota=3, since="2026-01-01")
            outcomes.append("ok")
        except QuotaUsed:
            outcomes.append("quota")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] * 3 + ["quota"] * 5 and len(records.list()) == 3


def test_withdraw_then_publish_again(tmp_path):
    store = LocalDatasetStore(tmp_path / "store")
    record = {
        "submission_id": "s1",
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": "m",
        "model_link": "",
        "description": "",
        "source": "predictions file",
        "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "provenance": {},
        "timings": {},
        "n_items": 1,
        "metrics": {
            "metric": "accuracy",
            "total": {"accuracy": {"value": 1.0, "ci95": [0.5, 1.0], "n": 1}},
            "tiers": {},
        },
    }
    first = store.publish(record)
    assert store.publish(record) == first  # a retried job publishes once
    assert set(store.scores()["submission_id"]) == {"s1"}
    withdrawn = store.withdraw("s1", "Withdraw result s1")
    assert withdrawn and "s1" not in set(store.scores()["submission_id"])
    assert "s1" in set(store.scores(first)["submission_id"])  # the older version keeps it
    assert store.withdraw("s1", "again") is None
    assert store.current_record("s1") is None
    again = store.publish(record)
    assert again not in (first, withdrawn) and store.current_record("s1") == record


def test_comparisons_are_counted_per_identity_and_suite_in_one_transaction(records):
    identities = IdentityStore(records)
    since = "2026-01-01T00:00:00.000+00:00"
    # the count before each call; from the limit on, nothing more is taken
    assert [identities.take_comparison("alice", "recentering", 2, since) for _ in range(4)] == [
        0,
        1,
        2,
        2,
    ]
    assert identities.take_comparison("alice", "prefeval", 2, since) == 0  # another suite
    assert identities.take_comparison("bob", "recentering", 2, since) == 0  # another identity
    assert identities.take_comparison("alice", "recentering", 2, "2999-01-01") == 0  # a new day

    # 16 concurrent callers, a limit of 5: exactly 5 are taken (check and insert are one write)
    seen: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: seen.append(identities.take_comparison("carol", "recentering", 5, since))
        )
        for _ in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == [0, 1, 2, 3, 4] + [5] * 11
