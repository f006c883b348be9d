"""A tiny random model's PrefEval mcq runs, item by item: the details
file a job publishes holds each item's prompt as sent, raw output, the rule that read the answer
(or `unparsed`) and real nulls where no answer was read; the Items tab shows them formatted; the
record, the board and its downloads carry the unparsed count, and a row where more than a tenth
failed to parse is marked on the board.

Real parts throughout: the transformers backend on CPU, the run's own checkpoint, the job's
details file and result record, a git results store and the read path over it."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_tiny_model  # noqa: E402
from unit.test_tab_handlers import Services  # noqa: E402

from evaluator.backends import ModelSpec  # noqa: E402
from evaluator.backends.pool import EnginePool  # noqa: E402
from evaluator.item_records import (  # noqa: E402
    PROMPT_CHARS,
    PROMPT_HEAD,
    PROMPT_MESSAGES,
    PROMPT_TAIL,
    TEXT_CHARS,
    cap_text,
    capped_messages,
)
from evaluator.model_eval import Checkpoint, run_model  # noqa: E402
from evaluator.phases import add_phase_reporter, remove_phase_reporter  # noqa: E402
from evaluator.protocols import LOGPROB_RULE, UNPARSED  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.scoring import score_answers, split_provenance  # noqa: E402
from evaluator.settings import DATA_DIR_ENV, load_evaluator_settings  # noqa: E402
from leaderboard.readpath import Filters, LeaderboardCache  # noqa: E402
from space.choices import ALL  # noqa: E402
from space.tabs import explorer, leaderboard  # noqa: E402
from submissions.details import details_file  # noqa: E402
from submissions.jobs import result_record  # noqa: E402
from submissions.records import Submission, utc_now  # noqa: E402

pytestmark = pytest.mark.model

LIMIT = 6
PHASES_SEEN: dict[str, dict] = {}  # per run: the phases reported and the progress reports
RUNS = {"gen-1": "generate_parse", "lp-1": "choice_logprobs"}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Two runs of one tiny model on 6 PrefEval mcq items (generate_parse: a random model writes
    no <choice> tag; choice_logprobs: every answer read), published as a job publishes them."""
    root = tmp_path_factory.mktemp("run-details")
    patch = pytest.MonkeyPatch()
    patch.setenv(DATA_DIR_ENV, str(root / "data"))
    folder = build_tiny_model(root / "gen", "generative", seed=21)
    spec = ModelSpec("tiny-gen", str(folder), "generative", "r0")
    task = get_task("prefeval", "mcq")
    services = Services(root)
    runs = {}
    pool = EnginePool()  # as a worker loads its engines (the second run finds it warm)
    for sid, protocol in RUNS.items():
        phases: list[str] = []
        reports: list[dict] = []
        add_phase_reporter(phases.append)
        try:
            backend, _ = pool.acquire(spec, "transformers", device="cpu")
            checkpoint = Checkpoint(load_evaluator_settings().checkpoints_dir / f"{sid}.jsonl")
            run = run_model(task, "zero_shot", backend, protocol, LIMIT, checkpoint, reports.append)
        finally:
            remove_phase_reporter(phases.append)
        PHASES_SEEN[sid] = {"phases": phases, "reports": reports}
        metrics = score_answers(task, run.split, run.answers)
        metrics.update(split_provenance(task, run.split, task.load_split()))
        model = {"name": "tiny-gen", "source": "local", "revision": "r0"}
        submission = Submission(
            id=sid,
            created_at=utc_now(),
            kind="model",
            suite="prefeval",
            task="mcq",
            setting="zero_shot",
            model_name=f"tiny {protocol}",
            state="finished",
            details={"model": {**model, "model_type": "generative"}, "protocol": protocol},
        )
        record = result_record(submission, metrics, {}, run.stats).published()
        revision = services.results.publish(record, details=details_file(task, submission))
        services.records.add(
            dataclasses.replace(submission, revision=revision, result=record["metrics"])
        )
        runs[sid] = (run, record)
    yield services, task, runs
    patch.undo()


def published_details(services, sid: str) -> pd.DataFrame:
    data = services.results.published_details("prefeval", "mcq", sid)
    assert data is not None, "the job published no details file"
    return pd.read_parquet(io.BytesIO(data))


def test_the_details_hold_each_items_prompt_output_rule_and_real_nulls(published):
    services, task, runs = published
    frame = published_details(services, "gen-1")
    run, _ = runs["gen-1"]
    assert len(frame) == LIMIT and set(frame["item_id"]) == set(run.answers)
    items = {item.id: item.public for item in run.split.items}
    unanswered = frame["answer"].isna()
    # a random model writes no <choice> tag: every answer is a real null, found by isna()
    assert unanswered.sum() == sum(a is None for a in run.answers.values()) > 0
    assert (frame.loc[unanswered, "rule"] == UNPARSED).all()
    assert "null" not in set(frame["answer"].dropna())
    for row in frame.to_dict(orient="records"):
        public = items[row["item_id"]]
        messages = json.loads(row["prompt"])
        assert messages[0]["role"] == "system"
        assert public["question"] in messages[-1]["content"]  # the question and its options
        assert all(text in messages[-1]["content"] for text in public["options"].values())
        if public["form"] == "explicit":  # the model's own reply to the preference, as sent
            assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert isinstance(row["raw"], str) and row["raw_chars"] == len(row["raw"])
        assert row["prompt_tokens"] > 0 and re.fullmatch(r"[0-9a-f]{64}", row["prompt_sha256"])
        elided = [m for m in messages if m["role"] == "elided"]
        assert row["prompt_messages"] == len(messages) - len(elided) + sum(
            int(m["content"].split()[0]) for m in elided
        )
        assert row["logprobs"] is None
    logprob = published_details(services, "lp-1")
    assert logprob["answer"].notna().all() and (logprob["rule"] == LOGPROB_RULE).all()
    assert logprob["raw"].isna().all()  # nothing generated for the answer: a null, not ""
    for text in logprob["logprobs"]:
        scores = json.loads(text)
        assert set(scores) == {"A", "B", "C", "D"} and all(v <= 0 for v in scores.values())


def test_stored_texts_are_capped_and_say_so():
    long = "x" * (TEXT_CHARS + 50)
    assert cap_text(long).startswith("x" * TEXT_CHARS) and "50 more characters" in cap_text(long)
    chat = [{"role": "user" if k % 2 else "assistant", "content": f"m{k}"} for k in range(50)]
    kept = capped_messages(chat)
    head, tail = PROMPT_HEAD, PROMPT_TAIL
    assert len(kept) == head + 1 + tail and kept[head]["role"] == "elided"
    assert f"{50 - head - tail} messages" in kept[head]["content"]
    assert kept[0]["content"] == "m0" and kept[-1]["content"] == "m49"
    assert capped_messages(chat[:PROMPT_MESSAGES]) == chat[:PROMPT_MESSAGES]  # short: as it is
    # long messages: each end keeps up to half the character budget, the question always
    wordy = [{"role": "user", "content": f"{k}" + "y" * 1000} for k in range(12)]
    kept = capped_messages(wordy)
    assert sum(len(m["content"]) for m in kept if m["role"] != "elided") <= PROMPT_CHARS + 10
    assert kept[-1] == wordy[-1] and kept[0] == wordy[0]


def test_the_items_tab_shows_the_prompt_and_output_formatted(published):
    services, _, runs = published
    view = explorer.items_view(services, "gen-1", ALL, ALL, 1)
    run, _ = runs["gen-1"]
    assert f"Items 1–{LIMIT} of {LIMIT}" in view.table
    assert "Prompt and output" in view.table and "prompt as sent:" in view.table
    # the conversation as turns, the options as lettered lines: not the JSON they are stored as
    assert 'class="pb-msg pb-msg-system"' in view.table and "<b>A.</b>" in view.table
    assert '{"A":' not in view.table and '[{"role"' not in view.table
    frame = published_details(services, "gen-1")
    for raw in frame["raw"]:
        assert html.escape(raw) in view.table  # the raw output, escaped
    assert view.table.count("no answer") == frame["answer"].isna().sum()
    assert "read by:</span> unparsed" in view.table
    logprob = explorer.items_view(services, "lp-1", ALL, ALL, 1).table
    assert "log-probabilities:" in logprob and LOGPROB_RULE in html.unescape(logprob)


def test_the_record_board_and_downloads_carry_the_unparsed_count_and_mark(published):
    services, _, runs = published
    (gen, gen_record), (_, lp_record) = runs["gen-1"], runs["lp-1"]
    unparsed = sum(a is None for a in gen.answers.values())
    assert gen_record["provenance"]["unparsed"] == unparsed > LIMIT / 10
    assert lp_record["provenance"]["unparsed"] == 0
    table = LeaderboardCache(services.results, lambda: []).table()
    for fmt in ("json", "csv", "parquet"):
        body = table.body(Filters(suite="prefeval", task="mcq"), fmt).content
        frame = (
            pd.DataFrame(json.loads(body))
            if fmt == "json"
            else pd.read_csv(io.BytesIO(body))
            if fmt == "csv"
            else pd.read_parquet(io.BytesIO(body))
        )
        rows = frame.set_index("submission_id")
        assert rows.loc["gen-1", "unparsed"] == unparsed and rows.loc["lp-1", "unparsed"] == 0
        assert str(rows.loc["gen-1", "parse_warning"]).lower() in ("true", "1"), fmt
        assert str(rows.loc["lp-1", "parse_warning"]).lower() in ("false", "0"), fmt
    controls = leaderboard.BoardControls(
        "prefeval", "mcq", columns=(*leaderboard.BoardControls.columns, "unparsed")
    )
    board = leaderboard.board_view(services, controls).table
    rows = {sid: board.split(f'data-id="{sid}"', 1)[1].split("</tr>", 1)[0] for sid in RUNS}
    assert 'class="pb-parse-warning"' in rows["gen-1"]
    assert f"{unparsed} of {LIMIT} answers" in rows["gen-1"]
    assert 'class="pb-parse-warning"' not in rows["lp-1"]
    assert f'data-sort="{unparsed}">{unparsed}</td>' in rows["gen-1"]  # the Unparsed column


def test_a_hidden_split_publishes_none_of_it(published, monkeypatch):
    """The checkpoint keeps the prompts and outputs wherever the run was, but on a hidden split no
    details file is built from it and the items answer 404, to everyone."""
    from submissions.details import published_split, result_details
    from submissions.intake import SubmissionError

    services, task, _ = published
    submission = services.records.get("gen-1")
    assert details_file(task, submission) is not None
    monkeypatch.setitem(task.suite.split_spec, "visibility", "hidden")
    assert details_file(task, submission) is None
    with pytest.raises(SubmissionError) as refused:
        result_details(services.records, "gen-1", published_split(services.board))
    assert refused.value.status == 404
    view = explorer.items_view(services, "gen-1", ALL, ALL, 1)
    assert 'id="items-refused"' in view.table and "prompt as sent" not in view.table


def test_a_run_reports_its_phase_before_its_first_item(published):
    """Loading (a cold engine only), then warming, then progress reports that say `items`."""
    assert PHASES_SEEN["gen-1"]["phases"] == ["loading", "warming"]
    assert PHASES_SEEN["lp-1"]["phases"] == ["warming"]  # the pool had the engine warm
    for seen in PHASES_SEEN.values():
        reports = seen["reports"]
        assert reports and all(r["phase"] == "items" for r in reports)
        assert reports[-1]["done"] == reports[-1]["total"] == LIMIT


def _phase_job() -> dict:
    from evaluator.phases import report_phase

    report_phase("loading")
    return {}


def test_a_workers_job_shows_its_phase_in_its_progress(redis_server):
    """The worker's reporter writes the phase into the running job's progress (what the status
    views read), keeping the item counts; the status text and the queue say it in words."""
    from redis import Redis
    from rq import Queue, SimpleWorker
    from rq.job import Job

    from space.status_text import format_status
    from space.tabs.queue import progress_cell
    from submissions.worker import report_job_phase

    redis = Redis.from_url(redis_server)
    job = Queue("phases", connection=redis).enqueue(
        _phase_job, meta={"progress": {"done": 0, "total": 30}}
    )
    add_phase_reporter(report_job_phase)
    try:
        SimpleWorker(["phases"], connection=redis).work(burst=True)
    finally:
        remove_phase_reporter(report_job_phase)
    progress = Job.fetch(job.id, connection=redis).meta["progress"]
    assert progress == {"done": 0, "total": 30, "phase": "loading"}
    status = {"id": "s1", "model_name": "m", "suite": "prefeval", "task": "mcq"}
    status |= {"setting": "zero_shot", "state": "running", "progress": progress}
    assert "Progress: loading the model (0 of 30 items done)" in format_status(status)
    assert progress_cell(progress) == "loading the model (0 / 30)"
    assert progress_cell({**progress, "phase": "items", "done": 3}) == "3 / 30"
