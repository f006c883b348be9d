"""The UI's Gradio queue polls for work every QUEUE_IDLE_POLL_S while idle (backend/app.py), not
every millisecond, and still runs the events it is given."""

from __future__ import annotations

import gradio as gr
from fastapi import FastAPI
from fastapi.testclient import TestClient

from backend.app import QUEUE_IDLE_POLL_S, slow_idle_queue_poll


def mounted_echo() -> tuple[FastAPI, gr.Blocks]:
    with gr.Blocks() as blocks:
        text = gr.Textbox()
        out = gr.Textbox()
        text.submit(lambda value: value[::-1], text, out, api_name="reverse")
    app = gr.mount_gradio_app(FastAPI(), blocks, path="")
    return app, blocks


def test_the_queue_polls_at_the_slower_pace_and_still_answers():
    app, blocks = mounted_echo()
    assert blocks._queue.sleep_when_free < QUEUE_IDLE_POLL_S  # Gradio's own: 1 ms
    slow_idle_queue_poll(blocks)
    assert blocks._queue.sleep_when_free == QUEUE_IDLE_POLL_S
    with TestClient(app) as http:  # the lifespan starts the queue's loop
        for word in ("idle", "again"):  # an event, then another after the queue went idle
            started = http.post("/gradio_api/call/reverse", json={"data": [word]})
            assert started.status_code == 200, started.text
            answer = http.get(f"/gradio_api/call/reverse/{started.json()['event_id']}")
            assert answer.text.startswith("event: complete"), answer.text
            assert f'["{word[::-1]}"]' in answer.text


def test_never_faster_than_gradios_own_pace():
    _, blocks = mounted_echo()
    blocks._queue.sleep_when_free = 0.05  # as Gradio sets it on Windows
    slow_idle_queue_poll(blocks)
    assert blocks._queue.sleep_when_free == 0.05
