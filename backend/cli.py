"""`personaboard` command line: offline scoring and the public inputs, with the workers' own code."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from evaluator.backends.base import BackendError
from evaluator.judge import judge_for
from evaluator.predictions import PredictionsError, answers_sha256, iter_lines, read_predictions
from evaluator.registry import UnknownSuiteError, all_suites, check_suites, get_task
from evaluator.scoring import score_predictions_file
from leaderboard.store import StoreError
from submissions.intake import SubmissionError, check_available, check_target


def _score(args: argparse.Namespace) -> int:
    task = get_task(args.suite, args.task)
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    result = score_predictions_file(task, path, filename=str(path), judge=judge_for(task))
    result.pop("scoring_seconds", None)  # keep the printed JSON reproducible
    # the answers' identity, as an uploaded row's provenance records it (its Reproduce section)
    with open(path, "rb") as stream:
        answers = read_predictions(iter_lines(stream), task, task.load_split(), str(path))
    printed = {"suite": args.suite, "task": args.task, **result}
    printed["predictions_sha256"] = answers_sha256(answers)
    print(json.dumps(printed, indent=2))
    return 0


def _inputs(args: argparse.Namespace) -> int:
    data = get_task(args.suite, args.task).load_split().public_jsonl()
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
    else:
        Path(args.output).write_bytes(data)
    return 0


def _suites(args: argparse.Namespace) -> int:
    if args.action == "check":
        # Each suite folder on its own, so one bad manifest does not hide the others' problems.
        problems = check_suites()
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            return 1
        print(f"{len(all_suites())} suites hold: {', '.join(all_suites())}")
        return 0
    print(json.dumps([suite.describe() for suite in all_suites().values()], indent=2))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    """Run a model on a task's split, as a worker would, with a progress bar; print the metrics,
    the answers' hash and the versions as JSON (a result page's Reproduce command: space/reproduce.py),
    and with --details the per-item answers as the published details file holds them."""
    import tempfile

    from tqdm import tqdm

    from evaluator.model_eval import Checkpoint, run_model, select_items
    from evaluator.package import package_version
    from evaluator.scoring import score_answers, split_provenance
    from submissions.details import details_allowed

    task = check_target(args.suite, args.task, args.setting)  # the intake's answers (status, text)
    check_available(task)
    if args.details and not details_allowed(task):
        print(
            f"error: --details: {task.key}'s split is hidden: its per-item answers are not written",
            file=sys.stderr,
        )
        return 2
    judge = judge_for(task)  # before the run: a judge-scored task without a judge fails now
    resolved, backend = _evaluated_model(args)
    total = len(select_items(task.load_split(), args.limit).items)
    with tempfile.TemporaryDirectory(prefix="personaboard-evaluate-") as kept:
        checkpoint = Checkpoint(Path(kept) / "run.jsonl")  # each item's prompt, output and rule
        if judge is not None:
            judge = judge.keeping(Path(kept) / "judge.jsonl")
        with tqdm(total=total, unit="item", file=sys.stderr) as bar:

            def on_progress(report):
                bar.n = report["done"]
                bar.set_postfix(tok_s=f"{report['tokens_per_s']:.0f}")
                bar.refresh()

            run = run_model(
                task, args.setting, backend, args.protocol, args.limit, checkpoint, on_progress
            )
        metrics = score_answers(task, run.split, run.answers, judge)
        metrics.update(split_provenance(task, run.split, task.load_split()))
        if args.details:
            _write_details(task, run.answers, Path(kept), Path(args.details))
    summary = {
        "suite": args.suite,
        "task": args.task,
        "setting": args.setting,
        "model": resolved.name,
        "revision": resolved.revision,
        "package_version": package_version(),
        "partial": run.partial,
        "answers_sha256": answers_sha256(run.answers),  # a result's provenance has the same hash
        "run": run.stats,
        **metrics,
    }
    print(json.dumps(summary, indent=2, default=str))
    return 0


def _evaluated_model(args: argparse.Namespace):
    """The model `--model` names (a registered name, an endpoint, a Hub id or a folder), resolved
    as the intake resolves it, and its backend on `--backend` / `--device`."""
    from evaluator.backends import ModelSpec, load_backend
    from evaluator.models import ModelRegistry, download_hub_model, resolve_model
    from evaluator.settings import load_evaluator_settings

    settings = load_evaluator_settings()
    registry = ModelRegistry(settings.data_dir)
    folder = Path(args.model)
    if folder.is_dir():
        registry = _ad_hoc_registry(folder)
    name = str(folder.resolve()) if folder.is_dir() else args.model
    resolved = resolve_model(name, args.revision, args.model_type, registry)
    if resolved.source == "endpoint":
        from evaluator.endpoints import endpoint_backend

        return resolved, endpoint_backend(resolved.name, settings.data_dir)
    if args.device and args.backend != "transformers":
        raise ValueError(f"--device: the {args.backend} backend chooses its own device")
    options = {"device": args.device} if args.device else {}
    path = resolved.path or download_hub_model(resolved)
    spec = ModelSpec(resolved.name, path, resolved.model_type, resolved.revision)
    return resolved, load_backend(spec, args.backend, **options)


def _write_details(task, answers: dict, kept: Path, out: Path) -> None:
    """The per-item answers of this run as the published details file holds them (parquet, the
    split's inputs left out): its rows compare one for one with the result's details download."""
    from submissions.details import build_details, judge_calls_by_item, runs_by_item

    runs = runs_by_item(kept / "run.jsonl")
    judged = judge_calls_by_item(kept / "judge.jsonl")
    frame = build_details(task, answers, runs, judged).drop(columns=["input"])
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out, index=False, compression="zstd")
    print(f"per-item answers of {len(frame)} items written to {out}", file=sys.stderr)


def _submit(args: argparse.Namespace) -> int:
    """Submit on this server as a user, through the intake the API and the UI use: the same checks,
    quotas and answers. Prints the submission as JSON; a refusal as JSON too (its status, message
    and problems, as the API's body says them), with the message on stderr, and exits 2."""
    from backend.settings import load_settings
    from submissions.identity import IdentityStore
    from submissions.intake import Submitter
    from submissions.records import SubmissionStore

    settings = load_settings()
    records = SubmissionStore(settings.submissions_db)
    identities = IdentityStore(records)
    try:
        identity = identities.get(args.user)
        if identity is None:
            raise SubmissionError(404, f"no user named {args.user!r}", field="user")
        submitter = Submitter.of(identity, identities, settings.quotas)
        admit = _submit_model if args.submit_command == "model" else _submit_predictions
        submission = admit(args, settings, records, submitter)
    except SubmissionError as refusal:
        print(json.dumps(refusal.answer(), indent=2))
        print(f"error: {refusal.message}", file=sys.stderr)
        return 2
    print(json.dumps(submission.public(), indent=2))
    return 0


def _submit_model(args: argparse.Namespace, settings, records, submitter):
    from dataclasses import fields

    from evaluator.models import ModelRegistry
    from submissions import queue
    from submissions.intake import ModelForm, accept_model

    form = ModelForm(**{field.name: getattr(args, field.name) for field in fields(ModelForm)})
    return accept_model(
        form,
        records=records,
        registry=ModelRegistry(settings.data_dir),
        redis=queue.connect(settings.redis_url),
        submitter=submitter,
    )


def _submit_predictions(args: argparse.Namespace, settings, records, submitter):
    from submissions import queue
    from submissions.intake import SubmissionForm, accept_predictions

    form = SubmissionForm(
        args.suite, args.task, args.setting, args.model_name, args.link, args.description
    )
    with _opened(args.file) as stream:
        return accept_predictions(
            form,
            stream,
            Path(args.file).name,
            records=records,
            uploads_dir=settings.uploads_dir,
            max_bytes=settings.max_upload_bytes,
            redis=queue.connect(settings.redis_url),
            submitter=submitter,
        )


@contextlib.contextmanager
def _opened(path: str):
    """The file to submit; None when none is named (an empty path: the intake refuses it)."""
    if not path:
        yield None
        return
    if not Path(path).is_file():
        raise LookupError(f"{path}: no such file")  # main() prints it, exit 2
    with open(path, "rb") as stream:
        yield stream


def _ad_hoc_registry(folder: Path):
    """A model folder given by path on the command line: registered in a throwaway registry."""
    import tempfile

    from evaluator.models import ModelRegistry

    registry = ModelRegistry(Path(tempfile.mkdtemp(prefix="personaboard-cli-")))
    registry.add(
        str(folder.resolve()), folder, converted_dir=folder.parent / (folder.name + "-converted")
    )
    return registry


def _models_add(args: argparse.Namespace) -> int:
    from evaluator.models import ModelRegistry
    from evaluator.settings import load_evaluator_settings

    settings = load_evaluator_settings()
    entry = ModelRegistry(settings.data_dir).add(
        args.name, Path(args.path), converted_dir=settings.converted_models_dir / args.name
    )
    print(json.dumps({args.name: entry}, indent=2))
    return 0


def _models_list(args: argparse.Namespace) -> int:
    from evaluator.models import ModelRegistry
    from evaluator.settings import load_evaluator_settings

    print(json.dumps(ModelRegistry(load_evaluator_settings().data_dir).all(), indent=2))
    return 0


def _endpoints_add(args: argparse.Namespace) -> int:
    from evaluator.endpoints import EndpointConfig, EndpointRegistry
    from evaluator.settings import load_evaluator_settings

    config = EndpointConfig(
        name=args.name,
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        logprobs=not args.no_logprobs,
        requests_per_minute=args.requests_per_minute,
        max_concurrency=args.max_concurrency,
        max_retries=args.max_retries,
        context_window=args.context_window,
        price_input_per_million=args.price_input,
        price_output_per_million=args.price_output,
    )
    entry = EndpointRegistry(load_evaluator_settings().data_dir).add(config)
    print(json.dumps({args.name: entry.__dict__}, indent=2))
    return 0


def _endpoints_list(args: argparse.Namespace) -> int:
    from evaluator.endpoints import EndpointRegistry
    from evaluator.settings import load_evaluator_settings

    found = EndpointRegistry(load_evaluator_settings().data_dir).all()
    print(json.dumps({name: config.__dict__ for name, config in found.items()}, indent=2))
    return 0


def _splits_install(args: argparse.Namespace) -> int:
    from evaluator.registry import get_suite
    from evaluator.split_install import install

    info = install(get_suite(args.suite), args.source, args.revision)
    if info.get("kind") == "hub":
        _pin_for_workers()
    print(json.dumps(info, indent=2))
    return 0


def _pin_for_workers() -> None:
    """Tell workers on other machines which commit to install (best effort: the web node pins again at start)."""
    from redis.exceptions import RedisError

    from backend.settings import load_settings
    from submissions.queue import connect
    from submissions.remote import publish_installed_pins

    try:
        publish_installed_pins(connect(load_settings().redis_url))
    except RedisError as exc:
        print(
            f"note: the split is installed, but not pinned for remote workers yet ({exc}); "
            "the web app pins it when it starts",
            file=sys.stderr,
        )


def _worker(args: argparse.Namespace) -> int:
    """Run a worker on this machine for the queues its hardware serves; it shares only Redis and the Hub."""
    import os

    from backend.processes import worker_argv
    from backend.settings import load_settings
    from leaderboard.settings import load_leaderboard_settings
    from submissions.hardware import worker_queues
    from submissions.settings import WORKER_REMOTE_ENV

    results = load_leaderboard_settings()
    if not (results.results_repo and results.hub_token):
        print(
            "error: a worker on another machine publishes to the Hub: set PERSONABOARD_RESULTS_REPO and a token "
            "(HF_TOKEN or PERSONABOARD_HUB_TOKEN), and PERSONABOARD_REDIS_URL",
            file=sys.stderr,
        )
        return 2
    queues = worker_queues(args.hardware, args.gpu_memory_gb)
    env = {**os.environ, WORKER_REMOTE_ENV: "1", "RQ_REDIS_URL": load_settings().redis_url}
    argv = worker_argv(args.name, queues)
    print(f"worker on {', '.join(queues)}", file=sys.stderr, flush=True)
    os.execve(argv[0], argv, env)  # the RQ worker replaces this process (signals reach it directly)


def _workers_list(args: argparse.Namespace) -> int:
    from backend.settings import load_settings
    from submissions.queue import connect
    from submissions.remote import list_workers

    print(json.dumps(list_workers(connect(load_settings().redis_url)), indent=2))
    return 0


def _workers_drain(args: argparse.Namespace) -> int:
    from backend.settings import load_settings
    from submissions.queue import connect
    from submissions.remote import drain_worker

    if not drain_worker(connect(load_settings().redis_url), args.name):
        print(f"error: no worker named {args.name!r} is registered", file=sys.stderr)
        return 2
    print(json.dumps({"drained": args.name}))
    return 0


def _splits_list(args: argparse.Namespace) -> int:
    print(
        json.dumps({name: suite.split_status() for name, suite in all_suites().items()}, indent=2)
    )
    return 0


def _release(args: argparse.Namespace) -> int:
    """Name the results dataset's newest version (a tag, on the Hub or in the local folder)."""
    from backend.settings import load_settings
    from leaderboard.results import open_store
    from leaderboard.store import check_release_name
    from submissions.jobs import head_signal
    from submissions.private_part import release_private_part
    from submissions.records import SubmissionStore

    settings = load_settings()
    store = open_store(head_signal=head_signal(settings.redis_url))
    # hidden splits' private parts: every kept result re-ranked on its private part, once
    check_release_name(args.name)
    reranked = release_private_part(SubmissionStore(settings.submissions_db), store, args.name)
    release = store.release(args.name, args.notes or "")
    print(json.dumps({**release.__dict__, "reranked_on_private_part": reranked}, indent=2))
    return 0


def _identities():
    from backend.settings import load_settings
    from submissions.identity import IdentityStore
    from submissions.records import SubmissionStore

    return IdentityStore(SubmissionStore(load_settings().submissions_db))


def _users_add(args: argparse.Namespace) -> int:
    identities = _identities()
    user = identities.add_user(args.name, "admin" if args.admin else "user")
    token_id, token = identities.issue_token(user.name)
    print(
        json.dumps(
            {"name": user.name, "role": user.role, "token_id": token_id, "token": token}, indent=2
        )
    )
    print("the token is shown once; send it as `Authorization: Bearer <token>`", file=sys.stderr)
    return 0


def _users_token(args: argparse.Namespace) -> int:
    token_id, token = _identities().issue_token(args.name)
    print(json.dumps({"name": args.name, "token_id": token_id, "token": token}, indent=2))
    return 0


def _users_revoke(args: argparse.Namespace) -> int:
    revoked = _identities().revoke(args.name, args.token_id)
    print(json.dumps({"name": args.name, "revoked": revoked}, indent=2))
    return 0 if revoked or not args.token_id else 2


def _users_list(args: argparse.Namespace) -> int:
    print(json.dumps(_identities().users(), indent=2))
    return 0


def _users_role(args: argparse.Namespace) -> int:
    user = _identities().set_role(args.name, args.role)
    print(json.dumps(user.__dict__, indent=2))
    return 0


def _users_quota(args: argparse.Namespace) -> int:
    from backend.settings import load_settings

    identities = _identities()
    overrides = identities.set_quotas(
        args.name,
        predictions=args.predictions,
        model=args.model_runs,
        failed_validations=args.failed_validations,
        comparisons=args.comparisons,
    )
    effective = load_settings().quotas.for_user(overrides)
    print(
        json.dumps(
            {"name": args.name, "overrides": overrides, "effective": effective.__dict__}, indent=2
        )
    )
    return 0


def _names_list(args: argparse.Namespace) -> int:
    print(json.dumps(_identities().names(), indent=2))
    return 0


def _names_transfer(args: argparse.Namespace) -> int:
    print(json.dumps(_identities().transfer_name(args.model_name, args.to), indent=2))
    return 0


def _moderate(args: argparse.Namespace) -> int:
    import getpass

    from backend.settings import load_settings
    from leaderboard.results import open_outbox
    from submissions import moderation, queue
    from submissions.jobs import head_signal, withhold_hidden
    from submissions.records import SubmissionStore

    settings = load_settings()
    records = SubmissionStore(settings.submissions_db)
    actor = args.actor or f"cli:{getpass.getuser()}"
    try:
        entry = moderation.apply(
            args.action,
            args.submission_id,
            actor=actor,
            reason=args.reason or "",
            records=records,
            outbox=open_outbox(
                head_signal=head_signal(settings.redis_url), withhold=withhold_hidden(records)
            ),
            redis=queue.connect(settings.redis_url),
        )
    except moderation.ActionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in entry.items() if k != "details"}, indent=2))
    return 0


def _history(args: argparse.Namespace) -> int:
    from backend.settings import load_settings
    from submissions.records import SubmissionStore

    history = SubmissionStore(load_settings().submissions_db).history(args.submission_id)
    print(
        json.dumps(
            [{k: e[k] for k in ("at", "actor", "action", "reason")} for e in history], indent=2
        )
    )
    return 0


def _add_moderation_commands(commands) -> None:
    from submissions.moderation import ACTIONS

    subs = commands.add_parser(
        "submissions", help="operator actions on submissions, recorded in the audit log"
    )
    subs_commands = subs.add_subparsers(dest="submissions_command", required=True)
    helps = {
        "hide": "remove from every table and download from the next version on",
        "unhide": "publish again",
        "flag": "a public note on the row (the reason); an empty reason clears it",
        "delete": "hide for good, delete the upload, stop its job",
        "cancel": "stop a queued or running job",
        "rerun": "evaluate again (the result is withdrawn until the new run publishes)",
    }
    for action in ACTIONS:
        command = subs_commands.add_parser(action, help=helps[action])
        command.add_argument("submission_id")
        command.add_argument(
            "--reason", default="", help="why (recorded; required except for unhide)"
        )
        command.add_argument("--actor", help="who is acting (default cli:$USER)")
        command.set_defaults(run=_moderate, action=action)
    history = subs_commands.add_parser("history", help="the operator actions on a submission")
    history.add_argument("submission_id")
    history.set_defaults(run=_history)


def _add_user_commands(commands) -> None:
    users = commands.add_parser(
        "users", help="identities that may submit: users, API tokens, quotas"
    )
    users_commands = users.add_subparsers(dest="users_command", required=True)
    add = users_commands.add_parser(
        "add", help="create a user and print its first API token (shown once)"
    )
    add.add_argument("name")
    add.add_argument(
        "--admin", action="store_true", help="an operator: may hide, flag, delete, cancel, rerun"
    )
    add.set_defaults(run=_users_add)
    token = users_commands.add_parser(
        "token", help="issue another API token for a user (shown once)"
    )
    token.add_argument("name")
    token.set_defaults(run=_users_token)
    revoke = users_commands.add_parser(
        "revoke", help="revoke a user's tokens (all, or one by --token-id)"
    )
    revoke.add_argument("name")
    revoke.add_argument("--token-id")
    revoke.set_defaults(run=_users_revoke)
    listing = users_commands.add_parser(
        "list", help="users, roles, token ids (never the tokens) and quota overrides"
    )
    listing.set_defaults(run=_users_list)
    role = users_commands.add_parser("role", help="make a user an admin or a plain user")
    role.add_argument("name")
    role.add_argument("role", choices=["user", "admin"])
    role.set_defaults(run=_users_role)
    quota = users_commands.add_parser(
        "quota", help="override a user's daily limits per suite (-1: back to the default)"
    )
    quota.add_argument("name")
    quota.add_argument("--predictions", type=int, help="prediction uploads per suite and UTC day")
    quota.add_argument("--model-runs", type=int, help="model runs per suite and UTC day")
    quota.add_argument("--failed-validations", type=int, help="refused files per suite and UTC day")
    quota.add_argument(
        "--comparisons", type=int, help="comparisons on a hidden split per suite and UTC day"
    )
    quota.set_defaults(run=_users_quota)
    names = commands.add_parser("names", help="model names and who owns them")
    names_commands = names.add_subparsers(dest="names_command", required=True)
    names_list = names_commands.add_parser("list", help="every claimed model name with its owner")
    names_list.set_defaults(run=_names_list)
    transfer = names_commands.add_parser("transfer", help="give a model name to another user")
    transfer.add_argument("model_name")
    transfer.add_argument("--to", required=True, help="the new owner (a user name)")
    transfer.set_defaults(run=_names_transfer)


def _add_submit_commands(commands) -> None:
    submit = commands.add_parser(
        "submit",
        help="submit on this server as a user (the API's checks, quotas and answers)",
    )
    kinds = submit.add_subparsers(dest="submit_command", required=True)
    predictions = kinds.add_parser("predictions", help="a predictions file (JSONL)")
    predictions.add_argument("file")
    predictions.add_argument("--model-name", default="", help="the name shown on the leaderboard")
    predictions.add_argument("--link", default="", help="an http(s) URL (optional)")
    model = kinds.add_parser("model", help="a model for the workers to run")
    model.add_argument("model", help="registered local name or Hub id")
    model.add_argument("--revision")
    model.add_argument("--model-type", default="auto", choices=["auto", "generative", "reward"])
    model.add_argument("--protocol", help="default: the task's default for the model's type")
    model.add_argument("--limit", type=int, help="a smoke run on N items (marked partial)")
    for command in (predictions, model):
        command.add_argument("--user", required=True, help="the user submitting (quotas, name)")
        command.add_argument("--suite", default="")
        command.add_argument("--task", default="")
        command.add_argument("--setting", default="")
        command.add_argument("--description", default="")
        command.set_defaults(run=_submit)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="personaboard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    score = commands.add_parser(
        "score", help="validate and score a predictions file, print the metrics as JSON"
    )
    score.add_argument("--suite", required=True)
    score.add_argument("--task", required=True)
    score.add_argument("file")
    score.set_defaults(run=_score)
    inputs = commands.add_parser("inputs", help="write the public inputs (JSONL) of a task's split")
    inputs.add_argument("--suite", required=True)
    inputs.add_argument("--task", required=True)
    inputs.add_argument("-o", "--output", help="file to write (default: standard output)")
    inputs.set_defaults(run=_inputs)
    suites = commands.add_parser(
        "suites", help="list suites, tasks, tiers and settings; `suites check` checks them"
    )
    suites.add_argument(
        "action",
        nargs="?",
        choices=["list", "check"],
        default="list",
        help="check: every suite's manifest, names, reported columns and hooks (exit 1 on a problem)",
    )
    suites.set_defaults(run=_suites)
    evaluate = commands.add_parser(
        "evaluate", help="run a model on a task's split and print the metrics as JSON"
    )
    evaluate.add_argument(
        "--model", required=True, help="registered local name, Hub id, or a model folder"
    )
    evaluate.add_argument("--revision")
    evaluate.add_argument("--model-type", default="auto", choices=["auto", "generative", "reward"])
    evaluate.add_argument("--suite", required=True)
    evaluate.add_argument("--task", required=True)
    evaluate.add_argument("--setting", required=True)
    evaluate.add_argument("--protocol", help="default: the task's default for the model's type")
    evaluate.add_argument(
        "--limit", type=int, help="evaluate N items spread over the split (a partial run)"
    )
    evaluate.add_argument("--backend", default="transformers", choices=["transformers", "vllm"])
    evaluate.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        help="transformers only: where the model runs (default: cuda if there is one); a "
        "result's Reproduce command names the device it ran on (its dtype follows)",
    )
    evaluate.add_argument(
        "--details",
        metavar="FILE",
        help="write each item's answer, rule, prompt and raw output as parquet (public splits "
        "only), the columns of the result's details download",
    )
    evaluate.set_defaults(run=_evaluate)
    _add_submit_commands(commands)
    models = commands.add_parser("models", help="the operator's registry of local models")
    models_commands = models.add_subparsers(dest="models_command", required=True)
    add = models_commands.add_parser(
        "add", help="register a local model folder (a GGUF checkpoint is converted once)"
    )
    add.add_argument("name")
    add.add_argument("path")
    add.set_defaults(run=_models_add)
    listing = models_commands.add_parser("list", help="list registered models")
    listing.set_defaults(run=_models_list)
    endpoints = commands.add_parser(
        "endpoints", help="models behind OpenAI-compatible endpoints (models and judges)"
    )
    endpoints_commands = endpoints.add_subparsers(dest="endpoints_command", required=True)
    add_endpoint = endpoints_commands.add_parser(
        "add",
        help="register an endpoint; its key stays in the environment variable named by --api-key-env",
    )
    add_endpoint.add_argument("name")
    add_endpoint.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    add_endpoint.add_argument("--model", required=True, help="the model id the endpoint serves")
    add_endpoint.add_argument(
        "--api-key-env", help="NAME of the environment variable that holds the key"
    )
    add_endpoint.add_argument(
        "--no-logprobs",
        action="store_true",
        help="the endpoint returns no log-probabilities: models run with generate_parse",
    )
    add_endpoint.add_argument("--requests-per-minute", type=float, default=600.0)
    add_endpoint.add_argument("--max-concurrency", type=int, default=4)
    add_endpoint.add_argument("--max-retries", type=int, default=5)
    add_endpoint.add_argument("--context-window", type=int)
    add_endpoint.add_argument(
        "--price-input", type=float, default=0.0, help="USD per million prompt tokens"
    )
    add_endpoint.add_argument(
        "--price-output", type=float, default=0.0, help="USD per million completion tokens"
    )
    add_endpoint.set_defaults(run=_endpoints_add)
    endpoints_list = endpoints_commands.add_parser(
        "list", help="list registered endpoints (no keys: they are never stored)"
    )
    endpoints_list.set_defaults(run=_endpoints_list)
    splits = commands.add_parser("splits", help="hidden splits that are installed, not shipped")
    splits_commands = splits.add_subparsers(dest="splits_command", required=True)
    install = splits_commands.add_parser(
        "install", help="install a suite's split from a Hub dataset or a folder"
    )
    install.add_argument("suite")
    install.add_argument(
        "--source", required=True, help="Hugging Face Hub dataset id, or a local folder"
    )
    install.add_argument("--revision", help="Hub revision (pinned to its commit sha)")
    install.set_defaults(run=_splits_install)
    splits_list = splits_commands.add_parser(
        "list", help="which splits are installed, from where, at which revision"
    )
    splits_list.set_defaults(run=_splits_list)
    release = commands.add_parser(
        "release", help="name the newest version of the results dataset (a tag)"
    )
    release.add_argument("name", help="e.g. v1 (letters, digits, '.', '_', '-')")
    release.add_argument("--notes", help="what changed since the last release")
    release.set_defaults(run=_release)
    _add_user_commands(commands)
    _add_moderation_commands(commands)
    worker = commands.add_parser(
        "worker",
        help="run a worker on this machine (another machine: needs only Redis and the Hub)",
    )
    worker.add_argument("--hardware", choices=["cpu", "gpu"], required=True)
    worker.add_argument(
        "--gpu-memory-gb", type=int, help="the GPU's memory: which GPU queues this worker takes"
    )
    worker.add_argument("--name", help="the worker's name (default: RQ's)")
    worker.set_defaults(run=_worker)
    workers = commands.add_parser("workers", help="the workers registered in Redis")
    workers_commands = workers.add_subparsers(dest="workers_command", required=True)
    workers_list = workers_commands.add_parser(
        "list", help="name, queues, state, last heartbeat, current submission"
    )
    workers_list.set_defaults(run=_workers_list)
    drain = workers_commands.add_parser(
        "drain", help="let a worker finish its current job, then stop it"
    )
    drain.add_argument("name")
    drain.set_defaults(run=_workers_drain)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SubmissionError as refusal:  # the intake's answer (evaluate's checks)
        print(f"error: {refusal.message}", file=sys.stderr)
        return 2
    except (
        UnknownSuiteError,
        PredictionsError,
        BackendError,
        ValueError,
        LookupError,
        KeyError,
        StoreError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
