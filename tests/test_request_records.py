"""requests/ records follow a submission to its final state, in both results stores.

The web node's publisher pass (Services.publish_pending) sends a submission's status whenever it
changed; the job publishes the finished result together with its "finished" request record. Both
orders are run here against a real store (a git folder, and the Hub API of tests/hub_server.py),
and the records are read back from the dataset at its newest revision."""

from __future__ import annotations

import json

import pytest
from board_fixture import minimal_record
from hub_server import TEST_TOKEN as HUB_TEST_TOKEN

from evaluator.hub import DatasetRepo
from leaderboard.hub_store import HubDatasetStore
from leaderboard.outbox import Outbox
from leaderboard.store import LocalDatasetStore, request_path
from submissions.records import Submission, SubmissionStore, utc_now
from submissions.service import Services

pytestmark = pytest.mark.service


@pytest.fixture(params=["local", "hub"])
def store(request, tmp_path, monkeypatch):
    if request.param == "local":
        return LocalDatasetStore(tmp_path / "results")
    import huggingface_hub.constants

    # the tests run offline; this client talks to the local Hub server only
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    server = request.getfixturevalue("hub_server")
    repo = DatasetRepo(f"personaboard/requests-{tmp_path.name}", HUB_TEST_TOKEN, server.url)
    return HubDatasetStore(repo, private=True)


def dataset_request(store, submission: Submission) -> dict | None:
    """The submission's requests/ record as the dataset's newest revision holds it."""
    path = request_path(submission.request_record("queued"))
    head = store.head_revision()
    if isinstance(store, LocalDatasetStore):
        listed = store._git("ls-tree", "--name-only", head, "--", path).decode().strip()
        return json.loads(store._git("show", f"{head}:{path}")) if listed else None
    data = store.repo.read(path, head)
    return json.loads(data) if data is not None else None


class Node:
    """The web node's records and publisher, and what a job does when it finishes."""

    def __init__(self, store, tmp_path):
        self.records = SubmissionStore(tmp_path / "submissions.sqlite3")
        self.outbox = Outbox(tmp_path / "outbox", store)
        self.services = Services(
            None, self.records, store, None, None, self.outbox, _store_ready=True
        )

    def submit(self, sid: str) -> Submission:
        submission = Submission(
            id=sid,
            created_at=utc_now(),
            kind="predictions",
            suite="prefeval",
            task="mcq",
            setting="zero_shot",
            model_name=f"model-{sid}",
            file_sha256="ab" * 32,
        )
        self.records.add(submission)
        return submission

    def publisher_pass(self) -> None:
        self.services.publish_pending()

    def job_finishes(self, sid: str) -> None:
        """As submissions/jobs.py: the result and its finished request record in one outbox entry,
        and the submission marked finished with that request status."""
        submission = self.records.get(sid)
        self.outbox.publish_now(
            "result",
            {
                "record": minimal_record(sid, 0.5),
                "request": submission.request_record("finished"),
            },
        )
        self.records.update(sid, state="finished", request_status="finished")

    def job_fails(self, sid: str) -> None:
        self.records.update(sid, state="failed", error="bad file")


def test_a_submission_finished_before_any_publisher_pass_has_a_finished_request_record(
    store, tmp_path
):
    node = Node(store, tmp_path)
    submission = node.submit("fast-one")
    node.job_finishes(submission.id)
    node.publisher_pass()
    request = dataset_request(store, submission)
    assert request is not None, "no requests/ record in the dataset"
    assert request["status"] == "finished"
    assert request["predictions_sha256"] == "ab" * 32


def test_request_records_go_from_queued_to_their_final_state(store, tmp_path):
    node = Node(store, tmp_path)
    finished, failed = node.submit("will-finish"), node.submit("will-fail")
    node.publisher_pass()
    assert dataset_request(store, finished)["status"] == "queued"
    assert dataset_request(store, failed)["status"] == "queued"
    node.job_finishes(finished.id)
    node.job_fails(failed.id)
    node.publisher_pass()
    assert dataset_request(store, finished)["status"] == "finished"
    assert dataset_request(store, failed)["status"] == "failed"


def test_a_late_queued_record_never_undoes_finished(store, tmp_path):
    """The publisher read the submission while it ran and queued "queued" after the job's result
    entry: the outbox publishes them in that order, and the status does not go back."""
    node = Node(store, tmp_path)
    submission = node.submit("raced")
    node.job_finishes(submission.id)
    node.outbox.put("requests", {"requests": [submission.request_record("queued")]})
    node.outbox.drain()
    assert dataset_request(store, submission)["status"] == "finished"
