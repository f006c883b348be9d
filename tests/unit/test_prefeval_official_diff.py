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

from evaluator.protocols import PREFILL, answer_prefill, prefilled_parser
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


# -- generate_parse_prefill: upstream's Claude (and Mistral) path, end to end ----------------------
# official_prefill.json.gz: benchmark_classification.main() run on its prefill path with a stand-in
# Bedrock client (generate.py --prefill): each prefilled request, the scripted output and the
# `choice` upstream stored (extract_choice("<choice>" + output)).

PREFILLED = json.loads(gzip.decompress((FIXTURE / "official_prefill.json.gz").read_bytes()))
CLAUDE_RUNS = [run for run in PREFILLED["runs"] if run["model"] == "claude3s"]


class ScriptedModel:
    """The model's side of build_requests under the prefill protocol, answering as the stand-in
    Bedrock client did: the prefilled answers with the item's recorded outputs, the critique and
    the explicit reply with the fixture's texts. Records every conversation it is asked."""

    protocol = PREFILL

    def __init__(self, backend, outputs: list[str]):
        self.backend, self.outputs, self.asked = backend, list(outputs), []

    def generate(self, conversations, max_new_tokens):
        texts = []
        for messages in conversations:
            self.asked.append((messages, max_new_tokens))
            if messages[-1] == {"role": "assistant", "content": PREFILLED["prefill"]}:
                texts.append(self.outputs.pop(0))
            elif messages[-1]["content"].startswith("Critique Request"):
                texts.append(PREFILLED["critique"])
            else:
                texts.append(PREFILLED["reply"])
        return texts

    def retrieve(self, query, passages, k):  # not asked: no rag run on the prefill path
        raise AssertionError("retrieval is not part of these runs")


@pytest.fixture(scope="module")
def tiny_backend(tmp_path_factory):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tiny_models import build_tiny_model

    from evaluator.backends import ModelSpec, load_backend

    folder = build_tiny_model(tmp_path_factory.mktemp("prefill") / "gen", seed=5)
    return load_backend(ModelSpec("tiny", str(folder), "generative"), device="cpu")


def test_the_prefill_is_upstreams():
    task = get_task("prefeval", "mcq")
    assert answer_prefill(task) == PREFILLED["prefill"] == "<choice>"
    assert answer_prefill(get_task("prefeval", "mcq_turns")) == PREFILLED["prefill"]
    # upstream's Mistral prompt ends its hand-written template with the same tag (and a newline)
    mistral = [run for run in PREFILLED["runs"] if run["model"] == "mistral7b"]
    assert mistral and all(
        tail.endswith("[/INST]\n<choice>\n")
        for run in mistral
        for i in run["items"]
        for tail in i["tail"]
    )


@pytest.mark.parametrize(
    "run", CLAUDE_RUNS, ids=lambda r: f"{r['form']}-{r['setting']}-{r['turns']}-{r['topic']}"
)
def test_prefilled_prompts_and_answers_equal_the_official_run(run, tiny_backend):
    """Every row of the official run: the chat the service sends under generate_parse_prefill (the
    answer started with "<choice>"; self-critic: the first answer's prompt, then the revision's,
    with the first answer kept as "<choice>" + output) is upstream's byte for byte, and the answer
    the protocol reads from each output is the `choice` upstream stored."""
    task = get_task("prefeval", "mcq" if run["turns"] == 0 else "mcq_turns")
    read = prefilled_parser(task.hooks.parse_answer, answer_prefill(task))
    assert len(run["items"]) >= 40
    for item in run["items"]:
        pub = public_of("mcq", run["turns"], item["id"])
        model = ScriptedModel(tiny_backend, item["outputs"])
        (request,) = mcq.build_requests(task, [pub], run["setting"], model)
        prefilled_asks = [m for m, _ in model.asked if m[-1]["role"] == "assistant"]
        sent = [*prefilled_asks, request.messages]
        assert [digest(m) for m in sent] == item["sha"], item["id"]
        if run["setting"] == "self_critic":  # the critique prompt holds "<choice>" + first output
            assert item["first_choice"] == PREFILLED["prefill"] + item["outputs"][0]
        assert read(item["outputs"][-1]) == item["choice"], (item["id"], item["outputs"][-1])
    # the outputs cover parsed, unparsed and prefilled-tag forms
    choices = {item["choice"] for item in run["items"]}
    assert None in choices and len(choices - {None}) >= 3


def test_a_few_prefilled_prompts_in_full(tiny_backend):
    run = CLAUDE_RUNS[0]
    item = run["items"][0]
    task = get_task("prefeval", "mcq")
    model = ScriptedModel(tiny_backend, item["outputs"])
    (request,) = mcq.build_requests(task, [public_of("mcq", 0, item["id"])], run["setting"], model)
    assert request.messages == run["full"][1]  # [0] is the explicit form's first reply
    assert request.messages[-1] == {"role": "assistant", "content": "<choice>"}


def test_mistral_runs_parse_as_ours():
    task = get_task("prefeval", "mcq")
    read = prefilled_parser(task.hooks.parse_answer, answer_prefill(task))
    (run,) = [run for run in PREFILLED["runs"] if run["model"] == "mistral7b"]
    assert all(read(i["outputs"][-1]) == i["choice"] for i in run["items"])


@pytest.mark.parametrize(
    "text, prefilled, plain",
    [
        ("B</choice>", "B", None),
        (" B", "B", None),
        ("b", None, None),
        ("<choice>C", "C", "C"),
        ("A", "A", None),
        ("b</choice>", None, None),
        ("E</choice>", None, None),
        ("", None, None),
    ],
)
def test_prefilled_parse_on_edge_strings(text, prefilled, plain):
    """generate_parse_prefill reads "<choice>" + output; generate_parse the output alone."""
    parse = get_task("prefeval", "mcq").hooks.parse_answer
    assert prefilled_parser(parse, "<choice>")(text) == prefilled
    assert parse(text) == plain
    assert dict(map(tuple, PREFILLED["prefill_parses"]))[text] == prefilled


def test_prefilled_parse_equals_upstream_on_every_string():
    parse = prefilled_parser(get_task("prefeval", "mcq").hooks.parse_answer, "<choice>")
    parses = PREFILLED["prefill_parses"]
    assert len(parses) >= 500 and {None, "A", "B", "C", "D"} <= {c for _, c in parses}
    wrong = [(text, expected) for text, expected in parses if parse(text) != expected]
    assert not wrong, wrong[:5]
