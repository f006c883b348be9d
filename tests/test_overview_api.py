"""GET /api/v1/overview through the live service: the same read path as the leaderboard (revision
header, ETag, paging, complete downloads), filters, and a 422 naming a bad parameter (a 404 for a
real value the rest of the request rules out)."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from unit.test_overview import default_record as record

from leaderboard.store import LocalDatasetStore

OVERVIEW = "/api/v1/overview"


@pytest.fixture(scope="module")
def service(module_live_service):
    return module_live_service


@pytest.fixture(scope="module")
def published(service):
    """Three models on two suites, published as a worker would (this process writes the store)."""
    store = LocalDatasetStore(service.data_dir / "results-dataset")
    store.publish(record("ov-a1", "Overview Alpha", 0.8))
    store.publish(
        record(
            "ov-a2",
            "Overview Alpha",
            0.7,
            suite="personafeedback",
            task="binary_choice",
            setting="persona",
        )
    )
    store.publish(record("ov-b1", "Overview Beta", 0.5))
    facts = {"model_type": "reward", "parameters": 5e8, "license": "mit"}
    store.publish(record("ov-r1", "Overview Judge", 0.6, facts=facts))
    # the same display name uploaded as a predictions file: another model, its own row
    store.publish(
        record(
            "ov-u1",
            "Overview Judge",
            0.55,
            protocol="uploaded predictions",
            predictions="e" * 64,
            link="https://huggingface.co/someone/judge-preds",
        )
    )
    return store.publish(record("ov-p", "Overview Partial", 0.99, row_kind="partial", n=30))


def test_overview_json_csv_parquet_agree_and_follow_the_revision(service, published):
    with service.http() as http:
        first = http.get(OVERVIEW, params={"search": "overview"})
        assert first.status_code == 200, first.text
        assert first.headers["x-results-revision"] == published
        rows = {r["model_name"]: r for r in first.json() if r["model_name"] != "Overview Judge"}
        assert set(rows) == {"Overview Alpha", "Overview Beta"}  # the partial run does not count
        alpha = rows["Overview Alpha"]
        assert alpha["prefeval/mcq"] == pytest.approx(0.8)
        assert alpha["prefeval/mcq rank"] == 1
        assert rows["Overview Beta"]["prefeval/mcq rank"] == 4  # both Judge models are above it
        assert alpha["personafeedback/binary_choice"] == pytest.approx(0.7)
        assert alpha["tasks"] == 2

        again = http.get(
            OVERVIEW,
            params={"search": "overview"},
            headers={"If-None-Match": first.headers["etag"]},
        )
        assert again.status_code == 304

        csv = http.get(OVERVIEW, params={"search": "overview", "format": "csv"})
        assert csv.headers["content-disposition"].startswith('attachment; filename="overview-')
        frame = pd.read_csv(io.StringIO(csv.text))
        assert set(frame["model_name"]) == set(rows) | {"Overview Judge"}
        parquet = http.get(OVERVIEW, params={"search": "overview", "format": "parquet"})
        assert set(pd.read_parquet(io.BytesIO(parquet.content))["model_name"]) == set(
            frame["model_name"]
        )

        only = http.get(OVERVIEW, params={"search": "overview", "suite": "personafeedback"}).json()
        assert [r["model_name"] for r in only] == ["Overview Alpha"]
        assert "prefeval/mcq" not in only[0]


@pytest.mark.parametrize(
    "params, field, status, allowed",
    [
        (
            {"suite": "nope"},
            "suite",
            422,
            ["personafeedback", "prefeval", "realpref", "recentering"],
        ),
        ({"task": "nope"}, "task", 422, None),
        # a real task, of another suite: a well-formed request for columns that are not there
        ({"suite": "prefeval", "task": "binary_choice"}, "task", 404, None),
    ],
)
def test_an_unknown_suite_or_task_is_a_4xx_naming_it(service, params, field, status, allowed):
    with service.http() as http:
        response = http.get(OVERVIEW, params=params)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert detail["problems"][0]["field"] == field
    assert detail["allowed"] and "allowed:" in detail["message"]
    if allowed is not None:
        assert detail["allowed"] == allowed
    if status == 404:  # the suite's own tasks
        assert "mcq" in detail["allowed"] and "binary_choice" not in detail["allowed"]
        assert "the tasks of suite 'prefeval'" in detail["message"]


def test_type_size_and_license_filter_models_and_keep_their_ranks(service, published):
    with service.http() as http:
        judges = http.get(OVERVIEW, params={"search": "overview judge"}).json()
        assert len(judges) == 2  # one name, two models: a run and an uploaded file
        assert {r["source"] for r in judges} == {"model run", "predictions file"}
        assert len({r["model_key"] for r in judges}) == 2
        for params in ({"type": "reward"}, {"size": "< 1B"}, {"license": "mit"}):
            found = http.get(OVERVIEW, params={"search": "overview", **params})
            assert found.status_code == 200, found.text
            rows = found.json()
            assert [(r["model_name"], r["source"]) for r in rows] == [
                ("Overview Judge", "model run")
            ], params
            assert rows[0]["prefeval/mcq rank"] == 2  # below Alpha, as among all models
            assert "personafeedback/binary_choice" not in rows[0]  # no kept model has it
        uploads = http.get(OVERVIEW, params={"search": "overview", "type": "predictions file"})
        assert {r["model_name"] for r in uploads.json()} >= {"Overview Judge"}
        csv = http.get(OVERVIEW, params={"type": "reward", "size": "< 1B", "format": "csv"})
        assert list(pd.read_csv(io.StringIO(csv.text))["license"]) == ["mit"]
        revision = csv.headers["x-results-revision"][:12]
        assert csv.headers["content-disposition"] == (
            f'attachment; filename="overview-all-suites-reward-__1B-{revision}.csv"'
        )


@pytest.mark.parametrize(
    "params, field, allowed, status",
    [
        ({"type": "bogus"}, "type", "generative", 422),
        ({"size": "huge"}, "size", "1B-10B", 422),
        ({"license": "no-such-license"}, "license", "mit", 404),
        (
            {"suite": "prefeval", "license": "no-such-license", "format": "csv"},
            "license",
            "mit",
            404,
        ),
    ],
)
def test_an_unknown_type_size_or_license_is_a_4xx_naming_it(
    service, published, params, field, allowed, status
):
    """Type and size: the fixed choices (the schema's enums; another is a bad request, 422);
    license: the ones this overview's models have (data: another is well formed, and not there)."""
    with service.http() as http:
        response = http.get(OVERVIEW, params=params)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert detail["problems"][0]["field"] == field
    assert allowed in detail["allowed"] and detail["message"].startswith(f"{field}: ")
    assert ("unknown value" in detail["message"]) == (status == 422)
