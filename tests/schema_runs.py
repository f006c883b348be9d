"""Schemathesis cases for the live-service API tests (tests/test_api_fuzz.py and
tests/test_api_conformance.py share this loop): every operation's schema-valid cases, then its
schema-violating ones, as many as the test gives that operation, from a seed the test names.

A run repeats (same schema, same seed: the same requests), so a failure can be replayed. New cases
come from another seed: `pytest --hypothesis-seed=N` runs the loop with N instead of the test's own
(the figures print the seed used), and any change to the schema changes the cases too.
"""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import schemathesis
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.control import SkipTest

try:  # Hypothesis's own module (private): kept builds only speed the run up (regex_strategies_kept)
    from hypothesis.strategies._internal import regex as hypothesis_regex
except ImportError:  # a Hypothesis that moved it: slower, not wrong
    hypothesis_regex = None

MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
# The operations whose input a user chooses (the upload and model submission form, the boards' and a
# result's details' query parameters): the tests send these the most cases.
USER_INPUT = frozenset(
    {
        "POST /api/v1/submissions",
        "GET /api/v1/leaderboard",
        "GET /api/v1/overview",
        "GET /api/v1/compare",
        "GET /api/v1/submissions/{submission_id}/details",
    }
)
# Past this, the remaining operations get at most FLOOR cases per mode: every one is still sent
# requests on a machine far slower than this one, and the figures say it was cut.
FLOOR = 5


def label(operation) -> str:
    return f"{operation.method.upper()} {operation.path}"


def examples_for(many: int, few: int) -> Callable[[object], int]:
    """Cases per mode: `many` for USER_INPUT, `few` for the rest."""
    return lambda operation: many if label(operation) in USER_INPUT else few


def assert_still_serving(svc) -> None:
    """The service answers as before the run: the web app lives and its queue answers."""
    with svc.http() as http:
        health = http.get("/api/v1/health")
    assert health.status_code == 200 and health.json()["queue"] == "ok", health.text
    assert svc.web.poll() is None, svc.logs()


def seed_of(config, own: int) -> int | str:
    """The test's own seed, or the one `pytest --hypothesis-seed=N` names (new cases)."""
    chosen = config.getoption("hypothesis_seed", default=None)
    if chosen is None:
        return own
    return int(chosen) if str(chosen).isdigit() else chosen


@dataclass
class Run:
    """What a run sent: cases and seconds per (operation, mode), the seed, where it was cut."""

    seed: int | str
    cases: collections.Counter = field(default_factory=collections.Counter)
    seconds: collections.defaultdict = field(default_factory=lambda: collections.defaultdict(float))
    cut: list[str] = field(default_factory=list)  # operations run at FLOOR past the budget

    def unexercised(self, operations) -> list[str]:
        """Operations that got no case in any mode: a run must send every one a request."""
        return [label(op) for op in operations if not any(self.cases[label(op), m] for m in MODES)]

    def figures(self) -> str:
        per_operation = collections.defaultdict(list)
        for (name, mode), n in self.cases.items():
            per_operation[name].append(f"{mode.value[:3]} {n} ({self.seconds[name, mode]:.1f} s)")
        lines = [f"  {name}: {', '.join(counts)}" for name, counts in per_operation.items()]
        cut = f"; cut to {FLOOR} past the time budget: {self.cut}" if self.cut else ""
        return f"seed {self.seed}{cut}\n" + "\n".join(lines)


_KEPT: dict = {}


@contextlib.contextmanager
def regex_strategies_kept() -> Iterator[None]:
    """Hypothesis builds a pattern's character classes anew for every strategy that names the
    pattern, and schemathesis builds the request body's strategies anew for every case of POST
    /submissions. The service's text patterns ([^...] of the characters the intake refuses, the
    private-use planes included) cost Hypothesis 1-2 s a build, a character at a time: 65 of the
    fuzz run's 80 s went there. A build is a pure function of (pattern, flags, alphabet), so each
    is kept for the process: the same strategies, the same cases (checked: identical cases with
    and without, 185 over every operation), three builds in all."""
    build = getattr(hypothesis_regex, "base_regex_strategy", None)
    if build is None:  # a Hypothesis without it: slower, not wrong
        yield
        return
    kept = _KEPT  # for the process: the other API test in it draws from the same patterns

    def kept_build(regex, *args, **kwargs):
        # `parsed` is derived from the pattern and flags; any other argument is part of the key
        named = tuple(sorted((k, v) for k, v in kwargs.items() if k != "parsed"))
        key = (type(regex.pattern), regex.pattern, regex.flags, args, named)
        try:
            return kept[key]
        except KeyError:
            kept[key] = built = build(regex, *args, **kwargs)
            return built
        except TypeError:  # an argument that cannot be a key
            return build(regex, *args, **kwargs)

    hypothesis_regex.base_regex_strategy = kept_build
    try:
        yield
    finally:
        hypothesis_regex.base_regex_strategy = build


def run_cases(
    operations,
    handle: Callable,
    examples: Callable[[object], int],
    run_seed: int | str,
    budget_s: float,
) -> Run:
    """Call handle(case) for up to examples(operation) generated cases per operation and mode
    (schema-valid, then schema-violating), Hypothesis seeded with `run_seed`."""
    run = Run(seed=run_seed)
    started = time.monotonic()
    with regex_strategies_kept():
        for operation in operations:
            wanted = examples(operation)
            if time.monotonic() - started > budget_s:
                run.cut.append(label(operation))
                wanted = min(wanted, FLOOR)
            for mode in MODES:
                _run_mode(run, operation, mode, handle, wanted)
    return run


def _run_mode(run: Run, operation, mode, handle: Callable, wanted: int) -> None:
    key = (label(operation), mode)
    run.cases[key] += 0  # listed in the figures even with nothing to generate
    # The mode this run generates in: in the negative one, schemathesis then says at the first draw
    # that an operation has nothing to break (SkipTest) instead of Hypothesis rejecting 1,000 draws.
    operation.schema.config.generation.update(modes=[mode])

    @seed(run.seed)
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=wanted,
        deadline=None,  # the service's answer time is not what is tested
        database=None,  # a run repeats from its seed alone
        suppress_health_check=list(HealthCheck),
    )
    def one(case):
        run.cases[key] += 1
        handle(case)

    started = time.monotonic()
    try:
        one()
    except (SkipTest, Unsatisfiable):  # nothing to break, e.g. GET /health's negative mode
        pass  # its count stays 0 in the figures
    run.seconds[key] += time.monotonic() - started
