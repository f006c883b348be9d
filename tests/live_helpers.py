"""Helpers shared by the end-to-end tests, the fault tests and bench/bench_queue_latency.py.

They talk to a running service over HTTP only (httpx, never through a proxy). Gold labels are read
here, in the test process, to build predictions files with known scores: the tests are the
scorer's side; the service never sends gold to anyone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import httpx

SUITE, TASK = "prefeval", "mcq"
LABELS = "ABCD"
TERMINAL = ("finished", "failed")


def client(base_url: str, timeout: float = 60.0, token: str | None = None) -> httpx.Client:
    """An httpx client of a running service; with `token`, it submits as that token's identity."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base_url, trust_env=False, timeout=timeout, headers=headers)


@lru_cache(maxsize=1)
def split_items():
    from evaluator.registry import get_task

    return get_task(SUITE, TASK).load_split().items


@lru_cache(maxsize=1)
def tier_groups() -> dict[str, tuple[str, ...]]:
    from evaluator.registry import get_task

    return {g.name: g.tiers for g in get_task(SUITE, TASK).tier_groups}


def wrong_letter(gold: str) -> str:
    return next(letter for letter in LABELS if letter != gold)


@dataclass
class Predictions:
    body: bytes
    total: float  # expected total accuracy, computed exactly as correct / n
    tiers: dict[str, dict[str, float]]  # group -> tier -> expected accuracy

    def column_values(self) -> dict[str, float]:
        values = {"total": self.total}
        for group, tiers in self.tiers.items():
            for tier, value in tiers.items():
                values[f"{group}/{tier}"] = value
        return values


def make_predictions(correct: Callable[[object], bool]) -> Predictions:
    """A complete predictions file answering item i correctly iff correct(item); its exact scores."""
    lines, n_all, c_all = [], 0, 0
    counts: dict[str, dict[str, list[int]]] = {
        g: {t: [0, 0] for t in ts} for g, ts in tier_groups().items()
    }
    for item in split_items():
        ok = bool(correct(item))
        lines.append(
            json.dumps({"id": item.id, "answer": item.gold if ok else wrong_letter(item.gold)})
        )
        n_all += 1
        c_all += ok
        for group, tier in item.tiers.items():
            counts[group][tier][0] += ok
            counts[group][tier][1] += 1
    tiers = {g: {t: c / n for t, (c, n) in ts.items()} for g, ts in counts.items()}
    return Predictions(("\n".join(lines) + "\n").encode(), c_all / n_all, tiers)


def reordered(body: bytes, shift: int) -> bytes:
    """The same scores in another file: the lines rotated by `shift` and, for a shift k > 0, the
    k-th wrongly answered item given another wrong letter. Every item keeps its outcome (the same
    scores, the same paired comparison), but the answers differ: the service knows a file by its
    answers, and a mere rotation is the same answers (a 409 for its owner, a copy on the board).
    Tests that send one result several times send these. A body of another task (its ids not in
    prefeval/mcq) or with no wrong answer is only rotated."""
    lines = body.splitlines()
    if shift > 0:
        gold = {item.id: item.gold for item in split_items()}
        records = {n: json.loads(line) for n, line in enumerate(lines) if line.strip()}
        wrong = [
            n
            for n, r in records.items()
            if isinstance(r, dict) and r.get("id") in gold and r.get("answer") != gold[r["id"]]
        ]
        if wrong:
            n = wrong[(shift - 1) % len(wrong)]
            others = [letter for letter in LABELS if letter != gold[records[n]["id"]]]
            was = records[n]["answer"]
            records[n]["answer"] = others[
                (others.index(was) + 1) % len(others) if was in others else 0
            ]
            lines[n] = json.dumps(records[n]).encode()
    shift %= len(lines)
    return b"\n".join(lines[shift:] + lines[:shift]) + b"\n"


def explicit_only() -> Predictions:
    """Correct on the explicit form only: total exactly 1/3."""
    return make_predictions(lambda item: item.tiers["form"] == "explicit")


def submit(
    http: httpx.Client,
    body: bytes,
    setting: str = "zero_shot",
    model_name: str = "test-model",
    suite: str = SUITE,
    task: str = TASK,
    filename: str = "predictions.jsonl",
    **extra,
) -> httpx.Response:
    data = {"suite": suite, "task": task, "setting": setting, "model_name": model_name, **extra}
    data = {k: v for k, v in data.items() if v is not None}
    return http.post(
        "/api/v1/submissions", files={"file": (filename, body, "application/x-ndjson")}, data=data
    )


def submit_ok(http: httpx.Client, body: bytes, **kwargs) -> str:
    response = submit(http, body, **kwargs)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def status(http: httpx.Client, submission_id: str) -> dict:
    response = http.get(f"/api/v1/submissions/{submission_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_state(
    http: httpx.Client,
    submission_id: str,
    states=TERMINAL,
    timeout: float = 120.0,
    interval: float = 0.25,
    logs: Callable[[], str] | None = None,
) -> dict:
    """Poll the submission's status until it is in `states`. Every 0.25 s: each poll costs the web
    app ~5 ms of CPU, and the suite's waits add up on a 2-core machine (a test that times a
    recovery passes a shorter interval)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = status(http, submission_id)
        except httpx.TransportError:
            last = last  # the web app may be restarting
        else:
            if last["state"] in states:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"submission {submission_id} not in {states} after {timeout}s; last status: {last}"
                + (f"\n{logs()}" if logs else "")
            )
        time.sleep(interval)


def wait_finished(
    http: httpx.Client, submission_id: str, timeout: float = 120.0, logs=None
) -> dict:
    final = wait_state(http, submission_id, TERMINAL, timeout, logs=logs)
    assert final["state"] == "finished", (
        f"submission {submission_id} ended {final['state']}: {final.get('error')}"
        + (f"\n{logs()}" if logs else "")
    )
    return final


def wait_until(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def run_cli(*args: str, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """`personaboard ARGS` as a user runs it, with the service's environment."""
    script = Path(sys.executable).parent / "personaboard"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "backend.cli"]
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=root, env=env, timeout=timeout
    )


def register_model(svc, name: str, folder: Path) -> dict:
    """`personaboard models add NAME FOLDER` into the service's data folder; the registry entry."""
    proc = run_cli("models", "add", name, str(folder), env=svc.env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)[name]


# -- processes, read from /proc (the supervisor and fault tests) -------------------------------


def _pid_alive(pid: int) -> bool:
    from backend.processes import pid_alive

    return pid_alive(pid)


def descendants(pid: int) -> set[int]:
    """All live descendants of pid, read from /proc."""
    from backend.processes import proc_stat

    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        fields = proc_stat(entry) if entry.isdigit() else None
        if fields:
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return {p for p in found if _pid_alive(p)}


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def scrape(http) -> dict[tuple[str, tuple], float]:
    """GET /metrics parsed as Prometheus text: {(sample name, sorted labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    response = http.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(
        response.text
    ):  # raises on anything not Prometheus text
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples
