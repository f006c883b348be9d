"""Each upload through Gradio's real upload route is a file of its own (space/uploads.py own_link):
Gradio names an upload's folder by its content, so two people uploading the same file shared one
path and the first submit's discard removed the file the second was about to submit."""

from __future__ import annotations

import gradio as gr
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from backend.app import GRADIO_UPLOAD_PATH
from space.uploads import UploadPathAlias, discard_upload, path_of, uploaded_file


@pytest.fixture
def client(tmp_path, monkeypatch):
    """The upload route of a real mounted Gradio app, behind the app's UploadPathAlias."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio-uploads"))
    with gr.Blocks() as blocks:
        gr.File()
    app = gr.mount_gradio_app(FastAPI(), blocks, path="/")
    app.add_middleware(UploadPathAlias, upload_path=GRADIO_UPLOAD_PATH)
    with TestClient(app) as http:
        yield http


def upload(http: TestClient, body: bytes, name: str = "predictions.jsonl") -> str:
    answer = http.post(GRADIO_UPLOAD_PATH, files={"files": (name, body)})
    assert answer.status_code == 200, answer.text
    [alias] = answer.json()
    return alias


def test_the_same_file_uploaded_twice_is_two_files_each_submitted_on_its_own(client, tmp_path):
    body = b'{"id": "a", "label": "1"}\n'
    first, second = upload(client, body), upload(client, body)
    assert first != second and first.startswith("upload/") and second.startswith("upload/")
    assert str(tmp_path) not in first + second  # still no server path shown
    paths = [uploaded_file(path_of(alias)) for alias in (first, second)]
    assert all(p.read_bytes() == body for p in paths)
    discard_upload(paths[0])  # the first submit is done with its file
    assert not paths[0].exists()
    assert uploaded_file(path_of(second)).read_bytes() == body  # the second can still submit it
    discard_upload(paths[1])
    root = tmp_path / "gradio-uploads"
    assert not any(p.is_file() for p in root.rglob("*"))  # nothing of either upload left


def test_a_link_to_an_upload_reads_its_bytes(client):
    alias = upload(client, b"line\n", "answers.jsonl")
    got = client.get(f"/gradio_api/file={alias}")
    assert got.status_code == 200 and got.content == b"line\n"
