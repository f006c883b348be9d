"""Accepting a predictions file (no Redis): recorded only when the whole file is valid."""

from __future__ import annotations

import hashlib
import io
import json

import pytest

from evaluator.registry import get_task
from submissions.identity import Identity
from submissions.intake import (
    MAX_LIMIT,
    ModelForm,
    SubmissionError,
    SubmissionForm,
    Submitter,
    accept_predictions,
    check_available,
    check_model_form,
    check_target,
    quota_error,
)
from submissions.quotas import QuotaLimits
from submissions.records import SubmissionStore

MCQ = {"suite": "prefeval", "task": "mcq", "setting": "zero_shot"}
FORM = SubmissionForm(
    suite="prefeval",
    task="mcq",
    setting="zero_shot",
    model_name="  my model  ",
    model_link="https://example.org/m",
    description="d",
)


@pytest.fixture(scope="module")
def split():
    return get_task("prefeval", "mcq").load_split()


@pytest.fixture(scope="module")
def valid_bytes(split):
    return b"".join(json.dumps({"id": i.id, "answer": "A"}).encode() + b"\n" for i in split.items)


@pytest.fixture
def env(tmp_path):
    return {
        "records": SubmissionStore(tmp_path / "subs.sqlite3"),
        "uploads_dir": tmp_path / "uploads",
        "max_bytes": 10 << 20,
        "redis": None,
        "submitter": Submitter(Identity("alice"), QuotaLimits(100, 100, 100)),
    }


def accept(env, data: bytes, form=FORM, filename="preds.jsonl", **overrides):
    return accept_predictions(form, io.BytesIO(data), filename, **{**env, **overrides})


def test_valid_file_is_recorded(env, valid_bytes, split):
    sub = accept(env, valid_bytes, filename="../../etc/preds.jsonl")
    stored = env["records"].get(sub.id)
    assert stored == sub
    assert sub.state == "queued" and sub.kind == "predictions"
    assert sub.raw_sha256 == hashlib.sha256(valid_bytes).hexdigest()  # file_sha256: its answers
    assert sub.file_bytes == len(valid_bytes)
    assert sub.model_name == "my model" and sub.progress_total == len(split.items) == 3000
    assert sub.filename == "preds.jsonl"  # no directories from the client
    final = env["uploads_dir"] / f"{sub.id}.jsonl"
    assert sub.file_path == str(final) and final.read_bytes() == valid_bytes
    assert sorted(p.name for p in env["uploads_dir"].iterdir()) == [final.name]


def test_invalid_file_leaves_nothing(env, valid_bytes):
    lines = valid_bytes.splitlines()
    lines[9] = b'{"id": "explicit-travel_hotel-000", "answer": "Z"}'  # also duplicates a real id
    with pytest.raises(SubmissionError) as info:
        accept(env, b"\n".join(lines))
    error = info.value
    assert error.status == 422
    problems = error.detail["problems"]
    assert problems and problems[0]["line"] == 10 and problems[0]["field"] in ("id", "answer")
    assert any(
        p["field"] == "id" and p["line"] is None for p in problems
    )  # the replaced line's id is missing
    assert env["records"].list() == []
    assert list(env["uploads_dir"].iterdir()) == []


def test_bad_answer_problem_names_line_and_field(env, valid_bytes):
    lines = valid_bytes.splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({"id": first["id"], "answer": "E"}).encode()
    with pytest.raises(SubmissionError) as info:
        accept(env, b"\n".join(lines) + b"\n")
    assert info.value.detail["problems"] == [
        {"line": 1, "field": "answer", "message": "'E' is not one of A-D"}
    ]
    assert env["records"].list() == [] and list(env["uploads_dir"].iterdir()) == []


def test_too_large_gives_413_and_leaves_nothing(env, valid_bytes):
    with pytest.raises(SubmissionError) as info:
        accept(env, valid_bytes, max_bytes=len(valid_bytes) - 1)
    assert info.value.status == 413
    assert info.value.detail["problems"][0]["field"] == "file"
    assert env["records"].list() == [] and list(env["uploads_dir"].iterdir()) == []
    # exactly at the limit is fine
    assert accept(env, valid_bytes, max_bytes=len(valid_bytes)).file_bytes == len(valid_bytes)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"suite": "nosuch"}, "suite"),
        ({"task": "nosuch"}, "task"),
        ({"setting": "nosuch"}, "setting"),
        # the field comes from which lookup failed, not from words in the (user-quoted) message
        ({"suite": "my_setting"}, "suite"),
        ({"task": "no task at all"}, "task"),
        ({"task": "setting"}, "task"),
        ({"model_name": "   "}, "model_name"),
        ({"model_name": "x" * 201}, "model_name"),
        ({"model_link": "ftp://example.org/x"}, "link"),
        ({"model_link": "http://["}, "link"),  # urlparse raises on it (was a 500)
        ({"model_link": "https://a:["}, "link"),
        ({"description": "x" * 5001}, "description"),
    ],
)
def test_bad_form_names_the_field(env, valid_bytes, change, field):
    form = SubmissionForm(**{**FORM.__dict__, **change})
    with pytest.raises(SubmissionError) as info:
        accept(env, valid_bytes, form=form)
    assert info.value.status == 422
    assert [p["field"] for p in info.value.detail["problems"]] == [field]
    assert env["records"].list() == []
    assert not env["uploads_dir"].exists() or list(env["uploads_dir"].iterdir()) == []


# -- the one answer every entry point gives (tests/test_admission_paths.py sends them through all) --


@pytest.mark.parametrize(
    "suite, task, setting, status, field, allowed",
    [
        ("nope", "mcq", "zero_shot", 422, "suite", "prefeval"),  # no suite declares it
        ("prefeval", "nope", "zero_shot", 422, "task", "mcq"),
        ("prefeval", "binary_choice", "zero_shot", 404, "task", "mcq"),  # another suite's task
        ("prefeval", "mcq", "few_shot", 422, "setting", "zero_shot"),
        ("personafeedback", "binary_choice", "zero_shot", 404, "setting", "persona"),
    ],
)
def test_an_unknown_target_names_the_field_and_what_it_allows(
    suite, task, setting, status, field, allowed
):
    with pytest.raises(SubmissionError) as refused:
        check_target(suite, task, setting)
    answer = refused.value.answer()
    assert (answer["status"], answer["problems"][0]["field"]) == (status, field)
    assert allowed in answer["allowed"] and ", ".join(answer["allowed"]) in answer["message"]
    if status == 404:  # a real value: the message says whose it is
        assert "(a " in answer["message"] and " of " in answer["message"]


def test_a_split_not_installed_is_a_409_naming_the_command():
    task = check_target("realpref", "mcq", "zero_shot")  # declared: the target is right
    with pytest.raises(SubmissionError) as refused:
        check_available(task)
    assert refused.value.status == 409 and "personaboard splits install realpref" in str(
        refused.value
    )


def test_every_missing_field_is_named_at_once(env):
    form = SubmissionForm(suite="", task=" ", setting="zero_shot", model_name="")
    with pytest.raises(SubmissionError) as refused:
        accept_predictions(form, None, "", **env)
    assert refused.value.message == "missing fields: suite, task, model_name, file"
    assert [p["field"] for p in refused.value.detail["problems"]] == [
        "suite",
        "task",
        "model_name",
        "file",
    ]
    with pytest.raises(SubmissionError) as one:
        accept(env, b"", form=SubmissionForm("prefeval", "mcq", "zero_shot", " "))
    assert one.value.message == "model_name is required: the name shown on the leaderboard"


@pytest.mark.parametrize(
    "change, field, says",
    [
        ({"model": " "}, "model", "model is required"),
        ({"model": "m\u202e"}, "model", "U+202E"),
        ({"limit": 0}, "limit", "from 1 to"),
        ({"limit": MAX_LIMIT + 1}, "limit", "from 1 to"),
        ({"setting": ""}, "setting", "setting is required"),
    ],
)
def test_a_model_run_is_checked_before_its_model_is_resolved(change, field, says):
    form = ModelForm(**{**{"model": "m", **MCQ}, **change})
    with pytest.raises(SubmissionError) as refused:
        check_model_form(form)
    assert refused.value.status == 422 and says in refused.value.message
    assert [p["field"] for p in refused.value.detail["problems"]] == [field]


def test_a_refusal_says_what_http_adds():
    spent = quota_error("predictions", "prefeval", 3, 3)
    assert spent.headers() == {"Retry-After": str(spent.detail["retry_after_s"])}
    assert SubmissionError(401, "who?").headers() == {"WWW-Authenticate": "Bearer"}
    refusal = SubmissionError(404, "not there", field="task", allowed=["mcq"])
    assert refusal.headers() == {}
    assert refusal.answer() == {
        "status": 404,
        "message": "not there",
        "problems": [{"line": None, "field": "task", "message": "not there"}],
        "allowed": ["mcq"],
    }
