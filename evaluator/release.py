"""What a score on a hidden split may reveal: the Ladder (Blum & Hardt, 2015).

Exact scores read back after every upload leak the gold: flip one answer, see whether the score
moves up or down, and that item's label is known (the attack recovered all 3,000 PrefEval labels
in 274 uploads). On a split marked hidden, a result is therefore released only through this module:

- **Ladder.** Per submitter, suite, task and setting, a new score is released only when its
  primary metric beats that submitter's best released score by at least `step`; otherwise the
  submitter learns just that (one bit), and nothing is published.
- **Rounded to the noise level.** `step` is the split's sampling noise, span/sqrt(n) rounded up to
  1, 2 or 5 x 10^k; released values and interval bounds are rounded to it. A one-item change moves
  a score by span/n, far below step, so it neither clears the ladder nor shows in a rounded value.
- **Tier breakdowns only where a tier is large.** A tier of fewer than MIN_TIER_ITEMS items is left
  out (a small tier's score is nearly a list of its labels); larger tiers are rounded to their own
  noise level.
- **Only the primary metric through the Ladder; other numbers only if they cannot carry labels.**
  A secondary metric whose value depends on the gold and on the answers (precision, recall, F1,
  a second accuracy, judge ratings) has a denominator the submitter chooses (precision: the YES
  answers; one YES makes precision that item's label), so no fixed step bounds it: it is withheld.
  A metric of the gold alone (`human_yes_rate`, `human_mean_rating`) is a constant of the scored
  items: released rounded, and only from at least MIN_ITEMS items. A metric of the answers alone
  (`yes_rate`) says nothing about the gold: released rounded. See `released_metric_kind`.
- **Nothing from fewer than MIN_ITEMS items**, total or tier (a partial run of one item is its label).
- **One Ladder per submitter and task** (`ladder_scope`): every setting and protocol of a task
  shares the submitter's best, so a new setting buys no fresh exact release.
- **A shaky threshold** (Hardt 2017, "Climbing a shaky ladder"): the bar a new score must clear is
  best + step + a fresh uniform draw in [-step/2, step/2]. An upload built to sit exactly on the bar
  (released iff one unknown item is NO) then learns that item only with probability (1/n)/step
  instead of 1: 5% per upload for n = 200.
- With the daily quota per identity, the number of uploads, and so of bits, is bounded too;
  docs/security.md writes the bound down per release.

Public-by-convention splits (PrefEval: its gold is published upstream) are released exactly.
Pure functions: the per-submitter best is kept by the caller (submissions/records.py).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from evaluator.metrics import metric_scale

if TYPE_CHECKING:
    from evaluator.scoring import Scores

MIN_ITEMS = 50  # no released number (total, tier, partial run) comes from fewer items
MIN_TIER_ITEMS = MIN_ITEMS
MECHANISM = "ladder (Blum & Hardt 2015), shaky threshold (Hardt 2017)"
# Metrics of the submitter's answers alone (a share of its own YES answers): nothing about the gold.
ANSWER_ONLY_METRICS = frozenset({"yes_rate"})
# Per-item arrays that hold the gold alone (a metric reading only these is a constant of the items).
GOLD_ONLY_ARRAYS = frozenset({"gold_pos", "gold"})
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


def primary_value(metrics: Mapping[str, Any]) -> float | None:
    return (metrics["total"].get(metrics["metric"]) or {}).get("value")


def primary_step(metrics: Mapping[str, Any]) -> float:
    return noise_step(metrics["n_items"], metrics["metric"])


def beats(value: float | None, best: float | None, step: float, jitter: float = 0.0) -> bool:
    """The Ladder's test: the first result, or one at least `step` (+ `jitter`, the shaky part)
    above the best released."""
    if best is None:
        return True
    if value is None or value < best + step + jitter - 1e-12:
        return False
    # and the released (rounded) value is a full step up: every release raises the best, so a
    # submitter gets at most span/step + 1 releases per task
    rounded = round_to(value, step)
    return rounded is not None and rounded >= best + step - 1e-9


def threshold_jitter(step: float) -> float:
    """A fresh, unpredictable draw in [-step/2, step/2] for one Ladder decision (not seeded by
    anything the submitter sends: a seed they could reproduce would make the bar exact again)."""
    return (secrets.randbelow(1_000_001) / 1_000_000 - 0.5) * step


def ladder_scope(suite: str, task: str) -> str:
    """What one Ladder covers: a submitter's best per task, across settings and protocols."""
    return f"{suite}/{task}"


def item_details_allowed(task: Any) -> bool:
    """Whether anything per item (an item's score, its right/wrong, an explorer row with a
    submission's outcome) may be shown for `task`'s split. Never for a hidden split: per-item
    outcomes next to the submitter's own answers are the gold. The one place this rule lives:
    every page or route that shows per-item results asks it."""
    return not task.suite.split_hidden


def released_metric_kind(metric: str, primary: str) -> str:
    """How a metric of a hidden split is released: 'ladder' (the primary: through the Ladder,
    rounded to its step), 'answers' (of the submitter's answers alone: rounded), 'gold' (of the
    gold alone, a constant of the items: rounded) or 'withheld' (gold and answers with a
    denominator the submitter chooses: no fixed step bounds what it reveals)."""
    from evaluator.metrics import get_metric

    if metric == primary:
        return "ladder"
    if metric in ANSWER_ONLY_METRICS:
        return "answers"
    try:
        reads = set(get_metric(metric).reads)
    except Exception:  # an unknown metric: say nothing of it
        return "withheld"
    return "gold" if reads and reads <= GOLD_ONLY_ARRAYS else "withheld"


def _large_enough(stats: dict[str, Any]) -> bool:
    return (stats.get("n") or 0) >= MIN_ITEMS


def released_metrics(metrics: Mapping[str, Any]) -> Scores:
    """The copy of `metrics` (the scorer's output) that may leave the scorer: the primary metric
    and the metrics `released_metric_kind` lets out, rounded to their own step, nothing from fewer
    than MIN_ITEMS items, tiers thinned the same way."""
    primary = metrics["metric"]
    total = {
        m: _rounded(stats, noise_step(stats.get("n") or metrics["n_items"], m))
        for m, stats in metrics["total"].items()
        if released_metric_kind(m, primary) != "withheld" and _large_enough(stats)
    }
    tiers: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for group, by_tier in metrics["tiers"].items():
        kept = {
            tier: {
                m: _rounded(stats, noise_step(stats["n"], m))
                for m, stats in values.items()
                if released_metric_kind(m, primary) != "withheld"
            }
            for tier, values in by_tier.items()
            if all(_large_enough(stats) for stats in values.values())
        }
        kept = {tier: values for tier, values in kept.items() if values}
        if kept:
            tiers[group] = kept
    released = cast(
        "Scores",
        {
            # `private`: the private part's score, kept by the service until a named release
            k: v
            for k, v in metrics.items()
            if k not in ("total", "tiers", "tiers_not_covered", "private")
        },
    )
    released.update(
        {
            "total": total,
            "tiers": tiers,
            "release": {
                "mechanism": MECHANISM,
                "step": primary_step(metrics),
                "min_items": MIN_ITEMS,
                "min_tier_items": MIN_ITEMS,
                "withheld_metrics": sorted(
                    m for m, stats in metrics["total"].items() if m not in total
                ),
            },
        }
    )
    return released


@dataclass(frozen=True)
class Withheld:
    """A hidden-split result that did not beat the submitter's best: all the submitter learns."""

    best: float | None
    step: float
    metric: str

    def as_result(self) -> dict[str, Any]:
        if self.best is None:  # no released best: the result was scored on too few items
            message = (
                f"not published: on this hidden split no number is released from fewer than "
                f"{MIN_ITEMS} items"
            )
        else:
            message = (
                f"not published: on this hidden split a new {self.metric} is released only when "
                f"it beats your best released score on this task ({self.best:g}, any setting) by "
                f"about {self.step:g} (the bar is shaken by up to half a step each time)"
            )
        return {
            "released": False,
            "metric": self.metric,
            "best": self.best,
            "step": self.step,
            "mechanism": MECHANISM,
            "message": message,
        }
