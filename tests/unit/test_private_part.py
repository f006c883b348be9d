"""The private part of a hidden split (evaluator/splits.py private_item_ids, scoring, and
submissions/private_part.py): divided per tier by the installation's secret, scored apart, kept
out of every released result, published once when the operator names a release."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from evaluator import release
from evaluator.registry import get_suite, get_task
from evaluator.scoring import score_answers
from evaluator.split_install import install
from evaluator.splits import SECRET_FILE, installed_dir, private_fraction, private_item_ids
from evaluator.suite import clear_split_cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from board_fixture import minimal_record  # noqa: E402
from hidden_splits import personafeedback_cells, realpref_copies  # noqa: E402

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
    metrics = store.current_record("r2")["metrics"]
    shown = metrics["tiers"]["part"]
    # 0.83 on the 0.1 step of 100 items, dithered: 0.8 or 0.9; the total is now the private score
    assert shown["private"]["accuracy"]["value"] in (0.8, 0.9)
    assert metrics["total"]["accuracy"] == shown["private"]["accuracy"]
    assert shown["public"]["accuracy"]["value"] == 0.7  # the live number, kept beside it
    assert metrics["release"]["part"] == "private"
    assert metrics["release"]["release_name"] == "final-1"
    assert release_private_part(records, store, "final-2") == []  # once


# -- RealPref and PersonaFeedback: their manifests declare a private part too ----------------------

SPLITS = Path(__file__).resolve().parents[1] / "fixtures" / "splits"


def realpref_hidden(folder: Path, copies: int = 4) -> None:
    """The RealPref fixture (2 users) as `copies` x 2 users, hidden (tests/hidden_splits.py)."""
    realpref_copies(folder, copies)


def personafeedback_hidden(folder: Path, per_cell: int = 20) -> None:
    """The PersonaFeedback fixture grown to `per_cell` items per type/difficulty cell, hidden."""
    personafeedback_cells(folder, per_cell)


@pytest.fixture
def splits_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "splits"))
    clear_split_cache()
    yield tmp_path
    clear_split_cache()


def user_of(item) -> str:
    return item.unit[0]


def test_realpref_divides_whole_users_and_the_same_users_in_every_task(splits_dir):
    realpref_hidden(splits_dir / "src")
    info = install(get_suite("realpref"), str(splits_dir / "src"))
    private_users = None
    for name in ("mcq", "true_false", "open_ended"):
        task = get_task("realpref", name)
        assert task.suite.split_hidden and private_fraction(task.suite) == 0.5
        items = task.load_split().items
        private = private_item_ids(task)
        users = {user_of(i) for i in items}
        chosen = {user_of(i) for i in items if i.id in private}
        # whole users: none of a private user's items is public (its preferences' gold is shared by
        # 24 items, and its multiple-choice options are its true/false statements)
        assert {i.id for i in items if user_of(i) in chosen} == private
        assert len(users) == 8 and len(chosen) == 4
        private_users = private_users or chosen
        assert chosen == private_users  # the same users in every task
        # every user spans every expression type and context configuration: each tier is divided
        # as the whole is
        for group in ("expression", "context"):
            for tier in task.tier_group(group).tiers:
                members = [i for i in items if i.tiers[group] == tier]
                share = sum(i.id in private for i in members) / len(members)
                assert share == pytest.approx(len(private) / len(items))
        parts = info["tasks"][name]["parts"]
        assert parts == {**parts, "public": len(items) - len(private), "private": len(private)}


def test_personafeedback_halves_every_cell_and_small_public_tiers_are_withheld(splits_dir):
    personafeedback_hidden(splits_dir / "src", per_cell=20)
    info = install(get_suite("personafeedback"), str(splits_dir / "src"))
    task = get_task("personafeedback", "binary_choice")
    assert task.suite.split_hidden and private_fraction(task.suite) == 0.5
    split = task.load_split()
    private = private_item_ids(task)
    assert len(split.items) == 120 and len(private) == 60
    for cell in task.tier_group("cell").tiers:
        members = {i.id for i in split.items if i.tiers["cell"] == cell}
        assert len(members & private) == 10  # stratified: half of each cell
    assert info["tasks"]["binary_choice"]["parts"] == {
        "public": 60,
        "private": 60,
        # 10 public items per cell and 30 per type: below the release minimum of 50
        "public_tiers_under_min": sorted(
            [f"cell/{c}" for c in task.tier_group("cell").tiers] + ["type/specific", "type/general"]
        ),
    }
    answers = {item.id: item.gold for item in split.items}  # all right
    metrics = score_answers(task, split, answers)
    assert metrics["parts"] == {"public": 60, "private": 60}
    # a type tier of 60 items would be released whole; its public 30 items are not
    assert metrics["tiers"]["type"]["specific"]["accuracy"]["n"] == 30
    released = release.released_metrics(metrics)
    assert released["tiers"] == {} and released["total"]["accuracy"]["n"] == 60
    assert "private" not in released


@pytest.mark.parametrize(
    ("suite", "task_name", "build"),
    [
        ("realpref", "mcq", realpref_hidden),
        ("realpref", "true_false", realpref_hidden),
        ("personafeedback", "binary_choice", personafeedback_hidden),
    ],
)
def test_live_scores_are_of_the_public_part_and_a_release_reranks_on_the_private_part(
    splits_dir, suite, task_name, build
):
    """Right on every private item and wrong on every public one: 0 live, 1 once released."""
    from leaderboard.store import LocalDatasetStore
    from submissions.private_part import keep, release_private_part
    from submissions.records import Submission, SubmissionStore

    build(splits_dir / "src")
    install(get_suite(suite), str(splits_dir / "src"))
    task = get_task(suite, task_name)
    split = task.load_split()
    private = private_item_ids(task)
    labels = task.answer_labels

    def wrong(gold):
        return next(label for label in labels if label != gold)

    answers = {i.id: i.gold if i.id in private else wrong(i.gold) for i in split.items}
    metrics = score_answers(task, split, answers)
    assert metrics["n_items"] == len(split.items) - len(private) >= release.MIN_ITEMS
    assert metrics["total"]["accuracy"]["value"] == 0.0
    assert metrics["private"]["total"]["accuracy"]["value"] == 1.0
    released = release.released_metrics(metrics)
    assert "private" not in released and "1.0" not in json.dumps(released["total"])

    records = SubmissionStore(splits_dir / "s.sqlite3")
    store = LocalDatasetStore(splits_dir / "results")
    records.add(
        Submission(
            id="r1",
            created_at="2026-11-25T00:00:00+00:00",
            kind="predictions",
            suite=suite,
            task=task_name,
            setting="zero_shot",
            model_name="m",
            state="finished",
        )
    )
    record = minimal_record("r1", 0.0, n=metrics["n_items"])
    record["metrics"] = {"metric": "accuracy", "total": released["total"], "tiers": {}}
    store.publish(record)
    keep(records, "r1", metrics["private"])
    assert release_private_part(records, store, "final-1") == ["r1"]
    shown = store.current_record("r1")["metrics"]["tiers"]["part"]
    assert shown["public"]["accuracy"]["value"] == 0.0
    assert shown["private"]["accuracy"]["value"] == 1.0


def test_a_remote_workers_private_score_is_kept_by_the_web_node_and_leaves_the_stream(
    tmp_path, redis_server
):
    """The worker's side (RemoteLedger) and the web node's (EventFolder) over a real Redis: the
    private score is kept in the web node's records, released by a named release, and no copy is
    left in the event stream. (tests/test_remote_worker.py runs it through a worker process.)"""
    import redis

    from leaderboard.store import LocalDatasetStore
    from submissions.private_part import pending, release_private_part
    from submissions.records import Submission, SubmissionStore
    from submissions.remote import EVENTS, EventFolder, RemoteLedger

    submission = Submission(
        id="w1",
        created_at="2026-11-25T00:00:00+00:00",
        kind="model",
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name="m",
        state="running",
    )
    records = SubmissionStore(tmp_path / "s.sqlite3")
    records.add(submission)
    store = LocalDatasetStore(tmp_path / "results")
    connection = redis.Redis.from_url(redis_server)
    ledger = RemoteLedger(connection, {**submission.__dict__})
    private = {
        "metric": "accuracy",
        "total": {"accuracy": {"value": 0.7345, "ci95": [0.64, 0.82], "n": 100}},
        "n_items": 100,
    }
    ledger.keep_private("w1", {"metric": "accuracy", "total": None})  # malformed: dropped
    ledger.keep_private("w1", private)
    ledger.update("w1", state="finished")
    assert EventFolder(connection, records).fold(block_ms=10) == 3
    kept = pending(records)
    assert [(r["submission_id"], json.loads(r["stats"])["value"]) for r in kept] == [("w1", 0.7345)]
    assert records.get("w1").state == "finished"
    left = repr(connection.xrange(EVENTS))
    assert connection.xlen(EVENTS) == 1 and "0.7345" not in left and "private" not in left
    store.publish(minimal_record("w1", 0.6, n=100))
    assert release_private_part(records, store, "final-1") == ["w1"]
    shown = store.current_record("w1")["metrics"]["tiers"]["part"]["private"]["accuracy"]
    assert shown["value"] == 0.7  # rounded to the 0.1 step of 100 items


@pytest.mark.model
def test_a_smoke_run_draws_its_limit_from_the_public_part(hidden):
    """`limit` items of the public part: the 50 a hidden split releases from are 50 live items
    (drawn from the whole split, about half would be private and the run withheld)."""
    from tiny_models import build_tiny_model

    from evaluator.backends import ModelSpec, load_backend
    from evaluator.model_eval import run_model

    task, _, tmp_path = hidden
    folder = build_tiny_model(tmp_path / "tiny", "generative", seed=3)
    backend = load_backend(ModelSpec("tiny", str(folder), "generative", "r0"), device="cpu")
    run = run_model(task, "zero_shot", backend, protocol="choice_logprobs", limit=50)
    ran = {item.id for item in run.split.items}
    assert len(ran) == 50 and not ran & private_item_ids(task)
    metrics = score_answers(task, run.split, run.answers)
    assert metrics["n_items"] == release.MIN_ITEMS and "private" not in metrics


def test_realpref_open_ended_is_judged_on_the_public_part_live(splits_dir):
    """The judge-scored task too: every item is judged, the live means are of the public part, the
    private part's mean of the primary rubric is kept apart (the scripted judge of the RealPref
    suite's tests rates private items' answers 5 and public ones 1)."""
    from test_suite_realpref import WritingJudge

    from evaluator.judge import Judge

    realpref_hidden(splits_dir / "src", copies=2)
    install(get_suite("realpref"), str(splits_dir / "src"))
    task = get_task("realpref", "open_ended")
    split = task.load_split()
    private = private_item_ids(task)
    answers = {i.id: f"answer to {i.id}" for i in split.items}

    def script(rubric, response, attempt):
        return f"Score: {5 if response.removeprefix('answer to ') in private else 1}\nRationale: -"

    metrics = score_answers(task, split, answers, Judge("judge-x", "r1", WritingJudge(script)))
    assert metrics["metric"] == "alignment"
    assert metrics["parts"] == {"public": len(split.items) - len(private), "private": len(private)}
    assert metrics["total"]["alignment"]["value"] == 1.0
    assert metrics["total"]["quality"]["value"] == 1.0
    assert metrics["private"]["total"] == {"alignment": metrics["private"]["total"]["alignment"]}
    assert metrics["private"]["total"]["alignment"]["value"] == 5.0
    released = release.released_metrics(metrics)
    assert "private" not in released and "5.0" not in json.dumps(released)


def test_a_release_board_ranks_on_the_private_part_and_says_so():
    """Rows built to disagree: live, the board ranks by the public part; the
    rows a named release published rank by their private part, the board says which part ranks
    it, and a row released since stays on its public part, said as such."""
    from leaderboard.board import model_facts, ranked_board
    from leaderboard.table import records_to_scores
    from space.board_view import render_board
    from submissions.private_part import with_private_score

    def live(sid: str, public: float) -> dict:
        record = minimal_record(sid, public, n=100)
        one = release.released_metrics(
            {
                "metric": "accuracy",
                "n_items": 100,
                "total": {
                    "accuracy": {"value": public, "ci95": [public - 0.1, public + 0.1], "n": 100}
                },
                "tiers": {},
            }
        )
        record.update(suite="recentering", task="relevance")
        record["metrics"] = {k: one[k] for k in ("metric", "total", "tiers", "release")}
        return record

    def private(value: float) -> dict:
        stats = {"value": value, "ci95": [value - 0.08, value + 0.08], "n": 100}
        return release.release_private(stats, "accuracy", 100, (0.0, 0.0, 0.0))

    def board(records):
        return ranked_board(
            records_to_scores(records), model_facts(records), "recentering", "relevance"
        )[0]

    rows = [live("public-strong", 0.9), live("private-strong", 0.6)]
    shown = board(rows)
    assert shown["model_name"].tolist() == ["model-public-strong", "model-private-strong"]
    assert set(shown["ranked_on"]) == {"public"}
    assert "Live: ranked on the hidden split" in render_board(
        shown, pd.DataFrame(columns=["submission_id", "column", "ci_low", "ci_high", "n"])
    )

    released = [
        with_private_score(rows[0], private(0.1), "final-1"),
        with_private_score(rows[1], private(0.8), "final-1"),
    ]
    shown = board(released)
    assert shown["model_name"].tolist() == ["model-private-strong", "model-public-strong"]
    assert set(shown["ranked_on"]) == {"private"}
    assert shown["part/public"].tolist() == [0.6, 0.9] and shown["total"].tolist() == [0.8, 0.1]
    assert shown["rank"].tolist() == [1, 2]  # [0.7, 0.9] above [0.0, 0.2]
    no_cells = pd.DataFrame(columns=["submission_id", "column", "ci_low", "ci_high", "n"])
    assert "board of record" in render_board(shown, no_cells)

    shown = board([*released, live("newer", 0.95)])
    assert dict(zip(shown["model_name"], shown["ranked_on"]))["model-newer"] == "public"
    assert "2 row(s) ranked on the private part" in render_board(shown, no_cells)


def test_a_whole_run_on_a_split_with_a_private_part_is_not_partial(hidden):
    """A finished run records the items scored, the public part's on such a split
    (score_answers): a hidden comparison takes a whole run as whole, one that skipped an item as
    partial (submissions/compare.py is_partial)."""
    from board_fixture import finished_run

    from submissions.compare import is_partial

    task, gold, _ = hidden
    scored = score_answers(task, task.load_split(), gold)["n_items"]
    assert scored < len(task.load_split().items)  # the private part is not counted
    whole = finished_run(scored, limit=None, suite="recentering", task="relevance")
    assert not is_partial(whole)
    assert is_partial(finished_run(scored - 1, suite="recentering", task="relevance"))
