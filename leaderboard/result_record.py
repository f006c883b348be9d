"""The one result record: every published result (jobs, the papers' reported rows) is built here,
validated here, and read back through it by the store and the table.

A record is one JSON file in the results dataset (results/<suite>/<task>/<xx>/<submission id>.json,
leaderboard.store.result_path).
`schema_version` says which shape it has (make_record writes the current one); a record written
before the field existed has the same shape and reads as version 1. The JSON Schema (`record_json_schema()`) is what external readers validate against.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

SCHEMA_VERSION = 1


class RecordError(ValueError):
    """A record that does not have the result record's shape: says which field."""


class Stats(BaseModel):
    """One metric over some items: its value, 95 % interval, item count (and how the interval was made)."""

    model_config = ConfigDict(
        extra="allow"
    )  # interval method, units, release notes: added by the scorer

    value: float | None
    ci95: list[float | None] = [None, None]
    n: int


class Metrics(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str | None = (
        None  # the primary metric (`total` and the tier columns are in it); None: the first of total
    )
    total: dict[str, Stats]  # every metric of the task on all items
    tiers: dict[str, dict[str, dict[str, Stats]]]  # tier group -> tier -> {primary metric: stats}
    release: dict[str, Any] | None = (
        None  # a hidden split's rows: how the numbers were released (evaluator/release.py)
    )


class ResultRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    submission_id: str
    suite: str
    task: str
    setting: str  # a judge-scored result's setting names its judge (`+judge:NAME`)
    model_name: str
    model_link: str = ""
    description: str = ""
    source: str  # "predictions file", "model run (PROTOCOL)", "reported (paper), Table N", "reference line ..."
    row_kind: Literal["computed", "partial", "reported", "reference"] = (
        "computed"  # reference: chance/majority lines
    )
    submitted_at: str
    provenance: dict[str, Any] = {}  # everything needed to reproduce or audit the number
    timings: dict[str, Any] | None = None
    n_items: int = 0  # 0: not known (a paper that gives no count)
    metrics: Metrics


def make_record(**fields: Any) -> dict[str, Any]:
    """The one constructor: a validated record (of the current schema version) as the JSON-ready
    dict the store writes."""
    return validate_record({"schema_version": SCHEMA_VERSION, **fields})


def validate_record(data: dict[str, Any]) -> dict[str, Any]:
    """`data` checked against the result record (RecordError naming the field), as a plain dict."""
    try:
        record = ResultRecord.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise RecordError(f"result record {data.get('submission_id', '?')!r}: {problems}") from None
    return record.model_dump(
        mode="json", exclude_unset=True
    )  # what was given: no optional field added as null


def record_json_schema() -> dict[str, Any]:
    return ResultRecord.model_json_schema()
