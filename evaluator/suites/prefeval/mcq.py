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

from evaluator.suite import Item, Task, load_prompts

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


def _exchanges(context: list[dict[str, str]]) -> list[str]:
    """The context as user/assistant exchanges, the unit RAG retrieves."""
    out = []
    for i in range(0, len(context), 2):
        pair = context[i : i + 2]
        out.append(" ".join(f"{m['role']}: {m['content']}" for m in pair))
    return out


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


def final_question(pub: dict, setting: str, judging: bool = False) -> str:
    p = prompts()
    question = pub["question"]
    if setting == "reminder":
        question += p["reminder"]
    if setting == "cot":
        question = p["cot_prompt"] + question
    options = "\n".join(f"{letter}. {text}" for letter, text in pub["options"].items())
    return question if judging else question + p["mcq_format"].format(options=options)


def _history(pub: dict, reply: str | None) -> list[dict[str, str]]:
    """Everything before the question: the preference (and the model's reply to it, explicit form)
    or the revealing conversation, then the distractor turns of a `mcq_turns` item."""
    context = list(pub["context"])
    if pub["form"] == "explicit" and reply is not None:
        context.append({"role": "assistant", "content": reply})
    return context + distractor_turns(int(pub.get("inter_turns") or 0))


def _rag_message(
    question: str, final: str, history: list[dict[str, str]], model, whole_conversation: bool
) -> dict:
    """PrefEval's RAG prompt with the top-k retrieved passages. `whole_conversation` (mcq_turns): the
    passages are the messages of the whole conversation, distractors included, as in the paper;
    otherwise (mcq) the item's own exchanges."""
    p = prompts()
    if whole_conversation:
        passages = [f"{m['role'].capitalize()}: {m['content']}" for m in history]
    else:
        passages = _exchanges(history)
    top = model.retrieve(question, passages, int(p["rag_top_k"]))
    listed = "".join(f"exchange {i}. {text}\n" for i, text in enumerate(top, 1))
    return {"role": "user", "content": p["rag_prefix"] + listed + p["rag_suffix"] + final}


def item_messages(
    pub: dict, setting: str, reply: str | None, model=None, judging: bool = False
) -> list[dict[str, str]]:
    """The chat of one item (the same function sizes prompts for fit_model)."""
    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    final = final_question(pub, setting, judging)
    whole = "inter_turns" in pub
    if setting == "rag":
        history = _history(pub, reply) if whole else list(pub["context"])
        return [system, _rag_message(pub["question"], final, history, model, whole)]
    if pub["form"] == "explicit" and judging:
        return [system, {"role": "user", "content": pub["context"][0]["content"] + "\n\n" + final}]
    return [system, *_history(pub, reply), {"role": "user", "content": final}]


def build_requests(task: Task, publics: list[dict], setting: str, model) -> list:
    """Chat requests for a model run (`model` is evaluator.model_eval.ModelTools).

    Explicit form: [system, user: preference, assistant: the model's own reply to it (greedy, capped
    at the official 5 tokens), user: question + MCQ format]. Implicit forms: the revealing
    conversation in place of the first two turns. A `mcq_turns` item inserts its distractor turns
    before the question. `reminder` appends PrefEval's reminder, `cot` prefixes its worked examples,
    `rag` replaces the conversation by the 5 passages most similar to the question (mcq: the item's
    own exchanges; mcq_turns: the messages of the whole conversation, distractors included).
    """
    from evaluator.protocols import ChoiceRequest

    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    labels = tuple(task.answer_labels)
    # A reward model judges each option as the response to the question itself; it cannot write
    # the explicit form's first reply, so the preference and the question share one user turn.
    judging = model.protocol == "reward"
    replies: dict[str, str] = {}
    explicit = [
        pub
        for pub in publics
        if pub["form"] == "explicit" and not judging and (setting != "rag" or "inter_turns" in pub)
    ]
    if explicit:
        generated = model.generate(
            [[system, *pub["context"]] for pub in explicit], int(p["max_mcq_tokens"])
        )
        replies = {pub["id"]: text for pub, text in zip(explicit, generated)}
    return [
        ChoiceRequest(
            pub["id"],
            item_messages(pub, setting, replies.get(pub["id"]), model, judging),
            labels,
            dict(pub["options"]),
        )
        for pub in publics
    ]


def check_setting(task: Task, setting: str) -> str | None:
    """self_critic revises a generated answer: it is a setting of open_ended only."""
    if setting == "self_critic":
        return (
            f"{task.key} has no setting 'self_critic' (a generation setting of prefeval/open_ended)"
        )
    return None


def parse_answer(text: str) -> str | None:
    from evaluator.protocols import parse_choice_tag

    return parse_choice_tag(text)
