"""PrefEval open-ended generation behind distractor turns (the paper reports 10 and 300).

Every open_ended item is asked again with the first N turns of `data/filtered_inter_turns.json`
between the preference (and, explicit form, the model's reply to it) and the question, for N in
the `turns` tiers. Generation, self-critic, RAG and the judge's four checks are open_ended's. A turn
count whose prompts (with room for the answer) exceed the model's window is n/a for it, never
truncated; rag at 0 turns is n/a where the official code cannot run it (as mcq).
"""

from __future__ import annotations

from pathlib import Path

from evaluator.suite import Item, Split, Task
from evaluator.suites.prefeval import mcq, mcq_turns, open_ended
from evaluator.suites.prefeval.open_ended import (  # noqa: F401  (hooks of this task too)
    build_requests,
    item_arrays,
    judge_prompt_sha256,
    parse_answer,
    parse_prediction,
)

# the longest generation (the self-critic revision, 500 tokens) and the chat template's tail
ANSWER_MARGIN_TOKENS = 520


def build_items(task: Task, data: Path) -> list[Item]:
    base = open_ended.build_items(task, data)
    return [
        Item(
            id=f"{item.id}-t{turns}",
            tiers={"turns": turns, **item.tiers},
            public={**item.public, "id": f"{item.id}-t{turns}", "inter_turns": int(turns)},
            gold=item.gold,
            unit=item.unit,
        )
        for turns in task.tier_group("turns").tiers  # `turns` first: smoke runs sample across them
        for item in base
    ]


public_companion = mcq_turns.public_companion


def _sizing_messages(pub: dict, setting: str) -> list[dict[str, str]]:
    """At least as long as the item's real prompt (a 300-token reply stand-in; rag: the longest
    passages as the retrieved ones; self_critic: its revision conversation)."""
    reply = "x " * 300
    if setting == "rag":
        top_k = int(mcq.prompts()["rag_top_k"])
        top = sorted(mcq.rag_passages(pub, reply), key=len, reverse=True)[:top_k]
        return open_ended.item_messages(pub, setting, reply, top=top)
    if setting == "self_critic":
        return open_ended.self_critic_messages(pub, reply, reply, reply)
    return open_ended.item_messages(pub, setting, reply)


def fit_model(task: Task, split: Split, setting: str, backend) -> tuple[Split, dict[str, str]]:
    split, skipped = mcq.drop_rag_unavailable(split, setting)
    return mcq_turns.fit_turns(
        task,
        split,
        skipped,
        backend,
        lambda pub: _sizing_messages(pub, setting),
        ANSWER_MARGIN_TOKENS,
    )
