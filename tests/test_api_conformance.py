"""Schemathesis's conformance checks against the live service's /openapi.json: the status codes,
content types, headers and error bodies the service answers are the ones its schema declares; a
schema-violating request is refused (4xx), and a schema-valid one is not refused as invalid (a 404
for something it names that does not exist is fine, a 422 is not: the schema says what is valid,
its enums listing the suites, tasks, settings and tiers the manifests declare).

tests/test_api_fuzz.py asserts "no server error"; this one runs the response checks on every
answer and asserts none fails (a 500 too: the schema declares none). Run with -s for the figures:
cases per operation and mode, failures per check (and per operation).

The cases repeat from run to run (seed 2; the fuzz test draws others, seed 1). New cases:
`pytest --hypothesis-seed=N` (see tests/schema_runs.py), or any change to the schema. The service
is the session's shared one (the run only reads, and what it uploads is refused): its answers are
checked with whatever the tests before it in the process published on it, rows included.
"""

from __future__ import annotations

import collections
import re

import pytest
import schemathesis
from schema_runs import USER_INPUT, assert_still_serving, examples_for, label, run_cases, seed_of
from schemathesis.specs.openapi import checks as openapi_checks

pytestmark = pytest.mark.slow

SUBMISSIONS = "/api/v1/submissions"
# evaluator.predictions.PredictionsError: "<file name> rejected: line 3: not valid JSON; ..."
FILE_REFUSED = re.compile(r"^[^\n]* rejected: ")
SEED = 2
# Cases per operation and mode: MANY for the operations whose input a user chooses (USER_INPUT),
# FEW for the rest (a path string that names nothing, an operator route, a page size); an
# operation with no parameter is sent once.
MANY, FEW = 25, 10
TIME_BUDGET_S = 120  # past this, the remaining operations get a few cases each
# Asserted: what the service answers is what its schema declares.
CONFORMANCE = (
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
)
CHECKS = {
    "status_code_conformance": openapi_checks.status_code_conformance,
    "content_type_conformance": openapi_checks.content_type_conformance,
    "response_headers_conformance": openapi_checks.response_headers_conformance,
    "response_schema_conformance": openapi_checks.response_schema_conformance,
    "negative_data_rejection": openapi_checks.negative_data_rejection,
    "positive_data_acceptance": openapi_checks.positive_data_acceptance,
}


def refuses_the_file(case, response) -> bool:
    """A 422 for what is inside an uploaded predictions file (its lines, or ids it lacks): the schema
    types the file as binary, and no OpenAPI schema can say what a valid predictions file for the
    drawn task is, so a schema-valid upload of random bytes is refused as it should be. Nothing
    else about the request may be wrong: the refusal names the file's problems only."""
    if (case.method, case.path, case.media_type) != ("POST", SUBMISSIONS, "multipart/form-data"):
        return False
    if response.status_code != 422:
        return False
    detail = response.json()["detail"]
    return bool(FILE_REFUSED.match(detail["message"])) and all(
        p.get("field") in (None, "file", "id") or p.get("line") is not None
        for p in detail["problems"]
    )


def test_answers_conform_to_the_schema(shared_live_service, request):
    svc = shared_live_service
    schema = schemathesis.openapi.from_url(svc.url("/openapi.json"))
    failures: dict[str, list[str]] = collections.defaultdict(list)
    where: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    cases = 0
    refused_files = 0
    operations = [result.ok() for result in schema.get_all_operations()]
    assert USER_INPUT <= {label(op) for op in operations}  # none left at FEW by a rename

    def check(case):
        nonlocal cases, refused_files
        cases += 1
        headers = {"Authorization": f"Bearer {svc.token}"}
        response = case.call(base_url=svc.base_url, timeout=30, headers=headers)
        for name, check in CHECKS.items():
            if name == "positive_data_acceptance" and refuses_the_file(case, response):
                refused_files += 1
                continue
            try:
                case.validate_response(response, checks=[check], headers=headers)
            except (Exception, BaseExceptionGroup):  # a check's failure (group)
                failures[name].append(
                    f"{case.method} {case.formatted_path} {response.status_code}: "
                    + response.text[:160]
                )
                where[name][f"{case.method} {case.path} {response.status_code}"] += 1

    run = run_cases(
        operations, check, examples_for(MANY, FEW), seed_of(request.config, SEED), TIME_BUDGET_S
    )
    print(f"\nschemathesis conformance: {cases} cases over {len(operations)} operations")
    print(run.figures())
    print(
        f"  schema-valid uploads refused for the file's content (422, not counted): {refused_files}"
    )
    for name in CHECKS:
        print(f"  {name}: {len(failures[name])} failures")
        for operation, count in where[name].most_common():
            print(f"    {count} x {operation}")
        for line in sorted(set(failures[name]))[:5]:
            print(f"    {line}")
    assert not run.unexercised(operations), run.unexercised(operations)
    failed = {k: sorted(set(failures[k]))[:5] for k in CONFORMANCE if failures[k]}
    assert not failed, failed
    assert_still_serving(svc)
