"""Tiny models through PrefEval's new tasks: mcq_turns (n/a by window, RAG over the whole
conversation) and open_ended (generation, self-critic, the four judge checks with a tiny judge).
A random model where any output will do; scripted ones (a fixed reply) where the test follows
generations through several steps."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_scripted_model, build_tiny_model  # noqa: E402

from evaluator.backends import ModelSpec, load_backend  # noqa: E402
from evaluator.judge import Judge  # noqa: E402
from evaluator.model_eval import Checkpoint, run_model  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.scoring import score_answers  # noqa: E402
from evaluator.suites.prefeval import mcq, open_ended  # noqa: E402

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = build_tiny_model(
        tmp_path_factory.mktemp("tiny-prefeval") / "gen", "generative", seed=21
    )
    return load_backend(ModelSpec("tiny-gen", str(folder), "generative", "r0"), device="cpu")


# Scripted replies (tests/tiny_models.py build_scripted_model): a generation ends after a few tokens, where a random
# model fills every budget (self_critic: 300-token critiques, 500-token revisions), and each
# reply is known, so the tests can check what was parsed, chained and judged.
CHOICE, WRITTEN, JUDGED = "<choice>B</choice>", "Try a quiet cafe.", "<answer>Yes</answer>"


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    root = tmp_path_factory.mktemp("scripted-prefeval")
    folders = {
        "chooser": build_scripted_model(root / "chooser", CHOICE, 23, ("<choice>", "</choice>")),
        "writer": build_scripted_model(root / "writer", WRITTEN, 24),
        "judge": build_scripted_model(root / "judge", JUDGED, 25, ("<answer>", "</answer>")),
    }
    return {
        name: load_backend(ModelSpec(name, str(folder), "generative", "r0"), device="cpu")
        for name, folder in folders.items()
    }


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


def prompt_sha256(messages: list[dict]) -> str:
    """As the checkpoint records a prompt (evaluator/item_records.py prompt_fields)."""
    return hashlib.sha256(
        json.dumps(messages, ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()


def test_mcq_default_is_generate_and_parse_and_self_critic_runs(scripted, tmp_path):
    """self_critic chains three generations per item (first answer, critique, revision) and reads
    the revision with the official parser. The model writes "<choice>B</choice>" to any prompt."""
    task = get_task("prefeval", "mcq")
    kept = Checkpoint(tmp_path / "run.jsonl")
    run = run_model(task, "self_critic", scripted["chooser"], limit=3, checkpoint=kept)
    assert run.stats["protocol"] == "generate_parse" and len(run.answers) == 3
    assert run.answers == {item.id: "B" for item in run.split.items}  # the revision, parsed
    assert run.stats["unparsed"] == sum(a is None for a in run.answers.values()) == 0
    # the revision was asked after the model's own first answer and critique (and, in the
    # explicit form, its own reply to the stated preference): the prompt as sent, by its hash
    records = kept.load()
    for item in run.split.items:
        reply = CHOICE if item.public["form"] == "explicit" else None
        asked = mcq.self_critic_messages(item.public, reply, CHOICE, CHOICE)
        assert records[item.id]["prompt_sha256"] == prompt_sha256(asked), item.id
    result = score_answers(task, run.split, run.answers)
    assert result["total"]["accuracy"]["n"] == 3
    right = sum(item.gold == "B" for item in run.split.items)
    assert result["total"]["accuracy"]["value"] == pytest.approx(right / 3)


@pytest.mark.parametrize("setting", ["self_critic"])  # its first step is the zero-shot answer
def test_open_ended_generation_judged_by_four_checks(scripted, setting, tmp_path):
    """Three generations (answer, critique, revision) by a model that writes WRITTEN to any
    prompt, then the four judge checks by a judge that answers "<answer>Yes</answer>" to each: the
    preference acknowledged (so the restatement is checked: hallucinated) and violated, yet
    helpful, which upstream's rules read as a hallucinated violation."""
    task = get_task("prefeval", "open_ended")
    kept = Checkpoint(tmp_path / "run.jsonl")
    run = run_model(task, setting, scripted["writer"], limit=1, checkpoint=kept)
    assert run.stats["protocol"] == "generate_parse" and len(run.answers) == 1
    (item,) = run.split.items
    assert run.answers == {item.id: WRITTEN}
    reply = WRITTEN if item.public["form"] == "explicit" else None
    asked = open_ended.self_critic_messages(item.public, reply, WRITTEN, WRITTEN)
    assert kept.load()[item.id]["prompt_sha256"] == prompt_sha256(asked)
    transcript = tmp_path / "judge.jsonl"
    judge = Judge("tiny-judge", "r0", scripted["judge"], transcript=transcript)
    result = score_answers(task, run.split, run.answers, judge)
    calls = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert sorted(c["check"] for c in calls) == sorted(open_ended.CHECKS)  # four judge calls
    assert {(c["id"], c["parsed"]) for c in calls} == {(item.id, "Yes")}
    total = {m: s["value"] for m, s in result["total"].items()}
    # every answer has exactly one outcome: no error, or one of the four error types
    assert total["accuracy"] + sum(total[e] for e in open_ended.ERROR_TYPES) == pytest.approx(1.0)
    assert total["hallucinated_violation"] == 1.0 and total["accuracy"] == 0.0
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
