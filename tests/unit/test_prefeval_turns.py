"""PrefEval mcq_turns: items at each turn count, the official distractor block, n/a by window, RAG over it all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.model_eval import ModelTools
from evaluator.registry import get_task
from evaluator.suites.prefeval import mcq, mcq_turns

DATA = Path(mcq.__file__).parent / "data" / "filtered_inter_turns.json"


@pytest.fixture(scope="module")
def split():
    return get_task("prefeval", "mcq_turns").load_split()


def test_every_mcq_item_at_every_turn_count_with_the_same_gold(split):
    base = {item.id: item for item in get_task("prefeval", "mcq").load_split().items}
    assert len(split.items) == 4 * len(base) == 12000
    counts = {}
    for item in split.items:
        counts[item.tiers["turns"]] = counts.get(item.tiers["turns"], 0) + 1
        origin = base[item.id.rsplit("-t", 1)[0]]
        assert (item.gold, item.unit, item.public["options"]) == (
            origin.gold,
            origin.unit,
            origin.public["options"],
        )
        assert item.public["inter_turns"] == int(item.tiers["turns"])
    assert counts == {"0": 3000, "10": 3000, "70": 3000, "300": 3000}


def test_distractors_are_the_first_turns_of_the_file_in_order():
    conversations = json.loads(DATA.read_text())
    flat = [m for c in conversations for m in c["conversation"]]
    ten = mcq.distractor_turns(10)
    assert [m["content"] for m in ten] == [m["content"] for m in flat[:20]]
    assert ten[0]["role"] == "user" and ten[-1]["role"] == "assistant"
    assert len(mcq.distractor_turns(300)) == 600
    with pytest.raises(ValueError):
        mcq.distractor_turns(400)  # the file holds 316 turns


class Tools(ModelTools):
    """Real request building; generation and retrieval recorded instead of run (no model here)."""

    def __init__(self):
        super().__init__(backend=None, protocol="choice_logprobs")
        self.retrieved_from: list[list[str]] = []

    def generate(self, conversations, max_new_tokens):
        return ["Noted." for _ in conversations]

    def retrieve(self, query, passages, k):
        self.retrieved_from.append(passages)
        return passages[-k:]


def test_requests_put_the_distractors_between_preference_and_question(split):
    task = get_task("prefeval", "mcq_turns")
    pub = next(
        i.public
        for i in split.items
        if i.public["form"] == "explicit" and i.public["inter_turns"] == 10
    )
    (request,) = mcq.build_requests(task, [pub], "zero_shot", Tools())
    roles = [m["role"] for m in request.messages]
    assert roles[:3] == ["system", "user", "assistant"] and len(request.messages) == 3 + 20 + 1
    assert request.messages[2]["content"] == "Noted."  # the model's own reply to the preference
    assert request.messages[3:23] == mcq.distractor_turns(10)
    assert request.messages[-1]["content"].startswith(pub["question"])


def test_rag_keeps_the_conversation_and_retrieves_over_all_of_it(split):
    task = get_task("prefeval", "mcq_turns")
    pub = next(
        i.public
        for i in split.items
        if i.public["form"] == "implicit_persona" and i.public["inter_turns"] == 70
    )
    tools = Tools()
    (request,) = mcq.build_requests(task, [pub], "rag", tools)
    (passages,) = tools.retrieved_from
    assert len(passages) == len(pub["context"]) + 140
    # upstream's wording of an implicit passage: the lower-case role, a colon, the text
    assert passages[0] == "user: " + pub["context"][0]["content"]
    assert passages[-1].startswith("assistant: ")
    # the whole conversation stays (official RAG), the retrieved block leads the question
    assert request.messages[1 : 1 + len(pub["context"])] == pub["context"]
    assert request.messages[1 + len(pub["context"]) : -1] == mcq.distractor_turns(70)
    assert request.messages[-1]["content"].startswith("Before answering my question")
    assert "#Start of Context#" in request.messages[-1]["content"]


class WindowBackend:
    """Counts a prompt as one token per 4 characters (what fit_model asks of a backend: render, window)."""

    def __init__(self, window):
        self.window = window

    def context_window(self):
        return self.window

    def render(self, messages):
        from evaluator.backends.base import BackendError

        tokens = sum(len(m["content"]) for m in messages) // 4
        if tokens > 4 * self.window:  # as real backends do: refuse, never truncate
            raise BackendError("over the window")
        return [0] * tokens


def test_turn_counts_over_the_window_are_not_applicable_never_truncated(split):
    task = get_task("prefeval", "mcq_turns")
    kept, skipped = mcq_turns.fit_model(task, split, "zero_shot", WindowBackend(8192))
    assert set(skipped) == {"70", "300"} and "8192" in skipped["70"]
    assert {i.tiers["turns"] for i in kept.items} == {"0", "10"} and len(kept.items) == 6000
    # rag keeps the whole conversation: the same turn counts are over the window, and the explicit
    # and choice-based items at 0 turns (2 and 4 earlier messages, fewer than 5) are n/a
    kept, skipped = mcq_turns.fit_model(task, split, "rag", WindowBackend(8192))
    assert {"70", "300"} <= set(skipped)
    assert {k for k in skipped if k.startswith("rag:")} == {
        "rag: explicit, 0 distractor turns",
        "rag: implicit_choice, 0 distractor turns",
    }
    # sized with the longest passages as the retrieved ones (never truncated): at this window the
    # 10-turn prompts may reach it too; what is kept is what fits
    kept_cells = {(i.tiers["turns"], i.tiers["form"]) for i in kept.items}
    assert ("0", "implicit_persona") in kept_cells
    assert not {turns for turns, _ in kept_cells} & set(skipped)
    assert ("0", "explicit") not in kept_cells and ("0", "implicit_choice") not in kept_cells
    kept, skipped = mcq_turns.fit_model(task, split, "rag", WindowBackend(10**6))
    assert len(kept.items) == 12000 - 2000 and len(skipped) == 2
    assert mcq_turns.fit_model(task, split, "zero_shot", WindowBackend(10**6))[1] == {}
