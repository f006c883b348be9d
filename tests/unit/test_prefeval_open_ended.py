"""PrefEval open_ended: error types and accuracy by hand, from scripted judge replies read as the
official scoring reads them; the official judge prompts and generation instruction."""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.mark.parametrize(
    "reply, acknowledged, violated, helpful",
    [
        ("<explanation>x</explanation>\n<answer>Yes</answer>", True, True, True),
        ("<answer> no </answer>", False, False, False),
        ("<answer>[Yes]</answer>", True, True, True),  # accepted officially ("yes" in the text)
        ("<ANSWER>YES</ANSWER>", True, True, True),  # html.parser lower-cases tag names
        ("I think yes", False, False, True),  # no <answer>: "" -> not yes, and helpful
        ("", False, False, True),
        ("<answer>Not sure</answer>", False, False, False),  # "no" in "Not": unhelpful
        ("<answer>Yes</answer><answer>No</answer>", True, True, True),  # the first element
        ("<answer>Yes, but no</answer>", True, True, False),
    ],
)
def test_judge_replies_read_as_upstream(reply, acknowledged, violated, helpful):
    v = open_ended.verdicts(reply, reply, "", reply)
    assert (v["acknowledge"], v["violate"], v["helpful"]) == (acknowledged, violated, helpful)
    assert v["hallucinate"] is False  # no hallucination reply: not yes


def test_restatement_is_the_preference_tag_text():
    from evaluator.suites.prefeval.official_parsing import tag_text

    reply = "<preference> You avoid gluten. </preference><answer>Yes</answer>"
    assert tag_text(reply, "preference") == "You avoid gluten."
    assert tag_text("<answer>No</answer>", "preference") == ""


def test_judge_prompts_are_the_official_files_filled_in_upstream_order():
    folder = Path(open_ended.__file__).parent / "judge"
    ack = (folder / "check_acknowledge.txt").read_text()
    assert ack.startswith("You will analyze a conversation between a user and an assistant")
    assert ack.endswith("<answer>[Yes/No]</answer>")  # no final newline upstream
    # acknowledge puts the response in first, then the question: "{question}" inside a response
    # becomes the question, as upstream's str.replace order does
    filled = open_ended.judge_prompt("acknowledge", question="Q?", response="see {question}")
    assert "Assistant response: see Q?" in filled and "The user's question is: Q?" in filled
    violate = open_ended.judge_prompt(
        "violate", preference="P {question}", question="Q?", response="R {preference}"
    )
    assert "User's preference: P Q?" in violate and "Assistant response: R {preference}" in violate
    messages = open_ended.judge_messages("helpful", preference="P", question="Q", response="R")
    assert messages[0]["content"] == (
        "You are a helpful assistant in evaluating an AI assistant's reponse. You should be fair "
        "and strict and follow the user's instruction"
    )


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
        markers = {  # phrases of the official prompt files
            "acknowledge": "acknowledges any user preference",
            "violate": "violates the user's stated preference",
            "hallucinate": "restatement of the user's stated preference",
            "helpful": "provides any substantive response",
        }
        return markers[check] in text


def test_scores_from_scripted_verdicts_by_hand(tmp_path):
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
        },  # no <answer> anywhere: read as upstream reads "" (not yes; helpful)
    }
    answers = {item.id: response for item, response in zip(items, script)}
    judge_backend = ScriptedJudge(script)
    transcript = tmp_path / "judge.jsonl"
    judge = Judge("scripted", "r1", judge_backend).keeping(transcript)
    result = score_answers(task, Split("five", items), answers, judge)
    total = {m: s["value"] for m, s in result["total"].items()}
    # the garbled replies count as not acknowledged, not violated and helpful: no error, officially
    assert total["accuracy"] == pytest.approx(2 / 5)
    assert (
        total["inconsistent"]
        == total["hallucinated_violation"]
        == total["unaware_violation"]
        == pytest.approx(1 / 5)
    )
    assert total["unhelpful"] == 0
    assert total["acknowledged"] == pytest.approx(3 / 5)
    # hallucinate is asked only of the three acknowledged answers: 5 x 3 + 3 calls
    assert len(judge_backend.asked) == 18 and judge_backend.asked.count("hallucinate") == 3
    # the row counts the judge replies it read and the three garbled ones no rule could read
    assert {k: result["scoring_provenance"][k] for k in ("judge_outputs", "judge_unparsed")} == {
        "judge_outputs": 18,
        "judge_unparsed": 3,
    }
    # the transcript (the details of a public split): each call's prompt, reply and reading
    calls = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert len(calls) == 18
    garbled = [c for c in calls if c["id"] == items[4].id]
    assert {c["check"] for c in garbled} == {"acknowledge", "violate", "helpful"}
    assert all(c["parsed"] is None and "<answer>" not in c["output"] for c in garbled)
    good = next(c for c in calls if c["id"] == items[0].id and c["check"] == "violate")
    assert good["parsed"] == "No" and good["output"] == "<answer>No</answer>"
    assert "R-good" in good["prompt"][-1]["content"] and good["prompt"][0]["role"] == "system"
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


def test_mcq_and_open_ended_take_self_critic():
    from evaluator.registry import check_setting

    check_setting(get_task("prefeval", "mcq"), "self_critic")
    check_setting(get_task("prefeval", "open_ended"), "self_critic")


def test_generation_prompt_ends_with_the_official_word_limit():
    pub = get_task("prefeval", "open_ended").load_split().items[0].public
    for setting in ("zero_shot", "reminder", "cot"):
        messages = open_ended.item_messages(pub, setting, reply="Noted.")
        assert messages[-1]["content"].endswith(" (Please respond within 300 words.)")
    reminder = open_ended.item_messages(pub, "reminder", reply="Noted.")[-1]["content"]
    assert reminder == (
        pub["question"]
        + "\nIn your response, please ensure that you take into account our earlier discussion, "
        "and provide an answer that is consistent with my preference."
        + " (Please respond within 300 words.)"
    )
