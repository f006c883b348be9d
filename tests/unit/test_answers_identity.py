"""A predictions file is known by its answers, not its bytes (evaluator/predictions.py
answers_sha256): a BOM, CRLF line endings, whitespace, key order, blank lines, the order of the
lines, JSON escapes or a field the scorer ignores give the same identity; one answer changed gives
another. The intake records it as the submission's file_sha256 (the bytes' hash as raw_sha256), so
the same owner re-sending the same answers in another encoding gets the duplicate refusal, and the
records' duplicate check still knows rows written before (their file_sha256: the bytes' hash)."""

from __future__ import annotations

import hashlib
import io
import json
import random
from dataclasses import replace

import pytest

from evaluator.predictions import answers_sha256, iter_lines, read_predictions
from evaluator.registry import get_task
from submissions.identity import Identity
from submissions.intake import SubmissionError, SubmissionForm, Submitter, accept_predictions
from submissions.quotas import QuotaLimits
from submissions.records import Submission, SubmissionStore, new_submission_id, utc_now

BOM = b"\xef\xbb\xbf"
FORM = SubmissionForm(suite="prefeval", task="mcq", setting="zero_shot", model_name="mine")


@pytest.fixture(scope="module")
def mcq():
    task = get_task("prefeval", "mcq")
    return task, task.load_split()


@pytest.fixture(scope="module")
def answers(mcq):
    _, split = mcq
    pick = random.Random(7)
    return {item.id: pick.choice("ABCD") for item in split.items}


def lines_of(answers: dict[str, str], order=None, fmt=None) -> list[bytes]:
    fmt = fmt or (lambda i, a: json.dumps({"id": i, "answer": a}))
    return [fmt(i, answers[i]).encode() for i in (order or answers)]


def plain(answers) -> bytes:
    return b"\n".join(lines_of(answers)) + b"\n"


def identity(data: bytes, task, split) -> str:
    return answers_sha256(read_predictions(iter_lines(io.BytesIO(data)), task, split))


def encodings(answers) -> dict[str, bytes]:
    """The same answers written eight ways."""
    body = plain(answers)
    ids = list(answers)
    shuffled = ids[:]
    random.Random(3).shuffle(shuffled)
    return {
        "plain": body,
        "bom": BOM + body,
        "crlf": body.replace(b"\n", b"\r\n"),
        "bom+crlf, no final newline": BOM + body.replace(b"\n", b"\r\n").rstrip(),
        "keys reordered": b"\n".join(
            lines_of(answers, fmt=lambda i, a: json.dumps({"answer": a, "id": i}))
        ),
        "whitespace and blank lines": b"\n".join(  # a blank line after every tenth (the
            # reader allows 1,000 lines beyond one an item)
            line + (b"\n" if n % 10 == 0 else b"")
            for n, line in enumerate(
                lines_of(answers, fmt=lambda i, a: f' \t{{ "id" :"{i}",\t"answer":  "{a}" }}  ')
            )
        )
        + b"\n\n\n",
        "lines reordered": b"\n".join(lines_of(answers, order=shuffled)) + b"\n",
        "escapes and an ignored field": b"\n".join(
            lines_of(
                answers,
                fmt=lambda i, a: json.dumps(
                    {"id": i, "answer": a, "note": "x"}, ensure_ascii=True
                ).replace(f'"{a}"', '"\\u00' + format(ord(a), "x") + '"'),
            )
        ),
    }


def test_every_encoding_of_the_same_answers_has_one_identity(mcq, answers):
    task, split = mcq
    variants = encodings(answers)
    assert len({hashlib.sha256(v).hexdigest() for v in variants.values()}) == len(variants)
    found = {name: identity(data, task, split) for name, data in variants.items()}
    assert set(found.values()) == {answers_sha256(answers)}, found


def test_one_answer_changed_is_another_identity(mcq, answers):
    task, split = mcq
    first = next(iter(answers))
    changed = {**answers, first: "B" if answers[first] != "B" else "C"}
    assert identity(plain(changed), task, split) != identity(plain(answers), task, split)
    # and a BOM or CRLF does not hide the change
    assert identity(BOM + plain(changed).replace(b"\n", b"\r\n"), task, split) == (
        answers_sha256(changed)
    )


def test_free_text_answers_compare_as_text(answers):
    """Open-ended: the response is the answer. Escaped or literal, the same text is one identity;
    a response with other spacing inside is another answer."""
    task = get_task("prefeval", "open_ended")
    split = task.load_split()
    ids = [item.id for item in split.items]

    def body(first_response: str, escaped: bool) -> bytes:
        rows = [
            {"id": i, "response": first_response if n == 0 else "ok"} for n, i in enumerate(ids)
        ]
        return b"\n".join(json.dumps(r, ensure_ascii=escaped).encode() for r in rows) + b"\n"

    literal = identity(body("café, naïve", escaped=False), task, split)
    assert identity(BOM + body("café, naïve", escaped=True), task, split) == literal
    assert identity(body("café,  naïve", escaped=False), task, split) != literal


def test_a_lone_surrogate_in_a_free_text_answer_still_hashes():
    # (model runs hash their answers with the same function: submissions/jobs.py)
    assert answers_sha256({"q1": "\ud800"}) != answers_sha256({"q1": "\ud801"})


@pytest.fixture
def env(tmp_path):
    return {
        "records": SubmissionStore(tmp_path / "subs.sqlite3"),
        "uploads_dir": tmp_path / "uploads",
        "max_bytes": 10 << 20,
        "redis": None,
    }


def submitter(name: str) -> Submitter:
    return Submitter(Identity(name), QuotaLimits(100, 100, 100))


def accept(env, data: bytes, who: str = "alice", form=FORM):
    return accept_predictions(form, io.BytesIO(data), "p.jsonl", submitter=submitter(who), **env)


def test_the_intake_records_the_answers_identity_and_the_bytes_hash(env, answers):
    body = plain(answers)
    sub = accept(env, body)
    assert sub.file_sha256 == answers_sha256(answers)
    assert sub.raw_sha256 == hashlib.sha256(body).hexdigest() and sub.file_bytes == len(body)
    stored = env["records"].get(sub.id)
    assert stored == sub and stored.public()["raw_sha256"] == sub.raw_sha256


def test_the_same_answers_in_another_encoding_are_a_duplicate_for_their_owner(env, answers):
    variants = encodings(answers)
    first = accept(env, variants["plain"])
    for name, data in variants.items():
        if name == "plain":
            continue
        with pytest.raises(SubmissionError) as refused:
            accept(env, data)
        assert refused.value.status == 409, name
        assert refused.value.detail["existing_id"] == first.id
        assert "the same predictions were already submitted" in refused.value.message
        assert refused.value.detail["problems"][0]["field"] == "file"
    # another setting, or another owner: admitted (the board marks a copy, test_duplicate_answers)
    accept(env, variants["crlf"], form=replace(FORM, setting="reminder"))
    other = accept(env, variants["bom"], who="bob", form=replace(FORM, model_name="bob's"))
    assert other.file_sha256 == first.file_sha256 and other.raw_sha256 != first.raw_sha256
    one_changed = {
        **answers,
        next(iter(answers)): "D" if next(iter(answers.values())) != "D" else "A",
    }
    assert accept(env, plain(one_changed)).file_sha256 != first.file_sha256


def test_a_row_from_before_answers_were_hashed_still_refuses_its_bytes(env, answers):
    """Rows written before this change hold the bytes' hash as file_sha256: the same bytes sent
    again are still refused as a duplicate of them."""
    body = plain(answers)
    old = Submission(
        id=new_submission_id(),
        created_at=utc_now(),
        kind="predictions",
        owner="alice",
        **{k: getattr(FORM, k) for k in ("suite", "task", "setting", "model_name")},
        file_sha256=hashlib.sha256(body).hexdigest(),
    )
    env["records"].add(old)
    with pytest.raises(SubmissionError) as refused:
        accept(env, body)
    assert refused.value.status == 409 and refused.value.detail["existing_id"] == old.id
