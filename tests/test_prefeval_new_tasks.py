"""A tiny random model through PrefEval's new tasks: mcq_turns (n/a by window, RAG over the whole
conversation) and open_ended (generation, self-critic, the four judge checks with a tiny judge)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.backends import ModelSpec, load_backend  # noqa: E402
from evaluator.judge import Judge  # noqa: E402
from evaluator.model_eval import run_model  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.scoring import score_answers  # noqa: E402
from evaluator.suites.prefeval import open_ended  # noqa: E402

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = build_tiny_model(
        tmp_path_factory.mktemp("tiny-prefeval") / "gen", "generative", seed=21
    )
    return load_backend(ModelSpec("tiny-gen", str(folder), "generative", "r0"), device="cpu")


def test_mcq_turns_runs_what_fits_and_marks_the_rest_not_applicable(tiny):
    task = get_task("prefeval", "mcq_turns")
    run = run_model(task, "zero_shot", tiny, limit=6)
    skipped = run.stats["not_applicable"]
    assert "300" in skipped and "context window of 16384" in skipped["300"]
    ran = {item.tiers["turns"] for item in run.split.items}
    assert ran and not ran & set(skipped) and run.partial
    assert set(run.answers) == {item.id for item in run.split.items}
    # generate_parse (the official protocol): a letter, or None where no <choice> tag was written
    assert set(run.answers.values()) <= {"A", "B", "C", "D", None}
    result = score_answers(task, run.split, run.answers)
    assert set(result["tiers"]["turns"]) == ran


def test_mcq_rag_keeps_the_conversation_and_is_na_where_upstream_cannot_run(tmp_path):
    # the whole conversation stays: a persona conversation plus the retrieved block takes up to
    # ~18k of this byte-level tokenizer's tokens, so this model gets a longer window
    folder = build_tiny_model(tmp_path / "long", "generative", seed=22, window=32768)
    tiny_long = load_backend(ModelSpec("tiny-long", str(folder), "generative", "r0"), device="cpu")
    task = get_task("prefeval", "mcq")
    run = run_model(task, "rag", tiny_long, limit=3)
    skipped = run.stats["not_applicable"]
    # at 0 distractor turns the explicit (2 messages) and choice-based (4) forms offer fewer than
    # the 5 passages the official code retrieves: n/a, not a number
    assert set(skipped) == {
        "rag: explicit, 0 distractor turns",
        "rag: implicit_choice, 0 distractor turns",
    }
    assert {i.tiers["form"] for i in run.split.items} == {"implicit_persona"} and run.partial
    assert run.stats["protocol"] == "generate_parse"  # the official protocol is the default
    assert set(run.answers) == {item.id for item in run.split.items} and len(run.answers) == 3


def test_mcq_default_is_generate_and_parse_and_self_critic_runs(tiny):
    task = get_task("prefeval", "mcq")
    run = run_model(task, "self_critic", tiny, limit=3)
    assert run.stats["protocol"] == "generate_parse" and len(run.answers) == 3
    # a tiny random model writes no <choice> tag: unparsed answers are counted, and score wrong
    assert run.stats["unparsed"] == sum(a is None for a in run.answers.values())
    result = score_answers(task, run.split, run.answers)
    assert result["total"]["accuracy"]["n"] == 3


@pytest.mark.parametrize("setting", ["self_critic"])  # its first step is the zero-shot answer
def test_open_ended_generation_judged_by_four_checks(tiny, setting):
    task = get_task("prefeval", "open_ended")
    run = run_model(
        task, setting, tiny, limit=1
    )  # three 300-token generations, then four judge calls
    assert run.stats["protocol"] == "generate_parse" and len(run.answers) == 1
    judge = Judge("tiny-judge", "r0", tiny)
    result = score_answers(task, run.split, run.answers, judge)
    total = {m: s["value"] for m, s in result["total"].items()}
    # every answer has exactly one outcome: no error, or one of the four error types
    assert total["accuracy"] + sum(total[e] for e in open_ended.ERROR_TYPES) == pytest.approx(1.0)
    assert result["total"]["accuracy"]["n"] == 1


def test_circular_protocol_through_a_model_run(tiny):
    task = get_task("prefeval", "mcq")
    plain = run_model(task, "zero_shot", tiny, limit=6)
    circular = run_model(task, "zero_shot", tiny, protocol="circular_logprobs", limit=6)
    assert circular.stats["protocol"] == "circular_logprobs"
    assert set(circular.answers) == set(plain.answers)
    # an item counts only where all four rotations agree, so circular can only take away correct answers
    gold = {item.id: item.gold for item in circular.split.items}
    assert sum(circular.answers[i] == gold[i] for i in gold) <= sum(
        plain.answers[i] == gold[i] for i in gold
    )
    agreed = [a for a in circular.answers.values() if a is not None]
    assert all(a in "ABCD" for a in agreed)


def test_open_ended_turns_generation_behind_distractors_judged(tiny):
    task = get_task("prefeval", "open_ended_turns")
    # one item per turn count (turns come first in the order); 300 turns are over this window
    run = run_model(task, "zero_shot", tiny, limit=2)
    assert "300" in run.stats["not_applicable"] and run.partial
    assert {i.tiers["turns"] for i in run.split.items} <= {"0", "10"}
    assert run.stats["protocol"] == "generate_parse" and len(run.answers) == len(run.split.items)
    judge = Judge("tiny-judge", "r0", tiny)
    result = score_answers(task, run.split, run.answers, judge)
    total = {m: s["value"] for m, s in result["total"].items()}
    assert total["accuracy"] + sum(total[e] for e in open_ended.ERROR_TYPES) == pytest.approx(1.0)
