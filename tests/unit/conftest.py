"""Fixtures for the fast unit tests (no Redis, no servers)."""

from __future__ import annotations

import pytest
from unit_helpers import item, make_task

from evaluator import suite as suite_module
from evaluator.suite import TierGroup


@pytest.fixture
def tiny_task():
    """4 items; form tiers x (3 items) / y (1 item); topic tiers t1 (2) / t2 (2)."""
    groups = (
        TierGroup("form", "Form", ("x", "y"), {}),
        TierGroup("topic", "Topic", ("t1", "t2"), {}),
    )
    items = [
        item("q1", "A", form="x", topic="t1"),
        item("q2", "B", form="x", topic="t1"),
        item("q3", "C", form="x", topic="t2"),
        item("q4", "D", form="y", topic="t2"),
    ]
    task = make_task(items, groups)
    yield task
    suite_module._SPLIT_CACHE.pop(task.key, None)
