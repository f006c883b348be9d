"""One admission path: the same bad submissions through the REST API, the Gradio events of the real
app (/gradio_api/call/submit and /submit_model, the file through Gradio's upload route) and the
CLI (`personaboard submit`: every case through its entry point, backend.cli.main, in this process
with the service's environment, and a few also as a subprocess, the installed command) get the
same status, message and problems from each.

The intake (submissions/intake.py) decides every refusal; each medium only maps it: the API to its
status and JSON body (Retry-After on a 429), a submit tab to its status text and its `refusal`
output, the CLI to the refusal as JSON on stdout, its message on stderr and exit status 2.

One live service for the module, with no worker (an accepted submission stays queued, so the
duplicates' answers, which name its state, hold still), an upload limit of 40,000 bytes, the
PersonaFeedback fixture split installed without its memory data (on which `rag`
cannot be served), a config-only registered model `tiny`, a user with no quota left and another
who owns a model name. Run with -s for the figures: cases, paths, seconds per path. The CLI runs in
process because a subprocess costs seconds of imports per case on a busy machine; the ones that
also run as subprocesses (SUBPROCESS_CASES: a file over the upload limit the command reads from
its environment, and a run) keep the installed `personaboard` entry point covered.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import run_cli  # noqa: E402
from live_service import start_live_service  # noqa: E402

from backend import cli as cli_main  # noqa: E402
from evaluator.models import ModelRegistry  # noqa: E402
from evaluator.suite import clear_split_cache  # noqa: E402

pytestmark = pytest.mark.service

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "personafeedback"
UPLOAD_LIMIT = 40_000
PF = {"suite": "personafeedback", "task": "binary_choice", "setting": "persona"}
MCQ = {"suite": "prefeval", "task": "mcq", "setting": "zero_shot"}
HTTP_PARALLEL = 4  # the API's calls are independent refusals: a few at once
# the cases the installed command answers too, a subprocess each (all at once, meanwhile the rest)
SUBPROCESS_CASES = ("over the size limit", "unknown model")


@dataclass(frozen=True)
class Case:
    """A bad submission: a predictions upload (`body`; None: no file) unless `fields` names a
    `model`; the status and a part of the message every path must answer."""

    status: int
    says: str
    fields: dict
    body: bytes | None = b""
    user: str = "tester"

    @property
    def is_model(self) -> bool:
        return "model" in self.fields


@dataclass(frozen=True)
class Answer:
    status: int
    message: str
    problems: list = field(default_factory=list)
    shown: str = ""  # what the medium shows a person: the tab's text, the CLI's stderr

    def same(self) -> tuple:
        return self.status, self.message, self.problems


def upload(**fields) -> dict:
    return {**PF, "model_name": "admission", **fields}


def run(**fields) -> dict:
    return {"model": "tiny", **MCQ, **fields}


def jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def build_cases(ids: list[str], sids: dict[str, str]) -> dict[str, Case]:
    """The bad submissions, from the installed split's public ids and the submissions made first."""
    valid = jsonl([{"id": i, "label": "1"} for i in ids])
    lines = valid.splitlines(keepends=True)

    def line(n: int, record: dict | bytes) -> bytes:  # the valid file with line n replaced
        raw = record if isinstance(record, bytes) else jsonl([record])
        return b"".join(lines[: n - 1] + [raw] + lines[n:])

    return {
        # which suite, task and setting
        "unknown suite": Case(422, "unknown suite 'nope'", upload(suite="nope"), valid),
        "unknown task": Case(422, "has no task 'nope'", upload(task="nope"), valid),
        "task of another suite": Case(404, "(a task of prefeval", upload(task="mcq"), valid),
        "setting no suite has": Case(422, "no setting 'few_shot'", upload(setting="few_shot")),
        "setting of another suite": Case(404, "a setting of", upload(setting="zero_shot"), valid),
        "rag without memory data": Case(409, "no memory data", upload(setting="rag"), valid),
        "split not installed": Case(
            409, "splits install realpref", upload(suite="realpref", task="mcq", setting="cot")
        ),
        "judge not configured": Case(
            409, "no judge model", upload(**{**MCQ, "task": "open_ended"}), b"{}\n"
        ),
        # the form
        "missing suite": Case(422, "suite is required", upload(suite=""), valid),
        "missing model name": Case(422, "model_name is required", upload(model_name=" "), valid),
        "missing file": Case(422, "file is required", upload(), None),
        "model name too long": Case(422, "longer than 200", upload(model_name="m" * 201), valid),
        "bidi override in name": Case(422, "U+202E", upload(model_name="evil\u202eexe"), valid),
        "link not http": Case(422, "link must be", upload(link="javascript:alert(1)"), valid),
        "description too long": Case(
            422, "longer than 5000", upload(description="d" * 5001), valid
        ),
        # the file
        "line not JSON": Case(422, "line 3", upload(), line(3, b"{not json\n")),
        "label not allowed": Case(
            422, "field 'label'", upload(), line(7, {"id": ids[6], "label": "B"})
        ),
        "duplicate id": Case(422, "duplicate", upload(), line(10, {"id": ids[1], "label": "1"})),
        "missing ids": Case(422, "item ids have no prediction", upload(), b"".join(lines[:20])),
        "unknown id": Case(422, "unknown id", upload(), line(1, {"id": "nope/1", "label": "1"})),
        "empty file": Case(422, "rejected", upload(), b""),
        "binary junk": Case(422, "rejected", upload(), bytes(range(256)) * 4),
        "over the size limit": Case(413, f"limit of {UPLOAD_LIMIT} bytes", upload(), b"x" * 50_000),
        # admitted, or not, with what is there already
        "quota used up": Case(429, "daily quota reached", upload(), valid, user="spent"),
        "same file again": Case(409, sids["upload"], upload(model_name="dup-source"), valid),
        "another's model name": Case(
            403,
            "belongs to another submitter",
            upload(model_name="owned-name"),
            valid.replace(b'"1"', b'"2"'),
        ),
        # model runs
        "unknown model": Case(422, "not a registered model!", run(model="not a registered model!")),
        "model on a Hub not reached": Case(
            503, "Hub cannot be reached", run(model="some-org/some-model")
        ),
        "a URL for a model": Case(422, "http", run(model="http://example.org/model")),
        "missing model": Case(422, "model is required", run(model="")),
        "limit out of range": Case(422, "limit must be", run(limit=2_000_000)),
        "run: judge not configured": Case(409, "no judge model", run(task="open_ended")),
        "protocol the model cannot use": Case(422, "reward", run(protocol="reward")),
        "run: setting of another suite": Case(
            404, "a setting of", run(**{**PF, "setting": "zero_shot"})
        ),
        "run: rag without memory data": Case(
            409, "no memory data", run(**{**PF, "setting": "rag"})
        ),
        "run: split not installed": Case(409, "splits install", run(suite="realpref")),
        "same run again": Case(409, sids["run"], run()),
        "run: quota used up": Case(429, "daily quota reached", run(), user="spent"),
    }


CASE_NAMES = list(build_cases([f"x/{i}" for i in range(30)], {"upload": "", "run": ""}))


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    root = tmp_path_factory.mktemp("admission")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PERSONABOARD_MAX_UPLOAD_BYTES", str(UPLOAD_LIMIT))
        service = start_live_service(root / "service", n_workers=0)
    try:
        no_memory = root / "no-memory"
        shutil.copytree(FIXTURE, no_memory)
        shutil.rmtree(no_memory / "memory")
        with service_environment(service):  # in process: the CLI's subprocess runs come later
            installed = cli_here("splits", "install", PF["suite"], "--source", str(no_memory))
        assert installed.returncode == 0, installed.stderr
        tiny = root / "tiny"
        tiny.mkdir()
        (tiny / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
        (tiny / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
        ModelRegistry(service.data_dir).add("tiny", tiny)
        service.tokens = {
            "tester": service.token,
            "spent": service.add_user("spent", predictions=0, model=0),
            "owner": service.add_user("owner"),
        }
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="module")
def clients(svc):
    """An HTTP client per identity, shared by the threads that send the cases (httpx's Client is
    thread-safe): one connection pool for the module instead of a client per request."""
    with contextlib.ExitStack() as stack:
        yield {
            user: stack.enter_context(svc.http(token=token)) for user, token in svc.tokens.items()
        }


@pytest.fixture(scope="module")
def cases(svc, clients) -> dict[str, Case]:
    """The cases, after what they refer to was accepted: a file, a run, a name another owns."""
    http = clients["tester"]
    inputs = http.get("/api/v1/suites/personafeedback/tasks/binary_choice/inputs")
    assert inputs.status_code == 200, inputs.text
    ids = [json.loads(line)["id"] for line in inputs.text.splitlines()]
    valid = jsonl([{"id": i, "label": "1"} for i in ids])
    first = api_post(http, Case(0, "", upload(model_name="dup-source"), valid))
    run_first = api_post(http, Case(0, "", run()))
    owned = api_post(clients["owner"], Case(0, "", upload(model_name="owned-name"), valid))
    for answer in (first, run_first, owned):
        assert answer.status_code == 201, answer.text
    return build_cases(ids, {"upload": first.json()["id"], "run": run_first.json()["id"]})


# -- the three paths -------------------------------------------------------------------------------


def api_post(http: httpx.Client, case: Case) -> httpx.Response:
    if case.is_model:
        return http.post("/api/v1/submissions", json=case.fields)
    parts: dict = {name: (None, value) for name, value in case.fields.items()}  # plain fields
    if case.body is not None:
        parts["file"] = ("predictions.jsonl", case.body)
    return http.post("/api/v1/submissions", files=parts)  # multipart, with or without a file


def via_api(svc, clients: dict[str, httpx.Client], case: Case) -> Answer:
    response = api_post(clients[case.user], case)
    detail = response.json().get("detail") if response.status_code >= 400 else None
    if detail is None:  # an answer that is no refusal: said as it is, for the assertion
        return Answer(response.status_code, response.text[:500])
    if response.status_code == 429:  # HTTP's own part of the answer
        assert response.headers["retry-after"] == str(detail["retry_after_s"])
    return Answer(response.status_code, detail["message"], detail["problems"])


def gradio_call(http: httpx.Client, name: str, data: list) -> list:
    started = http.post(f"/gradio_api/call/{name}", json={"data": data})
    assert started.status_code == 200, started.text
    stream = http.get(f"/gradio_api/call/{name}/{started.json()['event_id']}")
    events = [line for line in stream.text.splitlines() if line.startswith("data:")]
    if not stream.text.startswith("event: complete"):  # Gradio's own error: no output
        return [stream.text[:500], None, None, {"status": 0, "message": stream.text[:500]}]
    return json.loads(events[-1].removeprefix("data:"))


def via_gradio(svc, clients: dict[str, httpx.Client], case: Case) -> Answer:
    token, http = svc.tokens[case.user], clients[case.user]
    f = case.fields
    if case.is_model:
        data = [f["model"], "", "auto", f["suite"], f["task"], [f["setting"]]]
        data += [f.get("protocol", "default"), f.get("limit"), "", token]
        status, _, _, refusals = gradio_call(http, "submit_model", data)
        if isinstance(refusals, dict):  # Gradio's own error
            refusals = [{**refusals, "setting": f["setting"]}]
        refusal = refusals[0] if len(refusals) == 1 else {"status": 0, "message": status}
        assert refusal.pop("setting", f["setting"]) == f["setting"]
    else:
        file_data = None
        if case.body is not None:  # through Gradio's upload route, as the page sends it
            stored = http.post(
                "/gradio_api/upload", files={"files": ("predictions.jsonl", case.body)}
            )
            assert stored.status_code == 200, stored.text
            file_data = {
                "path": stored.json()[0],
                "orig_name": "predictions.jsonl",
                "meta": {"_type": "gradio.FileData"},
            }
        data = [file_data, *(f[k] for k in ("suite", "task", "setting", "model_name"))]
        data += [f.get("link", ""), f.get("description", ""), token]
        out = gradio_call(http, "submit", data)
        status, refusal = out[0], out[3]
        if file_data is not None and 400 <= refusal["status"] < 500 and refusal["status"] != 401:
            assert out[4] is None, out[4]  # refused for good: the file is gone, the tab's box empty
    problems = refusal.get("problems", [])
    return Answer(refusal["status"], refusal["message"], problems, html.unescape(status))


def cli_args(case: Case, folder: Path) -> list[str]:
    f = case.fields
    where = ["--user", case.user, *(f"--{k}={f[k]}" for k in ("suite", "task", "setting"))]
    if case.is_model:
        options = [f"--{k}={f[k]}" for k in ("protocol", "limit") if k in f]
        return ["submit", "model", *where, *options, "--", f["model"]]
    path = ""
    if case.body is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "predictions.jsonl").write_bytes(case.body)
        path = str(folder / "predictions.jsonl")
    texts = [f"--model-name={f['model_name']}", f"--link={f.get('link', '')}"]
    texts.append(f"--description={f.get('description', '')}")
    return ["submit", "predictions", *where, *texts, "--", path]


@contextlib.contextmanager
def service_environment(svc):
    """This process's environment as run_cli gives the subprocess (the service's, no more), and
    its split cache empty as a fresh process has it; both restored afterwards. The CLI reads its
    settings (data folder, Redis, upload limit, judge) from os.environ on every call."""
    with pytest.MonkeyPatch.context() as env:
        for key in set(os.environ) - set(svc.env):
            env.delenv(key)
        for key, value in svc.env.items():
            env.setenv(key, value)
        clear_split_cache()
        try:
            yield
        finally:
            clear_split_cache()  # splits read from this service's data folder stay with it


def cli_here(*args: str) -> subprocess.CompletedProcess:
    """`personaboard ARGS` through its entry point (backend.cli.main) in this process, inside
    service_environment: its exit status, stdout and stderr, as run_cli returns them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main.main(list(args))
        except SystemExit as exit:  # argparse's refusal of the command line, as the command exits
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    return subprocess.CompletedProcess(
        ["personaboard", *args], code, out.getvalue(), err.getvalue()
    )


def cli_answer(done: subprocess.CompletedProcess) -> Answer:
    if done.returncode != 2 or not done.stdout.startswith("{"):
        return Answer(done.returncode, f"{done.stdout[:300]} {done.stderr[-300:]}")
    refusal = json.loads(done.stdout)
    if "status" not in refusal:  # accepted
        return Answer(0, done.stdout[:300])
    return Answer(refusal["status"], refusal["message"], refusal["problems"], done.stderr)


@pytest.fixture(scope="module")
def answers(svc, cases, clients, tmp_path_factory) -> dict[str, dict[str, Answer]]:
    """Every case through every path: the API's requests and the tabs' events a few at a time, the
    CLI in this process one case after another, and SUBPROCESS_CASES through the installed command
    too, in subprocesses started first that run meanwhile."""
    folder = tmp_path_factory.mktemp("cli-files")

    def files(name: str) -> Path:
        return folder / name.replace(" ", "-").replace("'", "")

    seconds: dict[str, float] = {}
    found: dict[str, dict[str, Answer]] = {name: {} for name in cases}
    first = time.monotonic()
    with (
        ThreadPoolExecutor(len(SUBPROCESS_CASES)) as spawner,
        ThreadPoolExecutor(HTTP_PARALLEL) as pool,
    ):
        spawned = {
            name: spawner.submit(run_cli, *cli_args(cases[name], files(name) / "sub"), env=svc.env)
            for name in SUBPROCESS_CASES
        }
        started = time.monotonic()
        sent = {name: pool.submit(via_api, svc, clients, case) for name, case in cases.items()}
        for name, answer in sent.items():
            found[name]["api"] = answer.result()
        seconds["api"] = time.monotonic() - started
        # The tabs' a few at a time too: cases that send the same file each get a stored file of
        # their own (space/uploads.py own_link), so one submit's discard leaves the others'.
        started = time.monotonic()
        sent = {name: pool.submit(via_gradio, svc, clients, case) for name, case in cases.items()}
        for name, answer in sent.items():
            found[name]["gradio"] = answer.result()
        seconds["gradio"] = time.monotonic() - started
        started = time.monotonic()
        with service_environment(svc):
            for name, case in cases.items():
                found[name]["cli"] = cli_answer(cli_here(*cli_args(case, files(name))))
        seconds["cli in process"] = time.monotonic() - started
        for name, done in spawned.items():
            found[name]["cli subprocess"] = cli_answer(done.result())
        seconds[f"{len(spawned)} cli subprocesses (alongside)"] = time.monotonic() - first
    print(
        f"\n{len(cases)} bad submissions x 3 paths: "
        + ", ".join(f"{path} {s:.1f} s" for path, s in seconds.items())
    )
    return found


@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_path_gives_the_intakes_answer(name, cases, answers):
    case, by_path = cases[name], answers[name]
    api, gradio = by_path["api"], by_path["gradio"]
    clis = [answer for path, answer in by_path.items() if path.startswith("cli")]
    assert len(clis) == 1 + (name in SUBPROCESS_CASES), by_path.keys()
    assert api.status == case.status and case.says in api.message, api
    assert gradio.same() == api.same(), (gradio, api)
    for cli in clis:
        assert cli.same() == api.same(), (cli, api)
    assert api.problems and all({"line", "field", "message"} <= set(p) for p in api.problems)
    # and each medium shows it to a person: the tab each problem, the CLI the message
    for problem in api.problems:
        assert problem["message"] in gradio.shown, (problem, gradio.shown)
    for cli in clis:
        assert f"error: {api.message}" in cli.shown, cli.shown


def test_nothing_refused_was_recorded(svc, clients, answers):
    listed = clients["tester"].get("/api/v1/submissions", params={"limit": 1000})
    submissions = listed.json()["submissions"]
    assert len(submissions) == 3, [(s["model_name"], s["state"]) for s in submissions]  # the first
