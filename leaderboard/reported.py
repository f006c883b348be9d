"""The papers' own numbers as leaderboard rows, marked `reported` and never ranked as verified.

Each suite may ship `reported.yaml` (tables transcribed from its paper, checked by
tests/unit/test_reported_tables.py). At start the app publishes any reported row the store lacks,
in one version, so they are filterable and downloadable like every other row.

A table says, per model type, which of our protocols its numbers came from where the paper says
it (`protocols: {generative: {protocol: ..., source: ...}}`; a row may override with its own
`protocol`): it is the row's `protocol` column, with the paper's words in the provenance. A verified
row is comparable to a paper row only when both name the same setting and protocol
(`comparable_paper_rows`); a paper row whose protocol the paper does not state is comparable to none.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pandas as pd

from evaluator.registry import all_suites
from evaluator.yaml_files import read_yaml
from leaderboard.result_record import KIND_REFERENCE, KIND_REPORTED, RecordData, make_record
from leaderboard.table import TOTAL

REPORTED_PREFIX = "reported-"
SCALES = {"percent": 100, "fraction": 1, "raw": 1}  # printed value / scale = our value
# A paper row made of a system's own outputs (a classifier trained on the annotations): what an
# uploaded predictions file is here.
PREDICTIONS = "predictions"
UPLOADED = "uploaded predictions"  # the protocol a predictions-file row records
UNSTATED = "the paper does not say how the models' answers were read"


def paper_protocol(table: dict, row: dict) -> tuple[str, str]:
    """(protocol, where the paper says it) of one reported row; ("", why not) when it does not."""
    if row.get("protocol"):
        return str(row["protocol"]), str(row.get("protocol_source", ""))
    declared = (table.get("protocols") or {}).get(row.get("model_type"))
    if not declared or not declared.get("protocol"):
        return "", str((declared or {}).get("source") or UNSTATED)
    return str(declared["protocol"]), str(declared.get("source", ""))


def _row_id(suite: str, table: str, row: dict) -> str:
    key = f"{suite}|{table}|{row['model']}|{row.get('setting', '')}"
    return REPORTED_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def reported_records(suite_name: str, folder: Path) -> list[RecordData]:
    path = folder / "reported.yaml"
    if not path.exists():
        return []
    spec = read_yaml(path)
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
            protocol, protocol_source = paper_protocol(table, row)
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
                        "row_kind": KIND_REPORTED,
                        "submitted_at": "",
                        "provenance": {
                            "citation": citation,
                            "table": table["id"],
                            "caption": table.get("caption", ""),
                            "model_type": row.get("model_type"),
                            "protocol": protocol,
                            "protocol_source": protocol_source,
                            "printed": row["values"],
                        },
                        "n_items": int(counts.get(TOTAL, 0)),
                        "metrics": {"metric": primary, "total": total, "tiers": tiers},
                    }
                )
            )
    return records


def all_reported_records() -> list[RecordData]:
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


def comparable(row_protocol: str, row_setting: str, paper: str, paper_setting: str) -> bool:
    """Whether a verified row can stand beside a paper row: the same setting, and the paper's
    protocol known and the row's the same (a paper row of a system's own outputs: an uploaded
    predictions file)."""
    if not paper or row_setting != paper_setting:
        return False
    return row_protocol == paper or (paper == PREDICTIONS and row_protocol == UPLOADED)


def comparable_paper_rows(board: pd.DataFrame, protocols: dict[str, str]) -> pd.Series:
    """Per row of one task's board, the paper rows it is comparable to ("model (Table N)", joined
    by "; "), "" for none and for the paper rows themselves. `protocols`: submission id -> the
    row's protocol (the scores' protocol column; board views do not carry it)."""
    found = pd.Series("", index=board.index, dtype=object)
    if board.empty:
        return found
    protocol = board["submission_id"].map(protocols).fillna("")
    reported = board["row_kind"] == KIND_REPORTED
    # read once, not per row: a board of 20,000 rows took 35 s with a papers.iterrows() per row
    papers = [
        (f"{name} ({str(source).removeprefix('reported (paper), ')})", paper_protocol, setting)
        for name, source, paper_protocol, setting in zip(
            board.loc[reported, "model_name"],
            board.loc[reported, "source"],
            protocol[reported],
            board.loc[reported, "setting"],
        )
    ]
    if not papers:
        return found
    others = ~board["row_kind"].isin((KIND_REPORTED, KIND_REFERENCE))
    pairs = list(zip(protocol[others], board.loc[others, "setting"]))
    # once per (protocol, setting), of which a board has a few, not once per row
    named = {
        (row_protocol, setting): "; ".join(
            name
            for name, paper_protocol, paper_setting in papers
            if comparable(row_protocol, setting, paper_protocol, paper_setting)
        )
        for row_protocol, setting in set(pairs)
    }
    found[others.to_numpy()] = [named[pair] for pair in pairs]
    return found
