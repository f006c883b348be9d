"""PersonaFeedback binary choice: the split built from the (synthetic) fixture in the upstream layout,
public inputs without gold, the scorer on hand-made answers with known micro averages, prediction
checks naming line and field, the `rag` refusal without memory data, and the judge/reward requests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from evaluator import split_install
from evaluator import splits as splits_module
from evaluator.predictions import PredictionsError, read_predictions
from evaluator.registry import UnknownSuiteError, check_setting, get_task
from evaluator.scoring import score_answers
from evaluator.splits import SplitFormatError
from evaluator.suite import Split, clear_split_cache

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "splits" / "personafeedback"
CELLS = (
    "specific/easy",
    "specific/medium",
    "specific/hard",
    "general/easy",
    "general/medium",
    "general/hard",
)
# Where the recorded seed puts the chosen response, item by item (file order): pinned, because a
# change would silently change every item's gold and the split hash.
EXPECTED_GOLD = "111221211122211122212121"


@pytest.fixture(scope="module")
def task():
    return get_task("personafeedback", "binary_choice")


@pytest.fixture
def installed(task, tmp_path, monkeypatch):
    """Install a copy of the fixture (optionally edited) into a private splits dir; returns a function."""
    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "splits"))
    clear_split_cache("personafeedback")

    def install(edit=None):
        source = tmp_path / f"source-{len(list(tmp_path.glob('source-*')))}"
        shutil.copytree(FIXTURE, source)
        if edit:
            edit(source)
        split_install.install(task.suite, str(source))
        return task.load_split()

    yield install
    clear_split_cache("personafeedback")


@pytest.fixture
def split(installed):
    return installed()


def build(task, folder: Path):
    return task.hooks.build_items(task, folder)


# -- the split ---------------------------------------------------------------------------------------


def test_fixture_items_per_cell_and_ids(task):
    items = build(task, FIXTURE)
    assert len(items) == 24
    for cell in CELLS:
        ids = [i.id for i in items if i.tiers["cell"] == cell]
        assert ids == [f"{cell}/{n}" for n in (1, 2, 3, 4)]
    assert {i.tiers["type"] for i in items} == {"specific", "general"}
    assert all(i.tiers["cell"].split("/")[0] == i.tiers["type"] for i in items)
    assert (FIXTURE / "data" / "spedific").is_dir() and not (FIXTURE / "data" / "specific").exists()


def test_chosen_position_is_seeded_and_mixed(task):
    items = build(task, FIXTURE)
    assert "".join(i.gold for i in items) == EXPECTED_GOLD
    assert [i.gold for i in build(task, FIXTURE)] == [i.gold for i in items]  # stable across builds
    raw = {}
    for kind, folder in (("specific", "spedific"), ("general", "general")):
        for diff in ("easy", "medium", "hard"):
            for n, line in enumerate(
                (FIXTURE / "data" / folder / f"{diff}.jsonl").read_text().splitlines(), 1
            ):
                raw[f"{kind}/{diff}/{n}"] = json.loads(line)
    for item in items:
        other = "2" if item.gold == "1" else "1"
        assert item.public[f"response_{item.gold}"] == raw[item.id]["chosen"]
        assert item.public[f"response_{other}"] == raw[item.id]["reject"]
    assert 0 < sum(i.gold == "1" for i in items) < len(items)


def test_public_inputs_carry_no_gold(task):
    for item in build(task, FIXTURE):
        public = item.public
        assert set(public) == {
            "id",
            "type",
            "difficulty",
            "user_id",
            "question",
            "persona",
            "response_1",
            "response_2",
            "memory",
        }
        assert public["id"] == item.id
        text = json.dumps(public)
        assert "chosen" not in text and "reject" not in text and "gold" not in text
    first = build(task, FIXTURE)[0].public
    assert first["persona"]["Name"] == "Brandon" and first["user_id"] == 1
    assert first["memory"][0].startswith("Searched for 'best Zotero")


def test_user_without_memory_file_has_empty_memory_and_no_memory_dir_means_no_key(task, tmp_path):
    items = build(task, FIXTURE)
    assert all(i.public["memory"] == [] for i in items if i.public["user_id"] == 3)
    copy = tmp_path / "nomem"
    shutil.copytree(FIXTURE, copy)
    shutil.rmtree(copy / "memory")
    assert all("memory" not in i.public for i in build(task, copy))


def test_specific_folder_spelled_correctly_is_accepted(task, tmp_path):
    copy = tmp_path / "spelled"
    shutil.copytree(FIXTURE, copy)
    (copy / "data" / "spedific").rename(copy / "data" / "specific")
    assert [(i.id, i.gold, i.public) for i in build(task, copy)] == [
        (i.id, i.gold, i.public) for i in build(task, FIXTURE)
    ]


def _edit_line(path: Path, line: int, change) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    change(record)
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_missing_item_field_names_file_line_and_field(task, tmp_path):
    copy = tmp_path / "broken"
    shutil.copytree(FIXTURE, copy)
    _edit_line(copy / "data" / "general" / "medium.jsonl", 3, lambda r: r.pop("reject"))
    with pytest.raises(SplitFormatError) as error:
        build(task, copy)
    message = str(error.value)
    assert "data/general/medium.jsonl, line 3" in message and "'reject'" in message


def test_missing_persona_field_names_file_line_and_field(task, tmp_path):
    copy = tmp_path / "broken-persona"
    shutil.copytree(FIXTURE, copy)
    _edit_line(copy / "persona" / "all_personas.jsonl", 2, lambda r: r.pop("Name"))
    with pytest.raises(SplitFormatError, match=r"all_personas.jsonl, line 2: missing field 'Name'"):
        build(task, copy)
    _edit_line(
        copy / "persona" / "all_personas.jsonl",
        2,
        lambda r: r.update(Name="Maria", Personality=None),
    )
    with pytest.raises(
        SplitFormatError, match=r"all_personas.jsonl, line 2: missing field 'Personality'"
    ):
        build(task, copy)


def test_unknown_user_and_missing_memory_text_are_named(task, tmp_path):
    copy = tmp_path / "bad-user"
    shutil.copytree(FIXTURE, copy)
    _edit_line(copy / "data" / "spedific" / "hard.jsonl", 2, lambda r: r.update(user_id=9))
    with pytest.raises(
        SplitFormatError, match=r"data/spedific/hard.jsonl, line 2: field 'user_id' is 9"
    ):
        build(task, copy)
    copy2 = tmp_path / "bad-memory"
    shutil.copytree(FIXTURE, copy2)
    _edit_line(copy2 / "memory" / "2.jsonl", 3, lambda r: r.pop("text"))
    with pytest.raises(SplitFormatError, match=r"memory/2.jsonl, line 3: missing field 'text'"):
        build(task, copy2)


def test_renamed_upstream_field_is_a_manifest_change(task, tmp_path, monkeypatch):
    copy = tmp_path / "renamed"
    shutil.copytree(FIXTURE, copy)
    for path in (copy / "data").rglob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text(
            "".join(
                json.dumps(
                    {**{k: v for k, v in r.items() if k != "reject"}, "rejected": r["reject"]}
                )
                + "\n"
                for r in rows
            )
        )
    with pytest.raises(SplitFormatError, match="'reject'"):
        build(task, copy)
    expected = [(i.id, i.gold, i.public) for i in build(task, FIXTURE)]
    fields = {**task.suite.split_spec["fields"], "reject": "rejected"}
    monkeypatch.setattr(task.suite, "split_spec", {**task.suite.split_spec, "fields": fields})
    assert [(i.id, i.gold, i.public) for i in build(task, copy)] == expected


def test_install_records_fixture_and_count(split, task):
    info = splits_module.installed_info(task.suite)
    assert info["fixture"] is True and info["tasks"]["binary_choice"]["n_items"] == 24
    assert len(split.items) == 24


# -- predictions ---------------------------------------------------------------------------------------


def _read(task, split, lines: list[str]):
    return read_predictions([line.encode() for line in lines], task, split)


def _flip(gold: str) -> str:
    return "2" if gold == "1" else "1"


def test_label_and_score_lines_parse(task, split):
    lines = []
    for n, item in enumerate(split.items):
        if n % 2:
            lines.append(json.dumps({"id": item.id, "label": item.gold}))
        else:
            lines.append(json.dumps({"id": item.id, "score_1": 0.5, "score_2": -1}))
    answers = _read(task, split, lines)
    assert answers[split.items[1].id] == split.items[1].gold
    assert answers[split.items[0].id] == {"score_1": 0.5, "score_2": -1.0}


@pytest.mark.parametrize(
    "record, field, words",
    [
        ({"label": "3"}, "label", 'is not "1" or "2"'),
        ({"label": "A"}, "label", 'is not "1" or "2"'),
        ({"label": True}, "label", "is not"),
        ({}, "label", "missing"),
        ({"score_1": 1.0}, "score_2", "missing"),
        ({"score_1": "high", "score_2": 0.1}, "score_1", "not a finite number"),
        ({"score_1": 1.0, "score_2": float("nan")}, "score_2", "not a finite number"),
        ({"label": "1", "score_1": 1.0, "score_2": 0.0}, "label", "not both"),
    ],
)
def test_bad_prediction_names_line_and_field(task, split, record, field, words):
    lines = [json.dumps({"id": item.id, "label": "1"}) for item in split.items]
    lines[4] = json.dumps({"id": split.items[4].id, **record})
    with pytest.raises(PredictionsError) as error:
        _read(task, split, lines)
    problem = error.value.problems[0]
    assert (problem.line, problem.field) == (5, field)
    assert words in problem.message
    assert str(error.value).startswith("predictions file rejected: line 5, field '" + field + "'")


def test_missing_and_unknown_ids_are_named(task, split):
    lines = [json.dumps({"id": item.id, "label": "1"}) for item in split.items[:-1]]
    lines.append(json.dumps({"id": "specific/easy/99", "label": "1"}))
    with pytest.raises(PredictionsError) as error:
        _read(task, split, lines)
    problems = [(p.line, p.field) for p in error.value.problems]
    assert (24, "id") in problems and (None, "id") in problems
    assert split.items[-1].id in str(error.value)


# -- scoring: hand-made answers, known micro averages ------------------------------------------------

# correct answers per cell (of 4 items each): specific 4+3+1 = 8/12, general 2+0+1 = 3/12, total 11/24
CORRECT_PER_CELL = {
    "specific/easy": 4,
    "specific/medium": 3,
    "specific/hard": 1,
    "general/easy": 2,
    "general/medium": 0,
    "general/hard": 1,
}


def _values(result) -> dict[str, float]:
    values = {"total": result["total"]["accuracy"]["value"]}
    for group, tiers in result["tiers"].items():
        for tier, metrics in tiers.items():
            values[f"{group}/{tier}"] = metrics["accuracy"]["value"]
    return values


def _label_answers(split) -> dict:
    answers = {}
    for item in split.items:
        n = int(item.id.rsplit("/", 1)[1])
        answers[item.id] = (
            item.gold if n <= CORRECT_PER_CELL[item.tiers["cell"]] else _flip(item.gold)
        )
    return answers


def test_label_file_micro_averages(task, split):
    lines = [json.dumps({"id": i, "label": a}) for i, a in _label_answers(split).items()]
    result = score_answers(task, split, _read(task, split, lines))
    assert _values(result) == pytest.approx(
        {
            "total": 11 / 24,
            "type/specific": 8 / 12,
            "type/general": 3 / 12,
            **{f"cell/{cell}": c / 4 for cell, c in CORRECT_PER_CELL.items()},
        }
    )
    assert "position_consistency" not in result["total"]  # a label file has one order only
    assert result["n_items"] == 24


def test_averages_are_micro_on_unequal_cells(task, split):
    # drop 3 of the 4 specific/easy items (all correct): specific = (1 + 3 + 1) / 9, total = 8 / 21
    kept = [
        i
        for i in split.items
        if i.id not in ("specific/easy/2", "specific/easy/3", "specific/easy/4")
    ]
    subset = Split(name="subset", items=kept)
    values = _values(
        score_answers(
            task,
            subset,
            {i.id: a for i, a in zip(split.items, _label_answers(split).values()) if i in kept},
        )
    )
    assert values["type/specific"] == pytest.approx(5 / 9)
    assert values["total"] == pytest.approx(8 / 21)
    cells = [values[f"cell/{c}"] for c in CORRECT_PER_CELL]
    assert values["total"] != pytest.approx(np.mean(cells))  # not the unweighted mean of the cells


def test_score_file_with_a_tie_is_wrong(task, split):
    # chosen strictly higher on every item except: a tie on specific/hard/1, reversed on general/*/1
    lines = []
    for item in split.items:
        chosen, other = ("score_1", "score_2") if item.gold == "1" else ("score_2", "score_1")
        if item.id == "specific/hard/1":
            scores = {chosen: 0.25, other: 0.25}
        elif item.id.startswith("general/") and item.id.endswith("/1"):
            scores = {chosen: -2.0, other: 3.5}
        else:
            scores = {chosen: 1.0 + len(item.id), other: -1.0}
        lines.append(json.dumps({"id": item.id, **scores}))
    values = _values(score_answers(task, split, _read(task, split, lines)))
    assert values["cell/specific/hard"] == pytest.approx(3 / 4)
    assert (
        values["cell/general/easy"]
        == values["cell/general/medium"]
        == values["cell/general/hard"]
        == pytest.approx(3 / 4)
    )
    assert values["cell/specific/easy"] == values["cell/specific/medium"] == 1.0
    assert values["type/specific"] == pytest.approx(11 / 12)
    assert values["type/general"] == pytest.approx(9 / 12)
    assert values["total"] == pytest.approx(20 / 24)


def _letter(order: str, position: str) -> str:
    """The letter that shows response `position` in the given order (ab: 1=A; ba: 1=B)."""
    return {"ab": {"1": "A", "2": "B"}, "ba": {"1": "B", "2": "A"}}[order][position]


def test_both_order_answers_give_half_items_and_position_consistency(task, split):
    # per cell item n: 1 right in both orders, 2 right in ab only (always A), 3 right in ba only
    # (always B ... i.e. the wrong pick in ab), 4 wrong in both orders (consistently)
    answers = {}
    for item in split.items:
        n = int(item.id.rsplit("/", 1)[1])
        gold, wrong = item.gold, _flip(item.gold)
        picks = {1: (gold, gold), 2: (gold, wrong), 3: (wrong, gold), 4: (wrong, wrong)}[n]
        answers[item.id] = {"ab": _letter("ab", picks[0]), "ba": _letter("ba", picks[1])}
    result = score_answers(task, split, answers)
    values = _values(result)
    assert values == pytest.approx({key: 0.5 for key in values})  # (1 + .5 + .5 + 0) / 4 everywhere
    assert result["total"]["position_consistency"]["value"] == pytest.approx(0.5)  # items 1 and 4
    arrays = task.hooks.item_arrays(task, split.items, answers)
    by_id = dict(zip([i.id for i in split.items], arrays["correct"]))
    assert [by_id[f"general/hard/{n}"] for n in (1, 2, 3, 4)] == [1.0, 0.5, 0.5, 0.0]
    consistent = dict(zip([i.id for i in split.items], arrays["consistent"]))
    assert [consistent[f"general/hard/{n}"] for n in (1, 2, 3, 4)] == [1.0, 0.0, 0.0, 1.0]


def test_position_bias_scores_half_and_is_fully_inconsistent(task, split):
    answers = {
        item.id: {"ab": "A", "ba": "A"} for item in split.items
    }  # always the first response shown
    result = score_answers(task, split, answers)
    assert result["total"]["accuracy"]["value"] == pytest.approx(0.5)
    assert result["total"]["position_consistency"]["value"] == 0.0


def test_unanswered_and_reward_ties_are_wrong(task, split):
    answers = {item.id: item.gold for item in split.items}
    answers["specific/easy/1"] = None  # a reward model's tie (choose_by_reward -> None)
    answers["general/easy/2"] = {
        "ab": None,
        "ba": _letter("ba", split.by_id["general/easy/2"].gold),
    }
    arrays = task.hooks.item_arrays(task, split.items, answers)
    by_id = dict(zip([i.id for i in split.items], arrays["correct"]))
    assert by_id["specific/easy/1"] == 0.0 and by_id["general/easy/2"] == 0.5
    assert np.nansum(arrays["consistent"]) == 0 and np.isnan(arrays["consistent"]).sum() == 23


# -- settings: rag only with memory data ----------------------------------------------------------------


def test_rag_allowed_with_memory_refused_without(installed, task):
    installed()
    check_setting(task, "rag")  # the fixture ships memory/
    installed(lambda source: shutil.rmtree(source / "memory"))
    with pytest.raises(UnknownSuiteError, match="no memory data") as error:
        check_setting(task, "rag")
    assert "'rag'" in str(error.value)
    check_setting(task, "persona")
    check_setting(task, "no_persona")
    with pytest.raises(UnknownSuiteError, match="has no setting 'cot'"):
        check_setting(task, "cot")


def test_rag_check_defers_to_the_install_refusal(task, tmp_path, monkeypatch):
    monkeypatch.setenv("PERSONABOARD_SPLITS_DIR", str(tmp_path / "empty"))
    clear_split_cache("personafeedback")
    check_setting(
        task, "rag"
    )  # not installed: no setting error; intake then answers 409 with the command
    assert not task.split_available()


# -- model requests ------------------------------------------------------------------------------------


class FakeTools:
    def __init__(self, protocol: str):
        self.protocol = protocol
        self.queries = []

    def retrieve(self, query, passages, k):
        self.queries.append((query, list(passages), k))
        return list(reversed(passages))[:k]


def test_judge_requests_both_orders(task, split):
    pub = split.by_id["specific/medium/1"].public  # user 2 (Maria)
    requests = task.hooks.build_requests(task, [pub], "persona", FakeTools("pairwise_logprobs"))
    assert [r.id for r in requests] == ["specific/medium/1::ab", "specific/medium/1::ba"]
    assert all(r.labels == ("A", "B") for r in requests)
    ab, ba = (r.messages[-1]["content"] for r in requests)
    assert ab.index(pub["response_1"]) < ab.index(pub["response_2"])
    assert ba.index(pub["response_2"]) < ba.index(pub["response_1"])
    assert "Response A:\n" + pub["response_1"] in ab and "Response A:\n" + pub["response_2"] in ba
    assert "Name: Maria" in ab and "Nationality: Spanish" in ab and "Distrusts fad diets" in ab
    assert (
        "more personalized" in ab
        and "helpful" in ab
        and ab.rstrip().endswith("A or B, and nothing else.")
    )


def test_generate_parse_asks_both_orders_too(task, split):
    """The default protocol generates: it still asks each item in both orders (SUITES.md), the
    same prompts as pairwise_logprobs, and the parsed letters score as the log-prob ones."""
    pub = split.by_id["specific/medium/1"].public
    generated = task.hooks.build_requests(task, [pub], "persona", FakeTools("generate_parse"))
    logprobs = task.hooks.build_requests(task, [pub], "persona", FakeTools("pairwise_logprobs"))
    assert [r.id for r in generated] == ["specific/medium/1::ab", "specific/medium/1::ba"]
    assert [r.messages for r in generated] == [r.messages for r in logprobs]
    item = split.by_id["specific/medium/1"]
    in_ab = "A" if item.gold == "1" else "B"  # the chosen response's letter in order ab
    in_ba = "B" if in_ab == "A" else "A"  # and in order ba (the responses swapped)
    parse = task.hooks.parse_answer
    answers = {item.id: {"ab": parse(f"**{in_ab}**"), "ba": parse(f"{in_ba}.")}}
    arrays = task.hooks.item_arrays(task, [item], answers)
    assert arrays["correct"][0] == 1.0 and arrays["consistent"][0] == 1.0
    answers = {item.id: {"ab": parse(in_ab), "ba": parse(in_ab)}}  # the same letter: position
    arrays = task.hooks.item_arrays(task, [item], answers)
    assert arrays["correct"][0] == 0.5 and arrays["consistent"][0] == 0.0


@pytest.mark.parametrize(
    "text, letter",
    [
        ("A", "A"),
        ("B.", "B"),
        ("**A**", "A"),
        ("(B)", "B"),
        ("Answer: B", "B"),
        ("Response A is more personalized", "A"),
        ("B, because the user", "B"),
        ("A\n\nA personalized answer to the", "A"),  # the letter on a line of its own
        ("A\tB", None),
        ("A better reply would be B", None),  # an article, not an answer
        ("The answer is A", None),
        ("a", None),
        ("", None),
    ],
)
def test_parser_reads_the_letter_instruct_models_write(task, text, letter):
    assert task.hooks.parse_answer(text) == letter


def test_generation_is_the_default_for_generative_judges(task):
    """Table 3's judges are API models that wrote their choice: generate_parse is the default, also
    for an endpoint without log-probabilities; pairwise_logprobs stays a named alternative."""
    from evaluator.protocols import default_protocol, protocol_problem
    from space.tabs.about import protocol_lines

    assert default_protocol(task, "generative") == "generate_parse"
    assert default_protocol(task, "generative", logprobs=False) == "generate_parse"
    assert default_protocol(task, "reward") == "reward"
    assert protocol_problem(task, "pairwise_logprobs", "generative") is None
    line = protocol_lines(task)[0]
    assert "`generate_parse` (default, reproduces the paper for generative models)" in line
    assert "`pairwise_logprobs` (ours)" in line


def test_settings_change_only_the_context(task, split):
    pub = split.by_id["general/easy/2"].public  # user 2, has memory
    none = task.hooks.build_requests(task, [pub], "no_persona", FakeTools("pairwise_logprobs"))[
        0
    ].messages[-1]["content"]
    assert (
        "Name: Maria" not in none
        and "Memory" not in none
        and none.startswith("User question:\n" + pub["question"])
    )
    tools = FakeTools("pairwise_logprobs")
    rag = task.hooks.build_requests(task, [pub], "rag", tools)[0].messages[-1]["content"]
    assert tools.queries[0] == (pub["question"], pub["memory"], 5)
    assert "Name: Maria" not in rag and "1. " + pub["memory"][-1] in rag
    assert rag.endswith(none)


def test_reward_requests_score_each_response(task, split):
    pub = split.by_id["general/hard/3"].public
    (request,) = task.hooks.build_requests(task, [pub], "persona", FakeTools("reward"))
    assert request.id == "general/hard/3" and request.labels == ("1", "2")
    assert request.responses == {"1": pub["response_1"], "2": pub["response_2"]}
    assert [m["role"] for m in request.messages] == ["user"]
    assert (
        request.messages[0]["content"].endswith(pub["question"])
        and "Name: Maria" in request.messages[0]["content"]
    )
    (plain,) = task.hooks.build_requests(task, [pub], "no_persona", FakeTools("reward"))
    assert plain.messages == [{"role": "user", "content": pub["question"]}]


def test_rag_request_without_memory_is_an_error(task, split):
    pub = {k: v for k, v in split.items[0].public.items() if k != "memory"}
    with pytest.raises(ValueError, match="no memory data"):
        task.hooks.build_requests(task, [pub], "rag", FakeTools("pairwise_logprobs"))
