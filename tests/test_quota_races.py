"""Every daily quota and budget holds under concurrency: requests released together over HTTP
against a live service admit exactly the limit, never one more.

The limits are counted where the submission is written: records.SubmissionStore.admit() counts
every budget of the submission (intake.budgets_for: the identity's quota of the kind on the suite,
its failed validations there, and for a new Hugging Face account the daily budget all of them
share) inside its `BEGIN IMMEDIATE` transaction; a refused file takes its failed-validation slot
in one transaction (IdentityStore.take_failed_validation), a comparison on a hidden split its slot
in another (IdentityStore.take_comparison). The intake's early check only spares doomed work.

One live service for the module (budget of new accounts: 5; no worker until the comparisons,
which need two scored rows), the 200-item Re-Centering relevance split of tests/test_probing.py
installed hidden, and a config-only registered model `tiny` (its runs stay queued, then are
cancelled). Each race: one thread per request, all released by a barrier, every file distinct
(an identical file is refused as a duplicate). Run with -s for the figures: admitted of sent.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import client, make_predictions, reordered, wait_finished  # noqa: E402
from live_service import start_live_service  # noqa: E402
from test_probing import SUITE, TASK, above_the_floor, hidden_fixture, install  # noqa: E402

from evaluator.models import ModelRegistry  # noqa: E402
from submissions.identity import HF_NEW_PROVIDER, IdentityStore  # noqa: E402
from submissions.quotas import today  # noqa: E402
from submissions.records import SubmissionStore  # noqa: E402

pytestmark = pytest.mark.service

BUDGET = 5  # PERSONABOARD_HF_NEW_ACCOUNTS_DAILY_BUDGET of the service
ACCOUNTS, PER_ACCOUNT = 8, 10  # 80 uploads; each account's own quota (10) never binds
LIMIT, SENT = 3, 20  # each per-identity race: a limit of 3, 20 requests at once
RACE_DEADLINE_S = 180.0

Send = Callable[[httpx.Client], httpx.Response]


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    root = tmp_path_factory.mktemp("quota-races")
    service = start_live_service(
        root / "service",
        n_workers=0,
        extra_env={"PERSONABOARD_HF_NEW_ACCOUNTS_DAILY_BUDGET": str(BUDGET)},
    )
    try:
        service.gold = hidden_fixture(root / "hidden-split", public=False)
        service.ids = sorted(service.gold)
        install(service, root / "hidden-split")
        tiny = root / "tiny"
        tiny.mkdir()
        (tiny / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
        (tiny / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
        ModelRegistry(service.data_dir).add("tiny", tiny)
        service.figures = {}
        yield service
        print("\nconcurrent requests against each daily limit (admitted of sent):")
        for name, line in service.figures.items():
            print(f"  {name}: {line}")
    finally:
        service.stop()


def identities(svc) -> IdentityStore:
    return IdentityStore(SubmissionStore(svc.data_dir / "submissions.sqlite3"))


def answers(ids: list[str], k: int, bad: bool = False) -> bytes:
    """All NO but item k YES (k < 200), rotated by k // 200: a distinct file for every k. `bad`:
    item k answers MAYBE instead, which validation refuses (422 naming its line)."""
    flipped = ids[k % len(ids)]
    lines = [
        json.dumps({"id": i, "answer": ("MAYBE" if bad else "YES") if i == flipped else "NO"})
        for i in ids
    ]
    return reordered(("\n".join(lines) + "\n").encode(), k // len(ids))


def upload(body: bytes, model_name: str, suite: str = SUITE, task: str = TASK) -> Send:
    data = {"suite": suite, "task": task, "setting": "zero_shot", "model_name": model_name}
    files = {"file": ("predictions.jsonl", body, "application/x-ndjson")}
    return lambda http: http.post("/api/v1/submissions", data=data, files=files)


def race(svc, requests: list[tuple[str, Send]]) -> tuple[list[httpx.Response], float]:
    """Send every (token, request) from its own thread, all released at once by a barrier; the
    answers in order, and the seconds from release to the last answer."""
    barrier = threading.Barrier(len(requests) + 1)

    def one(token: str, send: Send) -> httpx.Response:
        with client(svc.base_url, timeout=RACE_DEADLINE_S, token=token) as http:
            barrier.wait(timeout=RACE_DEADLINE_S)
            return send(http)

    with ThreadPoolExecutor(len(requests)) as pool:
        futures = [pool.submit(one, token, send) for token, send in requests]
        barrier.wait(timeout=RACE_DEADLINE_S)
        started = time.monotonic()
        answered = [f.result(timeout=RACE_DEADLINE_S) for f in futures]
    return answered, time.monotonic() - started


def tally(svc, name: str, answered: list[httpx.Response], seconds: float, ok: int) -> Counter:
    """The statuses of a race (recorded for the figures), every refusal a 429 with Retry-After."""
    statuses = Counter(r.status_code for r in answered)
    admitted = statuses[ok]
    answers = ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))
    svc.figures[name] = f"{admitted} admitted of {len(answered)} sent ({answers}; {seconds:.1f} s)"
    for response in answered:
        if response.status_code == 429:
            detail = response.json()["detail"]
            assert response.headers["retry-after"] == str(detail["retry_after_s"]), detail
    return statuses


def refusals(answered: list[httpx.Response]) -> list[dict]:
    return [r.json()["detail"] for r in answered if r.status_code == 429]


def test_new_accounts_share_one_budget_under_concurrency(svc):
    """8 new Hugging Face accounts send 80 uploads at once against a shared budget of 5: 5 are
    admitted (before, the budget was read outside the admitting transaction: 9 were)."""
    store = identities(svc)
    tokens = []
    for k in range(ACCOUNTS):
        account = store.hf_user(f"fresh-{k}", HF_NEW_PROVIDER)
        tokens.append(store.issue_token(account.name)[1])
    requests = [
        (tokens[k % ACCOUNTS], upload(answers(svc.ids, k), f"fresh-{k % ACCOUNTS}-model"))
        for k in range(ACCOUNTS * PER_ACCOUNT)
    ]
    answered, seconds = race(svc, requests)
    statuses = tally(
        svc, f"{ACCOUNTS} new accounts, shared budget {BUDGET}", answered, seconds, 201
    )
    assert statuses == {201: BUDGET, 429: len(requests) - BUDGET}, (
        statuses,
        [r.text[:200] for r in answered if r.status_code not in (201, 429)],
    )
    expected = (
        f"the daily budget shared by all new Hugging Face accounts ({BUDGET} submissions) is "
        f"used up; it resets at {today().resets_at} (UTC midnight)"
    )
    for detail in refusals(answered):
        assert (detail["quota"], detail["limit"], detail["used"]) == (
            "new_accounts",
            BUDGET,
            BUDGET,
        )
        assert detail["message"] == expected
    assert store.new_accounts_submissions_since(today().start) == BUDGET


def test_prediction_uploads_admit_exactly_the_quota(svc):
    """20 uploads at once by one identity with a quota of 3 on the suite: 3 admitted; the quota is
    per suite, so an upload on another suite is still admitted."""
    token = svc.add_user("racer-uploads", predictions=LIMIT)
    requests = [(token, upload(answers(svc.ids, k), "racer-uploads")) for k in range(SENT)]
    answered, seconds = race(svc, requests)
    statuses = tally(svc, f"prediction uploads, quota {LIMIT}", answered, seconds, 201)
    assert statuses == {201: LIMIT, 429: SENT - LIMIT}, [r.text[:200] for r in answered]
    for detail in refusals(answered):
        assert (detail["quota"], detail["limit"], detail["used"]) == ("predictions", LIMIT, LIMIT)
        assert detail["message"].startswith(f"daily quota reached: {LIMIT} of {LIMIT} prediction")
    with client(svc.base_url, token=token) as http:
        elsewhere = upload(
            make_predictions(lambda item: True).body, "racer-uploads", "prefeval", "mcq"
        )
        response = elsewhere(http)
    assert response.status_code == 201, response.text


def test_failed_validations_take_exactly_the_quota(svc):
    """20 invalid files at once with a failed-validation quota of 3: 3 answered 422 (counted),
    17 429; then even a valid file is refused on that suite for the day."""
    token = svc.add_user("racer-invalid", failed_validations=LIMIT)
    requests = [
        (token, upload(answers(svc.ids, k, bad=True), "racer-invalid")) for k in range(SENT)
    ]
    answered, seconds = race(svc, requests)
    statuses = tally(svc, f"invalid files, failed-validation quota {LIMIT}", answered, seconds, 422)
    assert statuses == {422: LIMIT, 429: SENT - LIMIT}, [r.text[:200] for r in answered]
    for response in answered:
        if response.status_code == 422:  # the refusal names the line with the bad answer
            assert response.json()["detail"]["problems"][0]["line"] is not None, response.text
    for detail in refusals(answered):
        assert (detail["quota"], detail["limit"], detail["used"]) == (
            "failed_validations",
            LIMIT,
            LIMIT,
        )
    store = identities(svc)
    assert store.failed_validations_since("racer-invalid", SUITE, today().start) == LIMIT
    with client(svc.base_url, token=token) as http:
        valid = upload(answers(svc.ids, 0), "racer-invalid")(http)
    assert valid.status_code == 429 and valid.json()["detail"]["quota"] == "failed_validations"


def test_model_runs_admit_exactly_the_quota(svc):
    """12 distinct whole model runs (limits 3,000-3,011: the whole 3,000-item split, so each
    costs a run; a smoke run costs its share, tests/test_smoke_run_quota.py) at once with a
    model-run quota of 3: 3 admitted (then cancelled, so that no worker ever runs them)."""
    token = svc.add_user("racer-runs", model=LIMIT)
    sent = 12

    def run(limit: int) -> Send:
        body = {
            "model": "tiny",
            "suite": "prefeval",
            "task": "mcq",
            "setting": "zero_shot",
            "limit": 3000 + limit,
        }
        return lambda http: http.post("/api/v1/submissions", json=body)

    answered, seconds = race(svc, [(token, run(k + 1)) for k in range(sent)])
    statuses = tally(svc, f"model runs, quota {LIMIT}", answered, seconds, 201)
    assert statuses == {201: LIMIT, 429: sent - LIMIT}, [r.text[:200] for r in answered]
    for detail in refusals(answered):
        assert (detail["quota"], detail["limit"], detail["used"]) == ("model", LIMIT, LIMIT)
    with client(svc.base_url, token=svc.admin_token) as admin:
        for response in answered:
            if response.status_code == 201:
                sid = response.json()["id"]
                cancelled = admin.post(
                    f"/api/v1/admin/submissions/{sid}/cancel", json={"reason": "quota race"}
                )
                assert cancelled.status_code == 200, cancelled.text


def test_comparisons_on_a_hidden_split_take_exactly_the_quota(svc):
    """30 comparisons of two hidden-split rows at once with a quota of 3: 3 answered."""
    if not svc.workers:  # the comparison needs two scored rows
        svc.start_worker()
        svc.wait_workers_registered()
    rows = []
    for k, name in enumerate(("compared-a", "compared-b")):
        with client(svc.base_url, token=svc.add_user(name)) as http:
            released = above_the_floor(svc.gold, k)  # a first result released
            body = "".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in released.items())
            response = upload(body.encode(), name)(http)
            assert response.status_code == 201, response.text
            rows.append(response.json()["id"])
    with client(svc.base_url, token=svc.token) as http:
        for sid in rows:  # the queue holds the other races' uploads too: a generous deadline
            wait_finished(http, sid, timeout=300, logs=svc.logs)
    token = svc.add_user("racer-compare", comparisons=LIMIT)
    sent = 30
    params = {"a": rows[0], "b": rows[1]}
    answered, seconds = race(
        svc, [(token, lambda http: http.get("/api/v1/compare", params=params))] * sent
    )
    statuses = tally(svc, f"comparisons on a hidden split, quota {LIMIT}", answered, seconds, 200)
    assert statuses == {200: LIMIT, 429: sent - LIMIT}, [r.text[:200] for r in answered]
    for detail in refusals(answered):
        assert (detail["quota"], detail["limit"], detail["used"]) == ("comparisons", LIMIT, LIMIT)
    assert (
        len({json.dumps(r.json(), sort_keys=True) for r in answered if r.status_code == 200}) == 1
    )
