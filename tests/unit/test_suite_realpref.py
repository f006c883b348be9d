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


def test_parse_answers():
    from evaluator.suites.realpref import mcq, true_false

    assert mcq.parse_answer("<choice>C</choice>") == "C" and mcq.parse_answer("C") is None
    assert true_false.parse_answer("False.") == "false" and true_false.parse_answer("maybe") is None


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
    """Puts all probability on '5' for alignment prompts, on '2' otherwise."""

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


def test_open_ended_judge_arrays():
    t = task("open_ended")
    oe = split_of("open_ended")
    answers = {i.id: "Stay at a small guesthouse." for i in oe.items}
    answers[oe.items[0].id] = None  # a model run with no text: scores 1 on every rubric
    result = score_answers(t, oe, answers, Judge("judge-x", "rev1", FakeJudge()))
    assert result["metric"] == "alignment"
    n = len(oe.items)
    assert result["total"]["alignment"]["value"] == pytest.approx((5 * (n - 1) + 1) / n)
    assert result["total"]["awareness"]["value"] == pytest.approx((2 * (n - 1) + 1) / n)
    assert result["scoring_provenance"]["judge"] == {
        "model": "judge-x",
        "revision": "rev1",
        "rubrics": "RealPref Appendix B.2",
        "protocol": "rating_logprobs (expected 1-5 rating)",
    }
    prompt = open_ended.judge_messages("quality", "likes tea", "what to drink?", "tea")[-1][
        "content"
    ]
    assert (
        "Answer Quality" in prompt
        and "5: Highly constructive, detailed" in prompt
        and "likes tea" in prompt
    )
