"""Two-way (crossed) clustering: Re-Centering stage 2 pairs each prompt with 4 users' attributes
and users recur across prompts, so its intervals use the Cameron-Gelbach-Miller variance
V_prompt + V_user - V_prompt∩user (evaluator/statistics.py two_way_variance).

Checked against a two-way cluster bootstrap (the pigeonhole bootstrap of Owen 2007: prompts and
users resampled independently, each item kept with the product of its prompt's and its user's
multiplicity) and against the sampling variance of the mean over replicated data sets. The
pigeonhole bootstrap's variance is, to first order, V_prompt + V_user + V_prompt∩user (each
factor's resampling carries the cell-level variation once more, and the product term adds it a
third time; Owen 2007, Menzel 2021), so it is compared with the two-way variance after taking off
twice the intersection's bootstrap variance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from test_suite_contract import unit_problem

from evaluator.manifest import BootstrapUnitSpec
from evaluator.registry import get_suite
from evaluator.scoring import item_units, score_answers
from evaluator.splits import SplitFormatError
from evaluator.statistics import (
    Units,
    _cells,
    cluster_bootstrap_means,
    cluster_variance,
    crossed_units,
    nested_units,
    paired_comparison,
    pigeonhole_means,
    pigeonhole_weights,
    resample_unit_indices,
    share_stats,
    statistic_interval,
    two_way_variance,
)
from evaluator.suite import Split

PROMPTS, USERS, USERS_PER_PROMPT = 50, 40, 4


def crossed_labels(seed: int, per_cell: int) -> list[tuple[str, str]]:
    """50 prompts, each paired with 4 of 40 users (drawn at random: users recur across prompts),
    `per_cell` attributes (items) per prompt-user pair, as in the paper's stage 2."""
    rng = np.random.default_rng(seed)
    labels = []
    for p in range(PROMPTS):
        for u in rng.choice(USERS, USERS_PER_PROMPT, replace=False):
            labels += [(f"p{p}", f"u{u}")] * per_cell
    return labels


def crossed_outcomes(
    labels: list[tuple[str, str]], seed: int, prompt_sd: float, user_sd: float
) -> np.ndarray:
    """0/1 outcomes from a latent prompt effect + user effect + item noise (threshold 0.3)."""
    rng = np.random.default_rng(seed)
    prompts = sorted({p for p, _ in labels})
    users = sorted({u for _, u in labels})
    a = dict(zip(prompts, rng.normal(0, prompt_sd, len(prompts))))
    b = dict(zip(users, rng.normal(0, user_sd, len(users))))
    latent = np.array([a[p] + b[u] for p, u in labels]) + rng.normal(0, 1, len(labels))
    return (latent > 0.3).astype(float)


def corrected_pigeonhole_variance(values: np.ndarray, units: Units, seed: int) -> float:
    """The pigeonhole bootstrap's variance less twice the prompt-user cells' bootstrap variance."""
    pigeonhole = pigeonhole_means(values, units, np.random.default_rng(seed), samples=4000).var()
    cells = cluster_bootstrap_means(values, _cells(units), np.random.default_rng(seed), 4000).var()
    return float(pigeonhole - 2 * cells)


def test_two_way_variance_agrees_with_the_pigeonhole_bootstrap_and_widens_past_prompts():
    labels = crossed_labels(seed=0, per_cell=3)  # 600 items
    units = crossed_units(labels, ("prompt", "user"))
    assert units.name == "prompt x user" and [f.n_units for f in units.factors] == [50, 40]
    values = crossed_outcomes(labels, seed=10, prompt_sd=1.0, user_sd=1.0)
    parts = two_way_variance(values, units)
    two_way = cluster_variance(values, units, np.random.default_rng(0))
    assert (
        two_way
        == parts["variance"]
        == pytest.approx(parts["prompt"] + parts["user"] - parts["intersection"])
    )  # not floored here: the user effect makes the two-way sum the largest
    bootstrap = corrected_pigeonhole_variance(values, units, seed=1)
    # Tolerance: the bootstrap's multinomial counts vary by (1 - 1/G), not 1, so it runs a few
    # percent low; dropping the minus sign (V_p + V_u + V_pu) would put the ratio near 0.6, and
    # leaving out the intersection (V_p + V_u) near 0.75.
    assert 0.88 < bootstrap / two_way < 1.08, (bootstrap, parts)
    # the uncorrected pigeonhole bootstrap is wider still (conservative), by about 2 V_pu
    raw = pigeonhole_means(values, units, np.random.default_rng(1), samples=4000).var()
    assert raw / two_way > 1.3
    # prompts alone, as before: the cluster bootstrap over prompts, much narrower
    prompt_only = cluster_variance(values, units.factors[0], np.random.default_rng(2))
    assert two_way / prompt_only > 1.6 and bootstrap / prompt_only > 1.6, (two_way, prompt_only)
    # the share's effective n comes down by the same factor
    crossed = share_stats(values, units, np.random.default_rng(3))
    by_prompt = share_stats(values, units.factors[0], np.random.default_rng(3))
    assert by_prompt["n_effective"] / crossed["n_effective"] == pytest.approx(
        two_way / prompt_only, rel=0.05
    )
    assert crossed["n_units_by"] == {"prompt": 50, "user": 40}
    width = lambda s: s["ci95"][1] - s["ci95"][0]  # noqa: E731
    assert width(crossed) / width(by_prompt) > 1.25


def test_without_a_user_effect_it_reduces_to_the_prompt_variance():
    labels = crossed_labels(seed=0, per_cell=3)
    units = crossed_units(labels, ("prompt", "user"))
    values = crossed_outcomes(labels, seed=10, prompt_sd=1.0, user_sd=0.0)
    parts = two_way_variance(values, units)
    prompt_only = cluster_variance(values, units.factors[0], np.random.default_rng(2))
    # V_user and V_intersection now measure the same item-level variation: they cancel
    assert 0.9 < parts["two_way"] / prompt_only < 1.1, (parts, prompt_only)
    # (analytic against the bootstrap over prompts: 0.96 here, Monte Carlo error about 3 %)
    assert 0.92 < parts["variance"] / prompt_only < 1.08
    # the bootstrap's difference of two terms amplifies its (1 - 1/G) shortfall and its Monte
    # Carlo noise (4000 draws: about 2 % of a term twice the result): 0.83 here, hence 0.8
    assert 0.8 < corrected_pigeonhole_variance(values, units, seed=1) / prompt_only < 1.1


def test_two_way_variance_tracks_the_sampling_variance_over_replicated_data():
    """The estimator's mean over 300 data sets drawn on one design against the variance of their
    means (what an interval should cover): within 20 %, where prompts alone give about half."""
    labels = crossed_labels(seed=0, per_cell=3)
    units = crossed_units(labels, ("prompt", "user"))
    means, two_way, prompt_only = [], [], []
    for replicate in range(300):
        values = crossed_outcomes(labels, seed=100 + replicate, prompt_sd=1.0, user_sd=1.0)
        parts = two_way_variance(values, units)
        means.append(values.mean())
        two_way.append(parts["variance"])
        prompt_only.append(parts["prompt"])
    truth = float(np.var(means))
    assert 0.8 < np.mean(two_way) / truth < 1.2, (np.mean(two_way), truth)
    assert np.mean(prompt_only) / truth < 0.65


def test_the_floor_and_the_intersection_cells():
    # two prompts x two users, one item per cell, outcomes that the cells explain entirely:
    # V_prompt + V_user - V_cells < 0 -> floored at the larger one-way variance
    labels = [("p1", "u1"), ("p1", "u2"), ("p2", "u1"), ("p2", "u2")]
    values = np.array([1.0, 0.0, 0.0, 1.0])
    units = crossed_units(labels, ("prompt", "user"))
    parts = two_way_variance(values, units)
    assert parts["prompt"] == parts["user"] == 0 and parts["two_way"] < 0
    assert parts["variance"] == 0  # both one-way variances are 0: no interval narrower than that
    # cells group the items sharing both units (three attributes of one prompt-user pair)
    labels = [("p1", "u1")] * 3 + [("p1", "u2"), ("p2", "u1")]
    cells = _cells(crossed_units(labels, ("prompt", "user")))
    assert list(cells.codes) == [0, 0, 0, 1, 2]
    # sandwich by hand: 5 items, mean 0.6, cell residuals (3-1.8, 0-0.6, 0-0.6) -> squares
    # 1.44 + 0.36 + 0.36 = 2.16; / 25 x 3/2 = 0.1296
    values = np.array([1.0, 1, 1, 0, 0])
    units = crossed_units(labels, ("prompt", "user"))
    assert two_way_variance(values, units)["intersection"] == pytest.approx(0.1296)


def test_pigeonhole_weights_are_products_of_multiplicities():
    labels = [("p1", "u1"), ("p1", "u2"), ("p2", "u1"), ("p2", "u2"), ("p3", "u1")]
    units = crossed_units(labels, ("prompt", "user"))
    weights = pigeonhole_weights(units, np.random.default_rng(0), 500)
    # the same draws by hand: 3 prompts drawn 3 times, then 2 users drawn twice, independently
    rng = np.random.default_rng(0)
    prompt_counts = rng.multinomial(3, [1 / 3] * 3, size=500)
    user_counts = rng.multinomial(2, [1 / 2] * 2, size=500)
    prompts, users = (np.array([int(x[1]) - 1 for x in col]) for col in zip(*labels))
    assert np.array_equal(weights, prompt_counts[:, prompts] * user_counts[:, users])
    assert (weights == 0).any() and weights.max() >= 4  # items dropped and repeated
    positions = resample_unit_indices(units, np.random.default_rng(1))
    assert set(positions.tolist()) <= set(range(5))


def test_a_statistic_that_is_not_a_mean_gets_the_two_way_spread():
    """statistic_interval (F1, Spearman) on crossed units, given the mean as its statistic: its
    interval is as wide as the Wilson/normal one from the two-way variance, and narrower than the
    pigeonhole bootstrap's own percentile interval (which counts the intersection three times)."""
    labels = crossed_labels(seed=0, per_cell=3)
    units = crossed_units(labels, ("prompt", "user"))
    values = crossed_outcomes(labels, seed=10, prompt_sd=1.0, user_sd=1.0)
    low, high = statistic_interval(
        lambda positions: float(values[positions].mean()), units, np.random.default_rng(0), 1000
    )
    normal = 2 * 1.959963984540054 * two_way_variance(values, units)["variance"] ** 0.5
    assert 0.88 < (high - low) / normal < 1.12, (high - low, normal)
    assert low < values.mean() < high
    pigeonhole = pigeonhole_means(values, units, np.random.default_rng(0), samples=1000)
    wide = np.quantile(pigeonhole, 0.975) - np.quantile(pigeonhole, 0.025)
    assert (high - low) / wide < 0.9


def test_crossed_paired_comparison_uses_the_two_way_variance():
    labels = crossed_labels(seed=0, per_cell=3)
    units = crossed_units(labels, ("prompt", "user"))
    a = crossed_outcomes(labels, seed=10, prompt_sd=1.0, user_sd=1.0)
    b = crossed_outcomes(labels, seed=11, prompt_sd=1.0, user_sd=1.0)
    result = paired_comparison(a, b, units, np.random.default_rng(0))
    se = two_way_variance(a - b, units)["variance"] ** 0.5
    assert result["ci95"] == pytest.approx(
        [
            result["difference"] - 1.959963984540054 * se,
            result["difference"] + 1.959963984540054 * se,
        ]
    )
    assert "two-way" in result["test"] and result["n_units_by"] == {"prompt": 50, "user": 40}
    assert 0 < result["p_value"] <= 1
    same = paired_comparison(a, a, units, np.random.default_rng(0))
    assert same["difference"] == 0 and same["p_value"] == 1.0


def test_declaration_and_label_checks():
    spec = BootstrapUnitSpec(name="prompt", crossed_with="user")
    assert spec.crossed_with == "user"
    with pytest.raises(ValidationError, match="cross itself"):
        BootstrapUnitSpec(name="prompt", crossed_with="prompt")
    with pytest.raises(ValidationError, match="nested or crossed"):
        BootstrapUnitSpec(name="prompt", within="user", crossed_with="user")
    with pytest.raises(ValueError, match="different depths"):
        crossed_units([("p", "u"), "p"], ("prompt", "user"))
    with pytest.raises(ValueError, match="2 crossed units"):
        crossed_units([("p", "u", "x")], ("prompt", "user"))
    # a split naming only prompts: the prompt's one-way units, as before
    flat = crossed_units(["p1", "p1", "p2"], ("prompt", "user"))
    assert flat.name == "prompt" and flat.n_units == 2 and not flat.factors
    # one-way and nested units are untouched by the crossed code path
    nested = nested_units([("a", "p1"), ("a", "p2"), ("b", "p3")], ("preference", "user"))
    assert not nested.factors and nested.name == "user"
    # subsets (a tier) keep both factors
    labels = crossed_labels(seed=0, per_cell=1)
    tier = crossed_units(labels, ("prompt", "user")).subset(np.arange(8))  # two prompts' items
    users = len({u for _, u in labels[:8]})
    assert tier.name == "prompt x user" and [f.n_units for f in tier.factors] == [2, users]
    assert sorted(tier.factors[1].codes) == sorted(
        np.unique(tier.factors[1].codes, return_inverse=True)[1]
    )


# ---------------------------------------------------------------- the relevance task, scored


def write_relevance(folder: Path, with_users: bool, seed: int = 0) -> dict[str, str]:
    """A stage-2 split: 40 prompts x 4 of 30 users x 3 attributes (480 items) whose gold leans on
    the user, and a model's answers that get some users' attributes wrong: correctness shares
    both the prompt and the user. Returns the answers."""
    rng = np.random.default_rng(seed)
    prompt_effect = rng.normal(0, 1, 40)
    user_effect = rng.normal(0, 1.2, 30)
    lines, answers = [], {}
    for p in range(40):
        for u in rng.choice(30, 4, replace=False):
            for k in range(3):
                item_id = f"r{p:02d}-{u:02d}-{k}"
                yes = prompt_effect[p] + rng.normal(0, 0.5) > 0.8
                record = {
                    "id": item_id,
                    "prompt": f"Prompt number {p}: how should I answer this?",
                    "attribute": f"The user {u} has trait {k}.",
                    "votes": ["YES", "YES", "NO"] if yes else ["NO", "NO", "YES"],
                }
                if with_users:
                    record["user_id"] = f"user-{u:02d}"
                lines.append(json.dumps(record))
                right = prompt_effect[p] + user_effect[u] + rng.normal(0, 1) > -0.3
                answers[item_id] = ("YES" if yes else "NO") if right else ("NO" if yes else "YES")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "relevance.jsonl").write_text("\n".join(lines) + "\n")
    return answers


def test_relevance_intervals_use_prompt_and_user(tmp_path):
    task = get_suite("recentering").tasks["relevance"]
    assert task.bootstrap_unit["name"] == "prompt" and task.bootstrap_unit["crossed_with"] == "user"
    answers = write_relevance(tmp_path / "crossed", with_users=True)
    write_relevance(tmp_path / "prompts", with_users=False)
    crossed = Split("test", task.hooks.build_items(task, tmp_path / "crossed"))
    prompts = Split("test", task.hooks.build_items(task, tmp_path / "prompts"))
    assert unit_problem(task, crossed) is None  # the contract's check of the declared units
    units = item_units(task, crossed)
    assert units.name == "prompt x user" and [f.n_units for f in units.factors] == [40, 30]
    after = score_answers(task, crossed, answers)
    before = score_answers(task, prompts, answers)
    assert after["interval_unit"] == "prompt x user" and before["interval_unit"] == "prompt"
    acc_after, acc_before = after["total"]["accuracy"], before["total"]["accuracy"]
    assert acc_after["value"] == acc_before["value"]
    assert acc_after["n_units_by"] == {"prompt": 40, "user": 30}
    width = lambda s: s["ci95"][1] - s["ci95"][0]  # noqa: E731
    assert width(acc_after) / width(acc_before) > 1.2, (acc_after, acc_before)
    assert acc_after["n_effective"] < 0.75 * acc_before["n_effective"]
    # F1 (not a mean): the pigeonhole bootstrap, wider than prompts alone
    assert width(after["total"]["f1"]) > width(before["total"]["f1"])
    # the tiers use both units too
    for tier, stats in after["tiers"]["agreement"].items():
        assert stats["accuracy"]["n_units_by"]["user"] > 1, tier


def test_a_user_on_some_lines_only_is_refused_with_line_and_field(tmp_path):
    task = get_suite("recentering").tasks["relevance"]
    write_relevance(tmp_path, with_users=True)
    path = tmp_path / "relevance.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[4])
    del record["user_id"]
    lines[4] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SplitFormatError, match=r"line 5: field 'user_id'.*every line or on none"):
        task.hooks.build_items(task, tmp_path)
