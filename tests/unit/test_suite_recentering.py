"""Re-Centering Humans suite: items from the synthetic fixture split, hand-made predictions with
known metric values, answer parsing, and the errors a bad split or predictions file gets."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from evaluator.backends.base import BackendError
from evaluator.metrics import spearman
from evaluator.predictions import PredictionsError, read_predictions
from evaluator.registry import get_suite
from evaluator.scoring import item_units, score_answers
from evaluator.splits import SplitFormatError
from evaluator.suite import Split

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "splits" / "recentering"


@pytest.fixture(scope="module")
def suite():
    return get_suite("recentering")


def _split(task) -> Split:
    return Split("test", task.hooks.build_items(task, FIXTURE))


def _total(result: dict) -> dict[str, float]:
    return {m: s["value"] for m, s in result["total"].items()}


def _tiers(result: dict, group: str) -> dict[str, float]:
    return {t: v[result["metric"]]["value"] for t, v in result["tiers"][group].items()}


def _lines(records: list[dict]) -> list[bytes]:
    return [json.dumps(r).encode() for r in records]


# ---------------------------------------------------------------- manifest


def test_manifest(suite):
    assert set(suite.tasks) == {"attribute_verification", "relevance", "response_preference"}
    assert suite.split_spec["source"] == "installed"
    # every setting of the paper's reported rows can be shown (filter) and submitted
    assert {"zero_shot", "optimized_prompt", "trained", "grpo", "default"} <= set(suite.settings)
    av, rel, pref = (
        suite.tasks[n] for n in ("attribute_verification", "relevance", "response_preference")
    )
    assert av.metrics == ("accuracy", "precision", "recall", "f1")
    assert rel.metrics == ("accuracy", "precision", "recall", "f1", "yes_rate", "human_yes_rate")
    assert (
        pref.metrics == ("spearman", "mean_rating", "human_mean_rating")
        and pref.metric == "spearman"
    )
    assert (
        pref.answer_kind == "rating"
        and pref.answer_range == (1, 5)
        and pref.answer_field == "rating"
    )
    assert rel.answer_labels == ("YES", "NO") and av.answer_labels == ("supported", "unsupported")


def test_reported_columns_match_the_manifest(suite):
    import yaml

    doc = yaml.safe_load((suite.folder / "reported.yaml").read_text(encoding="utf-8"))
    for table in doc["tables"]:
        task = suite.tasks[table["task"]]
        assert set(table["columns"].values()) <= set(task.metrics), table["id"]
        assert {row["setting"] for row in table["rows"]} <= set(suite.settings), table["id"]


# ---------------------------------------------------------------- items


def test_items_and_public_inputs_carry_no_gold(suite):
    av = _split(suite.tasks["attribute_verification"])
    assert len(av.items) == 10
    assert [i.gold for i in av.items].count("unsupported") == 4
    assert {i.tiers["source"] for i in av.items} == {"wildchat", "personalens", "cupid", "prefeval"}
    for item in av.items:
        assert set(item.public) == {"id", "source", "snippet", "attribute"}

    rel = _split(suite.tasks["relevance"])
    assert {i.id for i in rel.items if i.gold == "YES"} == {"r02", "r03", "r06"}
    assert {i.id for i in rel.items if i.tiers["agreement"] == "split"} == {
        "r03",
        "r05",
        "r06",
        "r07",
    }
    for item in rel.items:
        assert set(item.public) == {"id", "prompt", "attribute"}

    pref = _split(suite.tasks["response_preference"])
    assert pref.by_id["p07"].gold == {"rating": pytest.approx(5 / 3), "personalized": "B"}
    for item in pref.items:
        # neither the rating, nor which response is personalized, nor the generator
        assert set(item.public) == {
            "id",
            "profile",
            "prompt",
            "attribute",
            "response_a",
            "response_b",
        }
    for split in (av, rel, pref):
        text = split.public_jsonl().decode()
        for banned in (
            "label",
            "votes",
            "human_rating",
            "personalized",
            "generator",
            "accepted",
            "rejected",
        ):
            assert f'"{banned}"' not in text


def _broken_copy(tmp_path: Path, name: str, line: int, drop: str | None = None, **replace) -> Path:
    folder = tmp_path / "split"
    shutil.copytree(FIXTURE, folder)
    path = folder / name
    rows = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(rows[line - 1])
    if drop:
        record.pop(drop)
    record.update(replace)
    rows[line - 1] = json.dumps(record)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "task_name, file, line, kwargs, words",
    [
        (
            "attribute_verification",
            "attribute_verification.jsonl",
            3,
            {"drop": "snippet"},
            ["line 3", "'snippet'"],
        ),
        (
            "attribute_verification",
            "attribute_verification.jsonl",
            2,
            {"label": "maybe"},
            ["line 2", "'label'", "maybe"],
        ),
        (
            "attribute_verification",
            "attribute_verification.jsonl",
            4,
            {"source": "reddit"},
            ["line 4", "'source'"],
        ),
        (
            "attribute_verification",
            "attribute_verification.jsonl",
            6,
            {"drop": "conversation_id"},
            ["line 6", "'conversation_id'"],
        ),
        ("relevance", "relevance.jsonl", 5, {"drop": "votes"}, ["line 5", "'votes'"]),
        ("relevance", "relevance.jsonl", 1, {"votes": ["YES", "NO"]}, ["line 1", "'votes'", "odd"]),
        (
            "response_preference",
            "response_preference.jsonl",
            6,
            {"drop": "human_rating"},
            ["line 6", "'human_rating'"],
        ),
        (
            "response_preference",
            "response_preference.jsonl",
            2,
            {"human_rating": 6},
            ["line 2", "'human_rating'", "1 to 5"],
        ),
        (
            "response_preference",
            "response_preference.jsonl",
            7,
            {"personalized": "C"},
            ["line 7", "'personalized'"],
        ),
        (
            "response_preference",
            "response_preference.jsonl",
            8,
            {"generator": "Mistral-7B"},
            ["line 8", "'generator'"],
        ),
        (
            "response_preference",
            "response_preference.jsonl",
            9,
            {"id": "p01"},
            ["line 9", "'id'", "duplicate"],
        ),
    ],
)
def test_split_errors_name_file_line_and_field(
    suite, tmp_path, task_name, file, line, kwargs, words
):
    folder = _broken_copy(tmp_path, file, line, **kwargs)
    with pytest.raises(SplitFormatError) as caught:
        suite.tasks[task_name].hooks.build_items(suite.tasks[task_name], folder)
    message = str(caught.value)
    assert message.startswith(file), message
    for word in words:
        assert word in message, message


def test_missing_file_is_named(suite, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(SplitFormatError, match="relevance.jsonl"):
        suite.tasks["relevance"].hooks.build_items(suite.tasks["relevance"], folder)


# ---------------------------------------------------------------- scoring


def test_verification_precision_recall_f1_unsupported_positive(suite):
    task = suite.tasks["attribute_verification"]
    split = _split(task)
    flagged = {"v01", "v03", "v02", "v05", "v07"}  # gold unsupported: v01 v03 v06 v08
    answers = {i.id: "unsupported" if i.id in flagged else "supported" for i in split.items}
    result = score_answers(task, split, answers)
    # TP v01 v03; FP v02 v05 v07; FN v06 v08; TN v04 v09 v10
    assert _total(result) == pytest.approx(
        {"accuracy": 0.5, "precision": 0.4, "recall": 0.5, "f1": 4 / 9}
    )
    assert _tiers(result, "source") == pytest.approx(
        {"wildchat": 0.75, "personalens": 0.0, "cupid": 0.0, "prefeval": 1.0}
    )


def test_verification_unparsed_answer_is_wrong_and_not_flagged(suite):
    task = suite.tasks["attribute_verification"]
    split = _split(task)
    answers = {i.id: i.gold for i in split.items}
    answers["v01"] = None  # gold unsupported
    answers["v02"] = None  # gold supported
    result = score_answers(task, split, answers)
    assert _total(result) == pytest.approx(
        {"accuracy": 0.8, "precision": 1.0, "recall": 0.75, "f1": 6 / 7}
    )


def test_relevance_metrics_and_yes_rates(suite):
    task = suite.tasks["relevance"]
    split = _split(task)
    yes = {"r01", "r02", "r03", "r05", "r07"}  # gold YES: r02 r03 r06
    answers = {i.id: "YES" if i.id in yes else "NO" for i in split.items}
    result = score_answers(task, split, answers)
    assert _total(result) == pytest.approx(
        {
            "accuracy": 0.6,
            "precision": 0.4,
            "recall": 2 / 3,
            "f1": 0.5,
            "yes_rate": 0.5,
            "human_yes_rate": 0.3,
        }
    )
    assert _tiers(result, "agreement") == pytest.approx({"unanimous": 5 / 6, "split": 0.25})

    answers["r02"] = None  # unparsed: wrong, and not a YES
    total = _total(score_answers(task, split, answers))
    assert total == pytest.approx(
        {
            "accuracy": 0.5,
            "precision": 0.25,
            "recall": 1 / 3,
            "f1": 2 / 7,
            "yes_rate": 0.4,
            "human_yes_rate": 0.3,
        }
    )


def test_spearman_with_ties_by_hand():
    arrays = {"pred": np.array([1.0, 2.0, 2.0, 3.0]), "gold": np.array([1.0, 3.0, 2.0, 4.0])}
    # average ranks: pred 1, 2.5, 2.5, 4; gold 1, 3, 2, 4 -> rho = 4.5 / sqrt(4.5 * 5)
    assert spearman(arrays, np.arange(4)) == pytest.approx(3 / math.sqrt(10))


def test_preference_orientation_spearman_and_mean_ratings(suite):
    task = suite.tasks["response_preference"]
    split = _split(task)
    human_mean = (4 + 3 + 2 + 3 + 5 + 3 + 5 / 3 + 13 / 3 + 3 + 8 / 3) / 10
    # ratings on the A/B scale that agree exactly with the humans once oriented
    exact = {
        i.id: i.gold["rating"] if i.gold["personalized"] == "B" else 6 - i.gold["rating"]
        for i in split.items
    }
    result = score_answers(task, split, exact)
    assert _total(result) == pytest.approx(
        {"spearman": 1.0, "mean_rating": human_mean, "human_mean_rating": human_mean}
    )
    # every generator has 2 items; gpt_5_4's two humans ratings are both 3.0: no rank correlation there
    assert _tiers(result, "generator") == pytest.approx(
        {
            "llama_3_3_70b": 1.0,
            "qwen3_5_27b": 1.0,
            "gemma_4_31b": 1.0,
            "gpt_5_4": None,
            "claude_sonnet_4_6": 1.0,
        }
    )
    assert {
        tier: v["spearman"]["n"] for tier, v in result["tiers"]["generator"].items()
    } == dict.fromkeys(
        ("llama_3_3_70b", "qwen3_5_27b", "gemma_4_31b", "gpt_5_4", "claude_sonnet_4_6"), 2
    )

    # always "strongly prefer B": 5 where B is personalized, 1 where A is. Oriented ranks are 3 or 8
    # (five-way ties); human ranks have a four-way tie at 3.0 (5.5); the rank covariance is 0.
    always_b = {i.id: 5 for i in split.items}
    total = _total(score_answers(task, split, always_b))
    assert total["mean_rating"] == pytest.approx(3.0)
    assert total["spearman"] == pytest.approx(0.0, abs=1e-12)
    assert total["human_mean_rating"] == pytest.approx(human_mean)

    # an unparsed model rating counts as 3 (no preference)
    arrays = task.hooks.item_arrays(task, split.items, {**exact, "p01": None, "p02": None})
    assert arrays["pred"][0] == 3.0 and arrays["pred"][1] == 3.0


def test_rating_out_of_range_names_line_and_field(suite):
    task = suite.tasks["response_preference"]
    split = _split(task)
    records = [{"id": i.id, "rating": 3} for i in split.items]
    records[1]["rating"] = 7
    records[4]["rating"] = "4"
    with pytest.raises(PredictionsError) as caught:
        read_predictions(_lines(records), task, split)
    problems = [(p.line, p.field) for p in caught.value.problems]
    assert problems == [(2, "rating"), (5, "rating")]
    assert "line 2, field 'rating'" in str(caught.value) and "1 to 5" in str(caught.value)
    records[1]["rating"], records[4]["rating"] = 1.5, 4
    assert read_predictions(_lines(records), task, split)["p02"] == 1.5


def test_label_predictions_checked(suite):
    task = suite.tasks["relevance"]
    split = _split(task)
    records = [{"id": i.id, "answer": "YES"} for i in split.items]
    records[2]["answer"] = "yes"
    with pytest.raises(PredictionsError) as caught:
        read_predictions(_lines(records), task, split)
    assert [(p.line, p.field) for p in caught.value.problems] == [(3, "answer")]


# ---------------------------------------------------------------- model-run hooks


def test_relevance_parse_answer(suite):
    parse = suite.tasks["relevance"].hooks.parse_answer
    assert parse("The attribute changes the examples.\nAnswer: YES") == "YES"
    assert parse("Answer: no") == "NO"
    assert parse("**Answer:** NO.") == "NO"
    assert (
        parse("Answer: YES\nOn reflection it would not matter.\nAnswer: NO") == "NO"
    )  # the last line wins
    assert parse("I think YES.") is None
    assert parse("") is None
    assert parse("Answer: maybe") is None


def test_verification_and_rating_parsers(suite):
    verify = suite.tasks["attribute_verification"].hooks.parse_answer
    assert verify("It is one request.\nAnswer: DOESN'T MAKE SENSE") == "unsupported"
    assert verify("Answer: doesn\u2019t make sense") == "unsupported"
    assert verify("Answer: Maybe") == "unsupported"
    assert verify("Answer: MAKES SENSE") == "supported"
    assert verify("Answer: UNSUPPORTED") == "unsupported"
    assert verify("Answer: SUPPORTED") == "supported"
    assert verify("no answer line") is None
    rate = suite.tasks["response_preference"].hooks.parse_answer
    assert rate("4") == "4" and rate("Rating: 2.") == "2"
    assert rate("I rate it 7") is None and rate("none") is None


class _Tools:
    def __init__(self, protocol: str):
        self.protocol = protocol


def test_build_requests(suite):
    from evaluator.protocols import Decision

    rel = suite.tasks["relevance"]
    publics = [i.public for i in _split(rel).items[:2]]
    gen = rel.hooks.build_requests(rel, publics, "zero_shot", _Tools("generate_parse"))
    lp = rel.hooks.build_requests(rel, publics, "grpo", _Tools("choice_logprobs"))
    assert [r.id for r in gen] == ["r01", "r02"] and gen[0].labels == ("YES", "NO")
    assert publics[0]["attribute"] in gen[0].messages[-1]["content"]
    assert gen[0].messages[-1]["content"].endswith('"Answer: YES" or "Answer: NO".')
    assert lp[0].messages[-1]["content"].endswith("Reply with only YES or NO.")
    with pytest.raises(BackendError, match="optimized_prompt"):
        rel.hooks.build_requests(rel, publics, "optimized_prompt", _Tools("generate_parse"))

    av = suite.tasks["attribute_verification"]
    pub = _split(av).items[0].public
    zero = av.hooks.build_requests(av, [pub], "zero_shot", _Tools("generate_parse"))[0]
    opt = av.hooks.build_requests(av, [pub], "optimized_prompt", _Tools("generate_parse"))[0]
    assert (
        pub["snippet"] in zero.messages[-1]["content"]
        and "Makes sense" in zero.messages[-1]["content"]
    )
    assert "Overgeneralization" in opt.messages[-1]["content"]

    pref = suite.tasks["response_preference"]
    item = _split(pref).items[0]
    request = pref.hooks.build_requests(pref, [item.public], "default", _Tools("rating_logprobs"))[
        0
    ]
    assert request.labels == ("1", "2", "3", "4", "5")
    assert item.public["response_a"] in request.messages[-1]["content"]
    # the expected rating under the model's label distribution
    scores = {str(r): math.log(p) for r, p in zip(range(1, 6), (0.0, 0.0, 0.5, 0.5, 0.0)) if p} | {
        "1": -50,
        "2": -50,
        "5": -50,
    }
    assert pref.hooks.decision_answer(Decision("p01", "3", scores)) == pytest.approx(3.5, abs=1e-9)
    assert pref.hooks.decision_answer(Decision("p01", "4")) == 4.0
    assert pref.hooks.decision_answer(Decision("p01", None)) is None


# ---------------------------------------------------------------- bootstrap units


def test_units_conversation_prompt_and_response_pair(suite, tmp_path):
    """Stage 1 resamples conversations, stage 2 prompts, stage 3 response pairs (declared in the
    manifest; the intervals of every metric resample them)."""
    av, rel, pref = (
        suite.tasks[n] for n in ("attribute_verification", "relevance", "response_preference")
    )
    assert [t.bootstrap_unit["name"] for t in (av, rel, pref)] == [
        "conversation",
        "prompt",
        "response_pair",
    ]
    assert item_units(av, _split(av)).n_units == 10  # one conversation per item in the fixture
    rel_units = item_units(rel, _split(rel))
    assert rel_units.name == "prompt" and rel_units.n_units == 6  # r01-r08 in pairs, r09, r10
    # stage 3: the fixture's prompts differ (variant k); give p01-p03 one prompt: the same pair,
    # rated for three attributes (p02 with A and B swapped) -> one unit for the three
    folder = tmp_path / "split"
    shutil.copytree(FIXTURE, folder)
    path = folder / "response_preference.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows[:3]:
        row["prompt"] = "What's a good first guitar?"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    split = Split("test", pref.hooks.build_items(pref, folder))
    units = item_units(pref, split)
    assert units.name == "response_pair" and units.n_units == 8
    assert len(set(units.codes[:3])) == 1 and units.codes[3] != units.codes[0]
    ratings = {i.id: 3.0 for i in split.items}
    result = score_answers(pref, split, ratings)
    assert result["interval_unit"] == "response_pair"
    assert result["total"]["human_mean_rating"]["n_units"] == 8
