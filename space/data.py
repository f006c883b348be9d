"""What the pages read from the results store, cached per store revision (every publish is a new
revision, so a cache keyed by it is never stale)."""
from __future__ import annotations

import threading

import pandas as pd

from evaluator.registry import all_suites
from leaderboard.board import manifest_tier_order, model_facts  # noqa: F401  (re-exported for the tabs)

_CACHE: dict[str, tuple[str, object]] = {}
_LOCK = threading.Lock()


def _cached(services, name: str, build):
    revision = services.results.head_revision()
    with _LOCK:
        hit = _CACHE.get(f"{id(services)}:{name}")
    if hit and hit[0] == revision:
        return hit[1]
    value = build()
    with _LOCK:
        _CACHE[f"{id(services)}:{name}"] = (revision, value)
    return value


def records(services) -> list[dict]:
    return _cached(services, "records", services.results.records)


def board_inputs(services) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long scores table, model facts per result) at the newest revision."""
    return (_cached(services, "scores", services.results.scores),
            _cached(services, "facts", lambda: model_facts(records(services))))


def default_view(services, suite: str | None = None) -> tuple[str | None, str | None]:
    """The first (suite, task) with verified results, else the first with any rows, else the first
    suite's first task; within `suite` when given."""
    scores, _ = board_inputs(services)
    suites = [suite] if suite else list(all_suites())
    pairs = [(s, t) for s in suites for t in all_suites()[s].tasks]
    for wanted in (scores[scores["row_kind"] == "computed"], scores):
        present = set(zip(wanted["suite"], wanted["task"]))
        found = next((pair for pair in pairs if pair in present), None)
        if found:
            return found
    return pairs[0] if pairs else (None, None)
