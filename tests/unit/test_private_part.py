"""The private part of a hidden split (evaluator/splits.py private_item_ids, scoring, and
submissions/private_part.py): divided per tier by the installation's secret, scored apart, kept
out of every released result, published once when the operator names a release."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from evaluator import release
from evaluator.registry import get_suite, get_task
from evaluator.scoring import score_answers
from evaluator.split_install import install
from evaluator.splits import SECRET_FILE, installed_dir, private_fraction, private_item_ids
from evaluator.suite import clear_split_cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from board_fixture import minimal_record  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "splits" / "recentering"
N = 120


def hidden_copy(folder: Path, seed: int = 3) -> dict[str, str]:
    """The recentering fixture without its PUBLIC marker, relevance grown to N items."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(FIXTURE, folder)
    (folder / "PUBLIC").unlink()
    rng, gold, lines = random.Random(seed), {}, []
    for i in range(N):
        votes = [rng.choice(("YES", "NO")) for _ in range(3)]
        gold[f"p{i:03d}"] = "YES" if votes.count("YES") >= 2 else "NO"
        lines.append(
            json.dumps(
                {"id": f"p{i:03d}", "prompt": f"Prompt {i}.", "attribute": "A.", "votes": votes}
            )
        )
    (folder / "relevance.jsonl").write_text("\n".join(lines) + "\n")
    return gold


@pytest.fixture
def hidden(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "splits"))
    clear_split_cache()
    gold = hidden_copy(tmp_path / "src")
    install(get_suite("recentering"), str(tmp_path / "src"))
    yield get_task("recentering", "relevance"), gold, tmp_path
    clear_split_cache()


def test_half_of_every_tier_follows_the_installation_secret(hidden):
    task, gold, tmp_path = hidden
    assert task.suite.split_hidden and private_fraction(task.suite) == 0.5
    items = task.load_split().items
    chosen = private_item_ids(task)
    assert len(chosen) == N // 2
    for tier in ("unanimous", "split"):
        members = [i.id for i in items if i.tiers["agreement"] == tier]
        assert len(chosen & set(members)) == round(len(members) / 2)  # stratified by tier
    # another installation (another secret) divides differently: nobody outside can compute it
    (installed_dir(task.suite) / SECRET_FILE).unlink()
    install(get_suite("recentering"), str(tmp_path / "src"))
    clear_split_cache()
    assert private_item_ids(task) != chosen and len(private_item_ids(task)) == N // 2


def test_live_scores_read_the_public_part_and_the_private_part_never_leaves(hidden):
    task, gold, _ = hidden
    split = task.load_split()
    private = private_item_ids(task)
    # right on every private item, wrong on every public one
    answers = {
        i.id: gold[i.id] if i.id in private else ("NO" if gold[i.id] == "YES" else "YES")
        for i in split.items
    }
    metrics = score_answers(task, split, answers)
    assert metrics["n_items"] == N // 2 and metrics["parts"] == {"public": 60, "private": 60}
    assert metrics["total"]["accuracy"]["value"] == 0.0
    assert metrics["private"]["total"]["accuracy"]["value"] == 1.0
    released = release.released_metrics(metrics)
    assert "private" not in released and "1.0" not in json.dumps(released["total"])


def test_a_named_release_publishes_each_private_score_once(tmp_path):
    from leaderboard.store import LocalDatasetStore
    from submissions.private_part import keep, release_private_part
    from submissions.records import Submission, SubmissionStore

    records = SubmissionStore(tmp_path / "s.sqlite3")
    store = LocalDatasetStore(tmp_path / "results")
    for sid, value in (("r1", 0.6), ("r2", 0.7), ("gone", 0.5)):
        records.add(
            Submission(
                id=sid,
                created_at="2026-11-25T00:00:00+00:00",
                kind="predictions",
                suite="prefeval",
                task="mcq",
                setting="zero_shot",
                model_name=sid,
                state="finished",
            )
        )
        if sid != "gone":  # "gone": withdrawn meanwhile, its private score stays here
            store.publish(minimal_record(sid, value, n=100))
        stats = {"value": value + 0.13, "ci95": [value + 0.03, value + 0.23], "n": 100}
        keep(records, sid, {"metric": "accuracy", "total": {"accuracy": stats}, "n_items": 100})
    assert release_private_part(records, store, "final-1") == ["r1", "r2"]
    shown = store.current_record("r2")["metrics"]["tiers"]["part"]
    assert shown["private"]["accuracy"]["value"] == 0.8  # 0.83 rounded to the 0.1 step of 100
    assert shown["public"]["accuracy"]["value"] == 0.7
    assert release_private_part(records, store, "final-2") == []  # once
