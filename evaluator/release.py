"""What a score on a hidden split may reveal: the Ladder (Blum & Hardt, 2015).

Exact scores read back after every upload leak the gold: flip one answer, see whether the score
moves up or down, and that item's label is known (issue 7: all 3,000 PrefEval labels in 274
uploads). On a split marked hidden, a result is therefore released only through this module:

- **Ladder.** Per submitter, suite, task and setting, a new score is released only when its
  primary metric beats that submitter's best released score by at least `step`; otherwise the
  submitter learns just that (one bit), and nothing is published.
- **Rounded to the noise level.** `step` is the split's sampling noise, span/sqrt(n) rounded up to
  1, 2 or 5 x 10^k; released values and interval bounds are rounded to it. A one-item change moves
  a score by span/n, far below step, so it neither clears the ladder nor shows in a rounded value.
- **Tier breakdowns only where a tier is large.** A tier of fewer than MIN_TIER_ITEMS items is left
  out (a small tier's score is nearly a list of its labels); larger tiers are rounded to their own
  noise level.
- With the daily quota per identity (h-identity's issue 7 §2), the number of bits is bounded too.

Public-by-convention splits (PrefEval: its gold is published upstream) are released exactly.
Pure functions: the per-submitter best is kept by the caller (submissions/records.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evaluator.metrics import metric_scale

MIN_TIER_ITEMS = 50
MECHANISM = "ladder (Blum & Hardt 2015)"
_MANTISSAS = (1, 2, 5)
RELEASED_STATS = ("value", "ci95", "n")  # nothing else of a stats block leaves a hidden split


def metric_span(metric: str) -> float:
    """Width of a metric's range: shares 1, correlations 2, 1-5 ratings 4."""
    if metric_scale(metric) == 100 or metric.endswith("_rate"):  # shares of items
        return 1.0
    return 2.0 if metric == "spearman" else 4.0


def noise_step(n: int, metric: str) -> float:
    """span/sqrt(n), rounded up to 1, 2 or 5 x 10^k (the grid released values lie on)."""
    raw = metric_span(metric) / math.sqrt(max(n, 1))
    exponent = math.floor(math.log10(raw))
    for scale in (exponent, exponent + 1):
        for mantissa in _MANTISSAS:
            step = mantissa * 10.0**scale
            if step >= raw - 1e-12:
                return round(step, 12)
    return round(10.0 ** (exponent + 1), 12)  # unreachable: 10^(e+1) >= raw always


def round_to(value: float | None, step: float) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(round(value / step) * step, 10)


def _rounded(stats: dict[str, Any], step: float) -> dict[str, Any]:
    low, high = stats.get("ci95") or (None, None)
    return {
        "value": round_to(stats.get("value"), step),
        "ci95": [round_to(low, step), round_to(high, step)],
        "n": stats.get("n"),
        "step": step,
    }


def primary_value(metrics: dict[str, Any]) -> float | None:
    return (metrics["total"].get(metrics["metric"]) or {}).get("value")


def primary_step(metrics: dict[str, Any]) -> float:
    return noise_step(metrics["n_items"], metrics["metric"])


def beats(value: float | None, best: float | None, step: float) -> bool:
    """The Ladder's test: the first result, or one at least `step` above the best released."""
    if best is None:
        return True
    return value is not None and value >= best + step - 1e-12


def released_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The rounded, tier-thinned copy of `metrics` (the scorer's output) that may leave the scorer."""
    total = {
        m: _rounded(stats, noise_step(stats.get("n") or metrics["n_items"], m))
        for m, stats in metrics["total"].items()
    }
    tiers: dict[str, dict[str, Any]] = {}
    for group, by_tier in metrics["tiers"].items():
        kept = {
            tier: {m: _rounded(stats, noise_step(stats["n"], m)) for m, stats in values.items()}
            for tier, values in by_tier.items()
            if all((stats.get("n") or 0) >= MIN_TIER_ITEMS for stats in values.values())
        }
        if kept:
            tiers[group] = kept
    released = {k: v for k, v in metrics.items() if k not in ("total", "tiers")}
    released.update(
        {
            "total": total,
            "tiers": tiers,
            "release": {
                "mechanism": MECHANISM,
                "step": primary_step(metrics),
                "min_tier_items": MIN_TIER_ITEMS,
            },
        }
    )
    return released


@dataclass(frozen=True)
class Withheld:
    """A hidden-split result that did not beat the submitter's best: all the submitter learns."""

    best: float
    step: float
    metric: str

    def as_result(self) -> dict[str, Any]:
        return {
            "released": False,
            "metric": self.metric,
            "best": self.best,
            "step": self.step,
            "mechanism": MECHANISM,
            "message": (
                f"not published: on this hidden split a new {self.metric} is released only when it "
                f"beats your best released score ({self.best:g}) by at least {self.step:g}"
            ),
        }
