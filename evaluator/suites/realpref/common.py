"""RealPref: items, histories and prompts, shared by the mcq, true_false and open_ended hooks.

Accepted split folder (field names as the manifest's `split.fields` declares them):

- users.jsonl: {user_id, profile}
- preferences.jsonl: {user_id, preference_id (unique), preference, kind: original|generalized, topic,
  query, mcq_options: [4 texts], mcq_answer: index of the aligned option,
  true_false: [{statement, label: true}, {statement, label: false}]}
- sessions.jsonl: {session_id, user_id (absent/null for random sessions), type: life_event |
  preference_expression | random, preference_id and expression_type (preference_expression only),
  date (user sessions), turns: [{user, assistant}, ...]}

Items: one per (preference, expression type, context configuration) for mcq and open_ended, and one
per statement of those for true_false. The history of an item is the user's life-event sessions plus
the user's preference-expression sessions of that expression type (all original preferences), in
date order, with random sessions inserted between them (`interval`) and appended after them (`tail`)
up to the configuration's token budgets. Lengths are a fixed reference count (ceil(whitespace words x
token_factor) per session), so the same history is built for every model; random sessions are drawn
from a seeded shuffle of the pool (seed, user, configuration), reused only once the pool is spent.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

from evaluator.splits import SplitFormatError, installation_secret, read_jsonl, require
from evaluator.suite import Item, Split, Task, load_prompts

EXPRESSION_TYPES = (
    "explicit_direct",
    "explicit_contextual",
    "implicit_stylistic",
    "implicit_experience",
)
KINDS = ("original", "generalized")
SESSION_TYPES = ("life_event", "preference_expression", "random")
LETTERS = "ABCD"


# -- reading the split --------------------------------------------------------------------------


def _fields(task: Task) -> dict[str, str]:
    return task.suite.split_fields


def _req(record: dict, f: dict, name: str, where: str):
    return require(record, f[name], where)


def _label(value, where: str, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise SplitFormatError(f"{where}: field '{field}' must be true or false, not {value!r}")


def load_data(task: Task, folder: Path) -> dict[str, Any]:
    """Users, preferences and sessions, checked; every problem names file, line and field."""
    return _load(
        Path(folder),
        tuple(sorted(_fields(task).items())),
        float(task.options.get("token_factor", 1.3)),
        _mtimes(Path(folder)),
    )


def _mtimes(folder: Path) -> tuple:
    return tuple(
        (name, (folder / name).stat().st_mtime_ns if (folder / name).exists() else None)
        for name in ("users.jsonl", "preferences.jsonl", "sessions.jsonl")
    )


@lru_cache(maxsize=4)
def _load(folder: Path, fields: tuple, token_factor: float, _stamp: tuple) -> dict[str, Any]:
    f = dict(fields)
    users: dict[str, dict] = {}
    for line, rec in read_jsonl(folder / "users.jsonl"):
        where = f"users.jsonl, line {line}"
        uid = str(_req(rec, f, "user_id", where))
        _req(rec, f, "profile", where)
        if uid in users:
            raise SplitFormatError(f"{where}: field '{f['user_id']}': duplicate user {uid!r}")
        users[uid] = rec

    prefs: list[dict] = []
    seen: dict[str, int] = {}
    for line, rec in read_jsonl(folder / "preferences.jsonl"):
        where = f"preferences.jsonl, line {line}"
        uid = str(_req(rec, f, "preference_user", where))
        if uid not in users:
            raise SplitFormatError(
                f"{where}: field '{f['preference_user']}': unknown user {uid!r} (not in users.jsonl)"
            )
        pid = str(_req(rec, f, "preference_id", where))
        if pid in seen:
            raise SplitFormatError(
                f"{where}: field '{f['preference_id']}': duplicate preference {pid!r} (line {seen[pid]})"
            )
        seen[pid] = line
        kind = _req(rec, f, "kind", where)
        if kind not in KINDS:
            raise SplitFormatError(
                f"{where}: field '{f['kind']}' must be one of {', '.join(KINDS)}, not {kind!r}"
            )
        options = _req(rec, f, "options", where)
        if not (
            isinstance(options, list)
            and len(options) == 4
            and all(isinstance(o, str) for o in options)
        ):
            raise SplitFormatError(
                f"{where}: field '{f['options']}' must be a list of 4 option texts"
            )
        aligned = _req(rec, f, "aligned", where)
        if isinstance(aligned, bool) or not isinstance(aligned, int) or not 0 <= aligned < 4:
            raise SplitFormatError(
                f"{where}: field '{f['aligned']}' must be the index (0-3) of the aligned option"
            )
        statements = _req(rec, f, "statements", where)
        if not (
            isinstance(statements, list)
            and len(statements) == 2
            and all(isinstance(s, dict) for s in statements)
        ):
            raise SplitFormatError(
                f"{where}: field '{f['statements']}' must be a list of 2 objects (one true, one false)"
            )
        parsed = []
        for k, st in enumerate(statements):
            swhere = f"{where}, {f['statements']}[{k}]"
            text = require(st, f["statement_text"], swhere)
            parsed.append(
                (
                    str(text),
                    _label(require(st, f["statement_label"], swhere), swhere, f["statement_label"]),
                )
            )
        if sorted(label for _, label in parsed) != [False, True]:
            raise SplitFormatError(
                f"{where}: field '{f['statements']}' must hold one true and one false statement"
            )
        prefs.append(
            {
                "line": line,
                "user": uid,
                "id": pid,
                "kind": kind,
                "preference": str(_req(rec, f, "preference", where)),
                "topic": str(_req(rec, f, "topic", where)),
                "query": str(_req(rec, f, "query", where)),
                "options": list(options),
                "aligned": aligned,
                "statements": parsed,
            }
        )

    sessions: dict[str, dict] = {}
    for line, rec in read_jsonl(folder / "sessions.jsonl"):
        where = f"sessions.jsonl, line {line}"
        sid = str(_req(rec, f, "session_id", where))
        if sid in sessions:
            raise SplitFormatError(f"{where}: field '{f['session_id']}': duplicate session {sid!r}")
        stype = _req(rec, f, "session_type", where)
        if stype not in SESSION_TYPES:
            raise SplitFormatError(
                f"{where}: field '{f['session_type']}' must be one of {', '.join(SESSION_TYPES)}, not {stype!r}"
            )
        session = {
            "id": sid,
            "type": stype,
            "user": None,
            "preference": None,
            "expression": None,
            "date": "",
        }
        if stype != "random":
            uid = str(_req(rec, f, "session_user", where))
            if uid not in users:
                raise SplitFormatError(
                    f"{where}: field '{f['session_user']}': unknown user {uid!r} (not in users.jsonl)"
                )
            session["user"] = uid
            session["date"] = str(_req(rec, f, "session_date", where))
        if stype == "preference_expression":
            session["preference"] = str(_req(rec, f, "session_preference", where))
            expr = _req(rec, f, "expression_type", where)
            if expr not in EXPRESSION_TYPES:
                raise SplitFormatError(
                    f"{where}: field '{f['expression_type']}' must be one of {', '.join(EXPRESSION_TYPES)}, not {expr!r}"
                )
            session["expression"] = expr
        turns = _req(rec, f, "turns", where)
        if not isinstance(turns, list) or not turns:
            raise SplitFormatError(
                f"{where}: field '{f['turns']}' must be a non-empty list of turns"
            )
        session["turns"] = []
        words = 0
        for k, turn in enumerate(turns):
            twhere = f"{where}, {f['turns']}[{k}]"
            if not isinstance(turn, dict):
                raise SplitFormatError(
                    f"{twhere}: expected an object with '{f['turn_user']}' and '{f['turn_assistant']}'"
                )
            user, assistant = (
                str(require(turn, f["turn_user"], twhere)),
                str(require(turn, f["turn_assistant"], twhere)),
            )
            session["turns"].append((user, assistant))
            words += len(user.split()) + len(assistant.split())
        session["tokens"] = math.ceil(words * token_factor)
        sessions[sid] = session

    # every original preference is expressed in every expression type (paper, section 3.3)
    expressed = {
        (s["preference"], s["expression"])
        for s in sessions.values()
        if s["type"] == "preference_expression"
    }
    by_id = {p["id"]: p for p in prefs}
    for s in sessions.values():
        if s["type"] == "preference_expression":
            p = by_id.get(s["preference"])
            if p is None or p["user"] != s["user"] or p["kind"] != "original":
                raise SplitFormatError(
                    f"sessions.jsonl, session {s['id']}: field '{f['session_preference']}': "
                    f"{s['preference']!r} is not an original preference of user {s['user']!r}"
                )
    for p in prefs:
        if p["kind"] == "original":
            for expr in EXPRESSION_TYPES:
                if (p["id"], expr) not in expressed:
                    raise SplitFormatError(
                        f"preferences.jsonl, line {p['line']}: original preference {p['id']!r} has no "
                        f"preference_expression session of expression type {expr!r} in sessions.jsonl"
                    )
    return {"users": users, "preferences": prefs, "sessions": sessions}


# -- histories ----------------------------------------------------------------------------------


def configurations(task: Task) -> dict[str, dict[str, int]]:
    configs = task.options["context_configurations"]
    return {
        name: {k: int(v) for k, v in configs[name].items()}
        for name in task.tier_group("context").tiers
    }


def build_history(
    data: dict, user: str, expression: str, config: dict[str, int], seed: int, config_name: str
) -> list[str]:
    """Session ids of one user's history in one (expression type, configuration); deterministic."""
    sessions = data["sessions"]
    own = sorted(
        (
            s
            for s in sessions.values()
            if s["user"] == user
            and (
                s["type"] == "life_event"
                or (s["type"] == "preference_expression" and s["expression"] == expression)
            )
        ),
        key=lambda s: (s["date"], s["id"]),
    )
    own_ids = [s["id"] for s in own]
    if not config.get("interval") and not config.get("tail"):
        return own_ids
    pool = sorted(s["id"] for s in sessions.values() if s["type"] == "random")
    if not pool:
        raise SplitFormatError(
            "sessions.jsonl: no random sessions, needed for the longer context configurations"
        )
    rng = random.Random(f"{seed}:{user}:{config_name}")
    stream: list[str] = []

    def draw(budget: int) -> list[str]:
        taken, total = [], 0
        while total < budget:
            if not stream:
                stream.extend(
                    rng.sample(pool, len(pool))
                )  # a fresh permutation once the pool is spent
            sid = stream.pop()
            taken.append(sid)
            total += sessions[sid]["tokens"]
        return taken

    interval, tail = draw(config.get("interval", 0)), draw(config.get("tail", 0))
    gaps: list[list[str]] = [[] for _ in range(max(len(own_ids), 1))]
    for sid in interval:
        gaps[rng.randrange(len(gaps))].append(sid)  # inserted before own session i
    history = []
    for i, gap in enumerate(gaps):
        history.extend(gap)
        if i < len(own_ids):
            history.append(own_ids[i])
    return history + tail


def history_tokens(data: dict, history: list[str]) -> int:
    return sum(data["sessions"][sid]["tokens"] for sid in history)


# -- items ----------------------------------------------------------------------------------------


def lettered(pref: dict, seed: int | str) -> tuple[dict[str, str], str]:
    """The four options in a seeded order per preference, and the letter of the aligned one.
    `seed` includes the installation's secret salt, so the order cannot be undone from public inputs."""
    order = random.Random(f"{seed}:{pref['id']}").sample(range(4), 4)
    return {LETTERS[i]: pref["options"][j] for i, j in enumerate(order)}, LETTERS[
        order.index(pref["aligned"])
    ]


def build_items(task: Task, folder: Path) -> list[Item]:
    data = load_data(task, folder)
    configs = configurations(task)
    # The option/statement shuffles decide the gold's position: salted per installation (see
    # evaluator.splits.installation_secret). The history sampling decides no gold: left public.
    salt = installation_secret(folder)
    seed = (
        f"{int(task.options['shuffle_seed'])}:{salt}" if salt else int(task.options["shuffle_seed"])
    )
    hseed = int(task.options["history_seed"])
    by_user: dict[str, list[dict]] = {}
    for pref in data["preferences"]:
        by_user.setdefault(pref["user"], []).append(pref)
    items: list[Item] = []
    for user in sorted(by_user):
        for expr in task.tier_group("expression").tiers:
            for cname, config in configs.items():
                history = build_history(data, user, expr, config, hseed, cname)
                tokens = history_tokens(data, history)
                for pref in by_user[user]:
                    base = f"{pref['id']}.{expr}.{cname}"
                    # the preference, asked in every (expression, context) item, within its
                    # user, whose preferences share each history (the manifest's bootstrap_unit)
                    unit = (user, pref["id"])
                    tiers = {"expression": expr, "context": cname, "kind": pref["kind"]}
                    public = {
                        "id": base,
                        "user_id": user,
                        "preference_id": pref["id"],
                        "kind": pref["kind"],
                        "expression_type": expr,
                        "context": cname,
                        "history": history,
                        "history_tokens": tokens,
                        "query": pref["query"],
                    }
                    if task.name == "mcq":
                        options, gold = lettered(pref, seed)
                        items.append(Item(base, tiers, {**public, "options": options}, gold, unit))
                    elif task.name == "true_false":
                        order = random.Random(f"{seed}:tf:{pref['id']}").sample(range(2), 2)
                        for k, j in enumerate(order, start=1):
                            text, label = pref["statements"][j]
                            items.append(
                                Item(
                                    f"{base}-s{k}",
                                    tiers,
                                    {**public, "id": f"{base}-s{k}", "statement": text},
                                    "true" if label else "false",
                                    unit,
                                )
                            )
                    else:
                        items.append(
                            Item(
                                base,
                                tiers,
                                public,
                                {"preference": pref["preference"], "query": pref["query"]},
                                unit,
                            )
                        )
    return items


# -- model runs -----------------------------------------------------------------------------------


def prompts() -> dict:
    """This suite's prompt texts (prompts.yaml), read once."""
    return load_prompts(Path(__file__).parent)


def installed_data(task: Task) -> dict:
    from evaluator.splits import split_files

    return load_data(task, split_files(task.suite))


def fit_model(task: Task, split: Split, setting: str, backend) -> tuple[Split, dict[str, str]]:
    """Drop the items of every context configuration longer than the model's context window.

    Those configurations are "n/a" for the model: never run, never truncated. `rag` sees only the
    retrieved turns, not the history, so no configuration is n/a there.
    """
    window = backend.context_window()
    if not window or setting == "rag":
        return split, {}
    configs = configurations(task)
    skipped = {
        name: f"n/a: the configuration is {c['total']} tokens, longer than the model's context window of {window}"
        for name, c in configs.items()
        if c["total"] > window
    }
    if not skipped:
        return split, {}
    kept = [item for item in split.items if item.tiers["context"] not in skipped]
    return Split(
        name=f"{split.name}[context {'+'.join(n for n in configs if n not in skipped) or 'none'}]",
        items=kept,
    ), skipped


def _turn_text(user: str, assistant: str) -> str:
    return f"user: {user} assistant: {assistant}"


def final_question(task: Task, pub: dict, setting: str) -> str:
    p = prompts()
    text = pub["query"]
    if setting == "cot":
        text = p["cot_prompt"] + text
    if setting == "reminder":
        text += p["reminder"]
    if task.name == "mcq":
        text += p["mcq_format"].format(
            options="\n".join(f"{k}. {v}" for k, v in pub["options"].items())
        )
    elif task.name == "true_false":
        text += p["true_false_format"].format(statement=pub["statement"])
    return text


def companion_from(split: Split, data: dict) -> dict[str, Any]:
    """What the public inputs refer to but do not carry: the turns of every session a history names."""
    used = sorted({sid for item in split.items for sid in item.public["history"]})
    return {
        "about": "Session texts of the histories in this task's public inputs: an item's conversation is the "
        "turns of its `history` sessions, in order (then its query), as the service prompts models.",
        "sessions": {
            sid: [{"user": u, "assistant": a} for u, a in data["sessions"][sid]["turns"]]
            for sid in used
        },
    }


def public_companion(task: Task) -> dict[str, Any]:
    """The companion download of the public inputs (GET .../inputs/companion): session texts only."""
    return companion_from(task.load_split(), installed_data(task))


def build_messages(
    task: Task, pub: dict, setting: str, data: dict, retrieve=None
) -> list[dict[str, str]]:
    p = prompts()
    system = {"role": "system", "content": p["system_prompt"]}
    final = final_question(task, pub, setting)
    turns = [t for sid in pub["history"] for t in data["sessions"][sid]["turns"]]
    if setting == "rag":
        top = retrieve(pub["query"], [_turn_text(u, a) for u, a in turns], int(p["rag_top_k"]))
        listed = "".join(f"turn {i}. {text}\n" for i, text in enumerate(top, 1))
        return [
            system,
            {"role": "user", "content": p["rag_prefix"] + listed + p["rag_suffix"] + final},
        ]
    messages = [system]
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return messages + [{"role": "user", "content": final}]


def build_requests(task: Task, publics: list[dict], setting: str, tools) -> list:
    from evaluator.protocols import ChoiceRequest

    data = installed_data(task)
    labels = (
        ("A", "B", "C", "D")
        if task.name == "mcq"
        else ("True", "False")
        if task.name == "true_false"
        else ()
    )
    return [
        ChoiceRequest(pub["id"], build_messages(task, pub, setting, data, tools.retrieve), labels)
        for pub in publics
    ]
