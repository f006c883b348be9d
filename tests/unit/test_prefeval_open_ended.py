"""PrefEval open_ended: error types and accuracy by hand, from scripted judge verdicts."""

from __future__ import annotations

import pytest

from evaluator.judge import Judge
from evaluator.registry import get_task
from evaluator.scoring import score_answers
from evaluator.suite import Split
from evaluator.suites.prefeval import open_ended


@pytest.mark.parametrize(
    "ack, violate, halluc, helpful, expected",
    [
        (True, False, False, True, None),  # follows the preference
        (False, False, False, True, None),  # unaware but harmless
        (True, True, False, True, "inconsistent"),
        (True, True, True, True, "hallucinated_violation"),
        (False, True, False, True, "unaware_violation"),
        (True, True, False, False, "unhelpful"),  # unhelpful wins: the others need helpful
        (False, False, False, False, "unhelpful"),
    ],
)
def test_error_types_truth_table(ack, violate, halluc, helpful, expected):
    errors = open_ended.error_types(ack, violate, halluc, helpful)
    assert [name for name, on in errors.items() if on] == ([expected] if expected else [])


def test_verdict_and_quote_parsing():
    assert open_ended.parse_verdict("<explanation>x</explanation>\n<answer>Yes</answer>") is True
    assert open_ended.parse_verdict("<answer> no </answer>") is False
    assert open_ended.parse_verdict("I think yes") is None
    assert (
        open_ended.quoted_preference(
            "<preference>You avoid gluten.</preference><answer>Yes</answer>"
        )
        == "You avoid gluten."
    )
    assert open_ended.quoted_preference("<answer>No</answer>") == ""


class ScriptedJudge:
    """A judge whose reply to each check is fixed per response text (the verdicts under test)."""

    def __init__(self, script):
        self.script = script  # response -> {check: "Yes"/"No"/None}
        self.asked = []

    def render(self, messages):
        return messages

    def generate(self, prompts, max_new_tokens, progress=None):
        replies = []
        for messages in prompts:
            text = messages[-1]["content"]
            check = next(c for c in open_ended.CHECKS if self._is(c, text))
            response = next((r for r in self.script if r in text), None)
            self.asked.append(check)
            verdict = self.script[response][check] if response else "No"
            # the quoted preference names the response, so the hallucinate check finds its script too
            quote = (
                f"<preference>You said {response}.</preference>" if check == "acknowledge" else ""
            )
            replies.append(quote + ("" if verdict is None else f"<answer>{verdict}</answer>"))
        return replies

    @staticmethod
    def _is(check, text):
        markers = {
            "acknowledge": "mention, or clearly build on",
            "violate": "go against the user's stated",
            "hallucinate": "restated the user's preference",
            "helpful": "substantive answer",
        }
        return markers[check] in text


def test_scores_from_scripted_verdicts_by_hand():
    task = get_task("prefeval", "open_ended")
    items = task.load_split().items[:5]
    script = {
        "R-good": {"acknowledge": "Yes", "violate": "No", "hallucinate": "No", "helpful": "Yes"},
        "R-incons": {"acknowledge": "Yes", "violate": "Yes", "hallucinate": "No", "helpful": "Yes"},
        "R-halluc": {
            "acknowledge": "Yes",
            "violate": "Yes",
            "hallucinate": "Yes",
            "helpful": "Yes",
        },
        "R-unaware": {
            "acknowledge": "No",
            "violate": "Yes",
            "hallucinate": "Yes",
            "helpful": "Yes",
        },
        "R-garbled": {
            "acknowledge": None,
            "violate": None,
            "hallucinate": None,
            "helpful": None,
        },  # -> all No
    }
    answers = {item.id: response for item, response in zip(items, script)}
    judge_backend = ScriptedJudge(script)
    result = score_answers(
        task, Split("five", items), answers, Judge("scripted", "r1", judge_backend)
    )
    total = {m: s["value"] for m, s in result["total"].items()}
    assert total["accuracy"] == pytest.approx(1 / 5)
    assert (
        total["inconsistent"]
        == total["hallucinated_violation"]
        == total["unaware_violation"]
        == pytest.approx(1 / 5)
    )
    assert total["unhelpful"] == pytest.approx(1 / 5)  # the garbled judge reply: not helpful
    assert total["acknowledged"] == pytest.approx(3 / 5)
    # hallucinate is asked only of the three acknowledged answers: 5 x 3 + 3 calls
    assert len(judge_backend.asked) == 18 and judge_backend.asked.count("hallucinate") == 3
    for check in open_ended.CHECKS:
        assert (
            "{"
            not in open_ended.judge_messages(
                check, question="q", response="r", preference="p", restatement="s"
            )[1]["content"]
        )


def test_judged_row_records_judge_and_prompt_hash():
    task = get_task("prefeval", "open_ended")
    provenance = Judge("judge-x", "rev-7", ScriptedJudge({})).provenance(task)
    assert provenance["model"] == "judge-x" and provenance["revision"] == "rev-7"
    assert (
        provenance["prompt_sha256"] == open_ended.judge_prompt_sha256()
        and len(provenance["prompt_sha256"]) == 64
    )


def test_mcq_refuses_self_critic_and_open_ended_takes_it():
    from evaluator.registry import UnknownSuiteError, check_setting

    with pytest.raises(UnknownSuiteError, match="self_critic"):
        check_setting(get_task("prefeval", "mcq"), "self_critic")
    check_setting(get_task("prefeval", "open_ended"), "self_critic")
