"""PrefEval against its official code: prompts byte for byte, parsing on every stored string, the
judge's prompts and scoring per item (fixtures made by tests/fixtures/prefeval_official/generate.py
from github.com/amazon-science/PrefEval @ 50795054; CC BY-NC 4.0)."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from functools import lru_cache
from pathlib import Path

import pytest

from evaluator.registry import get_task
from evaluator.suites.prefeval import mcq, open_ended
from evaluator.suites.prefeval.official_parsing import extract_choice, tag_text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "prefeval_official"
OFFICIAL = json.loads(gzip.decompress((FIXTURE / "official_outputs.json.gz").read_bytes()))
ABOUT = OFFICIAL["about"]
CELLS = [(task, key) for task in ("mcq", "open_ended") for key in OFFICIAL[task]]


def digest(messages: list[dict]) -> str:
    """The generator's canonical form: sorted keys, compact, UTF-8, first 16 hex digits."""
    text = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def reply_for(item_id: str) -> str:
    return ABOUT["explicit_reply"].replace("<item id>", item_id)


class SeededRetriever:
    """Ranks passage i by the number the generator gave upstream's RAG for it (stable, best first):
    the retrieval itself is the operator's model; this checks which passages, worded how, in what
    order and where they go."""

    def __init__(self, item_id: str):
        self.item_id = item_id

    def retrieve(self, query, passages, k):
        scores = [random.Random(f"{self.item_id}/{i}").random() for i in range(len(passages))]
        order = sorted(range(len(passages)), key=lambda i: scores[i], reverse=True)
        return [passages[i] for i in order[:k]]


@lru_cache(maxsize=None)
def publics(task_name: str) -> dict[str, dict]:
    return {item.id: item.public for item in get_task("prefeval", task_name).load_split().items}


def public_of(task: str, turns: int, item_id: str) -> dict:
    if turns == 0:
        return publics(task)[item_id]
    return publics(f"{task}_turns")[f"{item_id}-t{turns}"]


def service_digest(task: str, setting: str, pub: dict, item_id: str) -> str:
    reply = reply_for(item_id) if pub["form"] == "explicit" else None
    model = SeededRetriever(item_id)
    if task == "mcq":
        if setting == "self_critic":
            first, critique = (
                ABOUT["mcq_self_critic"]["first"],
                ABOUT["mcq_self_critic"]["critique"],
            )
            return digest(mcq.self_critic_messages(pub, reply, first)) + digest(
                mcq.self_critic_messages(pub, reply, first, critique)
            )
        return digest(mcq.item_messages(pub, setting, reply, model))
    if setting == "self_critic":
        answer, critique = (
            ABOUT["open_self_critic"]["answer"],
            ABOUT["open_self_critic"]["critique"],
        )
        return digest(open_ended.self_critic_messages(pub, reply, answer)) + digest(
            open_ended.self_critic_messages(pub, reply, answer, critique)
        )
    return digest(open_ended.item_messages(pub, setting, reply, model))


@pytest.mark.parametrize("task, key", CELLS)
def test_prompts_equal_the_official_ones(task, key):
    setting, turns = key.split("/")
    cell = OFFICIAL[task][key]
    width = 32 if setting == "self_critic" else 16
    expected = [cell["sha"][i : i + width] for i in range(0, len(cell["sha"]), width)]
    assert len(expected) == len(cell["ids"]) >= (34 if setting == "rag" and turns == "0" else 102)
    mismatched = [
        item_id
        for item_id, sha in zip(cell["ids"], expected)
        if service_digest(task, setting, public_of(task, int(turns), item_id), item_id) != sha
    ]
    assert not mismatched, f"{len(mismatched)} prompts differ, e.g. {mismatched[:3]}"
    # where upstream's RAG cannot run (fewer passages than it retrieves), the item is n/a here
    for item_id in cell["not_applicable"]:
        assert mcq.rag_unavailable(public_of(task, int(turns), item_id)), item_id
    for item_id in cell["ids"]:
        assert not mcq.rag_unavailable(public_of(task, int(turns), item_id)) or setting != "rag"


def test_every_mcq_item_is_compared_at_zero_turns():
    assert len(OFFICIAL["mcq"]["zero_shot/0"]["ids"]) == 3000 == len(publics("mcq"))


def test_a_few_prompts_in_full():
    full = OFFICIAL["full"]
    pub = publics("mcq")["explicit-travel_restaurant-000"]
    ours = mcq.item_messages(pub, "zero_shot", reply_for("explicit-travel_restaurant-000"))
    assert ours == full["mcq/explicit/zero_shot/0"]
    pub = publics("mcq")["implicit_persona-travel_restaurant-000"]
    retriever = SeededRetriever("implicit_persona-travel_restaurant-000")
    assert mcq.item_messages(pub, "rag", None, retriever) == full["mcq/implicit_persona/rag/0"]
    pub = publics("open_ended")["implicit_choice-travel_restaurant-000"]
    assert (
        open_ended.item_messages(pub, "reminder", None)
        == full["open_ended/implicit_choice/reminder/0"]
    )
    pub = publics("open_ended")["explicit-travel_restaurant-000"]
    reply = reply_for("explicit-travel_restaurant-000")
    answer, critique = ABOUT["open_self_critic"]["answer"], ABOUT["open_self_critic"]["critique"]
    assert [
        open_ended.self_critic_messages(pub, reply, answer),
        open_ended.self_critic_messages(pub, reply, answer, critique),
    ] == full["open_ended/explicit/self_critic/0"]


def test_self_critic_budgets_are_the_official_ones():
    p = mcq.prompts()
    assert OFFICIAL["mcq"]["self_critic/0"]["budgets"] == {
        "answer": int(p["max_mcq_tokens"]),
        "critique": int(p["mcq_critic_max_tokens"]),
        "revision": get_task("prefeval", "mcq").model["max_new_tokens"],
    }
    assert OFFICIAL["open_ended"]["self_critic/0"]["budgets"] == {
        "answer": int(p["max_gen_tokens"]),
        "critique": int(p["max_gen_tokens"]),
        "revision": int(p["self_critic_revision_max_tokens"]),
    }


def test_choice_parsing_equals_the_official_parser_on_every_string():
    parses = OFFICIAL["choice_parses"]
    assert len(parses) >= 500 and any(expected is None for _, expected in parses)
    wrong = [(text, expected) for text, expected in parses if extract_choice(text) != expected]
    assert not wrong, wrong[:5]


JUDGE = OFFICIAL["judge"]
STAT_OF_ERROR = {
    "unhelpful": "error_unhelpful",
    "inconsistent": "error_inconsistent",
    "hallucinated_violation": "hallucination_of_preference_violation",
    "unaware_violation": "preference_unaware_violation",
}


def test_judge_setup_is_the_official_one():
    p = mcq.prompts()
    assert JUDGE["system"] == p["judge_system"]
    assert JUDGE["max_tokens"] == int(p["judge_max_tokens"]) and JUDGE["temperature"] == 0


@pytest.mark.parametrize("entry", JUDGE["items"], ids=lambda e: f"row{e['row']}")
def test_judge_prompts_and_scoring_equal_the_official_ones(entry):
    replies = entry["replies"]
    fields = {
        "preference": entry["preference"],
        "question": entry["question"],
        "response": entry["response"],
    }
    restatement = tag_text(replies["acknow"], "preference")
    assert restatement == entry["extracted_preference"]
    prompts = {
        "acknow": open_ended.judge_prompt("acknowledge", **fields),
        "violate": open_ended.judge_prompt("violate", **fields),
        "helpful": open_ended.judge_prompt("helpful", **fields),
        "hallucinate": open_ended.judge_prompt(
            "hallucinate", preference=entry["preference"], restatement=restatement
        ),
    }
    for check, text in prompts.items():
        if entry["prompts"]:
            assert text == entry["prompts"][check], check
        assert hashlib.sha256(text.encode()).hexdigest()[:16] == entry["prompt_sha"][check], check
    v = open_ended.verdicts(
        replies["acknow"], replies["violate"], replies["hallucinate"], replies["helpful"]
    )
    stats = entry["stats"]
    assert v["acknowledge"] == bool(stats["acknowledgement"])
    assert v["hallucinate"] == bool(stats["hallucination"])
    assert v["violate"] == bool(stats["violation"])
    errors = open_ended.error_types(v["acknowledge"], v["violate"], v["hallucinate"], v["helpful"])
    for ours, theirs in STAT_OF_ERROR.items():
        assert errors[ours] == bool(stats[theirs]), ours
    assert (not any(errors.values())) == bool(stats["preference_adherence_accuracy"])


def test_judge_fixture_covers_malformed_replies_and_every_outcome():
    outcomes = {
        name: sum(e["stats"][name] for e in JUDGE["items"])
        for name in ("preference_adherence_accuracy", *STAT_OF_ERROR.values())
    }
    assert all(count > 0 for count in outcomes.values()), outcomes
    replies = [r for e in JUDGE["items"] for r in e["replies"].values()]
    assert "" in replies and "<answer>[Yes]</answer>" in replies
