"""The results dataset carries the board: after publishes into a real store (the local folder, and the
Hub store against tests/hub_server.py), `datasets.load_dataset(<folder or repo>, "board-<suite>-<task>")`
reads a table with exactly the columns of the API's download of that task, and per setting the same
rows, ranks, rank groups and reference-line verdicts as the API's download of that setting.

Boards are rewritten in batches (leaderboard/boards.py): a publish marks its task's board lagging in
boards/stale.json, and the publisher (the outbox's drain) rewrites the lagging boards once the oldest
missing change is old enough; a named release always carries current boards."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from board_fixture import SUITE, TASK, board_record, board_records, minimal_record  # noqa: E402
from hub_server import TEST_TOKEN  # noqa: E402

from evaluator.hub import DatasetRepo  # noqa: E402
from leaderboard.board import manifest_tier_order  # noqa: E402
from leaderboard.boards import (  # noqa: E402
    STALE_PATH,
    board_path,
    board_tasks,
    config_name,
    lagging,
    normalise,
    rebuild,
)
from leaderboard.hub_store import HubDatasetStore  # noqa: E402
from leaderboard.outbox import Outbox  # noqa: E402
from leaderboard.readpath import Filters, LeaderboardCache  # noqa: E402
from leaderboard.result_record import REFERENCE_SETTING  # noqa: E402
from leaderboard.store import LocalDatasetStore, card_is_current, dataset_card  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPO = "personaboard/boards"
OTHER_TASK = "open_ended"


def records() -> list[dict]:
    """Two settings of PrefEval mcq (ranks, a partial run, a second protocol, a copy of another
    row's predictions), then a reference line that puts delta below it, and a row of another task."""
    reminder = [
        board_record("fx-r1", "alpha", 0.85, 0.81, 0.89, setting="reminder", parameters=7e9),
        board_record("fx-r2", "beta", 0.60, 0.55, 0.65, setting="reminder", parameters=135e6),
        board_record(
            "fx-r3",
            "alpha-logprobs",
            0.70,
            0.65,
            0.75,
            setting="reminder",
            parameters=7e9,
            protocol="choice_logprobs",
        ),
        board_record("fx-r4", "copy", 0.60, 0.55, 0.65, setting="reminder"),
        board_record("fx-r5", "copy-again", 0.60, 0.55, 0.65, setting="reminder"),
    ]
    for record in reminder[3:]:
        record["provenance"]["predictions_sha256"] = "c" * 64
    reference = board_record(
        "fx-ref", "majority answer", 0.6, 0.6, 0.6, setting=REFERENCE_SETTING, row_kind="reference"
    )
    reference["source"] = "reference"
    other = minimal_record("fx-other", 0.4)
    other["task"] = OTHER_TASK
    first, rest = board_records()[:2], board_records()[2:]
    return [*first, *reminder[:2], *rest, *reminder[2:], reference, other]


def api_board(store, setting: str | None) -> pd.DataFrame:
    """The API's parquet download of the task (one setting, or all), as the service builds it."""
    table = LeaderboardCache(store, manifest_tier_order).table()
    body = table.body(Filters(suite=SUITE, task=TASK, setting=setting), "parquet").content
    return pd.read_parquet(io.BytesIO(body))


def api_setting_rows(store, setting: str) -> pd.DataFrame:
    """The API's download of one setting less the task's reference lines, which it lists in every
    setting and the dataset's file once, under their own setting: what the file holds of it."""
    api = api_board(store, setting)
    if setting != REFERENCE_SETTING:
        assert list(api.loc[api["setting"] == REFERENCE_SETTING, "submission_id"]) == ["fx-ref"]
        api = api[api["setting"] != REFERENCE_SETTING].reset_index(drop=True)
    return normalise(api)


LOAD = textwrap.dedent("""
    import json, sys, datasets
    kwargs = {"token": sys.argv[3]} if len(sys.argv) > 3 else {}
    table = datasets.load_dataset(sys.argv[1], sys.argv[2], split="train", **kwargs)
    sys.stdout.write(table.to_pandas().to_json(orient="split"))
""")


def load_dataset(where: str, config: str, tmp_path: Path, **env) -> pd.DataFrame:
    """datasets.load_dataset in a process of its own (a fresh cache: nothing read before answers)."""
    args = [sys.executable, "-c", LOAD, where, config] + (
        [TEST_TOKEN] if "HF_ENDPOINT" in env else []
    )
    run_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_DATASETS_CACHE": str(tmp_path / "datasets-cache"),
        **env,
    }
    out = subprocess.run(args, env=run_env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return pd.read_json(io.StringIO(out.stdout), orient="split", dtype=False)


def assert_same_board(loaded: pd.DataFrame, store) -> None:
    everything = api_board(store, None)
    assert list(loaded.columns) == list(everything.columns)  # the download's columns, in order
    assert set(loaded["setting"]) == {"zero_shot", "reminder", REFERENCE_SETTING}
    for setting, rows in loaded.groupby("setting", sort=False):
        api = api_setting_rows(store, str(setting))
        mine = normalise(rows[api.columns].reset_index(drop=True))
        assert list(mine["submission_id"]) == list(api["submission_id"]), setting
        for column in ("rank", "rank_group", "above_reference", "rank_among", "duplicate_of"):
            assert [None if pd.isna(v) else v for v in mine[column]] == [
                None if pd.isna(v) else v for v in api[column]
            ], (setting, column)
        pd.testing.assert_frame_equal(mine, api, check_dtype=False)
    by_id = loaded.set_index("submission_id")
    # what the ranking says, spelled out: a reader of the dataset gets it without re-ranking
    assert by_id.loc["fx-alpha", "rank"] == 1 and by_id.loc["fx-gamma", "rank"] == 2
    assert by_id.loc["fx-r1", "rank"] == 1 and by_id.loc["fx-r1", "above_reference"] is True
    assert by_id.loc["fx-delta", "above_reference"] is False
    assert pd.isna(by_id.loc["fx-delta", "rank"])
    assert by_id.loc["fx-r3", "rank_among"] == "choice_logprobs"
    assert by_id.loc["fx-r5", "duplicate_of"] == "copy (reminder)"
    assert by_id.loc["fx-alpha", "model_type"] == "generative" and by_id.loc["fx-alpha", "size"]


@pytest.fixture
def online(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


def publish_all(store, tmp_path: Path, read_file) -> None:
    """Publish the records through the publisher: the boards lag while the refresh is not due,
    and the first drain after it is due writes them all, in one commit of their own."""
    patient = Outbox(tmp_path / "outbox", store, boards_every_s=3600)
    for record in records():
        patient.put("result", {"record": record, "request": None})
    assert patient.drain() == len(records())
    head = store.head_revision()
    assert lagging(read_file(STALE_PATH, head)).keys() == {
        f"{SUITE}/{TASK}",
        f"{SUITE}/{OTHER_TASK}",
    }
    assert not any(board_tasks(store_paths(store, head)))  # no board written yet
    due = Outbox(tmp_path / "outbox", store, boards_every_s=0)
    assert due.drain() == 0  # nothing to publish; the boards are due
    refreshed = store.head_revision()
    assert [(v.revision, v.message) for v in store.versions()[:2]] == [
        (refreshed, f"Boards: refresh {SUITE}/{TASK}, {SUITE}/{OTHER_TASK}"),
        (head, f"Add result fx-other ({SUITE}/{OTHER_TASK})"),
    ]
    assert lagging(read_file(STALE_PATH, refreshed)) == {}
    assert due.drain() == 0 and store.head_revision() == refreshed  # nothing more to refresh


def store_paths(store, revision: str) -> list[str]:
    if isinstance(store, LocalDatasetStore):
        return list(store._blobs(revision, "boards"))
    return store.repo.files(revision, "boards")


def check_store(store, read_file, where: str, tmp_path: Path, **env) -> None:
    head = store.head_revision()
    card = read_file("README.md", head).decode()
    assert card == dataset_card([(SUITE, TASK), (SUITE, OTHER_TASK)]) and card_is_current(
        card.encode()
    )
    loaded = load_dataset(where, config_name(SUITE, TASK), tmp_path, **env)
    assert_same_board(loaded, store)
    # the file the publishes left (each ranking only its own setting) is the board ranked afresh
    stored = pd.read_parquet(io.BytesIO(read_file(board_path(SUITE, TASK), head)))
    pd.testing.assert_frame_equal(normalise(stored), rebuild(store.scores(), SUITE, TASK))

    # a publish into another task leaves this task's board as it was (only the lagging one is
    # rewritten)
    before = read_file(board_path(SUITE, TASK), head)
    other = minimal_record("fx-other-2", 0.3)
    other["task"] = OTHER_TASK
    store.publish(other)
    assert store.refresh_boards() is not None
    assert store.versions()[0].message == f"Boards: refresh {SUITE}/{OTHER_TASK}"
    assert read_file(board_path(SUITE, TASK), store.head_revision()) == before

    # a withdrawn result leaves the board at the next refresh; the rest is ranked as the API ranks it
    store.withdraw("fx-alpha", "Withdraw fx-alpha")
    assert lagging(read_file(STALE_PATH, store.head_revision())).keys() == {f"{SUITE}/{TASK}"}
    store.refresh_boards()
    stored = pd.read_parquet(io.BytesIO(read_file(board_path(SUITE, TASK), store.head_revision())))
    assert "fx-alpha" not in set(stored["submission_id"])
    api = api_setting_rows(store, "zero_shot")
    mine = normalise(stored[stored["setting"] == "zero_shot"][api.columns].reset_index(drop=True))
    pd.testing.assert_frame_equal(mine, api, check_dtype=False)
    assert mine.set_index("submission_id").loc["fx-beta", "rank"] == 1

    # a named release carries current boards, whatever the interval: in its own commit
    store.publish(board_record("fx-late", "late", 0.99, 0.98, 1.0))
    release = store.release("boards-1")
    assert lagging(read_file(STALE_PATH, release.revision)) == {}
    stored = pd.read_parquet(io.BytesIO(read_file(board_path(SUITE, TASK), release.revision)))
    assert stored.set_index("submission_id").loc["fx-late", "rank"] == 1


def test_the_local_dataset_carries_each_tasks_board(tmp_path):
    store = LocalDatasetStore(tmp_path / "results-dataset")

    def read_file(path: str, revision: str) -> bytes:
        return store._show(revision, path)

    publish_all(store, tmp_path, read_file)

    check_store(store, read_file, str(store.root), tmp_path)


def test_the_hub_dataset_carries_each_tasks_board(hub_server, tmp_path, online):
    store = HubDatasetStore(DatasetRepo(REPO, TEST_TOKEN, hub_server.url, tmp_path / "hub-cache"))

    def read_file(path: str, revision: str) -> bytes:
        data = store.repo.read(path, revision)
        assert data is not None, path
        return data

    publish_all(store, tmp_path, read_file)

    env = {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": hub_server.url, "HF_HOME": str(tmp_path / "hf")}
    check_store(store, read_file, REPO, tmp_path, **env)
