"""PersonaFeedback binary choice: builds the items from the upstream files, checks and scores answers.

Upstream layout (as a third-party loader reads the Hub dataset PersonalAILab/PersonaFeedback):

    data/{general,spedific}/{easy,medium,hard}.jsonl   one item per line: user_id, question, chosen, reject
                                                       (`specific` is accepted as well as upstream's `spedific`)
    persona/all_personas.jsonl                         one persona per line; user_id = 1-based line number;
                                                       Name + sections Demographics, Personality, Preference
                                                       (nested objects/lists), sometimes Bias
    memory/<user_id>.jsonl                             OPTIONAL (our format): one memory snippet per line,
                                                       {"text": "..."}; the field name is split.fields.memory_text.
                                                       A split with a memory/ folder makes the `rag` setting
                                                       available (users without a file have no memory);
                                                       without one, `rag` is refused at intake.

File names, folders and field names come from the manifest (options, split.fields).
Item ids are "<type>/<difficulty>/<line>" (line: 1-based line in the upstream file), stable
across installs. Gold is "1" or "2": where the chosen response was placed.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

import numpy as np

from evaluator.predictions import PredictionProblem
from evaluator.splits import SplitFormatError, installation_secret, read_jsonl, require
from evaluator.suite import Item, Task, load_prompts

LABELS = ("1", "2")


# -- the split ---------------------------------------------------------------------------------------


def _field(task: Task, name: str) -> str:
    return task.suite.split_fields.get(name, name)


def chosen_position(seed: int | str, item_id: str) -> str:
    """Where the chosen response goes ("1" or "2"): fixed per (seed, item id), independent of order.
    `seed` includes the installation's secret salt (evaluator.splits.installation_secret), so the
    position cannot be recomputed from the public inputs and the public manifest."""
    return "1" if random.Random(f"{seed}:{item_id}").random() < 0.5 else "2"


def _type_folder(task: Task, data: Path, kind: str) -> Path:
    candidates = task.options["type_folders"][kind]
    for name in candidates:
        if (data / name).is_dir():
            return data / name
    raise SplitFormatError(
        f"data/: no folder for type {kind!r} (expected one of {', '.join(candidates)} in {data})"
    )


def _personas(task: Task, folder: Path) -> dict[int, dict]:
    path = folder / task.options["persona_file"]
    name_field = _field(task, "persona_name")
    personas = {}
    for line, record in read_jsonl(path):
        where = f"{task.options['persona_file']}, line {line}"
        require(record, name_field, where)
        for section in task.options.get("persona_sections", []):
            require(record, section, where)
        personas[line] = record  # user_id = 1-based line number
    return personas


def _user_id(value: Any, where: str, field: str) -> int:
    if isinstance(value, bool):
        value = None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or str(number) != str(value).strip():
        raise SplitFormatError(f"{where}: field '{field}' is {value!r}, not a persona line number")
    return number


def _memories(task: Task, folder: Path) -> dict[int, list[str]] | None:
    """user_id -> memory snippets, or None when the split ships no memory data."""
    directory = folder / task.options.get("memory_dir", "memory")
    if not directory.is_dir():
        return None
    text_field = _field(task, "memory_text")
    memories: dict[int, list[str]] = {}
    for path in sorted(directory.glob("*.jsonl")):
        user = _user_id(path.stem, f"{directory.name}/{path.name}", "file name")
        memories[user] = [
            str(require(record, text_field, f"{directory.name}/{path.name}, line {line}"))
            for line, record in read_jsonl(path)
        ]
    return memories


def build_items(task: Task, folder: Path) -> list[Item]:
    salt = installation_secret(folder)
    seed = (
        f"{int(task.options['shuffle_seed'])}:{salt}" if salt else int(task.options["shuffle_seed"])
    )
    personas = _personas(task, folder)
    memories = _memories(task, folder)
    fields = {name: _field(task, name) for name in ("user_id", "question", "chosen", "reject")}
    items = []
    for kind in task.tier_group("type").tiers:
        type_dir = _type_folder(task, folder / "data", kind)
        for difficulty in task.options["difficulties"]:
            path = type_dir / f"{difficulty}.jsonl"
            shown = f"data/{type_dir.name}/{path.name}"
            for line, record in read_jsonl(path):
                where = f"{shown}, line {line}"
                values = {
                    name: require(record, upstream, where) for name, upstream in fields.items()
                }
                user = _user_id(values["user_id"], where, fields["user_id"])
                if user not in personas:
                    raise SplitFormatError(
                        f"{where}: field '{fields['user_id']}' is {user}, but "
                        f"{task.options['persona_file']} has {len(personas)} personas"
                    )
                item_id = f"{kind}/{difficulty}/{line}"
                gold = chosen_position(seed, item_id)
                first, second = (
                    (values["chosen"], values["reject"])
                    if gold == "1"
                    else (values["reject"], values["chosen"])
                )
                public = {
                    "id": item_id,
                    "type": kind,
                    "difficulty": difficulty,
                    "user_id": user,
                    "question": values["question"],
                    "persona": personas[user],
                    "response_1": first,
                    "response_2": second,
                }
                if memories is not None:
                    public["memory"] = memories.get(user, [])
                items.append(
                    Item(
                        id=item_id,
                        tiers={"cell": f"{kind}/{difficulty}", "type": kind},
                        public=public,
                        gold=gold,
                        unit=f"persona-{user}",
                    )
                )
    return items


def has_memory(task: Task) -> bool:
    split = task.load_split()
    return bool(split.items) and "memory" in split.items[0].public


def check_setting(task: Task, setting: str) -> str | None:
    """Called by evaluator.registry.check_setting: why `setting` cannot be used now, or None."""
    if setting != "rag":
        return None
    from evaluator.splits import SplitNotInstalled

    try:
        available = has_memory(task)
    except SplitNotInstalled:
        return None  # refused right after with the install command
    if available:
        return None
    return (
        f"setting 'rag' is unavailable for {task.suite.name}: the installed split has no memory data "
        f"(no {task.options.get('memory_dir', 'memory')}/<user_id>.jsonl files), so there is nothing to retrieve; "
        f"use setting 'persona' or 'no_persona'"
    )


# -- predictions and scoring -------------------------------------------------------------------------


def _number(record: dict, field: str) -> float:
    if field not in record:
        raise PredictionProblem(field, "missing (a score file needs both score_1 and score_2)")
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        text = repr(value) if isinstance(value, str) else str(value)
        raise PredictionProblem(field, f"{text[:40]} is not a finite number")
    return float(value)


def parse_prediction(record: dict):
    """{"label": "1"|"2"} -> "1"/"2"; {"score_1": x, "score_2": y} -> {"score_1": x, "score_2": y}."""
    has_scores = "score_1" in record or "score_2" in record
    if "label" in record:
        if has_scores:
            raise PredictionProblem("label", "give either label or score_1/score_2, not both")
        value = record["label"]
        if isinstance(value, int) and not isinstance(value, bool) and value in (1, 2):
            return str(value)
        if isinstance(value, str) and value in LABELS:
            return value
        shown = repr(value) if isinstance(value, str) else str(value)
        raise PredictionProblem("label", f'{shown[:40]} is not "1" or "2"')
    if has_scores:
        return {"score_1": _number(record, "score_1"), "score_2": _number(record, "score_2")}
    raise PredictionProblem(
        "label", 'missing: give "label" ("1" or "2") or both "score_1" and "score_2"'
    )


# the two orders a judge sees: variant -> {letter: response position}
ORDERS = {"ab": {"A": "1", "B": "2"}, "ba": {"A": "2", "B": "1"}}

# generate_parse: the prompt asks for the letter alone. Instruct models write `A`, `B.`, `**A**`,
# `(B)`, `Answer: A`, `Response B ...` or the letter on a line of its own and more below it;
# "A better reply ..." starts with an article, not an answer, so a bare letter must end the
# reply's first line or be followed by punctuation.
_NAMED = re.compile(r"^\W*(?i:response|option)\s*([AB])(?![A-Za-z])")
_BARE = re.compile(
    r"^\W*(?:(?i:answer|choice)\s*(?:is\s*)?:?\s*\W*)?([AB])(?:[ \t]*(?:\n|\Z)|[).:,\]*])"
)


def parse_answer(text: str) -> str | None:
    """The letter the reply starts with (A or B: `B`, `**A**`, `Answer: B`, `Response A ...`)."""
    found = _NAMED.match(text) or _BARE.match(text)
    return found.group(1) if found else None


def _picked(answer: Any) -> str | None:
    """The response position ("1"/"2") an answer picks; None for no answer or a tie of scores."""
    if isinstance(answer, dict):
        s1, s2 = answer["score_1"], answer["score_2"]
        return "1" if s1 > s2 else "2" if s2 > s1 else None
    return answer if answer in LABELS else None


def item_arrays(task: Task, items: list[Item], answers: dict[str, Any]) -> dict[str, np.ndarray]:
    """correct: 0/1 per item, or the mean of its two orders (0, 0.5, 1) for a both-order judge;
    consistent: 1 where both orders picked the same response (NaN for single answers)."""
    correct = np.zeros(len(items), dtype=float)
    consistent = np.full(len(items), np.nan)
    for index, item in enumerate(items):
        answer = answers.get(item.id)
        if isinstance(answer, dict) and set(answer) & set(ORDERS):
            picks = [ORDERS[variant].get(str(answer.get(variant))) for variant in ORDERS]
            correct[index] = sum(pick == item.gold for pick in picks) / len(picks)
            consistent[index] = float(picks[0] is not None and picks[0] == picks[1])
        else:
            correct[index] = float(_picked(answer) == item.gold)
    arrays = {"correct": correct}
    if not np.isnan(consistent).all():
        arrays["consistent"] = consistent
    return arrays


# -- model runs --------------------------------------------------------------------------------------


def prompts() -> dict:
    """This suite's prompt texts (prompts.yaml), read once."""
    return load_prompts(Path(__file__).parent)


def _render_value(value: Any, indent: int) -> list[str]:
    pad = "  " * indent
    if isinstance(value, dict):
        lines = []
        for key, sub in value.items():
            if isinstance(sub, (dict, list)):
                lines.append(f"{pad}{key}:")
                lines.extend(_render_value(sub, indent + 1))
            else:
                lines.append(f"{pad}{key}: {sub}")
        return lines
    if isinstance(value, list):
        lines = []
        for sub in value:
            if isinstance(sub, (dict, list)):
                lines.append(f"{pad}-")
                lines.extend(_render_value(sub, indent + 1))
            else:
                lines.append(f"{pad}- {sub}")
        return lines
    return [f"{pad}{value}"]


def render_persona(persona: dict, name_field: str = "Name") -> str:
    """The structured profile as indented text: Name first, then the sections in the record's order."""
    lines = [f"{name_field}: {persona.get(name_field, '')}"]
    for key, value in persona.items():
        if key == name_field:
            continue
        if isinstance(value, (dict, list)):
            lines.append(f"{key}:")
            lines.extend(_render_value(value, 1))
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _context(task: Task, public: dict, setting: str, tools) -> str:
    p = prompts()
    if setting == "persona":
        return p["persona_context"].format(
            persona=render_persona(public["persona"], _field(task, "persona_name"))
        )
    if setting == "rag":
        if "memory" not in public:
            raise ValueError(
                f"setting 'rag' is unavailable: the installed {task.suite.name} split has no memory data"
            )
        k = int(p["rag_top_k"])
        top = tools.retrieve(public["question"], list(public["memory"]), k)
        listed = "".join(f"{i}. {text}\n" for i, text in enumerate(top, 1))
        return p["rag_context"].format(k=k, memories=listed)
    return ""


def build_requests(task: Task, publics: list[dict], setting: str, tools) -> list:
    """generate_parse and pairwise_logprobs: two requests per item, "<id>::ab" (response_1 as A)
    and "<id>::ba" (response_2 as A), labels A/B (both orders, as SUITES.md asks). reward: one
    request per item, the user turn = context + question, responses {"1": response_1, "2":
    response_2}."""
    from evaluator.protocols import ChoiceRequest

    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    requests = []
    for pub in publics:
        context = _context(task, pub, setting, tools)
        if tools.protocol == "reward":
            user = {
                "role": "user",
                "content": p["reward_user"].format(context=context, question=pub["question"]),
            }
            requests.append(
                ChoiceRequest(
                    pub["id"], [user], LABELS, {"1": pub["response_1"], "2": pub["response_2"]}
                )
            )
            continue
        for variant, letters in ORDERS.items():
            text = p["judge"].format(
                context=context,
                question=pub["question"],
                response_a=pub[f"response_{letters['A']}"],
                response_b=pub[f"response_{letters['B']}"],
            )
            requests.append(
                ChoiceRequest(
                    f"{pub['id']}::{variant}",
                    [system, {"role": "user", "content": text}],
                    ("A", "B"),
                )
            )
    return requests
