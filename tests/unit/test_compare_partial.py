"""Which runs a hidden split's comparison refuses as partial (submissions/compare.py is_partial)."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluator.registry import get_task
from submissions.compare import is_partial

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from board_fixture import finished_run  # noqa: E402


def test_a_run_that_skipped_items_is_partial_as_a_limited_one_is():
    """A model run that scored fewer items than the split holds (items n/a: prompts over its
    context window) is partial though it had no limit; the typed result (the record's metrics)
    holds no split counts, so this was read from a key it never had and passed as full."""
    full = len(get_task("prefeval", "mcq").load_split().items)
    assert not is_partial(finished_run(full))
    assert is_partial(finished_run(full - 1))
    assert is_partial(finished_run(10, limit=10))
    assert not is_partial(finished_run(full, kind="predictions"))
