"""Schemathesis against the live service's /openapi.json (bad input is a 4xx, never a 500): every operation, schema-valid
and schema-violating requests (Hypothesis, a bounded number per operation and mode), 0 server errors.

A 503 that says a dependency is unreachable (the Hugging Face Hub, offline here) is an honest
answer, not a crash: it is counted apart; 500 and any other 5xx fail the test. Run with -s for the
figures (cases per operation and mode, answers by status class, seconds).

The cases repeat from run to run (seed 1; tests/test_api_conformance.py draws others, seed 2, and
its status-code check fails a 500 too). New cases: `pytest --hypothesis-seed=N` (see
tests/schema_runs.py), or any change to the schema. The service is the session's shared one: the
run only reads, and refuses what it uploads (asserted: no submission accepted, the service serves
on).
"""

from __future__ import annotations

import collections
import time

import pytest
import schemathesis
from schema_runs import (
    USER_INPUT,
    assert_still_serving,
    examples_for,
    label,
    run_cases,
    seed_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.service]

SEED = 1
# Cases per operation and mode: MANY where the user chooses what is sent (USER_INPUT: the upload and
# model submission form, the boards' and details' query parameters), FEW elsewhere, where every case
# takes one path (a path string that names nothing: 404; an operator route for a plain user: 403;
# a page size). An operation with no parameter is sent once: there is nothing else to draw.
MANY, FEW = 50, 20
TIME_BUDGET_S = 120  # past this, the remaining operations get a few cases each


def test_no_server_errors_on_fuzzed_requests(shared_live_service, request):
    svc = shared_live_service
    schema = schemathesis.openapi.from_url(svc.url("/openapi.json"))
    statuses: collections.Counter = collections.Counter()
    server_errors: list[str] = []
    accepted: list[str] = []
    started = time.monotonic()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert USER_INPUT <= {label(op) for op in operations}  # none left at FEW by a rename

    def fuzz(case):
        response = case.call(
            base_url=svc.base_url,
            timeout=30,
            headers={"Authorization": f"Bearer {svc.token}"},
        )  # past identity, into intake
        code = response.status_code
        statuses[f"{code // 100}xx" if code != 503 else "503"] += 1
        # the Hub, offline here: "unreachable", or "cannot be reached from this server"
        honest = code == 503 and any(
            words in response.text.lower() for words in ("unreachable", "cannot be reached")
        )
        if code >= 500 and not honest:
            server_errors.append(f"{case.method} {case.path} -> {code}: {response.text[:200]}")
        if case.method == "POST" and code < 300:
            accepted.append(f"{case.method} {case.formatted_path} -> {code}: {response.text[:200]}")

    run = run_cases(
        operations, fuzz, examples_for(MANY, FEW), seed_of(request.config, SEED), TIME_BUDGET_S
    )
    total = sum(statuses.values())
    print(
        f"\nschemathesis: {total} requests over {len(operations)} operations in "
        f"{time.monotonic() - started:.0f} s; answers {dict(sorted(statuses.items()))}; "
        f"{len(server_errors)} server errors; {run.figures()}"
    )
    assert not run.unexercised(operations), run.unexercised(operations)
    assert total >= len(operations) * 2
    assert not server_errors, "\n".join(server_errors[:10]) + "\n" + svc.logs()
    # A random upload is never a valid predictions file; one accepted would leave a submission (and
    # a result) on the session's shared service: then this test wants module_live_service.
    assert not accepted, accepted[:5]
    assert_still_serving(svc)
