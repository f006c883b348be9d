"""Admitting a submission: every check, every refusal, then the durable record and the queue.

The one admission path: the REST API (backend/api.py), the submit tabs (space/tabs/submit_*.py)
and the CLI (`personaboard submit`) hand the intake what they were given and map its refusal (a
SubmissionError: status, message, the problems with the line and field each names) to their
medium, so every entry point gives the same answer. Nothing is recorded or queued unless the
whole submission is valid; the record is admitted in one transaction (records.admit).

The order of the checks (the first refusal is the answer):
1. required fields present (422)
2. the target: suite, task, setting (`check_target`: 422 / 404 / 409)
3. the target available on this server: split installed, judge configured (409)
4. the texts: model name, link, description (422); a model run's limit (422)
5. a retried Idempotency-Key is answered with its first submission; daily quotas (429)
6. the file: size (413), every line (422); a model: resolved, protocol and setting (422/503)
7. admitted in one transaction: duplicate (409), another's model name (403), and every daily
   budget counted where the row is written (429): the early check of 5 only spares the work
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlparse

from redis import Redis
from redis.exceptions import RedisError

from evaluator.judge import judge_unavailable_reason
from evaluator.predictions import PredictionsError, answers_sha256, iter_lines, read_predictions
from evaluator.protocols import default_protocol, protocol_problem, setting_problem
from evaluator.registry import all_suites
from evaluator.splits import SplitNotInstalled
from evaluator.suite import Task
from submissions import queue
from submissions.identity import HF_NEW_PROVIDER, HfSigninPolicy, Identity, IdentityStore
from submissions.names import InvalidName, name_key, normalise_text
from submissions.quotas import (
    QUOTA_LABELS,
    RUN_UNITS,
    ModelRunBudget,
    QuotaLimits,
    model_run_cost,
    runs,
    today,
)
from submissions.records import (
    Budget,
    Duplicate,
    NameTaken,
    QuotaUsed,
    Replayed,
    Submission,
    SubmissionStore,
    new_submission_id,
    utc_now,
)

if TYPE_CHECKING:  # loaded when a model is submitted (accept_model)
    from evaluator.models import ModelRegistry, ResolvedModel

log = logging.getLogger(__name__)

MAX_MODEL_NAME = 200
MAX_DESCRIPTION = 5000
COPY_CHUNK = 1 << 20


class SubmissionError(ValueError):
    """The refusal of a submission, the same from every entry point: `status` (the HTTP status the
    API answers), `message`, and `detail` (the API's JSON body's detail: the message, the
    `problems` naming the line and field of each, and what some refusals add: `allowed` values,
    a quota's `retry_after_s`, a duplicate's `existing_id`)."""

    def __init__(
        self,
        status: int,
        message: str,
        problems: list[dict] | None = None,
        field: str | None = None,
        **extra: object,
    ):
        super().__init__(message)
        self.status = status
        self.detail: dict = {
            "message": message,
            "problems": problems
            or ([{"line": None, "field": field, "message": message}] if field else []),
            **extra,
        }

    @property
    def message(self) -> str:
        return self.detail["message"]

    def headers(self) -> dict[str, str]:
        """What HTTP adds: Retry-After on a spent quota, WWW-Authenticate on no identity (RFC 9110)."""
        if self.status == 429 and "retry_after_s" in self.detail:
            return {"Retry-After": str(self.detail["retry_after_s"])}
        if self.status == 401:
            return {"WWW-Authenticate": "Bearer"}
        return {}

    def answer(self) -> dict:
        """The refusal as data (the status with the API's detail): what the UI and CLI hand on."""
        return {"status": self.status, **self.detail}


@dataclass(frozen=True)
class SubmissionForm:
    suite: str
    task: str
    setting: str
    model_name: str
    model_link: str = ""
    description: str = ""


class AlreadyAccepted(Exception):
    """A retry with an Idempotency-Key this identity used before: `submission` is the first answer."""

    def __init__(self, submission: Submission):
        super().__init__(submission.id)
        self.submission = submission


MAX_IDEMPOTENCY_KEY = 200


@dataclass(frozen=True)
class Submitter:
    """Who submits, with the limits that apply to them and an optional Idempotency-Key."""

    identity: Identity
    limits: QuotaLimits
    idempotency_key: str | None = None

    @classmethod
    def of(
        cls,
        identity: Identity,
        identities: IdentityStore,
        defaults: QuotaLimits,
        idempotency_key: str | None = None,
    ) -> "Submitter":
        key = (idempotency_key or "").strip() or None
        if key is not None and (
            len(key) > MAX_IDEMPOTENCY_KEY or not key.isascii() or not key.isprintable()
        ):
            raise SubmissionError(
                422,
                f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY} printable ASCII characters",
                field="Idempotency-Key",
            )
        return cls(identity, defaults.for_user(identities.quota_overrides(identity.name)), key)


REQUIRED_HINTS = {
    "file": "the predictions JSONL file",
    "model_name": "the name shown on the leaderboard",
    "model": "a Hugging Face Hub id, or the name of a model the operator registered",
}


def check_required(values: dict[str, object]) -> None:
    """422 naming every required field that is missing or blank (`values`: field -> value)."""
    missing = [name for name, value in values.items() if value is None or not str(value).strip()]
    if not missing:
        return
    problems: list[dict[str, Any]] = [
        {
            "line": None,
            "field": name,
            "message": f"{name} is required"
            + (f": {REQUIRED_HINTS[name]}" if name in REQUIRED_HINTS else ""),
        }
        for name in missing
    ]
    message = (
        problems[0]["message"] if len(missing) == 1 else f"missing fields: {', '.join(missing)}"
    )
    raise SubmissionError(422, message, problems)


def _declared_by(suite_name: str, kind: str, value: str) -> list[str]:
    """The other suites that declare `value` as one of their `kind` ("tasks" or "settings")."""
    return [
        name
        for name, found in all_suites().items()
        if name != suite_name and value in getattr(found, kind)
    ]


def _unknown(field: str, suite: str, value: str, allowed: list[str], kind: str) -> SubmissionError:
    """422 for a value no suite declares; 404 for one another suite declares (a well-formed
    request for something not there); both name the field and the values allowed."""
    elsewhere = _declared_by(suite, kind, value)
    where = f" (a {field} of {', '.join(elsewhere)})" if elsewhere else ""
    message = f"suite {suite!r} has no {field} {value!r}{where}; its {kind}: {', '.join(allowed)}"
    return SubmissionError(404 if elsewhere else 422, message, field=field, allowed=allowed)


def check_target(suite: str, task: str, setting: str) -> Task:
    """The task a submission is for, or the refusal every entry point gives: a suite, task or
    setting no suite declares is a 422 (as the API's schema enums say); a task or setting another
    suite declares is a 404; a setting the installed split cannot serve (`rag` without memory
    data) is a 409. Each names the field and the values allowed there."""
    suites = all_suites()
    if suite not in suites:
        known = sorted(suites)
        raise SubmissionError(
            422,
            f"unknown suite {suite!r}; known suites: {', '.join(known)}",
            field="suite",
            allowed=known,
        )
    found = suites[suite]
    if task not in found.tasks:
        raise _unknown("task", suite, task, sorted(found.tasks), "tasks")
    if setting not in found.settings:
        raise _unknown("setting", suite, setting, list(found.settings), "settings")
    target = found.tasks[task]
    problem = target.hooks.check_setting(target, setting)
    if problem:
        raise SubmissionError(409, problem, field="setting", allowed=list(found.settings))
    return target


def check_available(task: Task) -> None:
    """409 when this server cannot score the task now: its split is not installed (the message
    names the operator's install command), or it is judge-scored and no judge is configured."""
    try:
        task.load_split()
    except SplitNotInstalled as exc:
        raise SubmissionError(409, str(exc), field="suite") from None
    reason = judge_unavailable_reason(task)
    if reason:
        raise SubmissionError(409, reason, field="task")


def normalise_form(form: SubmissionForm) -> SubmissionForm:
    """NFKC, trimmed, bounded; control, bidi-override and NUL characters refused (422 naming the field)."""
    try:
        return replace(
            form,
            model_name=normalise_text(form.model_name, "model_name", MAX_MODEL_NAME),
            model_link=normalise_text(form.model_link, "link", 2000),
            description=normalise_text(
                form.description, "description", MAX_DESCRIPTION, multiline=True
            ),
        )
    except InvalidName as exc:
        raise SubmissionError(422, str(exc), field=exc.field) from None


def check_link(link: str) -> None:
    if not link:
        return
    try:
        parsed = urlparse(link)
    except ValueError:  # e.g. "http://[": an unclosed IPv6 bracket
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SubmissionError(422, "link must be an http(s) URL", field="link")


def check_form(form: SubmissionForm, file_given: bool = True) -> tuple[SubmissionForm, Task]:
    """Checks 1-4 of a predictions upload: the form, normalised, and its task."""
    check_required(
        {
            "suite": form.suite,
            "task": form.task,
            "setting": form.setting,
            "model_name": form.model_name,
            "file": "file" if file_given else None,
        }
    )
    form = replace(
        form, suite=form.suite.strip(), task=form.task.strip(), setting=form.setting.strip()
    )
    task = check_target(form.suite, form.task, form.setting)
    check_available(task)
    form = normalise_form(form)
    check_link(form.model_link)
    return form, task


NEW_ACCOUNTS = "new_accounts"  # the `quota` a refusal names when the shared budget is spent


def budgets_for(submitter: Submitter, kind: str) -> list[Budget]:
    """The daily limits a submission of `kind` ("predictions", "model"; "failed_validations": a
    file refused by validation) is counted against, in the order they are checked. admit() counts
    them inside the transaction that writes the row (records.Budget), so concurrent requests admit
    exactly each limit; check_quota reads the same ones early, only to spare doomed work."""
    window = today()
    failed = Budget(
        "failed_validations", submitter.limits.of("failed_validations"), window.start, "failed"
    )
    if kind == "failed_validations":
        return [failed]
    budgets = [Budget(kind, submitter.limits.of(kind), window.start)]
    if kind == "model":  # counted in thousandths of a run: a smoke run costs its share
        budgets = [ModelRunBudget(kind, submitter.limits.of(kind) * RUN_UNITS, window.start)]
    if kind == "predictions":  # a spent failed-validations quota closes the suite to valid files
        budgets.append(failed)
    if submitter.identity.provider == HF_NEW_PROVIDER:  # (the owner's provider is read again
        shared = Budget(  # in the transaction: an account that grew old enough has left it)
            NEW_ACCOUNTS,
            HfSigninPolicy.from_env().new_accounts_daily_budget,
            window.start,
            "provider",
            HF_NEW_PROVIDER,
        )
        budgets.insert(0, shared)
    return budgets


def check_quota(records: SubmissionStore, submitter: Submitter, suite: str, kind: str) -> None:
    """429 before any work when a budget of `kind` (budgets_for) is spent now: this identity's
    daily quota on `suite`, or, for an account admitted on the budget shared by new accounts, that
    budget. Only an early refusal: the authoritative count is admit()'s, in its transaction."""
    try:
        records.check_budgets(submitter.identity.name, suite, kind, budgets_for(submitter, kind))
    except QuotaUsed as spent:
        raise quota_refusal(spent, kind, suite) from None


def quota_refusal(spent: QuotaUsed, kind: str, suite: str) -> SubmissionError:
    """The 429 of a spent budget, the same whether the early check or admit() found it."""
    if spent.quota == NEW_ACCOUNTS:
        window = today()
        return quota_error(
            kind,
            suite,
            spent.used,
            spent.limit,
            f"the daily budget shared by all new Hugging Face accounts ({spent.limit} submissions) "
            f"is used up; it resets at {window.resets_at} (UTC midnight)",
            quota=NEW_ACCOUNTS,
        )
    if spent.quota == "model":
        used, limit = runs(spent.used), runs(spent.limit)
        window = today()
        message = (
            f"daily quota reached: {used} of {limit} model runs on {suite} today (a run with "
            "`limit` counts its share of the split's items, at least 0.1 of a run); it resets at "
            f"{window.resets_at} (UTC midnight)"
        )
        return quota_error("model", suite, used, limit, message)
    return quota_error(spent.quota or kind, suite, spent.used, spent.limit)


def take_failed_validation(records: SubmissionStore, submitter: Submitter, suite: str) -> None:
    """Count a file refused by validation, or 429 when a concurrent request took the last slot."""
    limit = submitter.limits.of("failed_validations")
    used = IdentityStore(records).take_failed_validation(
        submitter.identity.name, suite, limit, today().start
    )
    if used >= limit:
        raise quota_error("failed_validations", suite, used, limit)


def quota_error(
    kind: str,
    suite: str,
    used: int | float,
    limit: int | float,
    message: str | None = None,
    quota: str | None = None,
) -> SubmissionError:
    window = today()
    return SubmissionError(
        429,
        message
        or f"daily quota reached: {used} of {limit} {QUOTA_LABELS[kind]} on {suite} today; "
        f"it resets at {window.resets_at} (UTC midnight)",
        field="suite",
        quota=quota or kind,
        limit=limit,
        used=used,
        resets_at=window.resets_at,
        retry_after_s=window.retry_after_s,
    )


def replay_if_seen(records: SubmissionStore, submitter: Submitter) -> None:
    if submitter.idempotency_key is not None:
        seen = records.find_idempotent(submitter.identity.name, submitter.idempotency_key)
        if seen is not None:
            raise AlreadyAccepted(seen)


def save_stream(
    source: BinaryIO, uploads_dir: Path, max_bytes: int, filename: str
) -> tuple[Path, str, int]:
    """Copy an upload to a private temp file, hashing it and enforcing the size limit as it streams."""
    uploads_dir.mkdir(parents=True, exist_ok=True)
    target = uploads_dir / f".incoming-{uuid.uuid4().hex}"
    digest, size = hashlib.sha256(), 0
    try:
        with open(target, "wb") as out:
            while chunk := source.read(COPY_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise SubmissionError(
                        413,
                        f"{filename} is larger than the limit of {max_bytes} bytes",
                        field="file",
                    )
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target, digest.hexdigest(), size


def accept_predictions(
    form: SubmissionForm,
    source: BinaryIO | None,
    filename: str,
    *,
    records: SubmissionStore,
    uploads_dir: Path,
    max_bytes: int,
    redis: Redis | None,
    submitter: Submitter,
) -> Submission:
    """Admit a predictions file (`source` None: no file was given), or the SubmissionError."""
    form, task = check_form(form, file_given=source is not None)
    assert source is not None  # check_form refused a missing file
    # a retry is answered even when the first one used the last slot
    replay_if_seen(records, submitter)
    check_quota(records, submitter, form.suite, "predictions")  # failed validations included
    filename = Path(filename or "predictions.jsonl").name
    temp, raw_sha256, size = save_stream(source, uploads_dir, max_bytes, filename)
    try:
        with open(temp, "rb") as stream:
            answers = read_predictions(iter_lines(stream), task, task.load_split(), filename)
    except PredictionsError as exc:
        temp.unlink(missing_ok=True)
        take_failed_validation(records, submitter, form.suite)
        raise SubmissionError(422, str(exc), exc.as_dict()["problems"]) from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    submission = Submission(
        id=new_submission_id(),
        created_at=utc_now(),
        kind="predictions",
        suite=form.suite,
        task=form.task,
        setting=form.setting,
        model_name=form.model_name,
        model_link=form.model_link,
        description=form.description,
        filename=filename,
        # its identity: the answers' hash, so the same answers in another encoding (a BOM, CRLF,
        # key order, ...) are a duplicate for their owner and a copy on the board; the bytes'
        # hash stays on the record (raw_sha256), the provenance of the stored file
        file_sha256=answers_sha256(answers),
        raw_sha256=raw_sha256,
        file_bytes=size,
        state="queued",
        progress_total=len(task.load_split().items),
        owner=submitter.identity.name,
        idempotency_key=submitter.idempotency_key,
    )
    final = uploads_dir / f"{submission.id}.jsonl"
    os.replace(temp, final)
    submission.file_path = str(final)
    try:
        return record_then_enqueue(
            submission, records, redis, submitter, name_key(submission.model_name)
        )
    except BaseException:
        final.unlink(missing_ok=True)
        raise


def record_then_enqueue(
    submission: Submission,
    records: SubmissionStore,
    redis: Redis | None,
    submitter: Submitter,
    claim: str | None = None,
) -> Submission:
    """Durable record first, then the queue: if Redis is down the submission is still accepted,
    and reconcile() queues it once Redis answers again. The record is admitted in one transaction
    with its idempotency key, its model-name claim (`claim`) and the count of every budget it
    takes (budgets_for: the identity's quotas, the new accounts' shared budget)."""
    try:
        records.admit(submission, name_key=claim, budgets=budgets_for(submitter, submission.kind))
    except Replayed as seen:
        raise AlreadyAccepted(seen.submission) from None
    except Duplicate as dup:
        earlier = dup.submission
        what = (  # predictions: the same answers, whatever the file's encoding (file_sha256)
            "the same predictions were"
            if submission.kind == "predictions"
            else "this model run was"
        )
        error = SubmissionError(
            409,
            f"{what} already submitted for {submission.suite}/{submission.task} "
            f"({submission.setting}) as submission {earlier.id} ({earlier.state})",
            field="file" if submission.kind == "predictions" else "model",
        )
        error.detail["existing_id"] = earlier.id
        raise error from None
    except NameTaken as taken:
        raise SubmissionError(
            403,
            f"the model name {taken.name!r} belongs to another submitter; "
            "choose another name (an operator can transfer a name)",
            field="model_name",
        ) from None
    except QuotaUsed as spent:
        raise quota_refusal(spent, submission.kind, submission.suite) from None
    if redis is not None:
        try:
            queue.enqueue(redis, submission)
        except RedisError as exc:
            log.warning("submission %s recorded but not queued yet (%s)", submission.id, exc)
    return submission


# -- model submissions ---------------------------------------------------------------------------

MAX_LIMIT = 1_000_000


@dataclass(frozen=True)
class ModelForm:
    model: str
    suite: str
    task: str
    setting: str
    revision: str | None = None
    model_type: str = "auto"
    protocol: str | None = None
    limit: int | None = (
        None  # a smoke run on an even spread of N items; marked partial, never ranked
    )
    description: str = ""


def partial_run_problem(task: Task, limit: int | None) -> str | None:
    """Why a partial run of `limit` items is refused on `task` (None: it is not). On a hidden split
    a score of a few items is nearly their labels (one item: its label), so a partial run there
    needs at least MIN_ITEMS items, the least any released number comes from. Refused at once
    rather than run and withheld: the submitter would spend a model run to learn nothing."""
    from evaluator.release import MIN_ITEMS

    if limit is None or not task.suite.split_hidden:
        return None
    if limit < min(MIN_ITEMS, len(task.load_split().items)):
        return (
            f"limit={limit}: on a hidden split a partial run takes at least {MIN_ITEMS} items "
            "(a score of fewer items would reveal their labels); leave limit out to run the "
            "whole split"
        )
    return None


def model_dedup_key(resolved: ResolvedModel, form: ModelForm, protocol: str) -> str:
    from evaluator.protocols import PROTOCOL_VERSION

    key = [
        resolved.name,
        resolved.revision,
        form.suite,
        form.task,
        form.setting,
        protocol,
        PROTOCOL_VERSION,
        form.limit,
    ]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


def check_model_form(form: ModelForm) -> tuple[ModelForm, Task]:
    """Checks 1-4 of a model run (those before its model is resolved): the form, normalised, and
    its task."""
    check_required(
        {"model": form.model, "suite": form.suite, "task": form.task, "setting": form.setting}
    )
    form = replace(
        form,
        suite=form.suite.strip(),
        task=form.task.strip(),
        setting=form.setting.strip(),
        protocol=(form.protocol or "").strip() or None,
        revision=(form.revision or "").strip() or None,
    )
    task = check_target(form.suite, form.task, form.setting)
    check_available(task)
    try:
        form = replace(
            form,
            model=normalise_text(form.model, "model", MAX_MODEL_NAME),
            description=normalise_text(
                form.description, "description", MAX_DESCRIPTION, multiline=True
            ),
        )
    except InvalidName as exc:
        raise SubmissionError(422, str(exc), field=exc.field) from None
    if not task.model_protocols:
        raise SubmissionError(
            422, f"{task.key} takes prediction files only; models cannot be run on it", field="task"
        )
    if form.limit is not None and not (1 <= form.limit <= MAX_LIMIT):
        raise SubmissionError(
            422,
            f"limit must be a number of items from 1 to {MAX_LIMIT} "
            "(leave it out to run the whole split)",
            field="limit",
        )
    limit_refusal = partial_run_problem(task, form.limit)
    if limit_refusal:
        raise SubmissionError(422, limit_refusal, field="limit")
    prompts = task.options.get("prompt_for_setting")
    if prompts is not None and form.setting not in prompts:  # refused now, not failed in a worker
        raise SubmissionError(
            422,
            f"{task.key} has no model prompt for setting {form.setting!r}; "
            f"model runs take: {', '.join(prompts)}",
            field="setting",
        )
    return form, task


def accept_model(
    form: ModelForm,
    *,
    records: SubmissionStore,
    registry: ModelRegistry,
    redis: Redis | None,
    submitter: Submitter,
) -> Submission:
    """Resolve the model (pinning its revision), refuse duplicates, record, then queue."""
    from evaluator.models import HubUnreachable, ModelError, resolve_model

    form, task = check_model_form(form)
    replay_if_seen(records, submitter)
    check_quota(records, submitter, form.suite, "model")
    try:
        resolved = resolve_model(form.model, form.revision, form.model_type, registry)
    except (ModelError, HubUnreachable) as exc:
        raise SubmissionError(exc.status, str(exc), field="model") from None
    logprobs = resolved.extra.get("logprobs", True)
    protocol = form.protocol or default_protocol(task, resolved.model_type, logprobs)
    chat_only = resolved.source == "endpoint"
    problem = protocol_problem(task, protocol, resolved.model_type, logprobs, chat_only)
    if problem is None and (problem := setting_problem(task, form.setting, protocol)):
        raise SubmissionError(422, problem, field="setting")
    if problem:
        raise SubmissionError(422, problem, field="protocol")
    if protocol is None:  # (protocol_problem names why; this says it to the type checker too)
        raise SubmissionError(
            422, f"no protocol of {task.key} runs a {resolved.model_type} model", field="protocol"
        )
    key = model_dedup_key(resolved, form, protocol)
    existing = records.find_duplicate(key)
    if existing is not None:  # (checked again inside the recording transaction)
        error = SubmissionError(
            409,
            f"{resolved.name}@{resolved.revision[:19]} on {task.key} ({form.setting}, {protocol}) "
            f"is already {existing.state} as submission {existing.id}",
            field="model",
        )
        error.detail["existing_id"] = existing.id
        raise error
    total = len(task.load_split().items)
    submission = Submission(
        id=new_submission_id(),
        created_at=utc_now(),
        kind="model",
        suite=form.suite,
        task=form.task,
        setting=form.setting,
        model_name=resolved.name,
        model_link=f"https://huggingface.co/{resolved.name}/tree/{resolved.revision}"
        if resolved.source == "hub"
        else "",
        description=form.description,
        state="queued",
        progress_total=min(form.limit or total, total),
        details={
            "model": resolved.as_dict(),
            "protocol": protocol,
            "limit": form.limit,
            "requested_revision": form.revision,
            # what it takes of the daily model-run quota (ModelRunBudget sums it)
            "quota_cost": model_run_cost(form.limit, total),
        },
        dedup_key=key,
        owner=submitter.identity.name,
        idempotency_key=submitter.idempotency_key,
    )
    return record_then_enqueue(
        submission, records, redis, submitter
    )  # a run is named by its model: no claim
