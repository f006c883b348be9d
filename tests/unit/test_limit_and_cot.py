"""A `limit` run covers every tier of every tier group when it can and names those it cannot; `cot`
runs only under a protocol that lets the model write (and then with a reasoning budget)."""

from __future__ import annotations

import pytest

from evaluator.model_eval import select_items, uncovered_tiers
from evaluator.protocols import setting_problem
from evaluator.registry import get_task


@pytest.fixture(scope="module")
def prefeval_split():
    return get_task("prefeval", "mcq").load_split()


def tiers_of(items):
    return {pair for item in items for pair in item.tiers.items()}


def test_twenty_items_cover_every_form_and_every_topic(prefeval_split):
    every = tiers_of(prefeval_split.items)
    assert len(every) <= 23  # 3 forms + 20 topics: 20 items are enough
    chosen = select_items(prefeval_split, 20)
    assert len(chosen.items) == 20 and tiers_of(chosen.items) == every
    assert uncovered_tiers(prefeval_split, chosen) == {}
    assert [i.id for i in select_items(prefeval_split, 20).items] == [
        i.id for i in chosen.items
    ]  # deterministic


def test_a_limit_too_small_names_the_tiers_it_missed(prefeval_split):
    chosen = select_items(prefeval_split, 5)
    missing = uncovered_tiers(prefeval_split, chosen)
    topics = {t for g, t in tiers_of(prefeval_split.items) if g == "topic"}
    assert (
        set(missing) == {"topic"} and len(missing["topic"]) == len(topics) - 5
    )  # each item brought a new topic
    assert {i.tiers["form"] for i in chosen.items} == {
        "explicit",
        "implicit_choice",
        "implicit_persona",
    }


@pytest.mark.parametrize("protocol", ["choice_logprobs", "reward"])
def test_cot_is_refused_without_generation(protocol):
    task = get_task("realpref", "mcq")  # its cot asks for reasoning before the answer
    assert "reason" in setting_problem(task, "cot", protocol)
    assert setting_problem(task, "zero_shot", protocol) is None


def test_cot_needs_room_to_reason():
    task = get_task("realpref", "mcq")  # generate_parse writes at most 8 tokens
    assert "too few to reason" in setting_problem(task, "cot", "generate_parse")
    roomy = get_task("recentering", "relevance")
    budget = int(roomy.model.get("max_new_tokens", 16))
    assert (setting_problem(roomy, "cot", "generate_parse") is None) == (budget >= 64)


@pytest.mark.parametrize("protocol", ["generate_parse", "choice_logprobs"])
def test_prefeval_cot_asks_for_the_bare_answer_and_runs_as_upstream(protocol):
    """PrefEval's cot prefixes worked examples but still asks for the bare <choice> tag, which the
    official run reads from 5 generated tokens: it is a direct-answer setting there, not refused."""
    task = get_task("prefeval", "mcq")
    assert "cot" in task.model["direct_answer_settings"] and task.model["max_new_tokens"] == 5
    assert setting_problem(task, "cot", protocol) is None
