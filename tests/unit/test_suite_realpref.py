"""RealPref suite hooks on the synthetic fixture split: items, histories, scoring, n/a, judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from unit_helpers import jsonl

from evaluator.backends.base import BackendError
from evaluator.judge import Judge, judge_unavailable_reason
from evaluator.predictions import PredictionsError, read_predictions
from evaluator.registry import get_task
from evaluator.scoring import score_answers
from evaluator.settings import JUDGE_ENV
from evaluator.splits import SplitFormatError
from evaluator.suite import Split
from evaluator.suites.realpref import common, open_ended

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "splits" / "realpref"
CONFIGS = ("simple", "normal", "long", "very_long", "extended", "extreme")
EXPRESSIONS = (
    "explicit_direct",
    "explicit_contextual",
    "implicit_stylistic",
    "implicit_experience",
)


def task(name):
    return get_task("realpref", name)


def split_of(name, folder=FIXTURE):
    t = task(name)
    return Split("test", t.hooks.build_items(t, folder))


@pytest.fixture(scope="module")
def mcq():
    return split_of("mcq")


@pytest.fixture(scope="module")
def tf():
    return split_of("true_false")


def test_item_counts_and_tiers(mcq, tf):
    # 5 preferences x 4 expression types x 6 configurations; true/false: 2 statements each
    assert len(mcq.items) == 5 * 4 * 6 and len(tf.items) == 2 * len(mcq.items)
    assert len(mcq.by_id) == len(mcq.items) and len(tf.by_id) == len(tf.items)
    for group, tiers in (
        ("expression", EXPRESSIONS),
        ("context", CONFIGS),
        ("kind", ("original", "generalized")),
    ):
        counts = {t: sum(1 for i in mcq.items if i.tiers[group] == t) for t in tiers}
        assert all(counts.values()), counts
    assert sum(1 for i in mcq.items if i.tiers["kind"] == "generalized") == 2 * 4 * 6
    assert sum(1 for i in tf.items if i.gold == "true") == sum(
        1 for i in tf.items if i.gold == "false"
    )


def test_public_has_no_gold(mcq, tf):
    t = task("mcq")
    data = common.load_data(t, FIXTURE)
    prefs = {p["id"]: p for p in data["preferences"]}
    for item in mcq.items:
        pub = item.public
        assert set(pub) == {
            "id",
            "user_id",
            "preference_id",
            "kind",
            "expression_type",
            "context",
            "history",
            "history_tokens",
            "query",
            "options",
        }
        assert (
            pub["options"][item.gold]
            == prefs[pub["preference_id"]]["options"][prefs[pub["preference_id"]]["aligned"]]
        )
        assert prefs[pub["preference_id"]]["preference"] not in json.dumps(pub)
    # the -s1/-s2 suffix does not give the answer away: both suffixes carry both answers
    assert {i.gold for i in tf.items if i.id.endswith("-s1")} == {"true", "false"}
    assert all("label" not in i.public and "answer" not in i.public for i in tf.items)
    oe = split_of("open_ended")
    assert all("preference" not in i.public and i.gold["preference"] for i in oe.items)


def test_letters_same_across_expression_and_context(mcq):
    by_pref = {}
    for item in mcq.items:
        by_pref.setdefault(item.public["preference_id"], set()).add(
            (item.gold, json.dumps(item.public["options"]))
        )
    assert all(len(v) == 1 for v in by_pref.values())
    assert len({g for v in by_pref.values() for g, _ in v}) > 1  # not always the same letter


def test_histories(mcq):
    t = task("mcq")
    data = common.load_data(t, FIXTURE)
    items = {i.id: i for i in mcq.items}
    simple = items["u001-p01.implicit_experience.simple"].public["history"]
    # simple: the user's own sessions only, by date; only the chosen expression type's sessions
    assert simple == [
        "u001-le1",
        "u001-p01-ie1",
        "u001-p01-ie2",
        "u001-p02-ie1",
        "u001-p02-ie2",
        "u001-le2",
    ]
    direct = items["u001-p01.explicit_direct.simple"].public["history"]
    assert direct == ["u001-le1", "u001-p01-ed", "u001-p02-ed", "u001-le2"]
    configs = common.configurations(t)
    own = sum(data["sessions"][s]["tokens"] for s in simple)
    for name in CONFIGS[1:]:
        hist = items[f"u001-p01.implicit_experience.{name}"].public["history"]
        randoms = [s for s in hist if s.startswith("rand-")]
        assert randoms  # the budget beyond the own sessions is padded with random sessions
        tokens = items[f"u001-p01.implicit_experience.{name}"].public["history_tokens"]
        budget = configs[name]["interval"] + configs[name]["tail"]
        assert (
            budget <= tokens - own < budget + 2 * 600
        )  # each budget overshoots by less than one session
        assert [
            s for s in hist if not s.startswith("rand-")
        ] == simple  # own sessions keep their order
        if configs[name]["tail"]:
            tail_sessions = (
                len(hist) - 1 - max(i for i, s in enumerate(hist) if not s.startswith("rand-"))
            )
            tail_tokens = sum(
                data["sessions"][s]["tokens"] for s in hist[len(hist) - tail_sessions :]
            )
            assert tail_tokens >= configs[name]["tail"]
    # same random sessions for every expression type of a (user, configuration); deterministic
    a = [
        s
        for s in items["u001-p01.implicit_experience.normal"].public["history"]
        if s.startswith("rand-")
    ]
    b = [
        s
        for s in items["u001-p01.explicit_direct.normal"].public["history"]
        if s.startswith("rand-")
    ]
    assert sorted(a) == sorted(b) and a != b  # same draws; positions depend on the own sessions
    assert split_of("mcq").sha256 == mcq.sha256


def _copy(tmp_path) -> Path:
    folder = tmp_path / "split"
    shutil.copytree(FIXTURE, folder)
    return folder


def _rewrite(path: Path, line: int, change) -> None:
    rows = path.read_text().splitlines()
    record = json.loads(rows[line - 1])
    change(record)
    rows[line - 1] = json.dumps(record)
    path.write_text("\n".join(rows) + "\n")


def test_missing_field_names_file_line_field(tmp_path):
    folder = _copy(tmp_path)
    _rewrite(folder / "preferences.jsonl", 2, lambda r: r.pop("query"))
    with pytest.raises(SplitFormatError, match=r"preferences.jsonl, line 2: missing field 'query'"):
        split_of("mcq", folder)
    folder = _copy(tmp_path / "b")
    _rewrite(folder / "sessions.jsonl", 5, lambda r: r["turns"][0].pop("assistant"))
    with pytest.raises(
        SplitFormatError, match=r"sessions.jsonl, line 5, turns\[0\]: missing field 'assistant'"
    ):
        split_of("true_false", folder)
    folder = _copy(tmp_path / "c")
    _rewrite(
        folder / "preferences.jsonl",
        1,
        lambda r: r.update(true_false=[{"statement": "x", "label": True}] * 2),
    )
    with pytest.raises(
        SplitFormatError, match=r"line 1: field 'true_false' must hold one true and one false"
    ):
        split_of("mcq", folder)


def test_missing_expression_session_is_an_error(tmp_path):
    folder = _copy(tmp_path)
    rows = [
        r
        for r in (folder / "sessions.jsonl").read_text().splitlines()
        if '"session_id": "u002-p01-is"' not in r
    ]
    (folder / "sessions.jsonl").write_text("\n".join(rows) + "\n")
    with pytest.raises(
        SplitFormatError,
        match=r"preferences.jsonl, line 4: original preference 'u002-p01' has no "
        r"preference_expression session of expression type 'implicit_stylistic'",
    ):
        split_of("mcq", folder)


def test_scorer_known_values(mcq, tf):
    t = task("mcq")
    wrong = {"A": "B", "B": "C", "C": "D", "D": "A"}
    answers = {i.id: i.gold if i.tiers["context"] == "simple" else wrong[i.gold] for i in mcq.items}
    result = score_answers(t, mcq, answers)
    assert result["total"]["accuracy"]["value"] == pytest.approx(1 / 6)
    assert result["tiers"]["context"]["simple"]["accuracy"]["value"] == 1.0
    assert result["tiers"]["context"]["extreme"]["accuracy"]["value"] == 0.0
    assert result["tiers"]["expression"]["explicit_direct"]["accuracy"]["value"] == pytest.approx(
        1 / 6
    )
    assert result["tiers"]["kind"]["generalized"]["accuracy"]["n"] == 48
    # true/false: "true" everywhere is right on exactly half (one true statement per preference)
    result = score_answers(task("true_false"), tf, {i.id: "true" for i in tf.items})
    assert result["total"]["accuracy"]["value"] == 0.5
    assert result["tiers"]["kind"]["original"]["accuracy"]["value"] == 0.5


def test_parse_errors_name_line_and_field(mcq, tf):
    lines = [{"id": i.id, "answer": i.gold} for i in tf.items]
    lines[2] = {"id": tf.items[2].id, "answer": "yes"}
    lines[4] = {"id": tf.items[4].id}
    with pytest.raises(PredictionsError) as err:
        read_predictions(jsonl(*lines), task("true_false"), tf)
    problems = err.value.as_dict()["problems"]
    assert [(p["line"], p["field"]) for p in problems] == [(3, "answer"), (5, "answer")]
    assert "'yes' is not one of true/false" in problems[0]["message"]
    oe_task = task("open_ended")
    oe = split_of("open_ended")
    lines = [{"id": i.id, "response": "Try a quiet guesthouse."} for i in oe.items]
    lines[1]["response"] = "   "
    with pytest.raises(PredictionsError) as err:
        read_predictions(jsonl(*lines), oe_task, oe)
    assert [(p["line"], p["field"]) for p in err.value.as_dict()["problems"]] == [(2, "response")]


class FakeBackend:
    def __init__(self, window):
        self.window = window

    def context_window(self):
        return self.window


def test_configurations_longer_than_window_are_not_run(mcq):
    t = task("mcq")
    kept, skipped = common.fit_model(t, mcq, "zero_shot", FakeBackend(16384))
    assert {i.tiers["context"] for i in kept.items} == {"simple"}
    assert set(skipped) == set(CONFIGS[1:]) and "37000 tokens" in skipped["normal"]
    kept, skipped = common.fit_model(t, mcq, "zero_shot", FakeBackend(131072))  # e.g. Llama 3.3 70B
    assert {i.tiers["context"] for i in kept.items} == {"simple", "normal", "long"}
    assert set(skipped) == {"very_long", "extended", "extreme"}
    assert common.fit_model(t, mcq, "rag", FakeBackend(16384)) == (mcq, {})  # rag sees only 5 turns
    assert common.fit_model(t, mcq, "zero_shot", FakeBackend(400000)) == (mcq, {})


def test_prompts(mcq, tf):
    t = task("mcq")
    data = common.load_data(t, FIXTURE)
    pub = mcq.by_id["u001-p01.explicit_direct.simple"].public
    messages = common.build_messages(t, pub, "reminder", data)
    assert messages[1]["content"].startswith("I just retired")  # the history, oldest session first
    assert messages[3]["content"] == "I prefer small family-run guesthouses over big hotel chains."
    assert len(messages) == 1 + 2 * 4 + 1
    final = messages[-1]["content"]
    assert (
        "When you answer the question, recall my preference indicated in the conversation history, and provide "
        "an answer that aligns with my preferences."
    ) in final
    assert (
        final.startswith(pub["query"])
        and "<choice>" in final
        and f"A. {pub['options']['A']}" in final
    )
    calls = []

    def retrieve(query, passages, k):
        calls.append((query, len(passages), k))
        return passages[:k]

    rag = common.build_messages(
        t, mcq.by_id["u001-p01.explicit_direct.normal"].public, "rag", data, retrieve
    )
    assert len(rag) == 2 and calls[0][0] == pub["query"] and calls[0][2] == 5 and calls[0][1] > 50
    assert rag[1]["content"].count("\nturn ") + rag[1]["content"].startswith("turn 1") >= 4
    cot = common.build_messages(task("true_false"), tf.items[0].public, "cot", data)[-1]["content"]
    assert "Example 3" in cot and tf.items[0].public["statement"] in cot and "True or False" in cot


@pytest.mark.parametrize(
    "text, letter",
    [
        ("<choice>C</choice>", "C"),
        ("<choice>[B]</choice>", "B"),  # the prompt's brackets copied back
        ("<choice> D", "D"),  # cut before the closing tag (8 tokens)
        ("Sure! <choice>A</choice> because", "A"),
        ("<choice>[A/B/C/D]</choice>", None),  # the template itself: no choice
        ("<choice>E</choice>", None),
        ("<choice>b</choice>", None),  # upper case, as the prompt's letters
        ("C", "C"),
        ("**B**", "B"),
        ("(A)", "A"),
        ("D) Visit the museum", "D"),
        ("A. A karaoke night at", "A"),  # the letter, then the option's text
        ("B\nbecause you like quiet", "B"),
        ("Answer: C", "C"),
        ("A good option is B", None),  # an article, not an answer
        ("I think B", None),
        ("", None),
    ],
)
def test_mcq_parser_reads_what_instruct_models_write(text, letter):
    from evaluator.suites.realpref import mcq

    assert mcq.parse_answer(text) == letter


def test_true_false_parser():
    from evaluator.suites.realpref import true_false

    assert true_false.parse_answer("False.") == "false" and true_false.parse_answer("maybe") is None
    assert (
        true_false.parse_answer("True") == "true" and true_false.parse_answer("**TRUE**") == "true"
    )
    assert true_false.parse_answer("untrue") is None
    # the question asks "Is this option suitable for me?": a leading Yes / No answers it
    assert (
        true_false.parse_answer("Yes.") == "true" and true_false.parse_answer("**No**") == "false"
    )
    assert true_false.parse_answer("Nothing fits") is None
    assert true_false.parse_answer("This is not a suitable option for me") is None  # prose


@pytest.mark.parametrize("name", ["mcq", "true_false"])
def test_choice_tasks_default_to_generation_as_the_papers_models_did(name):
    """The paper's API models wrote their answers: generate_parse is the default (intake, UI and
    runs share default_protocol), also for an endpoint without log-probabilities; choice_logprobs
    stays a named alternative, marked ours on the About tab."""
    from evaluator.protocols import default_protocol, protocol_problem
    from space.tabs.about import protocol_lines

    t = task(name)
    assert t.model["authors_protocols"] == {"generative": "generate_parse"}
    assert default_protocol(t, "generative") == "generate_parse"
    assert default_protocol(t, "generative", logprobs=False) == "generate_parse"
    assert protocol_problem(t, "choice_logprobs", "generative") is None
    assert "no log-probabilities" in protocol_problem(t, "choice_logprobs", "generative", False)
    line = protocol_lines(t)[0]
    assert "`generate_parse` (default, reproduces the paper for generative models)" in line
    assert "`choice_logprobs` (ours)" in line


def test_open_ended_refused_without_judge(monkeypatch):
    monkeypatch.delenv(JUDGE_ENV, raising=False)
    t = task("open_ended")
    assert "no judge model is configured" in judge_unavailable_reason(t)
    with pytest.raises(BackendError, match="no judge model is configured"):
        score_answers(t, split_of("open_ended"), {})
    monkeypatch.setenv(JUDGE_ENV, "judge-x")
    assert judge_unavailable_reason(t) is None
    assert (
        judge_unavailable_reason(task("mcq")) is None
    )  # not judge-scored: never refused for want of a judge


class FakeJudge:
    """Puts all probability on '5' for alignment prompts, on '2' otherwise (rating_logprobs)."""

    def render(self, messages, add_generation_prompt=True):
        return [
            len(messages[-1]["content"]),
            1 if "Preference Alignment" in messages[-1]["content"] else 0,
        ]

    def token_id(self, text):
        return int(text)

    def choice_logprobs(self, prompts, ids, progress=None):
        rows = []
        for prompt in prompts:
            best = 5 if prompt[1] else 2
            rows.append([0.0 if i == best else -50.0 for i in ids])
        return np.array(rows)


RUBRIC_NAMES = {
    "Preference Awareness": "awareness",
    "Preference Alignment": "alignment",
    "Answer Quality": "quality",
}


class WritingJudge:
    """A judge that writes replies (judge_score): `script(rubric, response, attempt)` -> text.
    It records every conversation it is asked, so a test sees the retry's messages."""

    def __init__(self, script):
        self.script, self.asked = script, []

    def render(self, messages, add_generation_prompt=True):
        return messages  # generate() reads the conversation itself

    def generate(self, prompts, max_new_tokens, progress=None):
        replies = []
        for messages in prompts:
            self.asked.append(messages)
            first = messages[1]["content"]
            rubric = next(r for name, r in RUBRIC_NAMES.items() if f"dimension: {name}" in first)
            response = first.split("<response>\n", 1)[1].split("\n</response>", 1)[0]
            attempt = 2 if messages[-1]["role"] == "user" and len(messages) > 2 else 1
            replies.append(self.script(rubric, response, attempt))
        return replies


@pytest.mark.parametrize(
    "reply, score, rationale",
    [
        ("Score: 4\nRationale: Mentions the tea preference.", 4, "Mentions the tea preference."),
        ("**Score:** 5\n**Rationale:** fully centred.", 5, "fully centred."),
        ("Score: 3/5\nRationale: ok", 3, "ok"),
        ("score = 2\nrationale: weak", 2, "weak"),
        ("Score (1-5): 4\nRationale: fine", 4, "fine"),
        ('{"score": 1, "rationale": "ignores it"}', 1, None),
        ("Rationale: the answer is generic.\nScore: 3", 3, "the answer is generic."),
        ("Score: 4.0\nRationale: x", 4, "x"),
        ("Score: 4 - fits", 4, "fits"),  # words on the score line belong to the rationale
        ("Score: 3. Good match", 3, "Good match"),
        ("4", 4, ""),
        ("[5]", 5, ""),
        ("Score: 4\nScore: 2\nRationale: changed its mind", 4, None),  # the first score line
        # no score: out of range, not whole, another scale, unlabelled prose, empty, label alone
        ("Score: 0\nRationale: bad", None, "bad"),
        ("Score: 6", None, ""),
        ("Score: 10/10", None, ""),
        ("Score: 3/10\nRationale: poor", None, "poor"),
        ("Score: 4.5\nRationale: between", None, "between"),
        ("Score: -1", None, ""),
        ("I would give this response a 4 because it is good.", None, None),
        ("The rubric's level 5 applies here.", None, None),
        ("Score:\nRationale: forgot the number", None, None),
        ("Score: four", None, None),
        ("", None, ""),
        (None, None, ""),
        ("Scores range from 1 to 5: 3 is average", None, None),
    ],
)
def test_parse_judgment(reply, score, rationale):
    got_score, got_rationale = open_ended.parse_judgment(reply)
    assert got_score == score, reply
    assert isinstance(got_score, (int, type(None)))
    if rationale is not None:
        assert got_rationale == rationale, reply


def test_a_rationale_is_capped():
    score, rationale = open_ended.parse_judgment("Score: 3\nRationale: " + "x" * 10_000)
    assert score == 3 and len(rationale) == open_ended.MAX_RATIONALE_CHARS


def test_open_ended_judge_writes_score_and_rationale(tmp_path):
    """judge_score (the default): scores parsed from the judge's replies; a reply without a score
    is asked again once (the second attempt counts), still none -> NaN and judge_failures, never a
    number; the rationales are kept in the judge's transcript."""
    t = task("open_ended")
    oe = split_of("open_ended")
    n = len(oe.items)
    answers = {i.id: f"Stay at a small guesthouse ({k})." for k, i in enumerate(oe.items)}
    answers[oe.items[0].id] = None  # a model run with no text: scores 1 on every rubric, unjudged
    retried_item, failed_item = oe.items[1].id, oe.items[2].id

    def script(rubric, response, attempt):
        if response == answers[retried_item] and rubric == "quality" and attempt == 1:
            return "I think it is quite good overall."  # no score: asked again
        if response == answers[failed_item] and rubric == "awareness":
            return "Score: 7\nRationale: off the scale" if attempt == 1 else "It is fine."
        score = {"awareness": 2, "alignment": 5, "quality": 4}[rubric]
        return f"Score: {score}\nRationale: {rubric} of {response}"

    writer = WritingJudge(script)
    transcript = tmp_path / "sub.judge.jsonl"
    judge = Judge("judge-x", "rev1", writer).keeping(transcript)
    result = score_answers(t, oe, answers, judge)
    total = result["total"]
    assert result["metric"] == "alignment"
    assert total["alignment"]["value"] == pytest.approx((5 * (n - 1) + 1) / n)
    assert total["quality"]["value"] == pytest.approx((4 * (n - 1) + 1) / n)
    # the failed awareness judgment is left out of awareness (n - 1 items), not scored
    assert total["awareness"]["n"] == n - 1
    assert total["awareness"]["value"] == pytest.approx((2 * (n - 2) + 1) / (n - 1))
    assert total["judge_failures"]["value"] == pytest.approx(1 / n)
    assert total["judge_failures"]["n"] == n
    # asked: 3 per answered item, plus one retry each for the two replies without a score
    assert len(writer.asked) == 3 * (n - 1) + 2
    retry = [m for m in writer.asked if len(m) == 4]
    assert len(retry) == 2 and retry[0][2]["role"] == "assistant"
    assert "does not give a score" in retry[0][3]["content"]
    kept = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert len(kept) == 3 * (n - 1)
    by_key = {(k["id"], k["rubric"]): k for k in kept}
    assert by_key[(retried_item, "quality")]["score"] == 4
    assert by_key[(retried_item, "quality")]["attempts"] == 2
    # the judge's prompt as sent is kept with its reply (the details of a public split show it)
    assert by_key[(failed_item, "awareness")]["prompt"][0]["role"] == "system"
    assert by_key[(failed_item, "awareness")] | {"reply": None, "prompt": None} == {
        "id": failed_item,
        "rubric": "awareness",
        "score": None,
        "rationale": "It is fine.",
        "attempts": 2,
        "reply": None,
        "prompt": None,
    }
    assert by_key[(oe.items[3].id, "alignment")]["rationale"] == (
        f"alignment of {answers[oe.items[3].id]}"
    )
    # the row counts the judgments read and the one without a score after its retry
    assert result["scoring_provenance"]["judge_outputs"] == 3 * (n - 1)
    assert result["scoring_provenance"]["judge_unparsed"] == 1
    provenance = result["scoring_provenance"]["judge"]
    assert provenance["model"] == "judge-x" and provenance["revision"] == "rev1"
    assert provenance["protocol"] == "judge_score" and "default_protocol" not in provenance
    assert "rationale" in provenance["protocol_description"]
    assert provenance["prompt_sha256"] == open_ended.judge_prompt_sha256()
    assert "rating_logprobs" not in provenance and "protocols" not in provenance


def test_open_ended_expected_rating_is_the_labelled_alternative():
    t = task("open_ended")
    oe = split_of("open_ended")
    answers = {i.id: "Stay at a small guesthouse." for i in oe.items}
    answers[oe.items[0].id] = None  # a model run with no text: scores 1 on every rubric
    judge = Judge("judge-x", "rev1", FakeJudge(), protocol="rating_logprobs")
    result = score_answers(t, oe, answers, judge)
    n = len(oe.items)
    assert result["total"]["alignment"]["value"] == pytest.approx((5 * (n - 1) + 1) / n)
    assert result["total"]["awareness"]["value"] == pytest.approx((2 * (n - 1) + 1) / n)
    assert result["total"]["judge_failures"]["value"] == 0
    provenance = result["scoring_provenance"]["judge"]
    assert provenance["protocol"] == "rating_logprobs"
    assert provenance["default_protocol"] == "judge_score"
    assert provenance["protocol_description"].startswith("ours")
    from evaluator.judge import judged_setting

    assert (
        judged_setting("zero_shot", result["scoring_provenance"])
        == "zero_shot+judge:judge-x+judge_protocol:rating_logprobs"
    )
    # a protocol the task does not offer is ignored (the task's default runs)
    assert Judge("j", "r", FakeJudge(), protocol="nope").protocol_for(t) == "judge_score"
    prompt = open_ended.judge_messages(
        "quality", "likes tea", "what to drink?", "tea", "rating_logprobs"
    )[-1]["content"]
    assert (
        "Answer Quality" in prompt
        and "5: Highly constructive, detailed" in prompt
        and "likes tea" in prompt
        and prompt.endswith("as a single digit.")
    )
    default = open_ended.judge_messages("quality", "likes tea", "what to drink?", "tea")[-1]
    assert "Rationale:" in default["content"] and "Score:" in default["content"]


def test_rag_rows_record_the_retriever_and_the_deviation_from_the_papers(monkeypatch):
    """The paper's retriever is sup-simcse-roberta-large; the offline default is recorded as a
    deviation on the row, a configured SimCSE (a Hub model id) is not."""
    from evaluator.settings import load_evaluator_settings
    from submissions.jobs import retrieval_stats

    t = task("mcq")
    paper = "princeton-nlp/sup-simcse-roberta-large"
    assert t.options["paper_retriever"] == paper
    monkeypatch.delenv("PERSONABOARD_EMBEDDING_MODEL", raising=False)
    default = retrieval_stats(t, load_evaluator_settings())
    assert default["retrieval_model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert default["retrieval_deviation"] == f"the paper's retriever is {paper}"
    monkeypatch.setenv("PERSONABOARD_EMBEDDING_MODEL", paper)
    assert retrieval_stats(t, load_evaluator_settings()) == {"retrieval_model": paper}
