"""Scoring: per-item correctness pooled into micro-averaged metrics per tier, with 95% CIs.

Only aggregates leave this module; the per-item correctness stays here, because together with a
submitter's own answers it would reveal the hidden gold labels.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from evaluator.predictions import iter_lines, read_predictions
from evaluator.suite import Split, Task

SCORER_VERSION = "1.0.0"
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20251122


def accuracy_with_ci(correct: int, n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Accuracy and its 95% percentile-bootstrap interval.

    Resampling n binary outcomes with replacement and taking the mean is distributed exactly as
    Binomial(n, p)/n, so we draw from that instead of materialising B x n resamples: the same
    bootstrap, in O(B) time and memory whatever the split size.
    """
    if n == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    p = correct / n
    draws = rng.binomial(n, p, size=BOOTSTRAP_SAMPLES) / n
    low, high = np.quantile(draws, [0.025, 0.975])
    return {"value": p, "ci95": [float(low), float(high)], "n": n}


def score_answers(task: Task, split: Split, answers: dict[str, str]) -> dict[str, Any]:
    """Aggregate metrics for a complete, validated set of answers."""
    correct = np.fromiter(
        (answers[item.id] == item.gold for item in split.items), dtype=bool, count=len(split.items)
    )
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    tiers: dict[str, dict[str, Any]] = {}
    for group in task.tier_groups:
        position = {tier: i for i, tier in enumerate(group.tiers)}  # a dict lookup, not tuple.index per item
        name = group.name
        codes = np.fromiter(
            (position[item.tiers[name]] for item in split.items), dtype=np.int32, count=len(split.items)
        )
        n_per_tier = np.bincount(codes, minlength=len(group.tiers))
        correct_per_tier = np.bincount(codes, weights=correct, minlength=len(group.tiers))
        tiers[group.name] = {
            tier: {task.metric: accuracy_with_ci(int(correct_per_tier[i]), int(n_per_tier[i]), rng)}
            for i, tier in enumerate(group.tiers)
            if n_per_tier[i]  # a partial run may not reach every tier: no column rather than an empty one
        }
    return {
        "metric": task.metric,
        "total": {task.metric: accuracy_with_ci(int(correct.sum()), len(correct), rng)},
        "tiers": tiers,
        "n_items": len(split.items),
    }


def score_predictions_file(task: Task, path, filename: str | None = None) -> dict[str, Any]:
    """Validate a predictions file and score it: the one entry point the CLI and the workers share."""
    split = task.load_split()
    started = time.perf_counter()
    with open(path, "rb") as stream:
        answers = read_predictions(iter_lines(stream), task, split, filename or str(path))
    result = score_answers(task, split, answers)
    result["split"] = {"name": split.name, "sha256": split.sha256, "n_items": len(split.items)}
    result["suite_version"] = task.suite.version
    result["scorer_version"] = SCORER_VERSION
    result["scoring_seconds"] = time.perf_counter() - started
    return result
