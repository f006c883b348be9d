"""Companion downloads: a submitter can rebuild every prompt from the public inputs plus the companion."""

from __future__ import annotations

import json
from pathlib import Path

from evaluator.registry import get_task
from evaluator.suite import Split
from evaluator.suites.prefeval import mcq
from evaluator.suites.realpref import common

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "splits" / "realpref"


def test_realpref_companion_carries_every_history_session_text():
    task = get_task("realpref", "mcq")
    split = Split("test", task.hooks.build_items(task, FIXTURE))
    data = common.load_data(task, FIXTURE)
    companion = json.loads(json.dumps(common.companion_from(split, data)))  # what the API sends
    public = json.loads(split.public_jsonl().splitlines()[-1])
    rebuilt = [
        {"role": role, "content": turn[role]}
        for sid in public["history"]
        for turn in companion["sessions"][sid]
        for role in ("user", "assistant")
    ]
    served = common.build_messages(task, public, "zero_shot", data)
    assert (
        rebuilt == served[1:-1] and len(rebuilt) > 0
    )  # between the system prompt and the question
    assert {sid for item in split.items for sid in item.public["history"]} == set(
        companion["sessions"]
    )
    # the gold letter's option text is in the public options anyway; no gold field anywhere
    assert "gold" not in json.dumps(companion)
    assert all("gold" not in json.dumps(item.public) for item in split.items)


def test_prefeval_turns_companion_is_the_distractor_block():
    task = get_task("prefeval", "mcq_turns")
    companion = task.hooks.public_companion(task)
    assert companion["messages"] == mcq.distractor_turns(300)
    assert companion["messages"][:20] == mcq.distractor_turns(10)
