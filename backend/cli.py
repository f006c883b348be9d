"""`personaboard` command line: offline scoring and the public inputs, with the workers' own code."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evaluator.predictions import PredictionsError
from evaluator.registry import UnknownSuiteError, all_suites, get_task
from evaluator.scoring import score_predictions_file


def _score(args: argparse.Namespace) -> int:
    task = get_task(args.suite, args.task)
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    result = score_predictions_file(task, path, filename=str(path))
    result.pop("scoring_seconds", None)  # keep the printed JSON reproducible
    print(json.dumps({"suite": args.suite, "task": args.task, **result}, indent=2))
    return 0


def _inputs(args: argparse.Namespace) -> int:
    data = get_task(args.suite, args.task).load_split().public_jsonl()
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
    else:
        Path(args.output).write_bytes(data)
    return 0


def _suites(args: argparse.Namespace) -> int:
    print(json.dumps([suite.describe() for suite in all_suites().values()], indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="personaboard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    score = commands.add_parser("score", help="validate and score a predictions file, print the metrics as JSON")
    score.add_argument("--suite", required=True)
    score.add_argument("--task", required=True)
    score.add_argument("file")
    score.set_defaults(run=_score)
    inputs = commands.add_parser("inputs", help="write the public inputs (JSONL) of a task's split")
    inputs.add_argument("--suite", required=True)
    inputs.add_argument("--task", required=True)
    inputs.add_argument("-o", "--output", help="file to write (default: standard output)")
    inputs.set_defaults(run=_inputs)
    suites = commands.add_parser("suites", help="list suites, tasks, tiers and settings")
    suites.set_defaults(run=_suites)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (UnknownSuiteError, PredictionsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
