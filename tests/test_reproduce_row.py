"""A tiny model's row reproduces from its result page: a random Llama runs 6 public PrefEval mcq
items as a worker runs them (the job's own run, record and details file, published into a git
results store), the result page shows the Reproduce command, and that command, run by bash with
the real `personaboard` CLI in a fresh process, gives the same per-item answers (answer, rule,
raw output, prompt, log-probabilities) and the same score.

Two runs: generate_parse (a random model's raw text, every answer unparsed) and choice_logprobs
(every answer read from the labels' log-probabilities). The model is registered under a name that
would run commands if the page's command were not quoted (model names are user text)."""

from __future__ import annotations

import html
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiny_models import build_tiny_model  # noqa: E402
from unit.test_tab_handlers import Services  # noqa: E402

from evaluator.models import ModelRegistry, resolve_model  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.settings import DATA_DIR_ENV, load_evaluator_settings  # noqa: E402
from space import pages  # noqa: E402
from submissions.details import details_file  # noqa: E402
from submissions.jobs import _evaluate_model, result_record  # noqa: E402
from submissions.records import Submission, utc_now  # noqa: E402

pytestmark = pytest.mark.model

LIMIT = 6
RUNS = {"re-gen": "generate_parse", "re-lp": "choice_logprobs"}
NAME = 'tiny "gen" $(touch pwned) \'s'  # quoted wrong, bash would run `touch pwned`
SAME_TEXT = ["item_id", "gold", "answer", "outcome", "rule", "prompt", "prompt_sha256", "raw"]
SAME_COUNTS = ["prompt_tokens", "prompt_messages", "raw_chars"]


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """The tiny model registered under NAME, run as a job runs it (submissions/jobs.py
    _evaluate_model) with each protocol, and published with its details file."""
    root = tmp_path_factory.mktemp("reproduce")
    patch = pytest.MonkeyPatch()
    patch.setenv(DATA_DIR_ENV, str(root / "data"))
    settings = load_evaluator_settings()
    registry = ModelRegistry(settings.data_dir)
    registry.add(NAME, build_tiny_model(root / "tiny", "generative", seed=7))
    model = resolve_model(NAME, None, "auto", registry).as_dict()
    task = get_task("prefeval", "mcq")
    services = Services(root)
    records = {}
    for sid, protocol in RUNS.items():
        submission = Submission(
            id=sid,
            created_at=utc_now(),
            kind="model",
            suite="prefeval",
            task="mcq",
            setting="zero_shot",
            model_name=f"<b>tiny</b> {protocol}",
            state="running",
            details={"model": model, "protocol": protocol, "limit": LIMIT},
        )
        services.records.add(submission)
        metrics, stats = _evaluate_model(submission, task, services.records)
        record = result_record(submission, metrics, {}, stats).published()
        services.results.publish(record, details=details_file(task, submission))
        records[sid] = record
    yield services, records, root
    patch.undo()


def page_command(services, sid: str) -> str:
    page = pages.result_page(services, sid)
    assert page.status_code == 200
    text = bytes(page.body).decode()
    block = re.search(r"<pre class=reproduce><code>(.*?)</code></pre>", text, re.S)
    assert block, "the result page shows no Reproduce command"
    assert "<b>tiny</b>" not in text and "&lt;b&gt;tiny&lt;/b&gt;" in text  # user text, inert
    assert '"gen"' not in block.group(1) and "&quot;gen&quot;" in block.group(1)
    return html.unescape(block.group(1))  # what a reader copies from the page


def rerun(command: str, folder: Path, data_dir: Path) -> dict:
    """The command as a user runs it: bash, the installed CLI on the PATH, a fresh process."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        DATA_DIR_ENV: str(data_dir),  # where the model is registered (the page says to)
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def published_details(services, sid: str) -> pd.DataFrame:
    data = services.results.published_details("prefeval", "mcq", sid)
    assert data is not None
    return pd.read_parquet(io.BytesIO(data))


@pytest.mark.parametrize("sid", list(RUNS))
def test_the_command_on_the_result_page_reproduces_the_row(published, sid):
    services, records, root = published
    record = records[sid]
    provenance = record["provenance"]
    command = page_command(services, sid)
    assert command.startswith("personaboard evaluate --model ")
    for part in (f"--protocol {RUNS[sid]}", f"--limit {LIMIT}", "--device cpu", "--details"):
        assert part in command, (part, command)
    folder = root / "rerun" / sid
    out = rerun(command, folder, root / "data")
    assert not (folder / "pwned").exists()  # the name was one word, never a command
    # the same answers (their hash) and the same score, to the last digit
    assert out["answers_sha256"] == provenance["answers_sha256"]
    metric = record["metrics"]["metric"]
    assert out["total"][metric]["value"] == record["metrics"]["total"][metric]["value"]
    assert out["total"][metric]["ci95"] == record["metrics"]["total"][metric]["ci95"]
    assert out["n_items"] == record["n_items"] == LIMIT
    assert out["run"]["unparsed"] == provenance["unparsed"]
    for key in ("package_version", "prompt_template_sha256", "protocol_version", "dtype"):
        assert out["run"][key] == provenance[key], key
    assert out["split"]["sha256"] == provenance["split"]["sha256"]
    # item by item: the --details file against the published details file
    mine = pd.read_parquet(folder / f"{sid}-details.parquet").set_index("item_id", drop=False)
    theirs = published_details(services, sid).set_index("item_id", drop=False)
    assert len(theirs) == LIMIT and set(mine.index) == set(theirs.index)
    mine = mine.loc[theirs.index]
    for column in SAME_TEXT:
        assert mine[column].tolist() == theirs[column].tolist(), column
    for column in SAME_COUNTS:
        assert mine[column].fillna(-1).tolist() == theirs[column].fillna(-1).tolist(), column
    assert mine["score"].tolist() == theirs["score"].tolist()
    for a, b in zip(mine["logprobs"], theirs["logprobs"]):
        assert (a is None) == (b is None)
        if a is not None:  # the same forward pass; only the last float digits may move
            left, right = json.loads(a), json.loads(b)
            assert left.keys() == right.keys()
            assert all(math.isclose(left[k], right[k], abs_tol=1e-5) for k in left)
    if RUNS[sid] == "generate_parse":  # a random model's own text, item by item
        assert theirs["answer"].isna().all() and all(theirs["raw"].str.len() > 0)
    else:
        assert theirs["answer"].notna().all() and theirs["raw"].isna().all()
