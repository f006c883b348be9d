"""PrefEval MCQ: builds the items from the upstream files.

Upstream layout (data/): `mcq_options/<topic>.json` holds the preference, the question and four
options with the aligned one at index 0; `implicit_preference/{choice-based,persona-driven}/<topic>.json`
hold, row for row, the conversations that reveal the same preference implicitly.
"""
from __future__ import annotations

import json
import random
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
        lettered.append(({letters[i]: text for i, text in enumerate(shuffled)}, letters[shuffled.index(options[0])]))
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
            for row, (mcq, ctx, (options, gold)) in enumerate(zip(mcq_rows, context_rows, letters, strict=True)):
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


def build_requests(task: Task, publics: list[dict], setting: str, model) -> list:
    """Chat requests for a model run (`model` is evaluator.model_eval.ModelTools).

    Explicit form: [system, user: preference, assistant: the model's own reply to it (greedy, capped
    at the official 5 tokens), user: question + MCQ format]. Implicit forms: the revealing
    conversation in place of the first two turns. `reminder` appends PrefEval's reminder, `cot`
    prefixes its worked examples, `rag` replaces the conversation by the 5 exchanges most similar
    to the question.
    """
    from evaluator.protocols import ChoiceRequest

    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    labels = tuple(task.answer_labels)
    # A reward model judges each option as the response to the question itself; it cannot write
    # the explicit form's first reply, so the preference and the question share one user turn.
    judging = model.protocol == "reward"
    replies: dict[str, str] = {}
    explicit = [pub for pub in publics if pub["form"] == "explicit" and setting != "rag" and not judging]
    if explicit:
        generated = model.generate([[system, *pub["context"]] for pub in explicit], int(p["max_mcq_tokens"]))
        replies = {pub["id"]: text for pub, text in zip(explicit, generated)}
    requests = []
    for pub in publics:
        question = pub["question"]
        if setting == "reminder":
            question += p["reminder"]
        if setting == "cot":
            question = p["cot_prompt"] + question
        options = "\n".join(f"{letter}. {text}" for letter, text in pub["options"].items())
        final = question if judging else question + p["mcq_format"].format(options=options)
        if setting == "rag":
            passages = _exchanges(pub["context"])
            top = model.retrieve(pub["question"], passages, int(p["rag_top_k"]))
            listed = "".join(f"exchange {i}. {text}\n" for i, text in enumerate(top, 1))
            messages = [system, {"role": "user", "content": p["rag_prefix"] + listed + p["rag_suffix"] + final}]
        elif pub["form"] == "explicit" and judging:
            messages = [system, {"role": "user", "content": pub["context"][0]["content"] + "\n\n" + final}]
        elif pub["form"] == "explicit":
            messages = [system, *pub["context"], {"role": "assistant", "content": replies[pub["id"]]},
                        {"role": "user", "content": final}]
        else:
            messages = [system, *pub["context"], {"role": "user", "content": final}]
        requests.append(ChoiceRequest(pub["id"], messages, labels, dict(pub["options"])))
    return requests


def parse_answer(text: str) -> str | None:
    from evaluator.protocols import parse_choice_tag

    return parse_choice_tag(text)
