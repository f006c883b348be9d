"""Per-item details (submissions/details.py): outcomes recomputed from the answers, filters by tier
and outcome, the one visibility rule, and the explorer's table escaping what it shows."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from evaluator.registry import get_task
from space.tabs.explorer import render_items
from submissions.details import build_details, details_allowed, filter_details, with_inputs


@pytest.fixture(scope="module")
def mcq():
    return get_task("prefeval", "mcq")


def answers_right_on_explicit(task) -> dict[str, str]:
    return {
        item.id: item.gold if item.tiers["form"] == "explicit" else "<b>x</b>"
        for item in task.load_split().items[::50]  # 60 items over the three forms
    }


def test_details_recompute_each_items_outcome(mcq):
    frame = build_details(mcq, answers_right_on_explicit(mcq))
    assert len(frame) == 60  # only the items answered
    assert list(frame.columns[:3]) == ["item_id", "form", "topic"]
    for row in frame.to_dict(orient="records"):
        assert row["outcome"] == ("right" if row["form"] == "explicit" else "wrong")
        assert row["score"] == (1.0 if row["outcome"] == "right" else 0.0)
        assert "question" in json.loads(row["input"]) and "form" not in json.loads(row["input"])


def test_the_published_file_with_the_splits_inputs_is_the_details(mcq):
    """What a job publishes (no inputs) joined back with the installed split: the same table."""
    frame = build_details(mcq, answers_right_on_explicit(mcq))
    published = pd.read_parquet(io.BytesIO(details_bytes(frame)))
    assert "input" not in published.columns and len(published) == 60
    pd.testing.assert_frame_equal(with_inputs(mcq, published), frame)


def details_bytes(frame) -> bytes:
    buffer = io.BytesIO()
    frame.drop(columns=["input"]).to_parquet(buffer, index=False)
    return buffer.getvalue()


def test_filters_by_tier_and_outcome_and_name_what_is_unknown(mcq):
    frame = build_details(mcq, answers_right_on_explicit(mcq))
    assert set(filter_details(frame, mcq, "form/explicit")["outcome"]) == {"right"}
    assert set(filter_details(frame, mcq, None, "wrong")["form"]) <= {
        "implicit_choice",
        "implicit_persona",
    }
    assert filter_details(frame, mcq, "explicit", "wrong").empty
    with pytest.raises(ValueError, match="tier='form/nope'"):
        filter_details(frame, mcq, "form/nope")
    with pytest.raises(ValueError, match="outcome="):
        filter_details(frame, mcq, None, "maybe")


def test_public_split_details_allowed_hidden_not(mcq, monkeypatch):
    assert details_allowed(mcq)
    monkeypatch.setitem(mcq.suite.split_spec, "visibility", "hidden")
    assert not details_allowed(mcq)


def test_the_explorer_escapes_answers_and_inputs(mcq):
    frame = build_details(mcq, answers_right_on_explicit(mcq))
    page = render_items(frame, ["form", "topic"], 0, len(frame))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert "Items 1–60 of 60" in page
    # an uploaded file's items: no model run's prompt and output, so no column for them; the
    # inputs' conversation and options formatted, not their JSON
    assert "Prompt and output" not in page and 'class="pb-item-run"' not in page
    assert "<b>A.</b>" in page and 'class="pb-msg pb-msg-user"' in page and '{"A":' not in page


def test_details_only_of_a_result_in_the_published_table_on_the_installed_split(mcq, tmp_path):
    from submissions.details import result_details
    from submissions.intake import SubmissionError
    from submissions.records import Submission, SubmissionStore, utc_now

    answers = {  # a complete, valid file: right on the explicit form only
        item.id: item.gold
        if item.tiers["form"] == "explicit"
        else "ABCD"[("ABCD".index(item.gold) + 1) % 4]
        for item in mcq.load_split().items
    }
    upload = tmp_path / "predictions.jsonl"
    upload.write_text(
        "".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in answers.items())
    )
    records = SubmissionStore(tmp_path / "submissions.sqlite3")
    records.add(
        Submission(
            id="pub1",
            created_at=utc_now(),
            kind="predictions",
            suite="prefeval",
            task="mcq",
            setting="zero_shot",
            model_name="m",
            file_path=str(upload),
            state="finished",
            revision="0" * 40,
            result={"total": {}},
        )
    )
    current = mcq.load_split().sha256
    with pytest.raises(SubmissionError) as withdrawn:
        result_details(records, "pub1", lambda sid: None)  # not in the published table
    assert withdrawn.value.status == 404
    with pytest.raises(SubmissionError) as other_split:
        result_details(records, "pub1", lambda sid: "f" * 64)
    assert other_split.value.status == 409 and "another version" in str(other_split.value)
    _, frame = result_details(records, "pub1", lambda sid: current)
    assert len(frame) == 3000 and (frame["outcome"] == "right").sum() == 1000


def test_a_tier_whose_name_holds_a_slash_filters():
    # PersonaFeedback's tier specific/easy of the group cell: asked for as cell/specific/easy or
    # by its bare name (it was split at the last "/" and never matched)
    task = get_task("personafeedback", "binary_choice")  # its manifest's tiers; no split needed
    cells = ["specific/easy", "specific/hard", "general/easy", "specific/easy"]
    frame = pd.DataFrame(
        {
            "item_id": ["a", "b", "c", "d"],
            "cell": cells,
            "type": [c.split("/")[0] for c in cells],
            "outcome": ["right", "wrong", "right", "wrong"],
        }
    )
    for tier in ("cell/specific/easy", "specific/easy"):
        assert filter_details(frame, task, tier)["item_id"].tolist() == ["a", "d"]
    assert filter_details(frame, task, "type/general")["item_id"].tolist() == ["c"]
    with pytest.raises(ValueError, match="cell/specific/easy"):
        filter_details(frame, task, "cell/specific")


def test_a_judged_items_calls_are_in_its_details_and_shown_readably():
    """A judge-scored item's transcript records (evaluator/suites/prefeval/open_ended.py
    judge_transcript) become its `judge` column, and the explorer shows each call's reading, reply
    and prompt as a conversation; an item without a response has none (a null)."""
    task = get_task("prefeval", "open_ended")
    first, second = task.load_split().items[:2]
    calls = [
        {
            "check": "helpful",
            "prompt": [
                {"role": "system", "content": "judge <sys>"},
                {"role": "user", "content": "Q"},
            ],
            "output": "<answer>Yes</answer>",
            "parsed": "Yes",
        },
        {"check": "violate", "prompt": [], "output": "I think so", "parsed": None},
    ]
    frame = build_details(task, {first.id: "a reply", second.id: None}, judged={first.id: calls})
    rows = frame.set_index("item_id")
    assert json.loads(rows.loc[first.id, "judge"]) == calls
    assert rows["judge"].isna().sum() == 1 and rows["answer"].isna().sum() == 1
    page = render_items(frame, ["form", "topic"], 0, len(frame))
    assert "judge: 2 calls" in page and "helpful:</span> Yes" in page
    assert "violate:</span> unparsed" in page and "I think so" in page
    assert "judge &lt;sys&gt;" in page and "<sys>" not in page  # the prompt, escaped
    assert page.count("no answer") == 1


def test_an_item_asked_in_both_orders_keeps_each_orders_prompt_and_output(mcq):
    """A pairwise judgment asked in both orders (`item::ab`, `item::ba` in the checkpoint): one row,
    its text columns {order: value}, its token counts summed, each order shown."""
    item = mcq.load_split().items[0]
    chat = [{"role": "user", "content": "which is better?"}]
    records = [
        {"id": f"{item.id}::{order}", "answer": "A", "prompt_tokens": 10, "rule": "r"}
        | {"raw": f"<choice>A</choice> ({order})", "raw_chars": 21, "messages": chat}
        | {"prompt_messages": 1, "prompt_sha256": order * 32}
        for order in ("ab", "ba")
    ]
    frame = build_details(mcq, {item.id: {"ab": "A", "ba": "B"}}, runs={item.id: records})
    row = frame.iloc[0]
    assert row["orders"] == "ab,ba" and row["prompt_tokens"] == 20
    assert json.loads(row["raw"]) == {
        "ab": "<choice>A</choice> (ab)",
        "ba": "<choice>A</choice> (ba)",
    }
    assert json.loads(row["prompt"]) == {"ab": chat, "ba": chat} and pd.isna(row["logprobs"])
    page = render_items(frame, ["form", "topic"], 0, 1)
    assert "order ab:" in page and "order ba:" in page and "(ba)" in page


def test_judge_transcript_lines_are_judge_calls():
    """What the judges write to a transcript is what JudgeCall (evaluator/item_records.py) names:
    PrefEval's records, and RealPref's rubric plus each field of its Judgment; a field added to a
    writer and not to the type fails here."""
    from evaluator.item_records import JudgeCall, Judgment
    from evaluator.suites.prefeval.open_ended import judge_transcript

    task = get_task("prefeval", "open_ended")
    items = task.load_split().items[:1]
    chat = [{"role": "user", "content": "Q"}]
    lines = judge_transcript(
        items, {0: {"helpful": "<answer>Yes</answer>"}}, {(0, "helpful"): chat}
    )
    assert lines and all(set(line) <= set(JudgeCall.__annotations__) for line in lines)
    assert lines[0]["parsed"] == "Yes" and lines[0]["id"] == items[0].id
    assert set(Judgment.__annotations__) | {"id", "rubric", "prompt"} <= set(
        JudgeCall.__annotations__
    )
