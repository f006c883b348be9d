"""Checks the papers' own numbers (evaluator/suites/*/reported.yaml) before they enter the
leaderboard as "reported (paper)" rows.

What is checked, and what "to rounding" means here:

* Shape: every table has an id, task, scale, a column map onto our keys, rows with a known model
  type and setting, and values only for mapped columns.
* Transcription: every number is compared with the table parsed straight from the paper's text
  (the tables, copied verbatim with attribution into tests/fixtures/papers/).
* PersonaFeedback averages. A printed cell v with one decimal stands for a true value in
  [v - 0.05, v + 0.05]. Accuracy is a count over items, so the check is exact rather than a
  tolerance: there must be integer counts k_c (one per tier cell, with |100 k_c / n_c - v_c| <= 0.05)
  whose pooled accuracy 100 * sum(k) / sum(n) lies within 0.05 of the printed average. With
  n_c >= 1010 this is the same as |count-weighted mean of the printed cells - printed avg| <= 0.10:
  both sides carry up to 0.05 of rounding (a weighted mean of cells each off by <= 0.05 is off by
  <= 0.05), so a 0.06 tolerance would be wrong: three rows of Table 3 differ by 0.066-0.086 and
  are fine by that bound. The integer-count check is a little stricter than the 0.10 bound
  because some cells admit a single count (e.g. 88.8% of 1108 can only be 984); it is run with
  whole counts and with half counts (an item scored as the mean of its two A/B orders).
  Result: the averages are MICRO averages (pooled over items, weights 1108/1667/1682 and
  1510/1321/1010), as SUITES.md says. The unweighted mean of the tier cells is rejected: wherever
  the two hypotheses differ by more than 0.2 (so that at most one can hold), the unweighted mean
  never matches and the micro mean always does, except for the one known discrepancy below.
* Re-Centering: F1 against 2PR/(P+R) over the rounding box of P and R (three decimals); the share
  of positives implied by (accuracy, P, R), pi = (1 - acc) / (1 - 2R + R/P), and the model's
  YES-rate pi * R / P (the tables print no YES-rate); Table 6 ranges and orderings.

Known discrepancies are listed below with their numbers and asserted to still be there, so a
silent edit of the YAML shows up; nothing is skipped.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "evaluator" / "suites"
PAPERS = (
    Path(__file__).resolve().parents[1] / "fixtures" / "papers"
)  # table excerpts of the papers' text

PF_KEYS = [
    "cell/specific/easy",
    "cell/specific/medium",
    "cell/specific/hard",
    "type/specific",
    "cell/general/easy",
    "cell/general/medium",
    "cell/general/hard",
    "type/general",
    "total",
]
PF_COUNTS = {  # SUITES.md and the paper's Table 2
    "cell/specific/easy": 1108,
    "cell/specific/medium": 1667,
    "cell/specific/hard": 1682,
    "cell/general/easy": 1510,
    "cell/general/medium": 1321,
    "cell/general/hard": 1010,
}
PF_AVERAGES = {  # average key -> the cells it pools
    "type/specific": ["cell/specific/easy", "cell/specific/medium", "cell/specific/hard"],
    "type/general": ["cell/general/easy", "cell/general/medium", "cell/general/hard"],
    "total": [k for k in PF_KEYS if k.startswith("cell/")],
}
RC_KEYS = {
    "accuracy",
    "precision",
    "recall",
    "f1",
    "yes_rate",
    "human_yes_rate",
    "spearman",
    "mean_rating",
    "human_mean_rating",
}

# (table, model, average key) -> (printed, count-weighted mean of the printed cells, unweighted mean)
PF_KNOWN_DISCREPANCIES = {
    # Specific Avg. printed 70.3; its cells 74.7 / 72.2 / 67.6 give 71.086 (micro) or 71.5
    # (unweighted). The row's Total Avg. 74.4 does agree with its six cells (74.375), so 70.3 is
    # most likely a typo for 71.1 (the QRM-Llama3.1-8B-v2 row right below also prints 70.3).
    ("table3", "Skywork-Reward-Llama-3.1-8B", "type/specific"): (70.3, 71.086, 71.5),
}
# Pass the 0.10 bound but admit no item counts, whole or half: a small inconsistency, the pooled
# accuracy cannot be below 78.35 given the cells, yet 78.3 is printed.
# (table, model, average key) -> (printed, smallest pooled accuracy the cells allow with half counts)
PF_KNOWN_COUNT_INCONSISTENCIES = {
    # cells 88.8 / 74.7 / 66.6 / 89.3 / 84.7 / 68.1: 88.8% of 1108 forces 984 (88.81), 84.7% of
    # 1321 forces 1119 (84.71) and 68.1% of 1010 forces 688 (68.12) with whole counts; the pooled
    # accuracy is then 78.38-78.42 (whole counts) or 78.35-78.42 (half counts), i.e. 78.4, not
    # 78.3. The count-weighted mean of the printed cells is 78.386. Possibly a few QwQ items were
    # dropped (unparsed answers) so the denominator is not 8298; the paper does not say.
    ("table3", "QwQ-32B", "total"): (78.3, 78.350),
}
# (table, model, setting) -> (printed F1, 2PR/(P+R) from printed P, R)
RC_KNOWN_F1_DISCREPANCIES = {
    # P = 0.591, R = 0.926: 2PR/(P+R) = 0.7215, at most 0.7220 over the rounding box. Accuracy, P
    # and R agree with the other rows' implied share of positives (~0.352); F1 0.726 would need
    # P ~ 0.597. The printed F1 is the odd one out.
    ("table2", "RoBERTa (Trained)", "trained"): (0.726, 0.7215),
}


def _load(suite: str) -> dict:
    return yaml.safe_load((SUITES / suite / "reported.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pf() -> dict:
    return _load("personafeedback")


@pytest.fixture(scope="module")
def rc() -> dict:
    return _load("recentering")


def _table(doc: dict, table_id: str) -> dict:
    (table,) = [t for t in doc["tables"] if t["id"] == table_id]
    return table


def _keyed(table: dict, row: dict) -> dict:
    """Row values by our key instead of the printed header."""
    return {table["columns"][h]: v for h, v in row["values"].items()}


# ---------------------------------------------------------------- shape


@pytest.mark.parametrize(
    "suite, tables",
    [
        ("personafeedback", {"table3": 31, "table6": 9, "table7": 24}),
        ("recentering", {"table2": 11, "table3": 8, "table6": 6}),
    ],
)
def test_shape(suite, tables):
    doc = _load(suite)
    assert doc["citation"].strip()
    assert {t["id"]: len(t["rows"]) for t in doc["tables"]} == tables
    for t in doc["tables"]:
        assert t["caption"].strip() and t["task"] and t["scale"] in {"percent", "fraction", "raw"}
        for key in t["columns"].values():
            if suite == "personafeedback":
                assert key in PF_KEYS, key
            else:
                assert key in RC_KEYS or re.fullmatch(r"[a-z_]+/[a-z_0-9]+", key), key
        seen = set()
        for row in t["rows"]:
            assert row["model"].strip() and row["model_type"] in {"generative", "reward", "other"}
            assert isinstance(row["setting"], str) and row["setting"]
            if suite == "personafeedback":
                assert row["setting"] in {"persona", "rag", "no_persona"}
            assert row["values"] and set(row["values"]) <= set(t["columns"]), row["model"]
            for v in row["values"].values():
                assert v is None or isinstance(v, (int, float))
            if t["scale"] == "percent":
                assert all(0 <= v <= 100 for v in row["values"].values() if v is not None)
            if t["scale"] == "fraction":
                assert all(0 <= v <= 1 for v in row["values"].values() if v is not None)
            assert (row["model"], row["setting"]) not in seen, row["model"]
            seen.add((row["model"], row["setting"]))


def test_tasks_and_settings(pf, rc):
    assert {t["id"]: t["task"] for t in pf["tables"]} == {
        "table3": "binary_choice",
        "table6": "binary_choice",
        "table7": "binary_choice",
    }
    assert {t["id"]: t["task"] for t in rc["tables"]} == {
        "table2": "attribute_verification",
        "table3": "relevance",
        "table6": "response_preference",
    }
    t3 = _table(pf, "table3")
    assert {r["setting"] for r in t3["rows"]} == {"persona"}
    assert sum(r["model_type"] == "reward" for r in t3["rows"]) == 7
    t6 = _table(pf, "table6")
    assert [r["model_type"] for r in t6["rows"]] == ["generative", "reward", "reward"] * 3
    t7 = _table(pf, "table7")
    for setting in ("persona", "rag", "no_persona"):
        assert sum(r["setting"] == setting for r in t7["rows"]) == 8


def test_tier_counts(pf):
    cells = {k: v for k, v in pf["tier_counts"].items() if k.startswith("cell/")}
    assert cells == PF_COUNTS
    assert sum(PF_COUNTS.values()) == 8298
    # the aggregate counts are the sums of their cells
    assert pf["tier_counts"]["type/specific"] == sum(
        v for k, v in cells.items() if k.startswith("cell/specific/")
    )
    assert pf["tier_counts"]["type/general"] == sum(
        v for k, v in cells.items() if k.startswith("cell/general/")
    )
    assert pf["tier_counts"]["total"] == 8298


# ---------------------------------------------------------------- transcription against the text


def _paper(name: str) -> str:
    return (PAPERS / name).read_text(encoding="utf-8")


def _tsv_block(text: str, caption_start: str, ncols: int) -> list[list[str]]:
    """Tab-separated numeric rows of the table whose caption line starts with caption_start."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(caption_start))
    rows, begun = [], False
    for line in lines[start + 1 :]:
        parts = line.rstrip().split("\t")
        if len(parts) == ncols and re.fullmatch(r"[\d.]+", parts[-1]):
            rows.append(parts)
            begun = True
        elif begun and not (len(parts) == 1 and parts[0] and not parts[0].startswith("*")):
            break  # a group heading (one word) keeps the block open; anything else closes it
    return rows


def test_personafeedback_matches_paper_text(pf):
    text = _paper("personafeedback.txt")
    for tid, caption in (
        ("table3", "Table 3: PERSONAFEEDBACK results"),
        ("table6", "Table 6: PERSONAFEEDBACK train results"),
    ):
        printed = _tsv_block(text, caption, 10)
        table = _table(pf, tid)
        assert len(printed) == len(table["rows"])
        for parts, row in zip(printed, table["rows"]):
            if tid == "table3":
                assert row["model"] == parts[0]
            else:
                assert row["model"] == parts[0] or row["model"].endswith(" " + parts[0])
            assert [_keyed(table, row)[k] for k in PF_KEYS] == [float(x) for x in parts[1:]]
    printed = _tsv_block(text, "Table 7: Comparison of Reasoning", 4)
    table = _table(pf, "table7")
    assert len(printed) == 8
    for parts in printed:
        got = {r["setting"]: r["values"] for r in table["rows"] if r["model"] == parts[0]}
        assert got == {
            "persona": {"Persona": float(parts[1])},
            "rag": {"RAG": float(parts[2])},
            "no_persona": {"No Persona": float(parts[3])},
        }
    # Table 2 of the paper: the tier counts
    (counts,) = _tsv_block(text, "Table 2: The statics of PERSONAFEEDBACK", 7)
    assert [int(x) for x in counts] == list(PF_COUNTS.values()) + [8298]


def _md_table(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_recentering_matches_paper_text(rc):
    text = _paper("recentering-humans.txt")
    for tid, header in (("table2", "| Verifier | Accuracy"), ("table3", "| Model | Accuracy")):
        printed = _md_table(text, header)
        table = _table(rc, tid)
        assert len(printed) == len(table["rows"])
        for parts, row in zip(printed, table["rows"]):
            assert [row["values"][h] for h in ("Accuracy", "Precision", "Recall", "F1")] == [
                float(x) for x in parts[1:]
            ]
    printed = _md_table(text, "| Judge | Avg. Rating")
    flat = [p[0:3] for p in printed] + [p[3:6] for p in printed]  # left group, then right group
    table = _table(rc, "table6")
    assert [r["model"] for r in table["rows"]] == [p[0] for p in flat]
    for (name, rating, spearman), row in zip(flat, table["rows"]):
        assert row["values"] == {
            "Avg. Rating": float(rating),
            "Spearman": None if spearman == "–" else float(spearman),
        }, name


# ---------------------------------------------------------------- PersonaFeedback averages


def _count_range(
    value: float, n: int, step: float = 1.0, half: float = 0.05
) -> tuple[float, float]:
    """Counts k (multiples of step) with |100 k / n - value| <= half (either rounding convention)."""
    lo = math.ceil((value - half) * n / 100 / step - 1e-9) * step
    hi = math.floor((value + half) * n / 100 / step + 1e-9) * step
    assert lo <= hi, (value, n)
    return lo, hi


def _micro_consistent(cells: dict, printed: float, step: float = 1.0) -> bool:
    """Are there counts per cell (multiples of step), each rounding to its printed cell, whose
    pooled accuracy rounds to the printed average? Every multiple of step between the summed
    bounds is reachable, so interval intersection decides it."""
    total_n = sum(PF_COUNTS[c] for c in cells)
    lo = sum(_count_range(v, PF_COUNTS[c], step)[0] for c, v in cells.items())
    hi = sum(_count_range(v, PF_COUNTS[c], step)[1] for c, v in cells.items())
    k_lo, k_hi = _count_range(printed, total_n, step)
    return max(lo, k_lo) <= min(hi, k_hi)


def _micro(cells: dict) -> float:
    return sum(v * PF_COUNTS[c] for c, v in cells.items()) / sum(PF_COUNTS[c] for c in cells)


def _unweighted(cells: dict) -> float:
    return sum(cells.values()) / len(cells)


def _pf_average_cases(pf):
    for tid in ("table3", "table6"):
        table = _table(pf, tid)
        for row in table["rows"]:
            values = _keyed(table, row)
            for avg, cell_keys in PF_AVERAGES.items():
                yield tid, row["model"], avg, {c: values[c] for c in cell_keys}, values[avg]


def test_personafeedback_averages_are_micro(pf):
    checked, failures, max_gap = 0, {}, 0.0
    for tid, model, avg, cells, printed in _pf_average_cases(pf):
        checked += 1
        micro = _micro(cells)
        if abs(micro - printed) <= 0.10 + 1e-9:
            max_gap = max(max_gap, abs(micro - printed))
        else:
            failures[(tid, model, avg)] = (printed, round(micro, 3), round(_unweighted(cells), 3))
    assert checked == 40 * 3
    assert failures == PF_KNOWN_DISCREPANCIES
    assert 0.08 < max_gap < 0.10  # QwQ-32B Total Avg.: 78.386 vs 78.3 (needs the 0.10 bound)


@pytest.mark.parametrize("step", [1.0, 0.5])
def test_personafeedback_averages_exact_item_counts(pf, step):
    failures = {}
    for tid, model, avg, cells, printed in _pf_average_cases(pf):
        if (tid, model, avg) in PF_KNOWN_DISCREPANCIES:
            assert not _micro_consistent(cells, printed, step)
        elif not _micro_consistent(cells, printed, step):
            total_n = sum(PF_COUNTS[c] for c in cells)
            lowest = sum(_count_range(v, PF_COUNTS[c], 0.5)[0] for c, v in cells.items())
            failures[(tid, model, avg)] = (printed, round(100 * lowest / total_n, 3))
    assert failures == PF_KNOWN_COUNT_INCONSISTENCIES


def test_personafeedback_averages_are_not_unweighted(pf):
    """Where micro and unweighted means differ by > 0.2, at most one can round to the printed
    value: the micro mean does (bar the known discrepancy), the unweighted mean never does."""
    discriminating = micro_ok = unweighted_ok = 0
    for *_, cells, printed in _pf_average_cases(pf):
        micro, unweighted = _micro(cells), _unweighted(cells)
        if abs(micro - unweighted) <= 0.2:
            continue
        discriminating += 1
        micro_ok += abs(micro - printed) <= 0.10 + 1e-9
        unweighted_ok += abs(unweighted - printed) <= 0.10 + 1e-9
    assert discriminating >= 90
    assert micro_ok == discriminating - len(PF_KNOWN_DISCREPANCIES)
    assert unweighted_ok == 0


def test_skywork_total_consistent_with_cells_not_with_printed_specific_avg(pf):
    table = _table(pf, "table3")
    (row,) = [r for r in table["rows"] if r["model"] == "Skywork-Reward-Llama-3.1-8B"]
    v = _keyed(table, row)
    assert _micro_consistent({c: v[c] for c in PF_AVERAGES["total"]}, v["total"])
    # pooling the printed type averages instead gives 74.0, not the printed 74.4
    n_s, n_g = 4457, 3841
    pooled = (v["type/specific"] * n_s + v["type/general"] * n_g) / (n_s + n_g)
    assert round(pooled, 1) == 74.0 and v["total"] == 74.4


def test_table3_sorted_by_total_within_groups(pf):
    table = _table(pf, "table3")
    groups: dict[str, list[float]] = {}
    for row in table["rows"]:
        groups.setdefault(row["note"].split(";")[0], []).append(_keyed(table, row)["total"])
    assert list(groups) == [
        "group: Reasoning",
        "group: Chat",
        "group: Open-Source",
        "group: Reward Model",
    ]
    for totals in groups.values():
        assert totals == sorted(totals, reverse=True)


# ---------------------------------------------------------------- PersonaFeedback Table 7

# Table 7's Persona column vs the same model's Total Avg. in Table 3: never equal (all 0.1-0.6
# higher), so Table 7 is a separate run or subset; documented, not reconciled.
TABLE7_VS_TABLE3 = {  # Table 7 name -> (Table 3 name, Table 7 Persona, Table 3 Total Avg.)
    "o3-mini": ("o3-mini", 80.1, 79.9),
    "Deepseek-R1": ("Deepseek-R1", 79.5, 79.4),
    "QwQ-32B": ("QwQ-32B", 78.7, 78.3),
    "R1-Distill-Qwen-32B": ("R1-Distill-Qwen-32B", 78.0, 77.7),
    "GPT-4.1": ("GPT-4.1", 80.3, 80.0),
    "GPT-4o": ("GPT-4o-2024-11-20", 79.0, 78.9),
    "Claude-3-5-sonnet": ("Claude-3-5-sonnet-20241022", 79.0, 78.8),
    "Gemini-2.0-flash": ("Gemini-2.0-flash", 78.3, 77.7),
}


def test_table7(pf):
    t7, t3 = _table(pf, "table7"), _table(pf, "table3")
    by = {}
    for row in t7["rows"]:
        (value,) = row["values"].values()
        assert t7["columns"][next(iter(row["values"]))] == "total"
        by.setdefault(row["model"], {})[row["setting"]] = value
    totals = {r["model"]: _keyed(t3, r)["total"] for r in t3["rows"]}
    assert set(by) == set(TABLE7_VS_TABLE3)
    for name, (t3_name, persona, total) in TABLE7_VS_TABLE3.items():
        assert by[name]["persona"] == persona and totals[t3_name] == total
        assert persona > total
        # the paper's claim: the persona setting beats RAG and No Persona for every model
        assert by[name]["persona"] > by[name]["rag"]
        assert by[name]["persona"] > by[name]["no_persona"]
        # here RAG >= No Persona everywhere (GPT-4.1: 76.2 vs 76.0), unlike Figure 3's "RAG similar
        # to No Persona": a hint that this RAG column is the LLM-filtered RAG of Appendix F
        assert by[name]["rag"] >= by[name]["no_persona"]


# ---------------------------------------------------------------- Re-Centering

H = 0.0005  # half a unit of the third decimal


def _prf(row):
    v = row["values"]
    return v["Accuracy"], v["Precision"], v["Recall"], v["F1"]


def _f1_bounds(p: float, r: float) -> tuple[float, float]:
    """F1 is increasing in P and in R, so its range over the rounding box is at the corners."""
    f = lambda a, b: 2 * a * b / (a + b)  # noqa: E731
    return f(p - H, r - H), f(p + H, r + H)


def _implied(acc, p, r):
    """Range over the rounding box of the positive share pi and of the model's positive rate."""
    pis, rates = [], []
    for a, pp, rr in itertools.product((acc - H, acc + H), (p - H, p + H), (r - H, r + H)):
        pi = (1 - a) / (1 - 2 * rr + rr / pp)  # from acc = 1 - FN - FP with TP = pi R
        pis.append(pi)
        rates.append(pi * rr / pp)
    return (min(pis), max(pis)), (min(rates), max(rates))


def test_recentering_f1_matches_precision_recall(rc):
    failures, checked = {}, 0
    for tid in ("table2", "table3"):
        for row in _table(rc, tid)["rows"]:
            _, p, r, f1 = _prf(row)
            lo, hi = _f1_bounds(p, r)
            checked += 1
            if not lo - H - 1e-12 <= f1 <= hi + H + 1e-12:
                failures[(tid, row["model"], row["setting"])] = (f1, round(2 * p * r / (p + r), 4))
    assert checked == 19
    assert failures == RC_KNOWN_F1_DISCREPANCIES


def test_recentering_table2_implied_positive_share(rc):
    """Share of unsupported items implied by each row: ~0.35 everywhere, but the Qwen3.5-27B rows
    (0.342-0.347) cannot share one exact item set with the others (0.351-0.355)."""
    ranges = {
        (r["model"], r["setting"]): _implied(*_prf(r)[:3])[0] for r in _table(rc, "table2")["rows"]
    }
    for lo, hi in ranges.values():
        assert 0.34 <= lo <= hi <= 0.36
    others = [v for k, v in ranges.items() if k[0] != "Qwen3.5-27B"]
    assert min(hi for _, hi in others) >= 0.3509 and max(lo for lo, _ in others) <= 0.3541
    qwen = [v for k, v in ranges.items() if k[0] == "Qwen3.5-27B"]
    assert max(hi for _, hi in qwen) < min(lo for lo, _ in others)


def test_recentering_table3_yes_rates(rc):
    """Human majority YES share implied by each row is ~18% ("about 20%" in the text); zero-shot LLMs
    say YES 40-64% of the time (the text says 40-60%; Llama-3.3-70B is at 0.641); the two trained
    methods say YES about as often as humans."""
    rows = {
        (r["model"], r["setting"]): _implied(*_prf(r)[:3]) for r in _table(rc, "table3")["rows"]
    }
    for (model, setting), ((pi_lo, pi_hi), (yes_lo, yes_hi)) in rows.items():
        assert 0.17 <= pi_lo <= pi_hi <= 0.181, model
        if setting == "zero_shot":
            assert 0.40 <= yes_lo <= yes_hi <= 0.65, model
        else:
            assert 0.17 <= yes_lo <= yes_hi <= 0.20, model
    (_, (llama_lo, llama_hi)) = rows[("Llama-3.3-70B", "zero_shot")]
    assert 0.640 < llama_lo <= llama_hi < 0.644  # above the text's "40-60%"
    # the GRPO row's implied share (0.171-0.173) differs from the rest (0.177-0.181): another item set
    assert rows[("Qwen3-4B + GRPO", "grpo")][0][1] < 0.174
    # text claims: precision of every zero-shot LLM < 0.4; RoBERTa and GRPO beat all of them in
    # F1 and precision; GRPO: F1/precision 0.417/0.267 -> 0.641/0.611
    t3 = {(r["model"], r["setting"]): r["values"] for r in _table(rc, "table3")["rows"]}
    zero = [v for (m, s), v in t3.items() if s == "zero_shot"]
    assert all(v["Precision"] < 0.4 for v in zero)
    for key in (("RoBERTa", "trained"), ("Qwen3-4B + GRPO", "grpo")):
        assert all(t3[key]["F1"] > v["F1"] and t3[key]["Precision"] > v["Precision"] for v in zero)
    assert (t3[("Qwen3-4B", "zero_shot")]["F1"], t3[("Qwen3-4B", "zero_shot")]["Precision"]) == (
        0.417,
        0.267,
    )
    assert (
        t3[("Qwen3-4B + GRPO", "grpo")]["F1"],
        t3[("Qwen3-4B + GRPO", "grpo")]["Precision"],
    ) == (0.641, 0.611)


def test_recentering_table2_claims(rc):
    t2 = {(r["model"], r["setting"]): r["values"] for r in _table(rc, "table2")["rows"]}
    models = {m for m, s in t2 if s == "zero_shot"}
    assert len(models) == 5
    for m in models:  # the optimized prompt raises recall for every model
        assert t2[(m, "optimized_prompt")]["Recall"] > t2[(m, "zero_shot")]["Recall"]
    best_f1 = max(t2, key=lambda k: t2[k]["F1"])
    assert best_f1 == ("RoBERTa (Trained)", "trained")


def test_recentering_table6(rc):
    """Humans rate lower than every LLM judge (score inflation). The highest Spearman is
    Llama-3.3-70B's 0.376, an open-weight judge, although the text says open-weight judges
    correlate very weakly and proprietary ones best ("about 0.37"): a text/table mismatch, kept as
    printed and noted in the YAML."""
    rows = {r["model"]: r["values"] for r in _table(rc, "table6")["rows"]}
    human = rows.pop("Human")
    assert human == {"Avg. Rating": 3.176, "Spearman": None}
    for v in rows.values():
        assert 1 <= v["Avg. Rating"] <= 5 and -1 <= v["Spearman"] <= 1
        assert v["Avg. Rating"] > human["Avg. Rating"]
    assert max(rows, key=lambda m: rows[m]["Spearman"]) == "Llama-3.3-70B"
    assert rows["Llama-3.3-70B"]["Spearman"] == 0.376
    assert sorted(rows, key=lambda m: -rows[m]["Spearman"])[1:3] == ["Claude-S4.6", "GPT-5.4"]
