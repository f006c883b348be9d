"""The papers' own numbers as leaderboard rows, marked `reported` and never ranked as verified.

Each suite may ship `reported.yaml` (tables transcribed from its paper, checked by
tests/unit/test_reported_tables.py). At start the app publishes any reported row the store lacks,
in one version, so they are filterable and downloadable like every other row.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from evaluator.registry import all_suites
from leaderboard.result_record import make_record
from leaderboard.table import TOTAL

REPORTED_PREFIX = "reported-"
SCALES = {"percent": 100, "fraction": 1, "raw": 1}  # printed value / scale = our value


def _row_id(suite: str, table: str, row: dict) -> str:
    key = f"{suite}|{table}|{row['model']}|{row.get('setting', '')}"
    return REPORTED_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def reported_records(suite_name: str, folder: Path) -> list[dict[str, Any]]:
    path = folder / "reported.yaml"
    if not path.exists():
        return []
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    suite = all_suites().get(suite_name)
    counts = spec.get("tier_counts", {})
    citation = spec.get("citation", "")
    records = []
    for table in spec.get("tables", []):
        task = suite.tasks.get(table["task"]) if suite else None
        primary = task.metric if task else "accuracy"
        scale = SCALES[table.get("scale", "raw")]
        for row in table["rows"]:
            total: dict[str, Any] = {}
            tiers: dict[str, dict[str, Any]] = {}
            for printed, key in table["columns"].items():
                value = row["values"].get(printed)
                if value is None:
                    continue
                stats = {"value": value / scale, "ci95": [None, None], "n": int(counts.get(key, 0))}
                if key == TOTAL:
                    total[primary] = stats
                elif "/" in key:
                    group, tier = key.split("/", 1)
                    tiers.setdefault(group, {})[tier] = {primary: stats}
                else:
                    total[key] = stats  # a metric column (precision, f1, spearman, ...)
            records.append(
                make_record(
                    **{
                        "submission_id": _row_id(suite_name, table["id"], row),
                        "suite": suite_name,
                        "task": table["task"],
                        "setting": row.get("setting") or "default",
                        "model_name": row["model"],
                        "model_link": "",
                        "description": row.get("note", ""),
                        "source": f"reported (paper), {table['id'].replace('table', 'Table ')}",
                        "row_kind": "reported",
                        "submitted_at": "",
                        "provenance": {
                            "citation": citation,
                            "table": table["id"],
                            "caption": table.get("caption", ""),
                            "model_type": row.get("model_type"),
                            "printed": row["values"],
                        },
                        "n_items": int(counts.get(TOTAL, 0)),
                        "metrics": {"metric": primary, "total": total, "tiers": tiers},
                    }
                )
            )
    return records


def all_reported_records() -> list[dict[str, Any]]:
    from evaluator.registry import SUITES_DIR

    records = []
    for path in sorted(SUITES_DIR.glob("*/reported.yaml")):
        records.extend(reported_records(path.parent.name, path.parent))
    return records


def publish_reported(store) -> str | None:
    """Bring the store's reported rows in line with the suites' reported.yaml (one version when
    anything changed, none otherwise)."""
    return store.sync_group(
        REPORTED_PREFIX, all_reported_records(), "Update the papers' reported rows"
    )
