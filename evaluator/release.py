"""What a score on a hidden split may reveal: one number, through the Ladder, until a named release.

Exact scores read back after every upload leak the gold: flip one answer, see whether the score
moves up or down, and that item's label is known (the attack recovered all 3,000 PrefEval labels
in 274 uploads). Patching one released number at a time did not converge (a tier's rounded
interval bound, a rate's rounded upper bound each taught labels or the public/private division),
so a hidden split releases as the hidden-test platforms do (Kaggle, EvalAI challenge phases), and
this module is the one place that decides it:

- **Live (before a named release): one number.** `released_metrics` keeps the primary metric's
  value on the public part, rounded to the step, and nothing else: no exact interval, no tier
  cell, no secondary metric, no rate. Its interval is a band computed from the released value
  alone (`live_band`), so it says nothing the value does not. A metric or tier added to a suite
  is withheld live by construction: nothing here names which ones may leave.
- **Rounded with a keyed dither.** The value is rounded after adding an offset in [-step/2,
  step/2) drawn from an HMAC of the installation's secret, the submitter and the exact value
  (`dither`): a file one item away draws a fresh offset, so no fixed rounding boundary exists for
  a one-item change to cross (deterministic rounding let an attacker whose file sat on a boundary
  read one label per fresh identity); the same value shows its submitter the same number, so a
  copy cannot draw a new rounding and climb the Ladder on it.
- **Ladder.** Per submitter and task, a new value is released only when it beats that submitter's
  best released value by at least `step`; otherwise the submitter learns just that (one bit).
- **A floor for the first release.** A submitter's first result must clear the task's floor (the
  best constant answer on the public part, exact, for label tasks; for ratings the best constant
  rating file with one item changed, `single_change_reach`) by
  a step, through the same shaky bar. A file of constant answers with one item changed is never
  released, whichever item and label: a fresh identity's first upload teaches nothing for free.
- **Rounded to the noise level.** `step` is span/sqrt(n) rounded up to 1, 2 or 5 x 10^k. A
  one-item change moves a score by span/n, far below step.
- **Nothing from fewer than MIN_ITEMS items** (a partial run of one item is its label).
- **One Ladder per submitter and task** (`ladder_scope`): every setting and protocol of a task
  shares the submitter's best, so a new setting buys no fresh release.
- **A shaky threshold** (Hardt 2017, "Climbing a shaky ladder"): the bar is best (or floor) +
  step + a fresh uniform draw in [-step/2, step/2]. An upload built to sit exactly on the bar
  learns the one unknown item only with probability (1/n)/step above a coin flip.
- **A named release** (`release_private`): the private part's primary value and interval, each
  rounded with its own dither to the private part's step, once per result; the board of that
  revision ranks by it (submissions/private_part.py).

Public-by-convention splits (PrefEval: its gold is published upstream) are released exactly.
Pure functions: the per-submitter best is kept by the caller (submissions/records.py).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from evaluator.metrics import metric_scale
from evaluator.statistics import MetricStats

if TYPE_CHECKING:
    from evaluator.scoring import Scores

MIN_ITEMS = 50  # no released number (total, tier, partial run) comes from fewer items
MIN_TIER_ITEMS = MIN_ITEMS
MECHANISM = (
    "one number per result (public part, dithered rounding), ladder (Blum & Hardt 2015), "
    "shaky threshold (Hardt 2017); the private part at a named release"
)
LIVE_BAND_STEPS = 2  # the live band: rounding (< 1 step, dithered) + sampling noise (<= 1 step)
PUBLIC_RANKING = "public"  # what ranks a hidden-split row live
PRIVATE_RANKING = "private"  # ... and after the named release that published its private part
_MANTISSAS = (1, 2, 5)


def metric_span(metric: str) -> float:
    """Width of a metric's range: shares 1, correlations 2, 1-5 ratings 4."""
    if metric_scale(metric) == 100 or metric.endswith("_rate"):  # shares of items
        return 1.0
    return 2.0 if metric == "spearman" else 4.0


def metric_range(metric: str) -> tuple[float, float]:
    if metric_span(metric) == 1.0:
        return 0.0, 1.0
    return (-1.0, 1.0) if metric == "spearman" else (1.0, 5.0)


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


def round_to(value: float | None, step: float, offset: float = 0.0) -> float | None:
    """`value` on the step grid; `offset` (a dither in [-1/2, 1/2)) shifts it by offset x step
    first, so it rounds up with probability equal to its distance past the grid point below."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(round(value / step + offset) * step, 10)


def dither(secret: str, key: str, field: str) -> float:
    """A uniform offset in [-1/2, 1/2) fixed by the installation's secret, `key` and `field`:
    reproducible here, unpredictable outside, independent between keys."""
    digest = hmac.new(secret.encode(), f"{key}\0{field}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 - 0.5


def installation_key(task: Any) -> str:
    """The installation's secret, which keys the dither ("" for a split given as a bare folder)."""
    from evaluator.splits import SplitNotInstalled, installation_secret, split_files

    try:
        return installation_secret(split_files(task.suite))
    except SplitNotInstalled:
        return ""


def live_band(value: float | None, step: float, metric: str) -> list[float | None]:
    """The live interval of a released value: value +- LIVE_BAND_STEPS steps, within the metric's
    range. Computed from the released value alone, so it reveals nothing the value does not; it
    covers the dithered rounding (< 1 step) and the sampling noise (step >= 1.96 standard errors
    at the metric's widest variance)."""
    if value is None:
        return [None, None]
    low, high = metric_range(metric)
    width = LIVE_BAND_STEPS * step
    return [round(max(low, value - width), 10), round(min(high, value + width), 10)]


def primary_value(metrics: Mapping[str, Any]) -> float | None:
    return (metrics["total"].get(metrics["metric"]) or {}).get("value")


def primary_step(metrics: Mapping[str, Any]) -> float:
    return noise_step(metrics["n_items"], metrics["metric"])


def beats(
    value: float | None,
    best: float | None,
    step: float,
    jitter: float = 0.0,
    floor: float | None = None,
    offset: float = 0.0,
) -> bool:
    """The Ladder's test: at least `step` (+ `jitter`, the shaky part) above the best released, or
    for a first result above `floor` (the task's best constant answer; None: no floor)."""
    if value is None:
        return False
    if best is None:
        return floor is None or value >= floor + step + jitter - 1e-12
    if value < best + step + jitter - 1e-12:
        return False
    # and the released (rounded) value is a full step up: every release raises the best, so a
    # submitter gets at most span/step + 1 releases per task
    rounded = round_to(value, step, offset)
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


def first_release_floor(task: Any) -> float | None:
    """The value a submitter's first result must beat by a step: the best constant answer's exact
    primary value on the public part (label tasks), the best rank correlation of a constant rating
    file with at most one item changed (a correlation: `single_change_reach`), None where no
    constant answer scores (judge-scored free text)."""
    if task.metric == "spearman":
        return single_change_reach(task)
    from evaluator.baselines import reference_lines

    for line in reference_lines(task):
        if line["kind"] == "majority":
            return primary_value(line["metrics"])
    return None


def single_change_reach(task: Any) -> float:
    """The best spearman on the public part of a rating file that is constant but for one item
    (every rating, every item, each changed to every other rating), and of the constant files
    themselves (a rating read against the response order is not constant: 6 - r on the other slot).

    For a share a one-item change moves the score by 1/n, far below a step; a rank correlation
    moves by up to about sqrt(3/n) (the item's gold rank standardized), close to a step: with a
    floor of 0 a file "all 3, item i rated 5" was released when item i's gold rating is high, a
    label per fresh identity. With this floor no such file clears the bar (floor + step/2 at
    least). Exact and vectorized: changing item i only swaps two rank values (`_changed_ranks`)."""
    from evaluator.metrics import _ranks
    from evaluator.scoring import item_arrays, private_part_ids

    split = task.load_split()
    private = private_part_ids(task)
    keep = np.fromiter((item.id not in private for item in split.items), dtype=bool)
    low, high = (int(bound) for bound in task.answer_range)  # a rating task's whole ratings
    labels = [str(rating) for rating in range(low, high + 1)]
    preds = {
        label: item_arrays(task, split, {item.id: label for item in split.items})["pred"][keep]
        for label in labels
    }
    gold = item_arrays(task, split, {})["gold"][keep]
    if len(gold) < 3 or np.ptp(gold) == 0:
        return 0.0
    gold_ranks = _ranks(gold)
    best = 0.0
    for base_label in labels:
        base = preds[base_label]
        if np.ptp(base) > 0:
            best = max(best, _correlation(_ranks(base)[None, :], gold_ranks)[0])
        for label in labels:
            if label != base_label:
                best = max(best, float(np.nanmax(_changed_ranks(base, preds[label], gold_ranks))))
    return float(best)


def _correlation(rows: np.ndarray, gold_ranks: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of `rows` with gold_ranks (NaN for a constant row)."""
    centred = rows - rows.mean(axis=1, keepdims=True)
    gold = gold_ranks - gold_ranks.mean()
    scale = np.sqrt((centred**2).sum(axis=1) * (gold**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return (centred @ gold) / scale


def _changed_ranks(base: np.ndarray, changed_to: np.ndarray, gold_ranks: np.ndarray) -> np.ndarray:
    """spearman(base with item i set to changed_to[i], gold) for every i. Items sharing (old, new)
    values give the same multiset of ranks: the ranks of one of them changed, with item i's and
    that item's rank swapped. So one ranking per pair, and the dot product with the gold ranks
    moves by (r_new - r_old) * (g_i - g_first)."""
    from evaluator.metrics import _ranks

    out = np.full(len(base), np.nan)
    for old, new in {(float(a), float(b)) for a, b in zip(base, changed_to) if a != b}:
        idx = np.flatnonzero((base == old) & (changed_to == new))
        first = idx[0]
        changed = base.copy()
        changed[first] = new
        ranks = _ranks(changed)
        r0 = _correlation(ranks[None, :], gold_ranks)[0]
        others = np.flatnonzero(base == old)
        others = others[others != first]
        if len(others) == 0 or np.isnan(r0):
            out[first] = r0
            continue
        r_new, r_old = ranks[first], ranks[others[0]]
        centred = ranks - ranks.mean()
        gold = gold_ranks - gold_ranks.mean()
        scale = np.sqrt((centred**2).sum() * (gold**2).sum())
        out[idx] = r0 + (r_new - r_old) * (gold_ranks[idx] - gold_ranks[first]) / scale
    return out


def _one_number(stats: MetricStats, metric: str, n: int, offset: float) -> MetricStats:
    step = noise_step(n, metric)
    value = round_to(stats.get("value"), step, offset)
    return {
        "value": value,
        "ci95": live_band(value, step, metric),
        "n": stats["n"],
        "step": step,
    }


def released_metrics(metrics: Mapping[str, Any], offset: float = 0.0) -> Scores:
    """The copy of `metrics` (the scorer's output, of the public part) that may leave the scorer
    before a named release: the primary metric's value rounded to its step (after the dither
    `offset`), with its live band, from at least MIN_ITEMS items; nothing else. Every other metric
    and every tier is listed as withheld, so a metric or tier added later is withheld too."""
    primary = metrics["metric"]
    stats = metrics["total"].get(primary)
    total: dict[str, MetricStats] = {}
    if stats is not None and (stats.get("n") or 0) >= MIN_ITEMS:
        total[primary] = _one_number(stats, primary, stats.get("n") or metrics["n_items"], offset)
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
            "tiers": {},
            "release": {
                "mechanism": MECHANISM,
                "part": PUBLIC_RANKING,
                "step": primary_step(metrics),
                "interval": f"band: the released value +- {LIVE_BAND_STEPS} steps",
                "min_items": MIN_ITEMS,
                "withheld_metrics": sorted(m for m in metrics["total"] if m not in total),
                "withheld_tiers": sorted(metrics["tiers"]),
            },
        }
    )
    return released


def release_private(
    stats: MetricStats, metric: str, n: int, offsets: tuple[float, float, float]
) -> MetricStats:
    """A result's private-part score at a named release: its value and interval bounds, each
    rounded to the private part's step with its own dither (`offsets`: value, low, high)."""
    step = noise_step(n, metric)
    low, high = stats.get("ci95") or (None, None)
    return {
        "value": round_to(stats.get("value"), step, offsets[0]),
        "ci95": [round_to(low, step, offsets[1]), round_to(high, step, offsets[2])],
        "n": stats["n"],
        "step": step,
    }


@dataclass(frozen=True)
class Withheld:
    """A hidden-split result that was not released: all the submitter learns. The same fields for
    every first result under the floor, whatever its answers (nothing here is of the gold)."""

    best: float | None
    step: float
    metric: str
    too_few_items: bool = False

    def as_result(self) -> dict[str, Any]:
        if self.too_few_items:
            message = (
                f"not published: on this hidden split no number is released from fewer than "
                f"{MIN_ITEMS} items"
            )
        elif self.best is None:
            message = (
                f"not published: on this hidden split a first {self.metric} is released only when "
                f"it beats the task's best constant answer (the board's majority line; for a "
                f"correlation, 0) by about {self.step:g} (the bar is shaken by up to half a step)"
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
