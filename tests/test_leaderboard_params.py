"""GET /api/v1/leaderboard on a live service: an unknown suite, task, setting or tier is a 422 naming
the parameter and the allowed values (on the cached fast path too, which must not answer an empty
200 for it), and one of another suite or task than the one given a 404 naming the same; downloads are named after what they hold and the results revision; /docs serves
Swagger UI from the app itself (offline: no CDN)."""

from __future__ import annotations

import re

import pytest

BAD = [
    ({"suite": "nope"}, "suite", "prefeval"),
    ({"suite": "prefeval", "task": "nope"}, "task", "mcq"),
    ({"suite": "prefeval", "setting": "bogus"}, "setting", "zero_shot"),
    ({"suite": "prefeval", "task": "mcq", "tier": "bogus"}, "tier", "form/explicit"),
    ({"setting": "bogus", "format": "csv"}, "setting", "zero_shot"),
]


# Real values, of another suite or task than the one given: well formed (the schema's enums hold
# them), naming something that is not there: 404 naming the parameter and what is allowed there.
ELSEWHERE = [
    (
        {"suite": "prefeval", "task": "binary_choice"},
        "task",
        ["mcq", "mcq_turns"],
        "suite 'prefeval'",
    ),
    ({"suite": "personafeedback", "setting": "zero_shot"}, "setting", ["persona"], "suite"),
    (
        {"suite": "prefeval", "task": "mcq", "tier": "cell/specific/easy"},
        "tier",
        ["form/explicit"],
        "task 'mcq'",
    ),
    ({"suite": "prefeval", "task": "mcq", "tier": "turns/10", "format": "csv"}, "tier", [], "task"),
]


@pytest.mark.parametrize("params,parameter,allowed,scope", ELSEWHERE)
def test_values_of_another_suite_or_task_are_a_404_naming_the_parameter(
    shared_live_service, params, parameter, allowed, scope
):
    with shared_live_service.http() as http:
        for _ in range(2):  # the second time the fast path has parsed this query already
            response = http.get("/api/v1/leaderboard", params=params)
            assert response.status_code == 404, (params, response.status_code, response.text)
            detail = response.json()["detail"]
            assert detail["problems"][0]["field"] == parameter, detail
            assert detail["message"].startswith(f"{parameter}: {params[parameter]!r} is not one of")
            assert scope in detail["message"] and "allowed:" in detail["message"], detail
            assert set(allowed) <= set(detail["allowed"]), detail
            assert params[parameter] not in detail["allowed"], detail


@pytest.mark.parametrize("params,parameter,example", BAD)
def test_unknown_filter_values_are_a_422_naming_the_parameter(
    shared_live_service, params, parameter, example
):
    with shared_live_service.http() as http:
        for _ in range(2):  # the second time the fast path has parsed this query already
            response = http.get("/api/v1/leaderboard", params=params)
            assert response.status_code == 422, (params, response.status_code, response.text)
            detail = response.json()["detail"]
            assert detail["problems"][0]["field"] == parameter, detail
            assert detail["message"].startswith(f"{parameter}: unknown value"), detail
            assert example in detail["allowed"], detail


def test_known_values_and_bare_tier_names_still_answer(shared_live_service):
    with shared_live_service.http() as http:
        for params in (
            {"suite": "prefeval", "task": "mcq", "tier": "explicit"},
            {"suite": "prefeval", "task": "mcq", "tier": "form/explicit"},
            {"suite": "prefeval", "setting": "zero_shot"},
            {},
        ):
            response = http.get("/api/v1/leaderboard", params=params)
            assert response.status_code == 200, (params, response.text)


def test_download_names_say_what_and_which_revision(shared_live_service):
    with shared_live_service.http() as http:
        response = http.get(
            "/api/v1/leaderboard",
            params={"suite": "prefeval", "task": "mcq", "setting": "zero_shot", "format": "csv"},
        )
        assert response.status_code == 200, response.text
        revision = response.headers["X-Results-Revision"][:12]
        assert response.headers["Content-Disposition"] == (
            f'attachment; filename="leaderboard-prefeval-mcq-zero_shot-{revision}.csv"'
        )


def test_docs_work_offline(shared_live_service):
    with shared_live_service.http() as http:
        page = http.get("/docs")
        assert page.status_code == 200
        sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
        sources += re.findall(r"""url: ?["']([^"']+)["']""", page.text)
        assert sources and all(s.startswith("/") for s in sources), sources  # nothing remote
        for source in sources:
            assert http.get(source).status_code == 200, source
        assert "swagger-ui-bundle.js" in page.text
