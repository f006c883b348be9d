"""The papers' rows say which protocol they came from (where the paper says it); a verified row is
marked comparable to a paper row only under the same setting and protocol; the About tab says, per
task, which protocol reproduces the paper and which are ours; a manifest whose default is not the
authors' stated protocol is refused."""

from __future__ import annotations

import copy

import pytest
import yaml

from evaluator.manifest import ManifestError, check_names, parse_manifest
from evaluator.metrics import known_metrics
from evaluator.protocols import known_protocols
from evaluator.registry import all_suites
from leaderboard.board import model_facts, ranked_board
from leaderboard.reported import (
    UNSTATED,
    all_reported_records,
    comparable,
    comparable_paper_rows,
    reported_records,
)
from leaderboard.result_record import make_record
from leaderboard.table import records_to_scores
from space.tabs.about import protocol_lines


def by_model(records, table):
    return {
        r["model_name"]: r
        for r in records
        if r["provenance"]["table"] == table and r["setting"] != "optimized_prompt"
    }


def test_reported_rows_carry_the_papers_protocol_where_it_says_it():
    suites = all_suites()
    rc = reported_records("recentering", suites["recentering"].folder)
    stage1 = by_model(rc, "table2")
    assert stage1["Llama-3.3-70B"]["provenance"]["protocol"] == "generate_parse"
    assert "App. I.6" in stage1["Llama-3.3-70B"]["provenance"]["protocol_source"]
    assert stage1["RoBERTa (Trained)"]["provenance"]["protocol"] == "predictions"
    human = by_model(rc, "table6")["Human"]["provenance"]
    assert human["protocol"] == "" and "annotators" in human["protocol_source"]
    pf = reported_records("personafeedback", suites["personafeedback"].folder)
    generative = [r for r in pf if r["provenance"]["model_type"] == "generative"]
    reward = [r for r in pf if r["provenance"]["model_type"] == "reward"]
    assert generative and {r["provenance"]["protocol"] for r in generative} == {""}
    assert all("neither the prompt" in r["provenance"]["protocol_source"] for r in generative)
    assert reward and {r["provenance"]["protocol"] for r in reward} == {"reward"}
    # every paper row names a protocol we run, or none (with the paper's words why)
    runnable = set(known_protocols()) | {"predictions"}
    for record in all_reported_records():
        protocol = record["provenance"]["protocol"]
        assert protocol in runnable or (protocol == "" and record["provenance"]["protocol_source"])
    # the protocol is the row's protocol column
    scores = records_to_scores(rc)
    assert set(scores.loc[scores["model_name"] == "Llama-3.3-70B", "protocol"]) == {
        "generate_parse"
    }
    assert UNSTATED  # the default words when a table gives none


def test_comparable_needs_the_same_setting_and_a_stated_matching_protocol():
    assert comparable("generate_parse", "zero_shot", "generate_parse", "zero_shot")
    assert not comparable("choice_logprobs", "zero_shot", "generate_parse", "zero_shot")
    assert not comparable("generate_parse", "optimized_prompt", "generate_parse", "zero_shot")
    assert not comparable("pairwise_logprobs", "persona", "", "persona")  # the paper says none
    # nor under generation, PersonaFeedback's default: its prompt and orders are not the paper's
    assert not comparable("generate_parse", "persona", "", "persona")
    assert comparable("uploaded predictions", "trained", "predictions", "trained")
    assert not comparable("uploaded predictions", "zero_shot", "generate_parse", "zero_shot")


def verified(submission_id, setting, protocol, value=0.7):
    stats = {"value": value, "ci95": [value - 0.05, value + 0.05], "n": 100}
    return make_record(
        submission_id=submission_id,
        suite="recentering",
        task="attribute_verification",
        setting=setting,
        model_name=submission_id,
        model_link="",
        description="",
        source=f"model run ({protocol})",
        row_kind="computed",
        submitted_at="2026-11-25T00:00:00+00:00",
        provenance={"protocol": protocol},
        timings={},
        n_items=100,
        metrics={"metric": "accuracy", "total": {"accuracy": stats}, "tiers": {}},
    )


def test_the_board_marks_rows_comparable_to_paper_rows_only_under_the_same_protocol():
    papers = [
        r
        for r in reported_records("recentering", all_suites()["recentering"].folder)
        if r["task"] == "attribute_verification"
    ]
    mine = [
        verified("gen-zero", "zero_shot", "generate_parse"),
        verified("logprob-zero", "zero_shot", "choice_logprobs"),
        verified("gen-optimized", "optimized_prompt", "generate_parse"),
    ]
    upload = verified("file-trained", "trained", "uploaded predictions")
    records = papers + mine + [upload]
    board, _ = ranked_board(
        records_to_scores(records), model_facts(records), "recentering", "attribute_verification"
    )
    marked = dict(zip(board["model_name"], board["comparable_paper_rows"]))
    zero_shot = [r["model_name"] for r in papers if r["setting"] == "zero_shot"]
    assert len(zero_shot) == 5
    assert sorted(marked["gen-zero"].split("; ")) == sorted(f"{m} (Table 2)" for m in zero_shot)
    assert marked["logprob-zero"] == ""  # the paper's verifiers wrote their answers
    assert marked["gen-optimized"].count("(Table 2)") == 5
    assert marked["file-trained"] == "RoBERTa (Trained) (Table 2)"
    assert set(board.loc[board["row_kind"] == "reported", "comparable_paper_rows"]) == {""}
    assert comparable_paper_rows(board.iloc[0:0], {}).empty


def test_about_says_which_protocol_reproduces_the_paper_and_which_are_ours():
    suites = all_suites()
    realpref = suites["realpref"].tasks
    lines = protocol_lines(realpref["open_ended"])
    assert lines[0].startswith(
        "Protocols: `generate_parse` (default, reproduces the paper for generative models)."
    )
    assert "`judge_score` (default): the paper&#x27;s (Appendix B.2)" in lines[1]
    assert "`rating_logprobs`: ours" in lines[1]
    # the paper's API models wrote their answers: generation is the default, the log-probs ours
    mcq = protocol_lines(realpref["mcq"])[0]
    assert "`generate_parse` (default, reproduces the paper for generative models); " in mcq
    assert "`choice_logprobs` (ours)" in mcq and "are ours" in mcq
    stage3 = protocol_lines(suites["recentering"].tasks["response_preference"])[0]
    assert "`generate_parse` (default, reproduces the paper" in stage3
    assert "`rating_logprobs` (ours)" in stage3
    pf = protocol_lines(suites["personafeedback"].tasks["binary_choice"])[0]
    assert "`generate_parse` (default, reproduces the paper for generative models)" in pf
    assert "`pairwise_logprobs` (ours)" in pf
    assert "`reward` (reproduces the paper for reward models)" in pf


def test_a_default_other_than_the_authors_protocol_is_refused():
    suite = all_suites()["recentering"]
    data = yaml.safe_load((suite.folder / "manifest.yaml").read_text(encoding="utf-8"))
    names = (known_metrics(), known_protocols())
    check_names(parse_manifest(data, "m.yaml"), "m.yaml", *names)
    ours = copy.deepcopy(data)
    ours["tasks"]["response_preference"]["model"]["default_protocol"] = "rating_logprobs"
    with pytest.raises(ManifestError, match="must be the authors' protocol"):
        check_names(parse_manifest(ours, "m.yaml"), "m.yaml", *names)
    unknown = copy.deepcopy(data)
    unknown["tasks"]["relevance"]["model"]["authors_protocols"] = {"generative": "circular"}
    with pytest.raises(ManifestError, match="authors_protocols.generative"):
        check_names(parse_manifest(unknown, "m.yaml"), "m.yaml", *names)


@pytest.mark.parametrize("task", ["mcq", "mcq_turns", "open_ended", "open_ended_turns"])
def test_prefeval_declares_the_official_protocol_and_about_says_so(task):
    from space.tabs.about import protocol_lines

    spec = all_suites()["prefeval"].tasks[task]
    assert spec.model["authors_protocols"] == {"generative": "generate_parse"}
    assert spec.model["default_protocol"] == "generate_parse"
    first = protocol_lines(spec)[0]
    assert "`generate_parse` (default, reproduces the paper" in first, first
    assert "not declared" not in first
