"""Schemathesis cases for the live-service API tests (fuzzing and conformance share this loop)."""

from __future__ import annotations

import time
from collections.abc import Callable

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable


def run_cases(operations, handle: Callable, examples_per_mode: int, budget_s: float) -> int:
    """Call handle(case) for up to `examples_per_mode` generated cases per operation and mode
    (schema-valid, then schema-violating; derandomized, so a run repeats), and stop generating once
    `budget_s` has passed. Returns how many (operation, mode) pairs had nothing to generate (no
    parameter to break, e.g. the negative mode of GET /health)."""
    started = time.monotonic()
    empty = 0
    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            if time.monotonic() - started > budget_s:
                return empty

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=examples_per_mode,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
            def run(case):
                handle(case)

            try:
                run()
            except Unsatisfiable:
                empty += 1
    return empty
