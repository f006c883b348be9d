"""Chance and majority lines as leaderboard rows (row_kind `reference`), one pair per multiple-choice task.

Computed by the evaluator from the installed split (evaluator/baselines.py) and published like the
papers' reported rows: idempotently, in one version when anything changed, so they are filterable
and downloadable with the rest, and never ranked above a model.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from evaluator.baselines import reference_lines
from evaluator.registry import all_suites
from leaderboard.result_record import KIND_REFERENCE, REFERENCE_SETTING, make_record

log = logging.getLogger(__name__)

REFERENCE_PREFIX = "reference-"


def _released(task, line: dict[str, Any]) -> dict[str, Any]:
    """On a hidden split the lines go out as any score does there: rounded to the noise level,
    small tiers left out (evaluator/release.py), so the per-tier label distribution stays inside."""
    if not task.suite.split_hidden:
        return line["metrics"]
    from evaluator.release import released_metrics

    released = released_metrics({**line["metrics"], "n_items": line["n_items"]})
    return {k: v for k, v in released.items() if k != "n_items"}


def _row(task, line: dict[str, Any], split_sha: str) -> dict[str, Any]:
    if line["kind"] == "chance":
        name = f"Chance (uniform over {len(task.answer_labels)})"
        description = "Expected score of answering uniformly at random: the mean of the constant answers' scores."
    else:
        name = f"Majority (always {line['label']})"
        description = (
            "The best constant answer on this split: what a model that ignores the input can score."
        )
    key = f"{task.key}|{line['kind']}"
    return make_record(
        **{
            "submission_id": REFERENCE_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16],
            "suite": task.suite.name,
            "task": task.name,
            "setting": REFERENCE_SETTING,
            "model_name": name,
            "model_link": "",
            "description": description,
            "source": "reference line (computed from the split)",
            "row_kind": KIND_REFERENCE,
            "submitted_at": "",
            "provenance": {
                "suite_version": task.suite.version,
                "split": {"sha256": split_sha},
                "line": line["kind"],
            },
            "n_items": line["n_items"],
            "metrics": _released(task, line),
        }
    )


def reference_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for suite in all_suites().values():
        for task in suite.tasks.values():
            try:
                lines = reference_lines(task)
            except Exception as exc:  # a broken split must not stop the service from starting
                log.warning("no reference lines for %s: %s", task.key, exc)
                continue
            if lines:
                sha = task.load_split().sha256
                records.extend(_row(task, line, sha) for line in lines)
    return records


def publish_reference(store) -> str | None:
    """Bring the store's reference rows in line with the installed splits (a version only on change)."""
    return store.sync_group(
        REFERENCE_PREFIX, reference_records(), "Update the chance and majority lines"
    )
