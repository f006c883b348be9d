"""PrefEval open-ended generation: the model answers the question; a judge model runs four checks.

Items: the 1000 (preference, question) pairs in the three forms, as for mcq, without options. The
explicit form's preference and question come from `explicit_preference/` (upstream's generation
task reads those; `mcq_options/` adds "absolutely" in a few rows).

Generation settings (upstream `generation_task/`): zero_shot, reminder (appended), cot (worked
examples prefixed), rag (the 5 most similar earlier exchanges), self_critic (answer, critique it,
then revise; the revision is scored). The explicit form's first reply is generated (300 tokens).

Judging (upstream `error_type/`): four yes/no checks, each one judge call answered in XML:
acknowledge (does the reply refer to a preference, quoting it), violate (does it contradict the
stated preference unacknowledged), hallucinate (is the quoted preference a different one; asked
only when acknowledged), helpful (a substantive answer). Error types per item, as upstream:
unhelpful = not helpful; inconsistent = acknowledged, not hallucinated, violated, helpful;
hallucinated_violation = acknowledged, hallucinated, violated, helpful; unaware_violation = not
acknowledged, violated, helpful. accuracy = the share of items with none of the four.

Where ours differ from upstream: the judge prompts are our own wording of the same four questions,
criteria and XML answers (their hash is on every row); the judge is the operator's model (any
registered or endpoint model; upstream used Claude 3 Sonnet), run greedily with 100 new tokens; a
judge reply without a parsable <answer> counts as "No" (counted in judge_unparsed per check); the
self-critic revision is capped at the task's 300 tokens (upstream: 500).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path

import numpy as np

from evaluator.predictions import PredictionProblem
from evaluator.suite import Item, Task
from evaluator.suites.prefeval import mcq

log = logging.getLogger(__name__)

CHECKS = ("acknowledge", "violate", "hallucinate", "helpful")
ERROR_TYPES = ("unhelpful", "inconsistent", "hallucinated_violation", "unaware_violation")
MAX_RESPONSE_CHARS = 20000
ANSWER = re.compile(r"<answer>\s*(yes|no)\b", re.IGNORECASE)
QUOTED = re.compile(r"<preference>(.*?)</preference>", re.IGNORECASE | re.DOTALL)


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
        raise PredictionProblem("response", "missing")
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
    p = mcq.prompts()
    question = pub["question"]
    if setting == "reminder":
        question += p["reminder"]
    if setting == "cot":
        question = p["cot_prompt"] + question
    return question


def _conversation(pub: dict, setting: str, reply: str | None, model) -> list[dict[str, str]]:
    p = mcq.prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    final = _question(pub, "zero_shot" if setting == "self_critic" else setting)
    if setting == "rag":
        history = [
            *pub["context"],
            *([{"role": "assistant", "content": reply}] if reply is not None else []),
        ]
        top = model.retrieve(pub["question"], mcq._exchanges(history), int(p["rag_top_k"]))
        listed = "".join(f"exchange {i}. {text}\n" for i, text in enumerate(top, 1))
        return [
            system,
            {"role": "user", "content": p["rag_prefix"] + listed + p["rag_suffix"] + final},
        ]
    return [system, *mcq._history(pub, reply), {"role": "user", "content": final}]


def build_requests(task: Task, publics: list[dict], setting: str, model) -> list:
    """Generation requests; self_critic first generates the answer and its critique (two more calls)."""
    from evaluator.protocols import ChoiceRequest

    p = mcq.prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    budget = int(p["max_gen_tokens"])
    explicit = [pub for pub in publics if pub["form"] == "explicit"]
    replies: dict[str, str] = {}
    if explicit:
        generated = model.generate([[system, *pub["context"]] for pub in explicit], budget)
        replies = {pub["id"]: text for pub, text in zip(explicit, generated)}
    conversations = [_conversation(pub, setting, replies.get(pub["id"]), model) for pub in publics]
    if setting == "self_critic":
        answers = model.generate(conversations, budget)
        asked = [
            [
                *c,
                {"role": "assistant", "content": a},
                {"role": "user", "content": p["self_critic_request"]},
            ]
            for c, a in zip(conversations, answers)
        ]
        critiques = model.generate(asked, budget)
        conversations = [
            [
                *c,
                {"role": "assistant", "content": critique},
                {
                    "role": "user",
                    "content": p["self_critic_revision"].format(question=pub["question"]),
                },
            ]
            for c, critique, pub in zip(asked, critiques, publics)
        ]
    return [ChoiceRequest(pub["id"], messages, ()) for pub, messages in zip(publics, conversations)]


# -- judging --------------------------------------------------------------------------------------


def judge_prompt_sha256() -> str:
    """Hash of the judge's texts (system prompt, the four checks): recorded on every judged row."""
    p = mcq.prompts()
    return hashlib.sha256(
        json.dumps([p["judge_system"], p["judge_checks"]], sort_keys=True).encode()
    ).hexdigest()


def judge_messages(check: str, **fields: str) -> list[dict[str, str]]:
    p = mcq.prompts()
    return [
        {"role": "system", "content": p["judge_system"]},
        {"role": "user", "content": p["judge_checks"][check].format(**fields)},
    ]


def parse_verdict(text: str) -> bool | None:
    """The judge's <answer>: True for Yes, False for No, None when there is none."""
    match = ANSWER.search(text or "")
    return None if match is None else match.group(1).lower() == "yes"


def quoted_preference(text: str) -> str:
    match = QUOTED.search(text or "")
    return match.group(1).strip() if match else ""


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
    for _, item, response in answered:
        pref, question = item.gold["preference"], item.gold["question"]
        first += [
            judge_messages("acknowledge", question=question, response=response),
            judge_messages("violate", preference=pref, question=question, response=response),
            judge_messages("helpful", question=question, response=response),
        ]
    replies = ask(first)
    verdicts: dict[int, dict[str, bool]] = {}
    unparsed = dict.fromkeys(CHECKS, 0)
    restated: list[tuple[int, str, str]] = []
    for k, (index, item, _) in enumerate(answered):
        ack_text, violate_text, helpful_text = replies[3 * k : 3 * k + 3]
        found = {}
        for check, text in (
            ("acknowledge", ack_text),
            ("violate", violate_text),
            ("helpful", helpful_text),
        ):
            verdict = parse_verdict(text)
            unparsed[check] += verdict is None
            found[check] = bool(verdict)
        found["hallucinate"] = False
        verdicts[index] = found
        if found["acknowledge"]:
            restated.append((index, item.gold["preference"], quoted_preference(ack_text)))
    second = ask(
        [judge_messages("hallucinate", preference=p, restatement=r) for _, p, r in restated]
    )
    for (index, _, _), text in zip(restated, second):
        verdict = parse_verdict(text)
        unparsed["hallucinate"] += verdict is None
        verdicts[index]["hallucinate"] = bool(verdict)
    arrays = {
        name: np.zeros(len(items), dtype=float)
        for name in (*ERROR_TYPES, "correct", "acknowledged")
    }
    for index in range(len(items)):
        if index not in verdicts:  # no response at all: nothing substantive was said
            arrays["unhelpful"][index] = 1.0
            continue
        v = verdicts[index]
        errors = error_types(v["acknowledge"], v["violate"], v["hallucinate"], v["helpful"])
        for name, value in errors.items():
            arrays[name][index] = float(value)
        arrays["correct"][index] = float(not any(errors.values()))
        arrays["acknowledged"][index] = float(v["acknowledge"])
    if any(unparsed.values()):
        log.info("%s: judge replies without an <answer>, counted as No: %s", task.key, unparsed)
    return arrays
