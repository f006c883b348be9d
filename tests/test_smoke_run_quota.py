"""Smoke runs over HTTP against a live service (no worker: runs stay queued): a model run with a
`limit` takes its share of the split's items from the daily model-run quota, at least 0.1 of a
run (submissions/quotas.py), counted in admit()'s transaction, so trying a model does not spend
the day, and concurrent smoke runs still admit exactly what the quota holds."""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import client  # noqa: E402

from evaluator.models import ModelRegistry  # noqa: E402

pytestmark = pytest.mark.service
DEADLINE_S = 180.0


def run(limit: int | None, setting: str = "zero_shot") -> dict:
    body = {"model": "tiny", "suite": "prefeval", "task": "mcq", "setting": setting}
    return body | ({"limit": limit} if limit is not None else {})


def test_smoke_runs_cost_their_share_of_the_model_run_quota(start_service, tmp_path):
    svc = start_service(tmp_path / "service", n_workers=0)
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (tiny / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
    ModelRegistry(svc.data_dir).add("tiny", tiny)

    # the four smoke runs, then the day's four whole runs: all admitted
    token = svc.add_user("tryer", model=4)
    with client(svc.base_url, token=token) as http:
        for limit in (30, 60, 12, 4):
            answer = http.post("/api/v1/submissions", json=run(limit))
            assert answer.status_code == 201, answer.text
        for setting in ("zero_shot", "reminder", "cot", "self_critic"):
            answer = http.post("/api/v1/submissions", json=run(None, setting))
            assert answer.status_code == 201, answer.text
        refused = http.post("/api/v1/submissions", json=run(100))
    assert refused.status_code == 429, refused.text
    detail = refused.json()["detail"]
    assert (detail["quota"], detail["used"], detail["limit"]) == ("model", 4.4, 4)
    assert refused.headers["retry-after"] == str(detail["retry_after_s"])

    # a quota of 1: 15 distinct smoke runs (0.1 each) released at once admit exactly 10
    token = svc.add_user("racer", model=1)
    barrier = threading.Barrier(15)

    def one(limit: int) -> int:
        with client(svc.base_url, timeout=DEADLINE_S, token=token) as http:
            barrier.wait(timeout=DEADLINE_S)
            return http.post("/api/v1/submissions", json=run(limit)).status_code

    with ThreadPoolExecutor(15) as pool:
        statuses = sorted(pool.map(one, range(40, 55)))  # limits none of the above used
    assert statuses == [201] * 10 + [429] * 5, statuses
