"""Which runs a hidden split's comparison refuses as partial (submissions/compare.py is_partial)."""

from __future__ import annotations

from evaluator.registry import get_task
from submissions.compare import is_partial
from submissions.records import Submission


def _run(kind: str, scored: int, limit: int | None = None) -> Submission:
    return Submission(
        id="s1",
        created_at="2026-01-01T00:00:00+00:00",
        kind=kind,
        suite="prefeval",
        task="mcq",
        setting="zero_shot",
        model_name="m",
        state="finished",
        progress_done=scored,
        progress_total=scored,
        details={"limit": limit} if kind == "model" else None,
    )


def test_a_run_that_skipped_items_is_partial_as_a_limited_one_is():
    """A model run that scored fewer items than the split holds (items n/a: prompts over its
    context window) is partial though it had no limit; the typed result (the record's metrics)
    holds no split counts, so this was read from a key it never had and passed as full."""
    full = len(get_task("prefeval", "mcq").load_split().items)
    assert not is_partial(_run("model", full))
    assert is_partial(_run("model", full - 1))
    assert is_partial(_run("model", 10, limit=10))
    assert not is_partial(_run("predictions", full))
