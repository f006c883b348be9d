"""PrefEval MCQ behind distractor turns: the paper's long-context axis.

Every mcq item (same options, same letters, same gold) is asked again with the first N turns of
`data/filtered_inter_turns.json` between the preference and the question, for N in the `turns`
tiers (0, 10, 70, 300: about 0, 3k, 26k and 118k tokens). The distractor block is the same for
every item of one N (as upstream), so public inputs name N (`inter_turns`) and the block ships once
with the suite's data. A turn count whose prompts do not fit the model's context window is n/a for
that model (fit_model): never truncated. `rag` keeps the whole conversation and lists the 5
passages most similar to the question before it (the official RAG), so it needs the same window;
at 0 turns the explicit and choice-based forms offer fewer than 5 passages and are n/a for rag.
"""

from __future__ import annotations

from pathlib import Path

from evaluator.backends.base import BackendError
from evaluator.suite import Item, Split, Task
from evaluator.suites.prefeval import mcq
from evaluator.suites.prefeval.mcq import build_requests, parse_answer  # noqa: F401  (hooks of this task too)

ANSWER_MARGIN_TOKENS = (
    16  # the explicit form's generated reply (5 tokens) and the answer token, with room
)


def build_items(task: Task, data: Path) -> list[Item]:
    base = mcq.build_items(task, data)
    items = []
    for turns in task.tier_group("turns").tiers:
        for item in base:
            item_id = f"{item.id}-t{turns}"
            # `turns` first: smoke runs (select_items) sample across turn counts
            items.append(
                Item(
                    id=item_id,
                    tiers={"turns": turns, **item.tiers},
                    public={**item.public, "id": item_id, "inter_turns": int(turns)},
                    gold=item.gold,
                    unit=item.unit,
                )
            )
    return items


def public_companion(task: Task) -> dict:
    """The distractor block the public inputs refer to (`inter_turns`: N): the first 2N messages."""
    messages = mcq.distractor_turns(max(int(t) for t in task.tier_group("turns").tiers))
    return {
        "about": "An item with inter_turns N has the first 2N of these messages between the preference "
        "(and, explicit form, the model's reply to it) and the question. From PrefEval's "
        "filtered_inter_turns.json (CC BY-NC 4.0; LMSYS-Chat-1M terms may apply).",
        "messages": messages,
    }


def _longest(items: list[Item], count: int = 6) -> list[dict]:
    """The items with the longest own text (context, question, options) per form: the prompts that
    decide whether a turn count fits."""
    by_form: dict[str, list[Item]] = {}
    for item in items:
        by_form.setdefault(item.tiers["form"], []).append(item)

    def size(item: Item) -> int:
        pub = item.public
        return (
            sum(len(m["content"]) for m in pub["context"])
            + len(pub["question"])
            + sum(len(o) for o in pub.get("options", {}).values())
        )

    return [
        i.public
        for group in by_form.values()
        for i in sorted(group, key=size, reverse=True)[:count]
    ]


def _sizing_messages(pub: dict, setting: str) -> list[dict[str, str]]:
    """A prompt at least as long as the item's real one: a 5-token reply stand-in and, for rag, the
    longest passages as the retrieved ones."""
    reply = "x " * 5
    if setting == "rag":
        top_k = int(mcq.prompts()["rag_top_k"])
        top = sorted(mcq.rag_passages(pub, reply), key=len, reverse=True)[:top_k]
        return mcq.item_messages(pub, setting, reply, top=top)
    if setting == "self_critic":
        return mcq.self_critic_messages(pub, reply, reply, "x " * 300)
    return mcq.item_messages(pub, setting, reply)


def fit_model(task: Task, split: Split, setting: str, backend) -> tuple[Split, dict[str, str]]:
    """Drop the turn counts whose longest prompts exceed the model's window (n/a, never truncated),
    and the rag items the official code cannot run (mcq.drop_rag_unavailable)."""
    split, skipped = mcq.drop_rag_unavailable(split, setting)
    return fit_turns(task, split, skipped, backend, lambda pub: _sizing_messages(pub, setting))


def fit_turns(
    task: Task,
    split: Split,
    skipped: dict[str, str],
    backend,
    sizing,
    margin: int = ANSWER_MARGIN_TOKENS,
) -> tuple[Split, dict[str, str]]:
    """Drop the turn counts whose longest prompts (`sizing(pub)`, plus `margin` tokens for the
    answer) exceed the model's window; `skipped` holds n/a notes found before."""
    window = backend.context_window()
    if not window:
        return split, skipped
    for turns in task.tier_group("turns").tiers:
        members = [item for item in split.items if item.tiers["turns"] == turns]
        if not members:
            continue
        try:
            rendered = [backend.render(sizing(pub)) for pub in _longest(members)]
        except BackendError:  # render itself refuses a prompt over the window
            rendered = None
        if rendered and rendered[0] and isinstance(rendered[0][0], dict):
            # an endpoint renders messages, not tokens: it cannot be measured here; the server's own
            # context-length refusals make those items n/a during the run (model_eval)
            return split, skipped
        longest = max(len(r) for r in rendered) if rendered else None
        if longest is None or longest + margin > window:
            size = f"up to {longest} tokens" if longest else "more tokens than that"
            skipped[turns] = (
                f"n/a: {turns} distractor turns make prompts of {size}, longer than "
                f"the model's context window of {window}"
            )
    if not skipped:
        return split, {}
    kept = [item for item in split.items if item.tiers["turns"] not in skipped]
    fitting = "+".join(t for t in task.tier_group("turns").tiers if t not in skipped) or "none"
    return Split(name=f"{split.name}[turns {fitting}]", items=kept), skipped
