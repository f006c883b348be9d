"""Protocols (label log-probs, generate-and-parse, reward) and the checkpointed runner, on a tiny
random model with the real PrefEval MCQ task."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.backends import BackendError, ModelSpec, load_backend  # noqa: E402
from evaluator.model_eval import Checkpoint, run_model, select_items  # noqa: E402
from evaluator.protocols import (  # noqa: E402
    ChoiceRequest,
    choose_by_generation,
    choose_by_logprobs,
    choose_by_reward,
    parse_choice_tag,
)
from evaluator.registry import get_task  # noqa: E402

LABELS = ("A", "B", "C", "D")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "generative": build_tiny_model(root / "gen", "generative", seed=3),
        "reward": build_tiny_model(root / "rew", "reward", seed=4),
    }


@pytest.fixture(scope="module")
def gen(folders):
    return load_backend(
        ModelSpec("tiny-gen", str(folders["generative"]), "generative", revision="sha256:x"),
        device="cpu",
    )


@pytest.fixture(scope="module")
def rew(folders):
    return load_backend(ModelSpec("tiny-rew", str(folders["reward"]), "reward"), device="cpu")


@pytest.fixture(scope="module")
def task():
    return get_task("prefeval", "mcq")


def requests(n: int = 3) -> list[ChoiceRequest]:
    return [
        ChoiceRequest(
            f"r{i}",
            [
                {
                    "role": "user",
                    "content": f"Question {i}: which trip suits someone who hates crowds?",
                }
            ],
            LABELS,
            {label: f"option {label} for question {i}" for label in LABELS},
        )
        for i in range(n)
    ]


# -- parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<choice>B</choice>", "B"),
        ("<choice> c", "C"),
        ("I pick <choice>D</choice> because", "D"),
        ("no tag", None),
        ("<choice>E", None),
        ("", None),
        ("B", None),
    ],
)
def test_parse_choice_tag(text, expected):
    assert parse_choice_tag(text) == expected


def test_parse_choice_tag_prefilled():
    assert parse_choice_tag("A</choice>", prefilled=True) == "A"
    assert parse_choice_tag("A</choice>") is None


# -- protocols -------------------------------------------------------------------------------------


def test_choose_by_logprobs_renormalises_over_the_labels(gen):
    """Expected from the backend's raw label log-probs, computed here: the answer is their argmax and
    the scores are them renormalised over the labels (a constant shift per row)."""
    reqs = requests()
    decisions = choose_by_logprobs(gen, reqs)
    assert [d.id for d in decisions] == ["r0", "r1", "r2"]
    raw = gen.choice_logprobs(
        [gen.render(r.messages) for r in reqs], [gen.token_id(label) for label in LABELS]
    )
    for d, row, request in zip(decisions, raw, reqs):
        expected = row - np.logaddexp.reduce(row)
        np.testing.assert_allclose([d.scores[label] for label in LABELS], expected, atol=1e-5)
        assert d.answer == LABELS[int(np.argmax(row))]
        assert d.prompt_tokens == len(gen.render(request.messages))
        assert (
            expected.max() - row.max() > 0
        )  # the labels hold only part of the full-vocabulary mass


def test_choose_by_logprobs_refuses_multi_token_labels_and_mixed_labels(gen):
    bad = [ChoiceRequest("x", [{"role": "user", "content": "hi"}], ("AB", "CD"))]
    with pytest.raises(BackendError):
        choose_by_logprobs(gen, bad)
    mixed = requests(2)
    mixed[1].labels = ("A", "B")
    with pytest.raises(BackendError, match="share"):
        choose_by_logprobs(gen, mixed)


def test_choose_by_generation_parses_or_gives_none(gen):
    """The texts the backend generates (asked for here), each through the parser; unparsable -> None."""
    reqs = requests(2)
    texts = gen.generate([gen.render(r.messages) for r in reqs], 4)

    def parse(
        text: str,
    ) -> str | None:  # the first character, when it is a letter: something and None both occur
        return text[0].upper() if text[:1].isalpha() else None

    decisions = choose_by_generation(gen, reqs, 4, parse)
    assert [d.raw for d in decisions] == texts
    assert [d.answer for d in decisions] == [parse(t) for t in texts]
    nothing = choose_by_generation(gen, reqs, 4, lambda text: None)
    assert [d.answer for d in nothing] == [None, None] and [d.raw for d in nothing] == texts


def test_choose_by_reward_scores_every_candidate(rew):
    """Each candidate scored here on its own: the scores match, and the strict best wins."""
    reqs = requests(2)
    decisions = choose_by_reward(rew, reqs)
    for request, decision in zip(reqs, decisions):
        expected = {
            label: rew.reward_scores(
                [
                    rew.render(
                        [
                            *request.messages,
                            {"role": "assistant", "content": request.responses[label]},
                        ],
                        add_generation_prompt=False,
                    )
                ]
            )[0]
            for label in LABELS
        }
        for label in LABELS:
            assert decision.scores[label] == pytest.approx(expected[label], abs=1e-4)
        assert decision.answer == max(expected, key=expected.get)


# -- the runner ------------------------------------------------------------------------------------


def test_select_items_spreads_over_all_forms(task):
    split = task.load_split()
    chosen = select_items(split, 8)
    assert len(chosen.items) == 8 and len({i.id for i in chosen.items}) == 8
    assert {i.tiers["form"] for i in chosen.items} == {
        "explicit",
        "implicit_choice",
        "implicit_persona",
    }
    assert [i.id for i in select_items(split, 8).items] == [
        i.id for i in chosen.items
    ]  # deterministic
    assert select_items(split, None) is split and select_items(split, len(split.items) + 5) is split


class CountingBackend:
    """Forwards to a real backend, counting the prompts each primitive is asked for."""

    def __init__(self, inner):
        self._inner = inner
        self.prompts = {"choice_logprobs": 0, "generate": 0, "reward_scores": 0}

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def choice_logprobs(self, prompts, choice_ids, progress=None):
        self.prompts["choice_logprobs"] += len(prompts)
        return self._inner.choice_logprobs(prompts, choice_ids, progress)

    def generate(self, prompts, max_new_tokens, progress=None):
        self.prompts["generate"] += len(prompts)
        return self._inner.generate(prompts, max_new_tokens, progress)

    def reward_scores(self, prompts, progress=None):
        self.prompts["reward_scores"] += len(prompts)
        return self._inner.reward_scores(prompts, progress)


class Killed(Exception):
    pass


def test_run_model_resumes_from_its_checkpoint(gen, task, tmp_path):
    # choice_logprobs named: it reads one forward pass per item, which the counts below rely on
    full = run_model(task, "zero_shot", gen, protocol="choice_logprobs", limit=8, batch_items=4)
    assert full.partial and len(full.answers) == 8
    assert full.stats["items_resumed"] == 0 and full.stats["protocol"] == "choice_logprobs"

    checkpoint = Checkpoint(tmp_path / "ck.jsonl")
    calls = []

    def die_after_first_batch(report):
        calls.append(report)
        if not report[
            "in_flight"
        ]:  # reports inside a chunk (long runs) go by; the first chunk's end kills
            raise Killed()

    first = CountingBackend(gen)
    with pytest.raises(Killed):
        run_model(
            task,
            "zero_shot",
            first,
            protocol="choice_logprobs",
            limit=8,
            checkpoint=checkpoint,
            on_progress=die_after_first_batch,
            batch_items=4,
        )
    # Exactly one chunk end was reported, the first one's (reports inside a chunk may come before it).
    ends = [c for c in calls if not c["in_flight"]]
    assert [(c["done"], c["total"]) for c in ends] == [(4, 8)]
    # checkpoints are written off the engine's path: the chunk in flight when the writer failed may
    # have been scored too, but only the written one counts as done
    assert first.prompts["choice_logprobs"] in (4, 8)
    first_done = set(checkpoint.load())
    assert len(first_done) == 4
    # a torn last line (killed mid-write) is ignored
    with open(checkpoint.path, "a") as stream:
        stream.write('{"id": "explicit-')

    second = CountingBackend(gen)
    reports = []
    resumed = run_model(
        task,
        "zero_shot",
        second,
        protocol="choice_logprobs",
        limit=8,
        checkpoint=checkpoint,
        on_progress=reports.append,
        batch_items=4,
    )
    assert resumed.stats["items_resumed"] == 4
    assert second.prompts["choice_logprobs"] == 4  # only the 4 items not in the checkpoint
    done_ids = set(checkpoint.load())
    assert done_ids == set(full.answers)
    assert resumed.answers == full.answers
    assert reports[-1]["done"] == 8
    # explicit items need the model's own first reply: asked only for the items still to do
    todo_explicit = [
        i for i in resumed.split.items if i.tiers["form"] == "explicit" and i.id not in first_done
    ]
    assert second.prompts["generate"] == len(todo_explicit)


def test_run_model_protocol_must_fit_the_model(gen, rew, task):
    with pytest.raises(BackendError):
        run_model(task, "zero_shot", rew, protocol="choice_logprobs", limit=2)
    with pytest.raises(BackendError):
        run_model(task, "zero_shot", gen, protocol="reward", limit=2)
    with pytest.raises(BackendError):
        run_model(task, "zero_shot", gen, protocol="no_such_protocol", limit=2)


@pytest.mark.parametrize(
    "protocol", ["reward", None]
)  # None: the default for a reward model (as the CLI runs it)
def test_run_model_reward_protocol(rew, task, protocol):
    run = run_model(task, "zero_shot", rew, protocol=protocol, limit=6, batch_items=4)
    assert len(run.answers) == 6 and run.stats["protocol"] == "reward"
    assert all(a in LABELS for a in run.answers.values())
    assert run.stats["items_resumed"] == 0 and len(run.stats["prompt_template_sha256"]) == 64


def test_checkpoint_keeps_the_models_side_only(gen, task, tmp_path):
    """The model's answers and what it was sent and wrote (the details of a public split), never
    the gold: that stays in the split, read by the scorer."""
    checkpoint = Checkpoint(tmp_path / "ck.jsonl")
    run_model(task, "zero_shot", gen, limit=3, checkpoint=checkpoint)
    lines = [json.loads(line) for line in checkpoint.path.read_text().splitlines()]
    assert len(lines) == 3
    model_side = {"id", "answer", "prompt_tokens", "rule", "raw", "raw_chars", "logprobs"}
    model_side |= {"messages", "prompt_messages", "prompt_chars", "prompt_sha256"}
    assert all({"id", "answer", "prompt_tokens", "rule", "messages"} <= set(line) for line in lines)
    assert all(set(line) <= model_side for line in lines)
