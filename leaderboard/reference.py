"""Chance and majority lines as leaderboard rows (row_kind `reference`), one pair per multiple-choice task.

Computed by the evaluator from the installed split (evaluator/baselines.py) and published like the
papers' reported rows: idempotently, in one version when anything changed, so they are filterable
and downloadable with the rest, and never ranked above a model.

Scoring the constant answers costs seconds of CPU at every start of the web app, for rows that
change only with the split or the scoring code: the rows are kept in the cache folder
(evaluator/settings.py cache_dir) under a key of both, the split's hash (its items and gold) and a
digest of the evaluator's code and manifests, so any change to either computes them again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, cast

import evaluator
from evaluator.baselines import LineMetrics, ReferenceLine, has_reference_lines, reference_lines
from evaluator.registry import all_suites
from evaluator.settings import cache_dir
from leaderboard.result_record import KIND_REFERENCE, REFERENCE_SETTING, RecordData, make_record

log = logging.getLogger(__name__)

REFERENCE_PREFIX = "reference-"


def _released(task, line: ReferenceLine) -> LineMetrics | dict[str, Any]:
    """On a hidden split the lines go out as any score does there: rounded to the noise level,
    small tiers left out (evaluator/release.py), so the per-tier label distribution stays inside."""
    if not task.suite.split_hidden:
        return line["metrics"]
    from evaluator.release import released_metrics

    released = released_metrics({**line["metrics"], "n_items": line["n_items"]})
    return {k: v for k, v in released.items() if k != "n_items"}


def _row(task, line: ReferenceLine, split_sha: str) -> RecordData:
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


def reference_records(cache: Path | None = None) -> list[RecordData]:
    """Every task's reference rows; with `cache` (a folder), read from there when computed before
    for the same split and code, and kept there when computed now."""
    records: list[RecordData] = []
    for suite in all_suites().values():
        for task in suite.tasks.values():
            try:
                if has_reference_lines(task) and task.split_available():
                    records.extend(_task_rows(task, cache))
            except Exception as exc:  # a broken split must not stop the service from starting
                log.warning("no reference lines for %s: %s", task.key, exc)
    return records


def _task_rows(task, cache: Path | None) -> list[RecordData]:
    sha = task.load_split().sha256
    if cache is None:
        return [_row(task, line, sha) for line in reference_lines(task)]
    path = cache / "reference-rows" / f"{_cache_key(task, sha)}.json"
    try:
        return cast(list[RecordData], json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):  # not computed yet, or a torn file: compute it
        pass
    rows = _task_rows(task, None)
    try:
        _write_atomically(path, json.dumps(rows, sort_keys=True))
    except OSError as exc:  # a read-only cache only costs the next start the same seconds
        log.warning("reference rows not cached in %s: %s", path.parent, exc)
    return rows


def _cache_key(task, split_sha: str) -> str:
    parts = [task.key, task.suite.version, split_sha, _evaluator_digest()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


@functools.cache
def _evaluator_digest() -> str:
    """A digest of the evaluator's code and the suites' manifests (what the lines are scored by)."""
    root = Path(evaluator.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.yaml")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one: services starting at once share the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def publish_reference(store) -> str | None:
    """Bring the store's reference rows in line with the installed splits (a version only on change),
    read from the service's cache folder where they were scored before."""
    rows = reference_records(cache_dir())
    return store.sync_group(REFERENCE_PREFIX, rows, "Update the chance and majority lines")
