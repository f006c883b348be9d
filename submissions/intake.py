"""Accepting a predictions file: store it, validate it, record it durably, then queue it.

Shared by the REST API, the Gradio UI and anything else that takes submissions, so every entry
point gives the same answers. Nothing is recorded or queued unless the whole file is valid.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

from redis import Redis
from redis.exceptions import RedisError

from evaluator.judge import judge_unavailable_reason
from evaluator.predictions import PredictionsError, iter_lines, read_predictions
from evaluator.protocols import default_protocol, protocol_problem, setting_problem
from evaluator.registry import UnknownSuiteError, check_setting, get_suite, get_task
from evaluator.splits import SplitNotInstalled
from submissions import queue
from submissions.identity import HF_NEW_PROVIDER, HfSigninPolicy, Identity, IdentityStore
from submissions.names import InvalidName, name_key, normalise_text
from submissions.quotas import QUOTA_LABELS, QuotaLimits, today
from submissions.records import (
    Duplicate,
    NameTaken,
    QuotaUsed,
    Replayed,
    Submission,
    SubmissionStore,
    new_submission_id,
    utc_now,
)

log = logging.getLogger(__name__)

MAX_MODEL_NAME = 200
MAX_DESCRIPTION = 5000
COPY_CHUNK = 1 << 20


class SubmissionError(ValueError):
    """A rejected submission: `status` is the HTTP status, `detail` the JSON body's detail."""

    def __init__(
        self,
        status: int,
        message: str,
        problems: list[dict] | None = None,
        field: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.detail = {
            "message": message,
            "problems": problems
            or ([{"line": None, "field": field, "message": message}] if field else []),
        }


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


def check_quota(records: SubmissionStore, submitter: Submitter, suite: str, kind: str) -> None:
    """429 before any work when this identity's daily quota for `kind` on `suite` is used up, or,
    for an account admitted on the budget shared by new accounts, when that budget is."""
    identities, window = IdentityStore(records), today()
    if submitter.identity.provider == HF_NEW_PROVIDER and kind != "failed_validations":
        budget = HfSigninPolicy.from_env().new_accounts_daily_budget
        used = identities.new_accounts_submissions_since(window.start)
        if used >= budget:
            error = quota_error(kind, suite, used, budget)
            error.detail["message"] = (
                f"the daily budget shared by all new Hugging Face accounts ({budget} submissions) "
                f"is used up; it resets at {window.resets_at} (UTC midnight)"
            )
            error.detail["quota"] = "new_accounts"
            raise error
    if kind == "failed_validations":
        used = identities.failed_validations_since(submitter.identity.name, suite, window.start)
    else:
        used = identities.submissions_since(submitter.identity.name, suite, kind, window.start)
    if used >= submitter.limits.of(kind):
        raise quota_error(kind, suite, used, submitter.limits.of(kind))


def quota_error(kind: str, suite: str, used: int, limit: int) -> SubmissionError:
    window = today()
    error = SubmissionError(
        429,
        f"daily quota reached: {used} of {limit} {QUOTA_LABELS[kind]} on {suite} today; "
        f"it resets at {window.resets_at} (UTC midnight)",
        field="suite",
    )
    error.detail.update(
        {
            "quota": kind,
            "limit": limit,
            "used": used,
            "resets_at": window.resets_at,
            "retry_after_s": window.retry_after_s,
        }
    )
    return error


def replay_if_seen(records: SubmissionStore, submitter: Submitter) -> None:
    if submitter.idempotency_key is not None:
        seen = records.find_idempotent(submitter.identity.name, submitter.idempotency_key)
        if seen is not None:
            raise AlreadyAccepted(seen)


def check_form(form: SubmissionForm):
    field = "suite"  # which lookup failed, not guessed from the message (which quotes user input)
    try:
        get_suite(form.suite)
        field = "task"
        task = get_task(form.suite, form.task)
        field = "setting"
        check_setting(task, form.setting)
    except UnknownSuiteError as exc:
        raise SubmissionError(422, str(exc), field=field) from None
    name = form.model_name.strip()
    if not name:
        raise SubmissionError(
            422, "model_name is required: the name shown on the leaderboard", field="model_name"
        )
    if len(name) > MAX_MODEL_NAME:
        raise SubmissionError(
            422, f"model_name is longer than {MAX_MODEL_NAME} characters", field="model_name"
        )
    if form.model_link:
        try:
            parsed = urlparse(form.model_link)
        except ValueError:  # e.g. "http://[": an unclosed IPv6 bracket
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SubmissionError(422, "link must be an http(s) URL", field="link")
    if len(form.description) > MAX_DESCRIPTION:
        raise SubmissionError(
            422, f"description is longer than {MAX_DESCRIPTION} characters", field="description"
        )
    try:
        task.load_split()
    except SplitNotInstalled as exc:
        raise SubmissionError(409, str(exc), field="suite") from None
    reason = judge_unavailable_reason(task)  # a judge-scored task with no judge configured
    if reason:
        raise SubmissionError(409, reason, field="task")
    return task


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
    source: BinaryIO,
    filename: str,
    *,
    records: SubmissionStore,
    uploads_dir: Path,
    max_bytes: int,
    redis: Redis | None,
    submitter: Submitter,
) -> Submission:
    form = normalise_form(form)
    task = check_form(form)
    replay_if_seen(
        records, submitter
    )  # a retry is answered even when the first one used the last slot
    check_quota(records, submitter, form.suite, "predictions")
    check_quota(records, submitter, form.suite, "failed_validations")
    filename = Path(filename or "predictions.jsonl").name
    temp, sha256, size = save_stream(source, uploads_dir, max_bytes, filename)
    try:
        with open(temp, "rb") as stream:
            read_predictions(iter_lines(stream), task, task.load_split(), filename)
    except PredictionsError as exc:
        temp.unlink(missing_ok=True)
        IdentityStore(records).record_failed_validation(submitter.identity.name, form.suite)
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
        model_name=form.model_name.strip(),
        model_link=form.model_link.strip(),
        description=form.description.strip(),
        filename=filename,
        file_sha256=sha256,
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
    with its idempotency key, its model-name claim (`claim`) and the quota check."""
    window = today()
    try:
        records.admit(
            submission,
            name_key=claim,
            quota=submitter.limits.of(submission.kind),
            since=window.start,
        )
    except Replayed as seen:
        raise AlreadyAccepted(seen.submission) from None
    except Duplicate as dup:
        earlier = dup.submission
        what = "this file" if submission.kind == "predictions" else "this model run"
        error = SubmissionError(
            409,
            f"{what} was already submitted for {submission.suite}/{submission.task} "
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
    except QuotaUsed as used:
        raise quota_error(submission.kind, submission.suite, used.used, used.limit) from None
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


def partial_run_problem(task, limit: int | None) -> str | None:
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


def model_dedup_key(resolved, form: ModelForm, protocol: str) -> str:
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


def accept_model(
    form: ModelForm,
    *,
    records: SubmissionStore,
    registry,
    redis: Redis | None,
    submitter: Submitter,
) -> Submission:
    """Resolve the model (pinning its revision), refuse duplicates, record, then queue."""
    from evaluator.models import HubUnreachable, ModelError, resolve_model

    checked = normalise_form(
        SubmissionForm(form.suite, form.task, form.setting, form.model or "-", "", form.description)
    )
    task = check_form(checked)
    replay_if_seen(records, submitter)
    check_quota(records, submitter, form.suite, "model")
    if not task.model_protocols:
        raise SubmissionError(
            422, f"{task.key} takes prediction files only; models cannot be run on it", field="task"
        )
    if form.limit is not None and not (1 <= form.limit <= MAX_LIMIT):
        raise SubmissionError(422, "limit must be a positive number of items", field="limit")
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
    try:
        resolved = resolve_model(form.model, form.revision, form.model_type, registry)
    except (ModelError, HubUnreachable) as exc:
        raise SubmissionError(exc.status, str(exc), field="model") from None
    logprobs = resolved.extra.get("logprobs", True)
    protocol = form.protocol or default_protocol(task, resolved.model_type, logprobs)
    problem = protocol_problem(task, protocol, resolved.model_type, logprobs)
    if problem is None and (problem := setting_problem(task, form.setting, protocol)):
        raise SubmissionError(422, problem, field="setting")
    if problem:
        raise SubmissionError(422, problem, field="protocol")
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
        description=checked.description,
        state="queued",
        progress_total=min(form.limit or total, total),
        details={
            "model": resolved.as_dict(),
            "protocol": protocol,
            "limit": form.limit,
            "requested_revision": form.revision,
        },
        dedup_key=key,
        owner=submitter.identity.name,
        idempotency_key=submitter.idempotency_key,
    )
    return record_then_enqueue(
        submission, records, redis, submitter
    )  # a run is named by its model: no claim
