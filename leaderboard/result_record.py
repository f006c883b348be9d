"""The one result record: every published result (jobs, the papers' reported rows) is built here,
validated here, and read back through it by the store and the table.

A record is one JSON file in the results dataset (results/<suite>/<task>/<xx>/<submission id>.json,
leaderboard.store.result_path).
`schema_version` says which shape it has (make_record writes the current one); a record written
before the field existed has the same shape and reads as version 1. The JSON Schema (`record_json_schema()`) is what external readers validate against.
"""

from __future__ import annotations

from typing import Any, Final, Literal, Mapping, Required, TypedDict, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from evaluator.statistics import MetricStats
from evaluator.suite import SplitInfo

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


class ModelProvenance(TypedDict, total=False):
    """The resolved model of a model run (evaluator/models.py ResolvedModel)."""

    name: str
    source: str  # "hub" | "local" | "endpoint"
    revision: str  # commit sha, or "sha256:<content hash>" of a local folder
    model_type: str  # "generative" | "reward"
    license: str | None
    parameters: int | float | None


# the scorer's record of the split (evaluator/suite.py), under the name provenance reads it by
SplitProvenance = SplitInfo


class JudgeProvenance(TypedDict, total=False):
    model: str
    revision: str


class Timings(TypedDict, total=False):
    """When a result was asked for and how long it took (`timings` of the record)."""

    submitted_at: str
    started_at: str | None
    scoring_seconds: float | None
    job_seconds: float


class Provenance(TypedDict, total=False):
    """What a record's number depends on (`provenance` of the record). Open: jobs add keys for
    audit (timings, release, not_applicable, retrieval, ...), which readers need not know. Keys
    absent from older records read as missing; read it through `provenance_of`."""

    suite_version: str
    scorer_version: str
    split: SplitProvenance
    attempts: int
    model: ModelProvenance  # model runs only
    protocol: str  # model runs only
    backend: str
    judge: JudgeProvenance  # judge-scored tasks only
    revision: str  # a model's revision named by an uploaded file's submitter
    predictions_sha256: str  # uploaded files only
    answers_sha256: str  # model runs: the answers by item id (copies are told by it)
    table: str  # the papers' rows: the table they are transcribed from
    items: int  # model runs: the items run
    # model runs: items whose output no answer could be read from (scored wrong)
    unparsed: int
    judge_outputs: int  # judge-scored tasks: the judge's replies read
    # judge-scored tasks: replies with no verdict the task's rule could read (read as its
    # authors read them: PrefEval's helpful check as helpful)
    judge_unparsed: int


def provenance_of(record: ResultRecord | Mapping[str, Any]) -> Provenance:
    """A record's provenance (a typed record's or a record dict's), typed; the nested parts that
    must be objects are dropped when a record (an old or hand-made one) holds something else
    there, so readers need no checks."""
    raw = record.provenance if isinstance(record, ResultRecord) else record.get("provenance")
    provenance = dict(raw) if isinstance(raw, dict) else {}
    for key in ("model", "split", "judge"):
        if key in provenance and not isinstance(provenance[key], dict):
            del provenance[key]
    return cast(Provenance, provenance)


# The kinds of a leaderboard row (a record's `row_kind`), named here once: a full run scored here
# (the only kind ranked), a partial run (a smoke test, an n/a configuration), a paper's reported
# number, a chance or majority line computed from the split (tests/unit/test_row_kind_literals.py).
KIND_COMPUTED: Final = "computed"
KIND_PARTIAL: Final = "partial"
KIND_REPORTED: Final = "reported"
KIND_REFERENCE: Final = "reference"
ROW_KINDS = (KIND_COMPUTED, KIND_PARTIAL, KIND_REPORTED, KIND_REFERENCE)
RowKind = Literal["computed", "partial", "reported", "reference"]  # ROW_KINDS, for the schema

# The setting of the chance and majority rows (row_kind `reference`): they are computed from the split,
# not from a model, so they hold in every setting of their task and every setting's view lists them.
REFERENCE_SETTING = "reference"


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
    row_kind: RowKind = KIND_COMPUTED
    submitted_at: str
    provenance: dict[str, Any] = {}  # everything needed to reproduce or audit the number
    timings: dict[str, Any] | None = None
    n_items: int = 0  # 0: not known (a paper that gives no count)
    metrics: Metrics

    def published(self) -> RecordData:
        """The JSON-ready dict the store writes: what was given, no optional field added as null."""
        return cast(RecordData, self.model_dump(mode="json", exclude_unset=True))


class MetricsData(TypedDict, total=False):
    """A record's `metrics` as JSON (Metrics): the cells are the scorer's MetricStats."""

    metric: str | None
    total: Required[dict[str, MetricStats]]
    tiers: Required[dict[str, dict[str, dict[str, MetricStats]]]]
    release: dict[str, Any] | None


class RecordData(TypedDict, total=False):
    """A result record as the store writes and reads it (ResultRecord.published(), one JSON file):
    what the outbox carries, the store's core lays out and the moderation and private-part code
    read back. Fields with a default may be absent (schema_version: a record older than it)."""

    schema_version: int
    submission_id: Required[str]
    suite: Required[str]
    task: Required[str]
    setting: Required[str]
    model_name: Required[str]
    model_link: str
    description: str
    source: Required[str]
    row_kind: RowKind
    submitted_at: Required[str]
    provenance: Provenance
    timings: Timings | None
    n_items: int
    metrics: Required[MetricsData]


def new_record(**fields: Any) -> ResultRecord:
    """The one constructor: a validated record of the current schema version (RecordError naming
    the field otherwise)."""
    return checked_record({"schema_version": SCHEMA_VERSION, **fields})


def make_record(**fields: Any) -> RecordData:
    """new_record's record as the JSON-ready dict the store writes."""
    return new_record(**fields).published()


def checked_record(data: Mapping[str, Any]) -> ResultRecord:
    """`data` as the typed result record; RecordError naming the field when it is not one."""
    try:
        return ResultRecord.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        name = data.get("submission_id", "?") if isinstance(data, dict) else "?"
        raise RecordError(f"result record {name!r}: {problems}") from None


def validate_record(data: Mapping[str, Any]) -> RecordData:
    """`data` checked against the result record (RecordError naming the field), as a plain dict."""
    return checked_record(data).published()


def record_json_schema() -> dict[str, Any]:
    return ResultRecord.model_json_schema()
