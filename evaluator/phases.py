"""A model run's phase, so that a run shows what it is doing from its first second, not "0 of 30"
while the model loads: `downloading` the model's files, `loading` the engine, `warming` (the split,
the first chunk's prompts, the first engine call), then `items` (the progress reports of
evaluator/model_eval.py carry it, with the items done).

The evaluator does not know who listens: a worker adds a reporter (submissions/worker.py writes
the phase into the running job's progress, which the status views read); without one, a phase is
only logged.
"""

from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger(__name__)

DOWNLOADING, LOADING, WARMING, ITEMS = "downloading", "loading", "warming", "items"
PHASES = (DOWNLOADING, LOADING, WARMING, ITEMS)

_reporters: list[Callable[[str], None]] = []


def add_phase_reporter(reporter: Callable[[str], None]) -> None:
    """Call `reporter(phase)` on every phase change of a run in this process (once per reporter)."""
    if reporter not in _reporters:
        _reporters.append(reporter)


def remove_phase_reporter(reporter: Callable[[str], None]) -> None:
    if reporter in _reporters:
        _reporters.remove(reporter)


def report_phase(phase: str) -> None:
    """A run entered `phase`; a reporter that fails costs only its report."""
    log.debug("model run phase: %s", phase)
    for reporter in list(_reporters):
        try:
            reporter(phase)
        except Exception:  # noqa: BLE001 - progress must never stop a run
            log.warning("reporting the run's phase %s failed", phase, exc_info=True)
