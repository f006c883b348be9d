"""The leaderboard tab's versions (space/data.py): what the Version selector offers, and an older
version's board inputs, on a real local results store."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from board_fixture import board_record  # noqa: E402

from leaderboard.store import LocalDatasetStore, StoreError  # noqa: E402
from space import data  # noqa: E402


class CountingStore(LocalDatasetStore):
    """The local store, counting the calls a page load would make."""

    calls = 0

    def releases(self):
        CountingStore.calls += 1
        return super().releases()


@pytest.fixture
def services(tmp_path):
    store = CountingStore(tmp_path / "results")
    withdrawn: list[str] = []
    store.publish(board_record("v-alpha", "alpha", 0.8, 0.7, 0.9))
    store.publish(board_record("v-beta", "beta", 0.6, 0.5, 0.7))
    store.release("first-two", notes="alpha and beta")
    store.publish(board_record("v-gamma", "gamma", 0.4, 0.3, 0.5))
    return SimpleNamespace(
        results=store,
        records=SimpleNamespace(withdrawn_ids=lambda: list(withdrawn)),
        withdrawn=withdrawn,
    )


def test_choices_are_latest_then_releases_then_recent_revisions(services):
    store = services.results
    choices = data.version_choices(services)
    values = [value for _, value in choices]
    assert values[0] == data.LATEST and values[1] == "first-two"
    # every older revision, newest first; the head itself is "latest"
    assert values[2:] == [v.revision for v in store.versions()[1:]]
    assert (
        choices[1][0].startswith("Release first-two (")
        and store.resolve_revision("first-two")[:8] in choices[1][0]
    )
    assert len(data.version_choices(services, limit=1)) == 3  # latest, the release, one revision


def test_choices_are_read_once_per_head(services):
    CountingStore.calls = 0
    data.version_choices(services)
    data.version_choices(services)
    assert CountingStore.calls == 1  # a second page load at the same head asks the store nothing
    services.results.publish(board_record("v-delta", "delta", 0.3, 0.2, 0.4))
    values = [value for _, value in data.version_choices(services)]
    assert CountingStore.calls == 2 and len(values) == len(services.results.versions()) + 1


def test_an_older_version_is_its_own_table_without_withdrawn_results(services):
    scores, _ = data.board_inputs(services, "first-two")
    assert set(scores["submission_id"]) == {"v-alpha", "v-beta"}
    newest, _ = data.board_inputs(services)
    assert "v-gamma" in set(newest["submission_id"])
    services.withdrawn.append(
        "v-beta"
    )  # an operator hid it since: out of every version the pages show
    scores, _ = data.board_inputs(services, "first-two")
    assert set(scores["submission_id"]) == {"v-alpha"}
    with pytest.raises(StoreError):
        data.board_inputs(services, "no-such-release")
