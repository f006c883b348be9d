"""PrefEval open-ended generation: the model answers the question; a judge model runs four checks.

Items: the 1000 (preference, question) pairs in the three forms, as for mcq, without options. The
explicit form's preference and question come from `explicit_preference/` (upstream's generation
task reads those; `mcq_options/` adds "absolutely" in a few rows). `open_ended_turns` asks them again
behind 10 and 300 distractor turns.

Generation (upstream `generation_task/`, `utils/explicit_utils.py`, `utils/implicit_utils.py`): the
question ends with " (Please respond within 300 words.)" (after the reminder or worked examples,
after a RAG block); answers are 300 tokens, the explicit form's first reply too. Settings: zero_shot,
reminder, cot, rag (as mcq: the whole conversation stays, the 5 most similar earlier messages are
listed before the question), self_critic (the zero-shot answer, a critique of it in 300 tokens, then
the revision in 500 tokens, which is scored; the critique and revision prompts carry the bare
question, as upstream).

Judging (upstream `error_type/` and `generation_task/llm_based_evaluation_errortypes.py`): the four
official prompt files (judge/, verbatim) filled with str.replace in upstream's order, each one judge
call with the official system prompt, greedy, 100 tokens. Replies are read as upstream reads them
(official_parsing.py): the text of the first <answer> (and, for acknowledge, <preference>) element;
acknowledge, violate and hallucinate count when "yes" is in that text, helpful fails when "no" is
in it, so a reply with no parsable answer counts as not acknowledged, not violated, not hallucinated
and helpful. The hallucination check only matters for acknowledged answers, so it is asked only for
them (upstream asks it for every answer and ignores the rest: the same scores). Error types per item,
as upstream: unhelpful; inconsistent = acknowledged, not hallucinated, violated, helpful;
hallucinated_violation = acknowledged, hallucinated, violated, helpful; unaware_violation = not
acknowledged, violated, helpful. accuracy = the share of items with none of the four.

Where ours differ from upstream: the judge is the operator's model (upstream: Claude 3 Sonnet on
Bedrock); an item the model gave no text for counts as unhelpful without asking the judge.
"""

from __future__ import annotations

import hashlib
import logging
from functools import lru_cache
from pathlib import Path

import numpy as np

from evaluator.item_records import JudgeCall, cap_text, capped_messages
from evaluator.predictions import PredictionProblem, missing
from evaluator.suite import Item, Task
from evaluator.suites.prefeval import mcq
from evaluator.suites.prefeval.official_parsing import says_no, says_yes, tag_text

log = logging.getLogger(__name__)

CHECKS = ("acknowledge", "violate", "hallucinate", "helpful")
ERROR_TYPES = ("unhelpful", "inconsistent", "hallucinated_violation", "unaware_violation")
MAX_RESPONSE_CHARS = 20000
JUDGE_FILES = {
    "acknowledge": "check_acknowledge.txt",
    "violate": "check_violation.txt",
    "hallucinate": "check_hallucination.txt",
    "helpful": "check_helpful.txt",
}
# upstream's str.replace order per check (acknowledge puts the response in before the question)
PLACEHOLDERS = {
    "acknowledge": (("{end_generation}", "response"), ("{question}", "question")),
    "violate": (
        ("{preference}", "preference"),
        ("{question}", "question"),
        ("{end_generation}", "response"),
    ),
    "helpful": (
        ("{preference}", "preference"),
        ("{question}", "question"),
        ("{end_generation}", "response"),
    ),
    "hallucinate": (("{preference}", "preference"), ("{assistant_restatement}", "restatement")),
}


def build_items(task: Task, data: Path) -> list[Item]:
    items = []
    for form, source in mcq.FORM_SOURCES.items():
        for topic in task.tier_group("topic").tiers:
            folder = "explicit_preference" if source is None else source
            for row, record in enumerate(mcq._read(data / folder / f"{topic}.json")):
                item_id = f"{form}-{topic}-{row:03d}"
                items.append(
                    Item(
                        id=item_id,
                        tiers={"form": form, "topic": topic},
                        public={
                            "id": item_id,
                            "form": form,
                            "topic": topic,
                            "context": mcq._context(form, record),
                            "question": record["question"],
                        },
                        gold={"preference": record["preference"], "question": record["question"]},
                        unit=f"{topic}-{row:03d}",
                    )
                )
    return items


def parse_prediction(record: dict) -> str:
    if "response" not in record:
        raise missing("response", record)
    value = record["response"]
    if not isinstance(value, str) or not value.strip():
        raise PredictionProblem(
            "response", "must be a non-empty string (the model's answer to the question)"
        )
    if len(value) > MAX_RESPONSE_CHARS:
        raise PredictionProblem("response", f"longer than {MAX_RESPONSE_CHARS} characters")
    return value


def parse_answer(text: str) -> str | None:
    return text.strip() or None


# -- model runs ---------------------------------------------------------------------------------


def _question(pub: dict, setting: str) -> str:
    """The last user turn: reminder / worked examples / RAG block, then the official word limit."""
    p = mcq.prompts()
    question = pub["question"]
    if setting == "reminder":
        question += p["reminder"]
    if setting == "cot":
        question = p["cot_prompt"] + question
    return question + p["word_limit"].format(max_gen_tokens=p["max_gen_tokens"])


def item_messages(pub: dict, setting: str, reply: str | None, model=None, top=None) -> list[dict]:
    """The generation prompt of one item (zero_shot for self_critic's first answer)."""
    p = mcq.prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    history = mcq._history(pub, reply)
    if setting == "rag":
        if top is None:
            top = mcq.retrieved(pub, reply, model)
        final = mcq.rag_block(top) + _question(pub, "zero_shot")
    else:
        final = _question(pub, "zero_shot" if setting == "self_critic" else setting)
    return [system, *history, {"role": "user", "content": final}]


def self_critic_messages(
    pub: dict, reply: str | None, answer: str, critique: str | None = None
) -> list[dict[str, str]]:
    """Upstream's generation self-critic: the conversation with the bare question (no word limit),
    the first answer and the critique request; with the critique, the revision request."""
    p = mcq.prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    asked = [
        system,
        *mcq._history(pub, reply),
        {"role": "user", "content": pub["question"]},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": p["self_critic_request"]},
    ]
    if critique is None:
        return asked
    revision = p["self_critic_revision"].replace("{question}", pub["question"])
    return [
        *asked,
        {"role": "assistant", "content": critique},
        {"role": "user", "content": revision},
    ]


def build_requests(task: Task, publics: list[dict], setting: str, model) -> list:
    """Generation requests; self_critic first generates the answer and its critique (two more calls),
    and its revision gets the official 500 tokens."""
    from evaluator.protocols import ChoiceRequest

    p = mcq.prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    budget = int(p["max_gen_tokens"])
    explicit = [pub for pub in publics if pub["form"] == "explicit"]
    replies: dict[str, str] = {}
    if explicit:
        generated = model.generate([[system, *pub["context"]] for pub in explicit], budget)
        replies = {pub["id"]: text for pub, text in zip(explicit, generated)}
    reply_of = [replies.get(pub["id"]) for pub in publics]
    if setting != "self_critic":
        return [
            ChoiceRequest(pub["id"], item_messages(pub, setting, reply, model), ())
            for pub, reply in zip(publics, reply_of)
        ]
    answers = model.generate(
        [item_messages(pub, setting, reply) for pub, reply in zip(publics, reply_of)], budget
    )
    critiques = model.generate(
        [self_critic_messages(pub, r, a) for pub, r, a in zip(publics, reply_of, answers)], budget
    )
    revision_budget = int(p["self_critic_revision_max_tokens"])
    return [
        ChoiceRequest(
            pub["id"], self_critic_messages(pub, r, a, c), (), max_new_tokens=revision_budget
        )
        for pub, r, a, c in zip(publics, reply_of, answers, critiques)
    ]


def fit_model(task: Task, split, setting: str, backend):
    """`rag` items the official code cannot run are n/a (as mcq)."""
    return mcq.drop_rag_unavailable(split, setting)


# -- judging --------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def judge_templates() -> dict[str, str]:
    folder = Path(__file__).parent / "judge"
    return {
        check: (folder / name).read_text(encoding="utf-8") for check, name in JUDGE_FILES.items()
    }


def judge_prompt_sha256() -> str:
    """Hash of the judge's texts (system prompt, the four official files): recorded on every row."""
    digest = hashlib.sha256(mcq.prompts()["judge_system"].encode())
    for check in CHECKS:
        digest.update(b"\0" + judge_templates()[check].encode())
    return digest.hexdigest()


def judge_prompt(check: str, **fields: str) -> str:
    """The official prompt file of `check`, filled as upstream fills it (str.replace, its order)."""
    text = judge_templates()[check]
    for placeholder, field in PLACEHOLDERS[check]:
        text = text.replace(placeholder, fields[field])
    return text


def judge_messages(check: str, **fields: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": mcq.prompts()["judge_system"]},
        {"role": "user", "content": judge_prompt(check, **fields)},
    ]


def error_types(
    acknowledged: bool, violated: bool, hallucinated: bool, helpful: bool
) -> dict[str, bool]:
    """Upstream's error types of one item (get_preference_following_accuracy_generation_task.py)."""
    return {
        "unhelpful": not helpful,
        "inconsistent": acknowledged and not hallucinated and violated and helpful,
        "hallucinated_violation": acknowledged and hallucinated and violated and helpful,
        "unaware_violation": not acknowledged and violated and helpful,
    }


def verdicts(ack: str, violate: str, hallucinate: str, helpful: str) -> dict[str, bool]:
    """The four judge replies read as upstream reads them (an empty or unparsable reply included)."""
    acknowledged = says_yes(tag_text(ack, "answer"))
    return {
        "acknowledge": acknowledged,
        "violate": says_yes(tag_text(violate, "answer")),
        "hallucinate": acknowledged and says_yes(tag_text(hallucinate, "answer")),
        "helpful": not says_no(tag_text(helpful, "answer")),
    }


def item_arrays(task, items, answers, judge) -> dict[str, np.ndarray]:
    backend = judge.backend
    limit = int(mcq.prompts()["judge_max_tokens"])

    def ask(conversations: list[list[dict[str, str]]]) -> list[str]:
        return (
            backend.generate([backend.render(m) for m in conversations], limit)
            if conversations
            else []
        )

    answered = [
        (index, item, answers.get(item.id))
        for index, item in enumerate(items)
        if answers.get(item.id)
    ]
    first: list[list[dict[str, str]]] = []
    asked: dict[tuple[int, str], list[dict[str, str]]] = {}  # (index, check) -> the judge's prompt
    for index, item, response in answered:
        fields = {
            "preference": item.gold["preference"],
            "question": item.gold["question"],
            "response": response,
        }
        for check in ("acknowledge", "violate", "helpful"):
            asked[index, check] = judge_messages(check, **fields)
            first.append(asked[index, check])
    replies = [text or "" for text in ask(first)]
    by_index: dict[int, dict[str, str]] = {}
    for k, (index, _, _) in enumerate(answered):
        ack, violate, helpful = replies[3 * k : 3 * k + 3]
        by_index[index] = {"acknowledge": ack, "violate": violate, "helpful": helpful}
    # the restatement is the acknowledge reply's <preference> text, "" when there is none
    restated = [
        (index, item.gold["preference"], tag_text(by_index[index]["acknowledge"], "preference"))
        for index, item, _ in answered
        if says_yes(tag_text(by_index[index]["acknowledge"], "answer"))
    ]
    for index, p, r in restated:
        asked[index, "hallucinate"] = judge_messages("hallucinate", preference=p, restatement=r)
    second = ask([asked[index, "hallucinate"] for index, _, _ in restated])
    for (index, _, _), text in zip(restated, second):
        by_index[index]["hallucinate"] = text or ""
    arrays = {
        name: np.zeros(len(items), dtype=float)
        for name in (*ERROR_TYPES, "correct", "acknowledged")
    }
    unparsed = dict.fromkeys(CHECKS, 0)
    for index in range(len(items)):
        if index not in by_index:  # no response at all: nothing substantive was said
            arrays["unhelpful"][index] = 1.0
            continue
        texts = by_index[index]
        for check, text in texts.items():
            unparsed[check] += tag_text(text, "answer") == ""
        v = verdicts(
            texts["acknowledge"], texts["violate"], texts.get("hallucinate", ""), texts["helpful"]
        )
        errors = error_types(v["acknowledge"], v["violate"], v["hallucinate"], v["helpful"])
        for name, value in errors.items():
            arrays[name][index] = float(value)
        arrays["correct"][index] = float(not any(errors.values()))
        arrays["acknowledged"][index] = float(v["acknowledge"])
    judge.tally(sum(len(texts) for texts in by_index.values()), sum(unparsed.values()))
    judge.keep(judge_transcript(items, by_index, asked))
    if any(unparsed.values()):
        log.info(
            "%s: judge replies without an <answer> (read as upstream reads them): %s",
            task.key,
            unparsed,
        )
    return arrays


def judge_transcript(
    items, by_index: dict[int, dict[str, str]], asked: dict[tuple[int, str], list]
) -> list[JudgeCall]:
    """One record per judge call: the item, the check, the prompt as sent and the reply (capped:
    evaluator/item_records.py), and the <answer> text the rule read (None: none, read as upstream
    reads it)."""
    records: list[JudgeCall] = []
    for index, texts in sorted(by_index.items()):
        for check, text in texts.items():
            answer = tag_text(text, "answer")
            records.append(
                {
                    "id": items[index].id,
                    "check": check,
                    "prompt": capped_messages(asked[index, check]),
                    "output": cap_text(text),
                    "parsed": answer or None,
                }
            )
    return records
