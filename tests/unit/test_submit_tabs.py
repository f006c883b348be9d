"""The submit tabs' handlers in process (space/tabs/submit_predictions.py, submit_model.py): plain
functions from the controls' values and the services to what the tab shows. Every refusal is the
intake's: the tab shows its message and hands on its status, message and problems unchanged.

The services are real: the submissions' SQLite, the intake, identities with API tokens, the
shipped PrefEval split, a model registry, Gradio's upload folder in a temp dir. No queue (the
handlers never read it; a submission is recorded and stays queued)."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import pytest

from evaluator.models import ModelRegistry
from evaluator.registry import get_task
from space.tabs import submit_model as model_tab
from space.tabs import submit_predictions as predictions_tab
from space.uploads import NOT_AN_UPLOAD
from submissions.identity import IdentityStore
from submissions.intake import (
    ModelForm,
    SubmissionError,
    SubmissionForm,
    Submitter,
    accept_predictions,
)
from submissions.quotas import QuotaLimits
from submissions.records import SubmissionStore

FORM = SubmissionForm("prefeval", "mcq", "zero_shot", "tab-model")


class Services:
    """What the submit tabs use of submissions/service.py's Services, over real stores and the
    real intake (redis None: recorded, not queued)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.records = SubmissionStore(folder / "submissions.sqlite3")
        self.models = ModelRegistry(folder)

    @property
    def identities(self) -> IdentityStore:
        return IdentityStore(self.records)

    def submitter(self, identity) -> Submitter:
        return Submitter.of(identity, self.identities, QuotaLimits(100, 100, 100))

    def submit_predictions(self, form, stream, filename, submitter):
        return accept_predictions(
            form,
            stream,
            filename,
            records=self.records,
            uploads_dir=self.folder / "uploads",
            max_bytes=1 << 20,
            redis=None,
            submitter=submitter,
        )

    def submit_model(self, form, submitter):
        from submissions.intake import accept_model

        return accept_model(
            form, records=self.records, registry=self.models, redis=None, submitter=submitter
        )

    def submission(self, submission_id):
        return self.records.get(submission_id) if submission_id else None

    def submission_status(self, submission) -> dict:
        return {**submission.public(), "queue_position": None}

    def registered_models(self) -> dict:
        return self.models.all()


@pytest.fixture
def services(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-uploads"))
    found = Services(tmp_path)
    found.identities.add_user("alice")
    found.token = found.identities.issue_token("alice")[1]
    return found


@pytest.fixture(scope="module")
def valid_bytes() -> bytes:
    items = get_task("prefeval", "mcq").load_split().items
    return b"".join(json.dumps({"id": i.id, "answer": "A"}).encode() + b"\n" for i in items)


def uploaded(data: bytes, tmp_path: Path) -> str:
    """A file where Gradio's upload route puts one (a folder of its own in the upload folder)."""
    path = tmp_path / "gradio-uploads" / "0f3c" / "predictions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def intake_answer(services, form, data: bytes | None) -> dict:
    """What the intake answers the same submission directly (the API's status and detail)."""
    submitter = services.submitter(services.identities.authenticate(services.token))
    stream = io.BytesIO(data) if data is not None else None
    with pytest.raises(SubmissionError) as refused:
        services.submit_predictions(form, stream, "predictions.jsonl", submitter)
    return refused.value.answer()


def shown(markdown: str) -> str:
    return html.unescape(markdown)


# -- Submit predictions --------------------------------------------------------------------------


def test_a_task_with_its_split_opens_the_upload_and_links_its_inputs():
    tasks, task, view = predictions_tab.suite_view("prefeval")
    assert task == "mcq" and ("mcq", "mcq") in [(n, n) for _, n in tasks]
    assert view.open and view.setting == view.settings[0] == "zero_shot"
    assert "/api/v1/suites/prefeval/tasks/mcq/inputs" in view.inputs_link
    assert view.format_help


def test_a_split_not_installed_closes_the_upload_and_names_the_command():
    _, task, view = predictions_tab.suite_view("realpref")
    assert task and not view.open
    assert "personaboard splits install realpref" in view.inputs_link


@pytest.mark.parametrize("suite, task", [("nope", None), ("prefeval", "nope"), (None, None)])
def test_a_value_no_suite_declares_shows_nothing_and_raises_nothing(suite, task):
    # a custom value typed into a dropdown: the intake refuses it at submit, not the view
    view = predictions_tab.task_view(suite, task)
    assert (view.inputs_link, view.format_help, view.open) == ("", "", False)
    if suite != "prefeval":
        assert predictions_tab.suite_view(suite)[:2] == ([], None)


def test_accepted_upload_is_recorded_polled_and_its_upload_removed(services, tmp_path, valid_bytes):
    path = uploaded(valid_bytes, tmp_path)
    view = predictions_tab.submit(services, path, FORM, services.token)
    assert view.refusal is None and view.polling, view.status
    assert services.records.get(view.submission_id).owner == "alice"
    assert "State: **queued**" in view.status and not Path(path).exists()
    assert view.upload_gone  # the tab clears its file box: the server holds no such file now
    status, polling, finished = predictions_tab.poll(services, view.submission_id)
    assert polling and finished is None and "tab" in status
    assert predictions_tab.poll(services, "unknown") is None


def test_the_board_redraws_once_a_finished_result_is_on_it(services, tmp_path, valid_bytes):
    """A job can finish before its result is published (another process held the publisher): the
    page keeps polling until the submission has its revision, then the board redraws with the
    row; a result never published (kept back on a hidden split) ends the wait after a while."""
    from datetime import datetime, timedelta, timezone

    from space.status_text import UNPUBLISHED_WAIT_S
    from submissions.records import utc_now

    view = predictions_tab.submit(services, uploaded(valid_bytes, tmp_path), FORM, services.token)
    sid = view.submission_id
    services.records.update(sid, state="finished", finished_at=utc_now())
    status, polling, finished = predictions_tab.poll(services, sid)
    assert polling and finished is None and "finished" in status
    later = datetime.now(timezone.utc) + timedelta(seconds=UNPUBLISHED_WAIT_S + 1)
    assert predictions_tab.poll(services, sid, now=later)[1:] == (False, sid)
    services.records.update_revision(sid, "8aed29bfa804")
    assert predictions_tab.poll(services, sid)[1:] == (False, sid)


@pytest.mark.parametrize(
    "form, data, status, text",
    [
        (FORM, None, 422, "file is required"),
        (SubmissionForm("nope", "mcq", "zero_shot", "m"), b"", 422, "unknown suite 'nope'"),
        (SubmissionForm("prefeval", "mcq", "persona", "m"), b"", 404, "a setting of"),
        (SubmissionForm("realpref", "mcq", "zero_shot", "m"), b"", 409, "splits install"),
        (SubmissionForm("prefeval", "mcq", "zero_shot", ""), b"", 422, "model_name is required"),
        (FORM, b'{"id": "x", "answer": "A"}\n', 422, "unknown id 'x'"),
    ],
)
def test_a_refusal_is_the_intakes_answer(services, tmp_path, form, data, status, text):
    path = uploaded(data, tmp_path) if data is not None else None
    view = predictions_tab.submit(services, path, form, services.token)
    assert view.submission_id is None and not view.polling
    # a file refused for good is removed, and the tab's box with it; no file, nothing to clear
    assert view.upload_gone == (path is not None) and not (path and Path(path).exists())
    assert view.refusal == intake_answer(services, form, data)
    assert view.refusal["status"] == status and text in view.refusal["message"]
    for problem in view.refusal["problems"]:  # the tab shows each problem (or the message)
        assert problem["message"] in shown(view.status)
    assert services.records.list() == []


def test_identity_and_foreign_paths_are_refused_before_anything(services, tmp_path, valid_bytes):
    view = predictions_tab.submit(services, None, FORM, "")
    assert view.refusal["status"] == 401 and "needs an identity" in view.refusal["message"]
    kept = uploaded(valid_bytes, tmp_path)  # an identity refusal keeps the file for the next try
    view = predictions_tab.submit(services, kept, FORM, "")
    assert view.refusal["status"] == 401 and not view.upload_gone and Path(kept).exists()
    view = predictions_tab.submit(services, "/etc/passwd", FORM, services.token)
    assert view.refusal == {
        "status": 422,
        "message": NOT_AN_UPLOAD,
        "problems": [{"line": None, "field": "file", "message": NOT_AN_UPLOAD}],
    }
    assert "/etc/passwd" not in view.status


# -- Submit a model --------------------------------------------------------------------------------


def test_model_choices_follow_the_suite_task_and_protocol():
    view = model_tab.suite_view("prefeval")
    assert view.task == "mcq" and view.protocols[0] == model_tab.DEFAULT
    assert "choice_logprobs" in view.protocols and "cot" in view.settings
    # RealPref's mcq lets a protocol write too few tokens to reason: no `cot` for it
    settings, kept = model_tab.kept_settings("realpref", "mcq", "choice_logprobs", ["cot", "rag"])
    assert "cot" not in settings and "rag" in settings and kept == ["rag"]
    assert model_tab.kept_settings("realpref", "mcq", "choice_logprobs", ["cot"])[1] == settings[:1]
    assert "cot" in model_tab.kept_settings("prefeval", "mcq", "generate_parse", [])[0]
    assert model_tab.suite_view("nope") == model_tab.ModelChoices([], None, ["default"], [])


def test_model_form_reads_the_controls():
    form = model_tab.model_form("m", "  ", None, "prefeval", "mcq", "default", 0, None)
    assert form == ModelForm("m", "prefeval", "mcq", "", None, "auto", None, None, "")
    assert model_tab.model_form("m", "main", "reward", "s", "t", "reward", 60.0, "d").limit == 60


def test_each_setting_is_its_own_run_and_each_refusal_names_it(services):
    form = model_tab.model_form("not a model!", "", "auto", "prefeval", "mcq", "default", 0, "")
    view = model_tab.submit_runs(services, form, ["zero_shot", "persona"], services.token)
    assert view.ids == [] and not view.polling
    by_setting = {r["setting"]: r for r in view.refusals}
    assert by_setting["zero_shot"]["status"] == 422
    assert by_setting["zero_shot"]["problems"][0]["field"] == "model"
    assert by_setting["persona"]["status"] == 404  # a setting of another suite
    assert "**Error (zero_shot):**" in shown(view.status)
    assert len(view.messages) == 2 and services.records.list() == []


def test_no_setting_chosen_is_the_intakes_missing_setting(services):
    form = model_tab.model_form("m", "", "auto", "prefeval", "mcq", "default", 0, "")
    view = model_tab.submit_runs(services, form, [], services.token)
    assert [(r["status"], r["message"]) for r in view.refusals] == [(422, "setting is required")]
    assert shown(view.status) == "**Error:** setting is required"


def test_a_model_run_without_identity_is_refused_once(services):
    form = model_tab.model_form("m", "", "auto", "prefeval", "mcq", "default", 0, "")
    view = model_tab.submit_runs(services, form, ["zero_shot", "cot"], "wrong")
    assert [r["status"] for r in view.refusals] == [401]
    assert "not valid" in view.refusals[0]["message"]


def test_accepted_runs_are_polled(services, tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    services.models.add("tiny", folder)
    form = model_tab.model_form("tiny", "", "generative", "prefeval", "mcq", "default", 0, "")
    view = model_tab.submit_runs(services, form, ["zero_shot", "cot"], services.token)
    assert len(view.ids) == 2 and view.refusals == [] and view.polling, view.status
    status, running, newest = model_tab.poll(services, {"ids": view.ids, "messages": []})
    assert running and newest is None and status.count("State: **queued**") == 2
    assert model_tab.poll(services, {}) is None
    # both finished, one published: the board redraws for that one; the other is awaited
    from submissions.records import utc_now

    for sid in view.ids:
        services.records.update(sid, state="finished", finished_at=utc_now())
    services.records.update_revision(view.ids[1], "8aed29bfa804")
    _, running, newest = model_tab.poll(services, {"ids": view.ids, "messages": []})
    assert running and newest == view.ids[1]
    services.records.update_revision(view.ids[0], "9e458c3e00b3")
    assert model_tab.poll(services, {"ids": view.ids, "messages": []})[1] is False
