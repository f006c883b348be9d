"""An installed split's gold positions cannot be recomputed from the public seed and inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.registry import get_suite, get_task
from evaluator.split_install import install
from evaluator.splits import SECRET_FILE, installed_dir
from evaluator.suite import clear_split_cache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "splits"


@pytest.fixture
def splits_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "splits"))
    clear_split_cache()
    yield tmp_path / "splits"
    clear_split_cache()


def test_personafeedback_positions_follow_the_installation_secret(splits_dir):
    suite, task = get_suite("personafeedback"), get_task("personafeedback", "binary_choice")
    public_guess = task.hooks.build_items(
        task, FIXTURES / "personafeedback"
    )  # what anyone can compute
    install(suite, str(FIXTURES / "personafeedback"))
    secret = (installed_dir(suite) / SECRET_FILE).read_text()
    assert len(secret) == 32 and (installed_dir(suite) / SECRET_FILE).stat().st_mode & 0o077 == 0
    installed = task.load_split().items
    assert [i.id for i in installed] == [i.id for i in public_guess]
    # 24 items: matching every position by chance has probability 2**-24
    assert [i.gold for i in installed] != [i.gold for i in public_guess]
    # the public inputs never carry the salt
    assert all(secret not in str(i.public) for i in installed)

    # reinstalling the same data keeps the salt: the same split, the same hash
    first_hash = task.load_split().sha256
    install(suite, str(FIXTURES / "personafeedback"))
    assert (installed_dir(suite) / SECRET_FILE).read_text() == secret
    assert task.load_split().sha256 == first_hash


def test_status_does_not_show_the_secret(splits_dir):
    suite = get_suite("realpref")
    install(suite, str(FIXTURES / "realpref"))
    secret = (installed_dir(suite) / SECRET_FILE).read_text()
    assert secret not in str(suite.split_status()) and secret not in str(suite.describe())
