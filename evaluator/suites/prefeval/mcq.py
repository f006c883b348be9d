"""PrefEval MCQ: builds the items from the upstream files.

Upstream layout (data/): `mcq_options/<topic>.json` holds the preference, the question and four
options with the aligned one at index 0; `implicit_preference/{choice-based,persona-driven}/<topic>.json`
hold, row for row, the conversations that reveal the same preference implicitly.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path

from evaluator.protocols import with_prefill
from evaluator.suite import Item, Split, Task, load_prompts
from evaluator.suites.prefeval.official_parsing import extract_choice

FORM_SOURCES = {
    "explicit": None,
    "implicit_choice": "implicit_preference/choice-based",
    "implicit_persona": "implicit_preference/persona-driven",
}


def shuffled_topic(rows: list[dict], seed: int) -> list[tuple[dict[str, str], str]]:
    """Letter the four options of every row of one topic as the official PrefEval run does.

    Upstream seeds `random` with 41 once per topic run and calls `random.sample(options, 4)` row by
    row, the aligned option being index 0; replaying that stream gives the official letters, and
    the same (topic, row) has the same letters in all three forms.
    """
    rng = random.Random(seed)
    lettered = []
    for row in rows:
        options = row["classification_task_options"]
        shuffled = rng.sample(options, len(options))
        letters = "ABCD"
        lettered.append(
            (
                {letters[i]: text for i, text in enumerate(shuffled)},
                letters[shuffled.index(options[0])],
            )
        )
    return lettered


def _context(form: str, record: dict) -> list[dict[str, str]]:
    """The conversation that states or reveals the preference, as chat messages."""
    if form == "explicit":
        return [{"role": "user", "content": record["preference"]}]
    conversation = record["conversation"]
    if form == "implicit_choice":
        return [
            {"role": "user", "content": conversation["query"]},
            {"role": "assistant", "content": conversation["assistant_options"]},
            {"role": "user", "content": conversation["user_selection"]},
            {"role": "assistant", "content": conversation["assistant_acknowledgment"]},
        ]
    messages = []
    for key in sorted(conversation, key=int):
        messages.append({"role": "user", "content": conversation[key]["user"]})
        messages.append({"role": "assistant", "content": conversation[key]["assistant"]})
    return messages


def build_items(task: Task, data: Path) -> list[Item]:
    seed = int(task.options["shuffle_seed"])
    topics = task.tier_group("topic").tiers
    items = []
    for form, source in FORM_SOURCES.items():
        for topic in topics:
            mcq_rows = _read(data / "mcq_options" / f"{topic}.json")
            context_rows = mcq_rows if source is None else _read(data / source / f"{topic}.json")
            letters = shuffled_topic(mcq_rows, seed)
            for row, (mcq, ctx, (options, gold)) in enumerate(
                zip(mcq_rows, context_rows, letters, strict=True)
            ):
                item_id = f"{form}-{topic}-{row:03d}"
                items.append(
                    Item(
                        id=item_id,
                        tiers={"form": form, "topic": topic},
                        public={
                            "id": item_id,
                            "form": form,
                            "topic": topic,
                            "context": _context(form, mcq if source is None else ctx),
                            "question": mcq["question"],
                            "options": options,
                        },
                        gold=gold,
                        unit=f"{topic}-{row:03d}",  # the (preference, question) pair, shared by the three forms
                    )
                )
    return items


def _read(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


# -- model runs: prompts as the official PrefEval MCQ run builds them -------------------------------


def prompts() -> dict:
    """This suite's prompt texts (prompts.yaml), read once."""
    return load_prompts(Path(__file__).parent)


INTER_TURNS_FILE = "filtered_inter_turns.json"


@lru_cache(maxsize=1)
def _inter_turn_messages() -> tuple[tuple[str, str], ...]:
    """Every message of the distractor file, in file order (the official concatenation)."""
    rows = _read(Path(__file__).parent / "data" / INTER_TURNS_FILE)
    return tuple((m["role"], m["content"]) for row in rows for m in row["conversation"])


def distractor_turns(n: int) -> list[dict[str, str]]:
    """The first `n` user/assistant turns of the distractor file, as the official code takes them
    (`extract_multi_turn_message`: all conversations concatenated, the first 2n messages, ending
    on the assistant)."""
    messages = _inter_turn_messages()[: 2 * n]
    if len(messages) != 2 * n or any(
        role != ("user", "assistant")[i % 2] for i, (role, _) in enumerate(messages)
    ):
        raise ValueError(f"{INTER_TURNS_FILE} does not hold {n} alternating user/assistant turns")
    return [{"role": role, "content": content} for role, content in messages]


def inter_turns(pub: dict) -> int:
    """The distractor turns between the preference and the question (mcq: none)."""
    return int(pub.get("inter_turns") or 0)


def mcq_format(pub: dict) -> str:
    """The official MCQ instruction with the item's lettered options (get_mcq_question_format)."""
    options = "\n".join(f"{letter}. {text}" for letter, text in pub["options"].items())
    return prompts()["mcq_format"].format(options=options)


def final_question(pub: dict, setting: str, judging: bool = False) -> str:
    p = prompts()
    question = pub["question"]
    if setting == "reminder":
        question += p["reminder"]
    if setting == "cot":
        question = p["cot_prompt"] + question
    return question if judging else question + mcq_format(pub)


def _history(pub: dict, reply: str | None) -> list[dict[str, str]]:
    """Everything before the question: the preference (and the model's reply to it, explicit form)
    or the revealing conversation, then the distractor turns of a `mcq_turns` item."""
    context = list(pub["context"])
    if pub["form"] == "explicit" and reply is not None:
        context.append({"role": "assistant", "content": reply})
    return context + distractor_turns(inter_turns(pub))


# -- RAG, as the official code runs it ------------------------------------------------------------
# The whole conversation stays; the 5 earlier messages most similar to the question are listed in
# front of it. Officially the similarities are SimCSE scores computed offline; here the operator's
# retriever (PERSONABOARD_EMBEDDING_MODEL, all-MiniLM-L6-v2 by default) ranks the same passages.


def rag_passages(pub: dict, reply: str | None) -> list[str]:
    """The passages the official RAG ranks, in its order and wording: explicit form
    "User: <preference>", "Assistant: <reply>" (handle_rag_task_mcq), implicit forms every message
    of the revealing conversation as "<role>: <text>" (handle_rag_task_implicit_mcq), then every
    distractor message as "<role>: <text>" (lower-case roles, as upstream's msg_index files)."""
    if pub["form"] == "explicit":
        own = [f"User: {pub['context'][0]['content']}"]
        if reply is not None:
            own.append(f"Assistant: {reply}")
    else:
        own = [f"{m['role']}: {m['content']}" for m in pub["context"]]
    return own + [f"{m['role']}: {m['content']}" for m in distractor_turns(inter_turns(pub))]


def rag_passage_count(pub: dict) -> int:
    """How many passages the item offers to retrieve from (the explicit reply counted)."""
    own = 2 if pub["form"] == "explicit" else len(pub["context"])
    return own + 2 * inter_turns(pub)


def rag_unavailable(pub: dict) -> bool:
    """The official code asserts it found top-k passages: with fewer (explicit and choice-based
    forms at 0 distractor turns: 2 and 4 messages) it cannot run RAG, so the item is n/a."""
    return rag_passage_count(pub) < int(prompts()["rag_top_k"])


def rag_block(top: list[str]) -> str:
    """convert_top_k_sentences_to_msg: the official words around the retrieved exchanges."""
    p = prompts()
    listed = "".join(f"exchange {i}. {text}\n" for i, text in enumerate(top, 1))
    return p["rag_prefix"] + listed + p["rag_suffix"]


def retrieved(pub: dict, reply: str | None, model) -> list[str]:
    """The top-k passages for the item's question, best first (ties keep conversation order, as
    the official stable sort)."""
    return model.retrieve(pub["question"], rag_passages(pub, reply), int(prompts()["rag_top_k"]))


def item_messages(
    pub: dict, setting: str, reply: str | None, model=None, judging: bool = False, top=None
) -> list[dict[str, str]]:
    """The chat of one item (the same function sizes prompts for fit_model). `top`: the retrieved
    passages of a `rag` prompt (retrieved with `model` when not given)."""
    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    if setting == "rag":
        if top is None:
            top = retrieved(pub, reply, model)
        final = rag_block(top) + final_question(pub, "zero_shot", judging)
        return [system, *_history(pub, reply), {"role": "user", "content": final}]
    final = final_question(pub, setting, judging)
    if pub["form"] == "explicit" and judging:
        return [system, {"role": "user", "content": pub["context"][0]["content"] + "\n\n" + final}]
    return [system, *_history(pub, reply), {"role": "user", "content": final}]


def self_critic_messages(
    pub: dict, reply: str | None, first: str, critique: str | None = None
) -> list[dict[str, str]]:
    """The official MCQ self-critic: the zero-shot conversation, the model's first answer and the
    critique request; with the critique, the revision request (with the options again), whose
    answer is scored (get_self_critic_prompt_critic_mcq / ..._response_mcq and their implicit twins)."""
    p = prompts()
    request = p[
        "mcq_critic_request_explicit"
        if pub["form"] == "explicit"
        else "mcq_critic_request_implicit"
    ]
    asked = [
        *item_messages(pub, "zero_shot", reply),
        {"role": "assistant", "content": first},
        {"role": "user", "content": request},
    ]
    if critique is None:
        return asked
    revision = p["mcq_revision_request"] + mcq_format(pub)
    return [
        *asked,
        {"role": "assistant", "content": critique},
        {"role": "user", "content": revision},
    ]


def build_requests(task: Task, publics: list[dict], setting: str, model) -> list:
    """Chat requests for a model run (`model` is evaluator.model_eval.ModelTools).

    Explicit form: [system, user: preference, assistant: the model's own reply to it (greedy, capped
    at the official 5 tokens), user: question + MCQ format]. Implicit forms: the revealing
    conversation in place of the first two turns. A `mcq_turns` item inserts its distractor turns
    before the question. `reminder` appends PrefEval's reminder, `cot` prefixes its worked examples,
    `rag` keeps the whole conversation and lists the 5 passages most similar to the question before
    it, `self_critic` asks the model's first answer, a critique of it (300 tokens) and the revised
    answer, which is scored.
    """
    from evaluator.backends.base import BackendError
    from evaluator.protocols import PREFILL, ChoiceRequest, answer_prefill

    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    labels = tuple(task.answer_labels)
    # A reward model judges each option as the response to the question itself; it cannot write
    # the explicit form's first reply, so the preference and the question share one user turn.
    judging = model.protocol == "reward"
    if judging and setting == "self_critic":
        raise BackendError("self_critic needs a generative model: the model revises its own answer")
    answer_tokens = int(p["max_mcq_tokens"])
    # generate_parse_prefill (upstream's Claude path): every MCQ answer is asked with the answer
    # started by the prefill, the explicit form's first reply and the critique are not
    prefill = answer_prefill(task) if model.protocol == PREFILL else None
    if prefill is not None:
        # a backend that cannot prefill (a chat endpoint) refuses here, before any call
        model.backend.render(with_prefill([system], prefill))
    replies: dict[str, str] = {}
    explicit = [pub for pub in publics if pub["form"] == "explicit" and not judging]
    if explicit:
        generated = model.generate([[system, *pub["context"]] for pub in explicit], answer_tokens)
        replies = {pub["id"]: text for pub, text in zip(explicit, generated)}
    if setting == "self_critic":
        reply_of = [replies.get(pub["id"]) for pub in publics]
        firsts = model.generate(
            [
                _prefilled(item_messages(pub, "zero_shot", r), prefill)
                for pub, r in zip(publics, reply_of)
            ],
            answer_tokens,
        )
        # upstream keeps "<choice>" + the first answer as the assistant's turn it critiques
        firsts = [(prefill or "") + first for first in firsts]
        critiques = model.generate(
            [self_critic_messages(pub, r, f) for pub, r, f in zip(publics, reply_of, firsts)],
            int(p["mcq_critic_max_tokens"]),
        )
        conversations = [
            self_critic_messages(pub, r, f, c)
            for pub, r, f, c in zip(publics, reply_of, firsts, critiques)
        ]
    else:
        conversations = [
            item_messages(pub, setting, replies.get(pub["id"]), model, judging) for pub in publics
        ]
    # the prefill is part of the request, so the run renders it with the rest ahead of the engine
    return [
        ChoiceRequest(pub["id"], _prefilled(messages, prefill), labels, dict(pub["options"]))
        for pub, messages in zip(publics, conversations)
    ]


def _prefilled(messages: list[dict[str, str]], prefill: str | None) -> list[dict[str, str]]:
    return messages if prefill is None else with_prefill(messages, prefill)


def fit_model(task: Task, split: Split, setting: str, backend) -> tuple[Split, dict[str, str]]:
    """`rag` items the official code cannot run (fewer passages than it retrieves) are n/a."""
    return drop_rag_unavailable(split, setting)


def drop_rag_unavailable(split: Split, setting: str) -> tuple[Split, dict[str, str]]:
    if setting != "rag":
        return split, {}
    top_k = int(prompts()["rag_top_k"])
    skipped: dict[str, str] = {}
    kept = []
    for item in split.items:
        if not rag_unavailable(item.public):
            kept.append(item)
            continue
        turns = inter_turns(item.public)
        key = f"rag: {item.public['form']}, {turns} distractor turns"
        skipped[key] = (
            f"n/a: {item.public['form']} items at {turns} distractor turns offer "
            f"{rag_passage_count(item.public)} earlier messages, fewer than the {top_k} the "
            "official RAG retrieves (its code cannot run them)"
        )
    if not skipped:
        return split, {}
    return Split(name=f"{split.name}[rag-runnable]", items=kept), skipped


def parse_answer(text: str) -> str | None:
    """The official parser (first <choice> tag, first of A-D in it, case-sensitive)."""
    return extract_choice(text)
