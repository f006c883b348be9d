"""The first screen of a new server: with no verified rows anywhere, a task whose split this server
has (PrefEval's is bundled) rather than one showing only the papers' numbers."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from board_fixture import board_record  # noqa: E402

from evaluator.registry import all_suites  # noqa: E402
from evaluator.splits import SplitNotInstalled, split_files  # noqa: E402
from leaderboard.store import LocalDatasetStore  # noqa: E402
from space import data  # noqa: E402


def _services(store):
    return SimpleNamespace(results=store, records=SimpleNamespace(withdrawn_ids=lambda: []))


def _installed(suite: str) -> bool:
    try:
        split_files(all_suites()[suite])
    except SplitNotInstalled:
        return False
    return True


def test_a_new_server_opens_on_a_task_it_can_score(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_DATA_DIR", str(tmp_path / "data"))  # nothing installed
    not_installed = [s for s in all_suites() if not _installed(s)]
    assert not_installed, "every split is bundled: this test would check nothing"
    suite, task, _ = data.default_board(_services(LocalDatasetStore(tmp_path / "results")))
    assert suite not in not_installed and _installed(suite), (suite, task)


def test_verified_rows_still_decide_first(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_DATA_DIR", str(tmp_path / "data"))
    store = LocalDatasetStore(tmp_path / "results")
    store.publish(board_record("v-alpha", "alpha", 0.8, 0.7, 0.9))
    expected = store.scores()
    suite, task, _ = data.default_board(_services(store))
    assert (suite, task) == (expected["suite"].iloc[0], expected["task"].iloc[0])
