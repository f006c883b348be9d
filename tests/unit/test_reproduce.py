"""A result page's Reproduce section, from records: the one command that re-runs a row (each
word of its provenance in place, shell-quoted, parsed by the CLI's own parser), what its output
must match, an upload's re-scoring with the answers' hash, and the text inert in the page."""

from __future__ import annotations

import html
import re
import shlex

from backend.cli import build_parser
from leaderboard.result_record import ResultRecord, checked_record
from space.reproduce import reproduce_checks, reproduce_command, reproduce_section

SHA = "0123456789abcdef0123456789abcdef01234567"


def typed(record: dict) -> ResultRecord:
    """The record as the pages get it from the store (checked, typed)."""
    return checked_record(record)


def model_run(**changes) -> dict:
    """A model run's record as submissions/jobs.py result_record writes it (a dict, to change)."""
    record = {
        "submission_id": "run-1",
        "source": "model run (generate_parse)",
        "submitted_at": "2026-12-01T10:00:00+00:00",
        "suite": "prefeval",
        "task": "mcq",
        "setting": "zero_shot",
        "model_name": "SmolLM2 (mine)",
        "row_kind": "computed",
        "n_items": 3000,
        "provenance": {
            "suite_version": "3",
            "scorer_version": "2",
            "split": {"name": "test", "sha256": "ab" * 32, "n_items": 3000, "full_n_items": 3000},
            "model": {"name": "org/model", "source": "hub", "revision": SHA},
            "protocol": "generate_parse",
            "protocol_version": "1",
            "package_version": "0.1.0",
            "backend": "transformers",
            "backend_version": "5.0.0",
            "device": "cuda",
            "dtype": "bfloat16",
            "answers_sha256": "cd" * 32,
            "seeds": {"option_shuffle": 42, "decoding": "greedy (no sampling)"},
        },
        "metrics": {
            "metric": "accuracy",
            "total": {"accuracy": {"value": 0.5, "ci95": [0.4, 0.6], "n": 3000}},
            "tiers": {},
        },
    }
    for key, value in changes.items():
        if key in record:
            record[key] = value
        else:
            record["provenance"][key] = value
    return record


def parsed(command: str):
    """The command's environment words and the CLI's own reading of the rest."""
    words = shlex.split(command)
    env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=.*", w, re.S))
    rest = words[len(env) :]
    assert rest[0] == "personaboard"
    return env, build_parser().parse_args(rest[1:])


def test_a_model_run_gives_every_part_of_its_provenance_to_evaluate():
    env, args = parsed(reproduce_command(typed(model_run())))
    assert env == {} and args.run.__name__ == "_evaluate"
    assert (args.model, args.revision) == ("org/model", SHA)
    assert (args.suite, args.task, args.setting) == ("prefeval", "mcq", "zero_shot")
    assert (args.protocol, args.backend, args.device) == ("generate_parse", "transformers", "cuda")
    assert args.limit is None  # a full run
    assert args.details == "run-1-details.parquet"  # a public split: its per-item answers


def test_a_partial_run_gives_its_limit_and_a_skipping_one_none():
    split = {"name": "test[30 of 3000]", "sha256": "ab" * 32, "n_items": 29, "full_n_items": 3000}
    _, args = parsed(reproduce_command(typed(model_run(row_kind="partial", split=split))))
    assert args.limit == 30  # the limit it was given, not the 29 left after an n/a item
    over = {**split, "name": "test[within the window]", "n_items": 2990}
    _, args = parsed(reproduce_command(typed(model_run(row_kind="partial", split=over))))
    assert args.limit is None  # partial only by the items over its window: the whole split again


def test_user_text_is_one_shell_word_and_inert_in_the_page():
    name = 'tiny "gen" $(touch pwned) \'s <script>alert(1)</script> & `id`'
    local = {"name": name, "source": "local", "revision": "sha256:" + "ef" * 32}
    judge = {"model": "judge; rm -rf ~", "protocol": "pairwise", "default_protocol": "single"}
    record = model_run(
        model=local,
        judge=judge,
        suite="prefeval",
        task="open_ended",
        setting="zero_shot+judge:judge; rm -rf ~",
        model_name="<img src=x onerror=alert(1)>",
    )
    command = reproduce_command(typed(record))
    env, args = parsed(command)
    assert args.model == name and args.revision == local["revision"]  # one word, exactly
    assert args.setting == "zero_shot"  # the judge is the environment's, not a setting
    assert env == {
        "PERSONABOARD_JUDGE_MODEL": "judge; rm -rf ~",
        "PERSONABOARD_JUDGE_PROTOCOL": "pairwise",  # not the task's default judge protocol
    }
    section = reproduce_section(typed(record))
    block = re.search(r"<pre class=reproduce><code>(.*?)</code></pre>", section, re.S)
    assert block and html.unescape(block.group(1)) == command
    assert "<script>" not in section and "<img" not in section and "&lt;script&gt;" in section
    assert "personaboard models add" in section  # a local model: how to register it first


def test_what_the_output_must_match():
    checks = dict(reproduce_checks(typed(model_run())))
    assert checks["Score"] == "total.accuracy.value = 0.5 (Accuracy 50.0) on 3000 items"
    assert checks["Answers"] == "answers_sha256 " + "cd" * 32
    assert "/api/v1/submissions/run-1/details?format=parquet" in checks["Per item"]
    versions = checks["Versions"]
    for part in ("personaboard 0.1.0", "suite 3", "scorer 2", "protocol 1", "transformers 5.0.0"):
        assert part in versions, (part, versions)
    assert "on cuda (bfloat16)" in versions and "option_shuffle: 42" in checks["Seeds"]


def test_a_hidden_split_writes_no_details_and_a_released_score_says_so():
    record = model_run(suite="personafeedback", task="binary_choice", setting="zero_shot")
    record["metrics"]["release"] = {"note": "rounded"}
    _, args = parsed(reproduce_command(typed(record)))
    assert args.details is None
    checks = dict(reproduce_checks(typed(record)))
    assert "Per item" not in checks and "released rounded" in checks["Score"]


def test_an_endpoint_and_a_configured_retriever():
    endpoint = {"name": "my-api", "source": "endpoint", "revision": "endpoint:gpt-x"}
    record = model_run(model=endpoint, backend="openai", retrieval_model="BAAI/bge-small")
    env, args = parsed(reproduce_command(typed(record)))
    assert args.model == "my-api" and args.revision is None and args.device is None
    assert env == {"PERSONABOARD_EMBEDDING_MODEL": "BAAI/bge-small"}
    assert "endpoints add" in dict(reproduce_checks(typed(record)))["Model"]
    default = "sentence-transformers/all-MiniLM-L6-v2 (offline default: the gt package)"
    assert parsed(reproduce_command(typed(model_run(retrieval_model=default))))[0] == {}


def test_an_upload_is_re_scored_against_its_answers_hash():
    record = model_run()
    record["provenance"] = {
        "suite_version": "3",
        "scorer_version": "2",
        "split": {"name": "test", "sha256": "ab" * 32, "n_items": 3000},
        "predictions_sha256": "77" * 32,
        "protocol": "uploaded predictions",
    }
    command = reproduce_command(typed(record))
    _, args = parsed(command)
    assert args.run.__name__ == "_score" and (args.suite, args.task) == ("prefeval", "mcq")
    assert args.file == "predictions.jsonl" and "evaluate" not in command
    assert "predictions_sha256 " + "77" * 32 in dict(reproduce_checks(typed(record)))["Answers"]


def test_papers_rows_and_reference_lines_are_not_runs():
    paper = {**model_run(row_kind="reported"), "provenance": {"table": "Table 2"}}
    assert reproduce_command(typed(paper)) == "# Reported in the paper (Table 2); not run here."
    line = {**model_run(row_kind="reference"), "provenance": {"line": "chance"}}
    assert reproduce_command(typed(line)).startswith("# A reference line")
    assert reproduce_checks(typed(paper)) == reproduce_checks(typed(line)) == []
    assert "must match" not in reproduce_section(typed(paper))


def test_score_prints_the_hash_an_uploaded_row_records(tmp_path):
    """`personaboard score` (the real CLI) prints the answers' sha256 as the intake records it for
    an upload (predictions_sha256): the same answers in another file encoding, the same hash."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from evaluator.predictions import answers_sha256
    from evaluator.registry import get_task

    items = get_task("prefeval", "mcq").load_split().items
    answers = {item.id: "ABCD"[k % 4] for k, item in enumerate(items)}
    path = tmp_path / "predictions.jsonl"
    lines = [json.dumps({"answer": a, "id": i}) for i, a in reversed(answers.items())]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())  # CRLF, reversed, keys reordered
    command = reproduce_command(
        typed({**model_run(), "provenance": {"predictions_sha256": answers_sha256(answers)}})
    )
    words = shlex.split(command)
    words[0] = str(Path(sys.executable).parent / "personaboard")
    words[-1] = str(path)
    done = subprocess.run(words, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["predictions_sha256"] == answers_sha256(answers)


def test_evaluate_writes_no_details_of_a_hidden_split(monkeypatch, capsys):
    """`--details` on a hidden split is refused before any model is loaded (exit 2, saying why)."""
    from backend.cli import main
    from evaluator.registry import get_task

    task = get_task("prefeval", "mcq")
    monkeypatch.setitem(task.suite.split_spec, "visibility", "hidden")
    argv = ["evaluate", "--model", "no/such-model", "--suite", "prefeval", "--task", "mcq"]
    argv += ["--setting", "zero_shot", "--details", "out.parquet"]
    assert main(argv) == 2
    assert "split is hidden: its per-item answers are not written" in capsys.readouterr().err
