"""GET /api/v1/compare against a live service: two uploads on PrefEval mcq, checked by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import (
    client,
    explicit_only,
    make_predictions,
    reordered,
    submit_ok,
    wait_finished,
)  # noqa: E402

pytestmark = pytest.mark.service

TRAVEL = ("travel_hotel", "travel_restaurant", "travel_transportation", "travel_activities")


@pytest.fixture(scope="module")
def http(shared_live_service):
    with client(shared_live_service.base_url, token=shared_live_service.token) as c:
        yield c


def test_paired_comparison_of_two_uploads(http, shared_live_service):
    from evaluator.registry import get_task

    items = get_task("prefeval", "mcq").load_split().items
    travel_choice = sum(
        1 for i in items if i.tiers["form"] == "implicit_choice" and i.tiers["topic"] in TRAVEL
    )
    a = submit_ok(
        http, reordered(explicit_only().body, 13), model_name="cmp-explicit"
    )  # rotated: e2e_api sends the file itself
    b = submit_ok(
        http,
        make_predictions(
            lambda i: (
                i.tiers["form"] == "explicit"
                or (i.tiers["form"] == "implicit_choice" and i.tiers["topic"] in TRAVEL)
            )
        ).body,
        model_name="cmp-travel",
    )
    for sid in (a, b):
        wait_finished(http, sid, logs=shared_live_service.logs)
    response = http.get("/api/v1/compare", params={"a": a, "b": b})
    assert response.status_code == 200, response.text
    result = response.json()
    # B is right on everything A is, plus one item in each travel pair: every differing pair says B
    assert result["difference"] == pytest.approx(-travel_choice / 3000)
    assert result["n"] == 3000 and result["n_units"] == 1000 and result["unit"] == "preference_pair"
    assert result["ci95"][0] < result["difference"] < result["ci95"][1] < 0
    assert (
        result["p_value"] < 0.001
    )  # 214 pairs, all one way: a sign-flip extreme beyond any sampled flip
    assert (result["a"]["submission_id"], result["b"]["submission_id"]) == (a, b)
    same = http.get("/api/v1/compare", params={"a": a, "b": a}).json()
    assert same["difference"] == 0 and same["p_value"] == 1.0
    assert http.get("/api/v1/compare", params={"a": a, "b": "nope"}).status_code == 404
    # a public split's comparison is open to anyone: no identity, no quota (hidden splits need
    # both: tests/test_attacks.py)
    with client(shared_live_service.base_url, token="") as anonymous:
        for _ in range(3):
            open_to_all = anonymous.get("/api/v1/compare", params={"a": a, "b": b})
            assert open_to_all.status_code == 200 and open_to_all.json() == result
    assert http.get("/api/v1/compare", params={"a": a}).status_code == 422
