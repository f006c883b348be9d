"""Circular evaluation: every rotation of the options; correct only when all rotations agree."""

from __future__ import annotations

import numpy as np

from evaluator.protocols import (
    ChoiceRequest,
    choose_by_logprobs,
    circular_publics,
    combine_rotations,
    get_protocol,
    rotate_options,
)

PUBLIC = {"id": "q1", "options": {"A": "tea", "B": "coffee", "C": "juice", "D": "water"}}


def test_rotation_moves_each_option_one_letter_up():
    assert rotate_options(PUBLIC, 1) == {
        "id": "q1::r1",
        "options": {"A": "coffee", "B": "juice", "C": "water", "D": "tea"},
    }
    assert rotate_options(PUBLIC, 0)["options"] == PUBLIC["options"]


def build_requests(task, publics, setting, tools):
    return [
        ChoiceRequest(
            p["id"], [{"role": "user", "content": repr(p["options"])}], ("A", "B", "C", "D")
        )
        for p in publics
    ]


class Reader:
    """A 'model' that picks by a rule over the shown options: by position or by content."""

    def __init__(self, pick):
        self.pick = pick

    def token_id(self, label):
        return label

    def render(self, messages):
        return messages

    def choice_logprobs(self, prompts, ids, progress=None):
        rows = []
        for messages in prompts:
            options = eval(messages[0]["content"])  # noqa: S307  (our own repr of a dict of strings)
            chosen = self.pick(options)
            rows.append([0.0 if label == chosen else -5.0 for label in ids])
        return np.array(rows)


def choose_circularly(model, publics):
    """What a model run does for circular_logprobs: ask every rotation, then combine per item."""
    rotated = build_requests(None, circular_publics(publics), "zero_shot", None)
    return combine_rotations(publics, choose_by_logprobs(model, rotated))


def test_position_bias_earns_nothing_and_content_keeps_its_answer():
    (always_a,) = choose_circularly(Reader(lambda options: "A"), [PUBLIC])
    assert (
        always_a.answer is None and always_a.raw == "A,B,C,D"
    )  # "A" is a different option each time
    (juice,) = choose_circularly(
        Reader(lambda o: next(k for k, v in o.items() if v == "juice")), [PUBLIC]
    )
    assert juice.answer == "C" and juice.raw == "C,C,C,C"
    assert get_protocol(
        "circular_logprobs"
    ).reads_logprobs  # an endpoint without log-probs is refused it
