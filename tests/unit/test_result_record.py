"""The one result record: built by make_record, refused when malformed (naming the field), checked by
both stores before anything is written, and every published JSON validates against it."""

from __future__ import annotations

import json

import pytest

from leaderboard.reported import all_reported_records
from leaderboard.result_record import (
    SCHEMA_VERSION,
    RecordError,
    ResultRecord,
    make_record,
    record_json_schema,
)
from leaderboard.store import LocalDatasetStore, result_glob


def record(**changes) -> dict:
    base = {
        "submission_id": "s1",
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": "m",
        "source": "predictions file",
        "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "provenance": {"scorer_version": "1.0.0"},
        "timings": {"job_seconds": 1.0},
        "n_items": 3,
        "metrics": {
            "metric": "accuracy",
            "total": {
                "accuracy": {"value": 2 / 3, "ci95": [0.2, 0.9], "n": 3, "interval": "wilson"}
            },
            "tiers": {
                "form": {"explicit": {"accuracy": {"value": 1.0, "ci95": [0.3, 1.0], "n": 1}}}
            },
        },
    }
    base.update(changes)
    return base


def test_make_record_adds_the_schema_version_and_keeps_scorer_details():
    made = make_record(**record())
    assert made["schema_version"] == SCHEMA_VERSION == 1
    assert (
        made["metrics"]["total"]["accuracy"]["interval"] == "wilson"
    )  # the scorer's extra stats detail stays
    assert ResultRecord.model_validate_json(json.dumps(made)).submission_id == "s1"


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"row_kind": "verified"}, "row_kind"),
        ({"extra_field": 1}, "extra_field"),
        ({"n_items": "three"}, "n_items"),
        (
            {
                "metrics": {
                    "metric": "accuracy",
                    "total": {"accuracy": {"value": "high", "n": 1}},
                    "tiers": {},
                }
            },
            "metrics.total.accuracy.value",
        ),
        ({"metrics": {"metric": "accuracy", "total": {}}}, "metrics.tiers"),
    ],
)
def test_malformed_records_are_refused_naming_the_field(changes, field):
    with pytest.raises(RecordError, match=f"'s1': {field}"):
        make_record(**record(**changes))


def test_the_store_publishes_only_records_and_what_it_wrote_validates(tmp_path):
    store = LocalDatasetStore(tmp_path / "results")
    store.publish(make_record(**record()))
    written = list((tmp_path / "results").glob(result_glob("s1")))
    assert len(written) == 1
    ResultRecord.model_validate_json(written[0].read_text())
    head = store.head()
    with pytest.raises(RecordError, match="row_kind"):
        store.publish(record(submission_id="s2", row_kind="bogus"))
    assert store.head() == head and not list((tmp_path / "results").glob(result_glob("s2")))


def test_reported_rows_are_result_records():
    rows = all_reported_records()
    assert rows and all(
        r["schema_version"] == SCHEMA_VERSION and r["row_kind"] == "reported" for r in rows
    )


def test_json_schema_names_the_required_fields():
    schema = record_json_schema()
    assert {"submission_id", "suite", "task", "setting", "model_name", "metrics", "source"} <= set(
        schema["required"]
    )
    assert schema["properties"]["schema_version"]["default"] == SCHEMA_VERSION


def test_the_typed_json_record_names_every_field_of_the_validated_one():
    """RecordData / MetricsData (the record as the store writes it) spell the same fields as the
    pydantic ResultRecord / Metrics that validate it: a field added to one and not the other fails
    here, and which fields are required agrees."""
    from leaderboard.result_record import Metrics, MetricsData, RecordData, ResultRecord

    for typed, model in ((RecordData, ResultRecord), (MetricsData, Metrics)):
        assert set(typed.__annotations__) == set(model.model_fields), typed.__name__
        required = {name for name, f in model.model_fields.items() if f.is_required()}
        # the module's annotations are strings (from __future__), which __required_keys__ does not
        # see through: read Required[...] from them
        marked = {name for name, hint in typed.__annotations__.items() if "Required[" in str(hint)}
        assert marked == required, typed.__name__
