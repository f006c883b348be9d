"""REST API, version 1. Every error is JSON with a `detail.message`; bad input is never a 500."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from redis.exceptions import RedisError
from starlette.datastructures import UploadFile

from backend.auth import optional_identity, require_admin, require_identity
from backend.health import health_report
from backend.leaderboard_http import MAX_OFFSET, accepts_gzip, leaderboard_response, page_of
from evaluator.registry import UnknownSuiteError, all_suites, get_task
from evaluator.splits import SplitNotInstalled
from leaderboard.overview import OVERVIEW_NOTE, SIZE_CHOICES, TYPE_CHOICES, download_stem
from leaderboard.readpath import (
    DEFAULT_PAGE_ROWS,
    MAX_PAGE_ROWS,
    OVERVIEW,
    Filters,
    UnknownFilter,
    check_filters,
)
from leaderboard.store import StoreError, StoreUnavailable
from leaderboard.table import EXPORT_FORMATS, export
from submissions import moderation
from submissions.details import filter_details, published_split, result_details
from submissions.identity import Identity
from submissions.intake import AlreadyAccepted, ModelForm, SubmissionError, SubmissionForm
from submissions.service import Services


class ProblemItem(BaseModel):
    """One problem of a refused request: where (line of an uploaded file, field) and what."""

    model_config = ConfigDict(extra="allow")

    line: int | None = None
    field: str | None = None
    message: str
    count: int | None = Field(None, description="lines with this same problem (when repeated)")
    lines: list[int] | None = Field(None, description="the first of those lines")


class ErrorDetail(BaseModel):
    """What every error answers: a message, and the problems with where they are. Some answers
    add fields (a quota's limit, used and retry_after_s; a duplicate's existing_id)."""

    model_config = ConfigDict(extra="allow")

    message: str
    problems: list[ProblemItem] = []


class ErrorBody(BaseModel):
    detail: ErrorDetail


def _error(description: str) -> dict:
    return {"model": ErrorBody, "description": description}


# Every error any route of this API can answer, with the one body schema they share (declared so
# clients and schema checkers see the object `detail` the service sends, not FastAPI's list).
ERROR_RESPONSES = {
    400: _error("the request cannot be read (a malformed path, header or body encoding)"),
    401: _error("no identity, or an unknown or revoked token"),
    403: _error("the identity may not do this (an operator route, another's model name)"),
    404: _error("no such suite, task, submission or results revision"),
    409: _error("conflicts with the service's state (a duplicate, a split not installed)"),
    413: _error("the upload is larger than the limit"),
    415: _error("the body is neither multipart/form-data nor JSON"),
    422: _error("a field, parameter or line of the upload is not valid; `problems` says where"),
    429: _error("a daily quota is used up; Retry-After says when it resets"),
    503: _error("a dependency (the queue, the results dataset, the Hub) cannot be reached"),
}

router = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)
OVERVIEW_PATH = "/api/v1/overview"

NON_BLANK = {"type": "string", "minLength": 1, "pattern": r"\S"}  # refused when only whitespace

SUBMISSION_FORM_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "suite", "task", "setting", "model_name"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "predictions, JSONL",
                        },
                        "suite": {**NON_BLANK, "example": "prefeval"},
                        "task": {**NON_BLANK, "example": "mcq"},
                        "setting": {**NON_BLANK, "example": "zero_shot"},
                        "model_name": {**NON_BLANK, "maxLength": 200},
                        "link": {"type": "string", "description": "optional http(s) URL"},
                        "description": {"type": "string"},
                    },
                }
            }
        },
    }
}


class ModelSubmission(BaseModel):
    """A model to run on a task's hidden split (one run per submission)."""

    model_config = ConfigDict(
        extra="forbid", protected_namespaces=()
    )  # a misspelt field is an error, not ignored

    model: str = Field(
        description="a Hugging Face Hub id, or the name of a model the operator registered"
    )
    revision: str | None = Field(
        None, description="branch, tag or commit; pinned to a commit sha before queueing"
    )
    model_type: Literal["generative", "reward", "auto"] = "auto"
    suite: str
    task: str
    setting: str
    protocol: str | None = Field(
        None, description="how the decision is read, e.g. choice_logprobs or generate_parse"
    )
    limit: int | None = Field(
        None, ge=1, description="smoke run on N items spread over the split; marked partial"
    )
    description: str = ""


SUBMISSION_FORM_SCHEMA["requestBody"]["content"]["application/json"] = {
    "schema": ModelSubmission.model_json_schema(ref_template="#/components/schemas/{model}")
}


def services(request: Request) -> Services:
    return request.app.state.services


def not_found(message: str) -> HTTPException:
    return HTTPException(404, {"message": message})


@router.get("/health", summary="Liveness, and whether the queue answers")
def health(request: Request):
    # GET is answered by backend.health.HealthFastPath before routing (local store); the same report
    return health_report(services(request), request.app.state.queue_probe)


@router.get(
    "/workers",
    summary="Workers: their hardware queues, last heartbeat and the submission each runs",
)
def workers(request: Request):
    try:
        return {"workers": services(request).workers()}
    except RedisError:
        raise HTTPException(503, {"message": "the queue cannot be reached right now"}) from None


@router.get("/suites", summary="Suites with their tasks, tiers and settings")
def suites():
    return {"suites": [suite.describe() for suite in all_suites().values()]}


@router.get(
    "/suites/{suite}/tasks/{task}/inputs",
    summary="The public inputs of a task's hidden split (JSONL, no gold labels)",
    response_class=Response,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
def task_inputs(suite: str, task: str):
    try:
        found = get_task(suite, task)
    except UnknownSuiteError as exc:
        raise not_found(str(exc)) from None
    try:
        split = found.load_split()
    except SplitNotInstalled as exc:
        raise HTTPException(409, {"message": str(exc)}) from None
    return Response(
        split.public_jsonl(),
        media_type="application/x-ndjson",
        headers={
            "Content-Disposition": f'attachment; filename="{suite}-{task}-{split.name}-inputs.jsonl"',
            "X-Split-Sha256": split.sha256,
            "X-Split-Visibility": found.suite.split_status()[
                "visibility"
            ],  # "public" = public by convention
        },
    )


@router.get(
    "/suites/{suite}/tasks/{task}/inputs/companion",
    summary="What the public inputs refer to but do not carry (RealPref: session texts; PrefEval mcq_turns: "
    "the distractor turns), as JSON",
)
def task_inputs_companion(suite: str, task: str):
    try:
        found = get_task(suite, task)
    except UnknownSuiteError as exc:
        raise not_found(str(exc)) from None
    hook = found.hooks.public_companion
    if hook is None:
        raise not_found(
            f"{suite}/{task}: the public inputs carry everything; there is no companion download"
        )
    try:
        return hook(found)
    except SplitNotInstalled as exc:
        raise HTTPException(409, {"message": str(exc)}) from None


@router.post(
    "/submissions",
    status_code=201,
    summary="Submit a predictions file (multipart form) or a model to evaluate (JSON body)",
    openapi_extra=SUBMISSION_FORM_SCHEMA,
)
async def create_submission(
    request: Request,
    identity: Identity = Depends(require_identity),
    idempotency_key: str | None = Header(
        None,
        description="retrying with the same key returns the first answer; "
        "the submission is never recorded twice",
    ),
):
    svc = services(request)
    try:
        submitter = svc.submitter(identity, idempotency_key)
        return await _create_submission(request, svc, submitter)
    except SubmissionError as exc:
        headers = {"Retry-After": str(exc.detail["retry_after_s"])} if exc.status == 429 else None
        raise HTTPException(exc.status, exc.detail, headers=headers) from None
    except AlreadyAccepted as seen:  # the first answer again: same id, nothing recorded twice
        return _created(svc, seen.submission, replayed=True)


def _created(svc: Services, submission, replayed: bool = False) -> JSONResponse:
    headers = {"Location": f"/api/v1/submissions/{submission.id}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(svc.submission_status(submission), status_code=201, headers=headers)


async def _create_submission(request: Request, svc: Services, submitter):
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        return await _create_model_submission(request, svc, submitter)
    if not content_type.startswith("multipart/form-data"):
        raise HTTPException(
            415,
            {
                "message": "send multipart/form-data (a predictions file: fields file, suite, task, "
                "setting, model_name) or application/json (a model: model, suite, task, setting)"
            },
        )
    async with request.form(max_files=1, max_fields=20) as form:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise HTTPException(
                422,
                {
                    "message": "field 'file' is required: the predictions JSONL file",
                    "problems": [{"line": None, "field": "file", "message": "missing"}],
                },
            )
        missing = [
            name
            for name in ("suite", "task", "setting", "model_name")
            if not str(form.get(name) or "").strip()
        ]
        if missing:
            raise HTTPException(
                422,
                {
                    "message": f"missing form field(s): {', '.join(missing)}",
                    "problems": [{"line": None, "field": m, "message": "missing"} for m in missing],
                },
            )
        fields = SubmissionForm(
            suite=str(form["suite"]).strip(),
            task=str(form["task"]).strip(),
            setting=str(form["setting"]).strip(),
            model_name=str(form["model_name"]),
            model_link=str(form.get("link") or ""),
            description=str(form.get("description") or ""),
        )
        submission = await run_in_threadpool(
            svc.submit_predictions,
            fields,
            upload.file,
            upload.filename or "predictions.jsonl",
            submitter,
        )
    return _created(svc, submission)


async def _create_model_submission(request: Request, svc: Services, submitter):
    try:
        body = ModelSubmission.model_validate_json(await request.body())
    except ValidationError as exc:
        problems = [
            {
                "line": None,
                "field": ".".join(str(p) for p in err["loc"]) or None,
                "message": err["msg"],
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        raise HTTPException(422, {"message": message, "problems": problems}) from None
    form = ModelForm(
        model=body.model,
        suite=body.suite,
        task=body.task,
        setting=body.setting,
        revision=body.revision,
        model_type=body.model_type,
        protocol=body.protocol,
        limit=body.limit,
        description=body.description,
    )
    submission = await run_in_threadpool(svc.submit_model, form, submitter)
    return _created(svc, submission)


@router.get("/models", summary="Local models the operator registered (submit them by name)")
def list_models(request: Request):
    models = services(request).registered_models()
    return {
        "models": [
            {
                "name": name,
                "model_type": m["model_type"],
                "revision": m["revision"],
                "parameters": m.get("parameters"),
            }
            for name, m in sorted(models.items())
        ]
    }


@router.get(
    "/submissions/{submission_id}", summary="State, queue position, progress, error and result"
)
def get_submission(submission_id: str, request: Request):
    svc = services(request)
    submission = svc.submission(submission_id)
    if submission is None:
        raise not_found(f"no submission with id {submission_id!r}")
    return svc.submission_status(submission)


@router.get(
    "/submissions/{submission_id}/history",
    summary="Operator actions on a submission (who, when, what, why)",
)
def submission_history(submission_id: str, request: Request):
    svc = services(request)
    if svc.records.get(submission_id) is None:
        raise not_found(f"no submission with id {submission_id!r}")
    return {"history": svc.history(submission_id)}


class OperatorAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        "",
        max_length=moderation.MAX_REASON,
        description="why (recorded in the row's history; a flag's reason is shown publicly)",
    )


@router.post(
    "/admin/submissions/{submission_id}/{action}",
    summary="Operator action: hide, unhide, flag, delete, cancel or rerun (admin token)",
)
def operator_action(
    submission_id: str,
    action: Literal["hide", "unhide", "flag", "delete", "cancel", "rerun"],
    body: OperatorAction,
    request: Request,
    admin: Identity = Depends(require_admin),
):
    svc = services(request)
    try:
        entry = moderation.apply(
            action,
            submission_id,
            actor=admin.name,
            reason=body.reason,
            records=svc.records,
            outbox=svc.outbox,
            redis=svc.redis,
        )
    except moderation.ActionError as exc:
        raise HTTPException(
            exc.status,
            {
                "message": str(exc),
                "problems": [{"line": None, "field": exc.field, "message": str(exc)}],
            },
        ) from None
    return {
        "action": {k: v for k, v in entry.items() if k != "details"},
        "submission": svc.submission_status(svc.records.get(submission_id)),
    }


@router.get(
    "/compare",
    summary="Paired comparison of two finished submissions on the items both answered: "
    "difference of the primary metric, its 95% interval over the suite's units, p-value",
    description="Open to anyone on a public split. On a hidden split it answers only the "
    "difference of the two released values (no interval, p-value or counts), needs an identity "
    "(`Authorization: Bearer <API token>`) and counts against that identity's daily comparisons "
    "on the suite (PERSONABOARD_QUOTA_COMPARISONS).",
    responses={
        401: _error("a comparison on a hidden split without an identity, or a token not valid"),
        404: _error("no such submission, or it is hidden or deleted"),
        409: _error("a row without a published result, answers no longer kept, a partial run"),
        429: _error("the identity's daily comparisons on the suite are used up (hidden split)"),
    },
)
def compare(
    request: Request,
    a: str = Query(..., max_length=64),
    b: str = Query(..., max_length=64),
    identity: Identity | None = Depends(optional_identity),
):
    try:
        return services(request).compare(a, b, identity)
    except SubmissionError as exc:
        raise HTTPException(exc.status, exc.detail, headers=_error_headers(exc)) from None


def _error_headers(exc: SubmissionError) -> dict[str, str] | None:
    """Retry-After on a spent quota, WWW-Authenticate on a missing identity (RFC 9110)."""
    if exc.status == 429:
        return {"Retry-After": str(exc.detail["retry_after_s"])}
    if exc.status == 401:
        return {"WWW-Authenticate": "Bearer"}
    return None


@router.get(
    "/submissions/{submission_id}/details",
    summary="Per-item details of a published result on a public split: inputs, gold, answer, "
    "right or wrong; JSON (paged), CSV or parquet",
    description="Only for finished, public results on a public split (the Open LLM Leaderboard's "
    "details): on a hidden split nothing per item is shown to anyone, the submitter included, and "
    "the answer is 404. `tier` (`group/tier` or a tier name) and `outcome` (right, wrong) filter "
    "the items; `score` is the item's value of the primary metric (1/0 for accuracy), empty for a "
    "judge-scored task.",
    response_class=Response,
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        404: {"description": "no such published result, or its split is hidden"},
    },
)
async def submission_details(
    submission_id: str,
    request: Request,
    tier: str | None = Query(None, max_length=200),
    outcome: Literal["right", "wrong"] | None = None,
    format: Literal["json", "csv", "parquet"] = "json",
    limit: int = Query(DEFAULT_PAGE_ROWS, ge=1, le=MAX_PAGE_ROWS, description="JSON rows"),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description="JSON: rows to skip"),
):
    svc = services(request)
    try:
        submission, frame = await run_in_threadpool(
            result_details, svc.records, submission_id, published_split(svc.board)
        )
    except SubmissionError as exc:
        raise HTTPException(exc.status, exc.detail) from None
    try:
        frame = filter_details(frame, get_task(submission.suite, submission.task), tier, outcome)
    except ValueError as exc:
        raise HTTPException(
            422,
            {
                "message": str(exc),
                "problems": [
                    {"line": None, "field": str(exc).split("=", 1)[0], "message": str(exc)}
                ],
            },
        ) from None
    headers = {"X-Total-Count": str(len(frame)), "X-Results-Revision": submission.revision}
    if format == "json":
        frame = frame.iloc[offset : offset + limit]
    else:
        name = f"details-{submission.suite}-{submission.task}-{submission.id}"
        headers["Content-Disposition"] = f'attachment; filename="{name}.{format}"'
    return Response(export(frame, format), media_type=EXPORT_FORMATS[format], headers=headers)


@router.get("/submissions", summary="Recent submissions")
def list_submissions(request: Request, limit: int = Query(50, ge=1, le=1000)):
    svc = services(request)
    return {"submissions": [s.public() for s in svc.recent_submissions(limit)]}


def unknown_filter(exc: UnknownFilter) -> HTTPException:
    """A 422 naming the unknown parameter and its allowed values."""
    return HTTPException(
        422,
        {
            "message": str(exc),
            "problems": [
                {"line": None, "field": exc.parameter, "message": str(exc)},
            ],
            "allowed": exc.allowed,
        },
    )


def checked(filters: Filters) -> Filters:
    """`filters`, or a 422 naming the unknown parameter and its allowed values."""
    try:
        check_filters(filters)
    except UnknownFilter as exc:
        raise unknown_filter(exc) from None
    return filters


async def read_table(request: Request, filters: Filters, format: str, revision, page):
    """A view's encoded body through the read path (the board's or the overview's): 503 while the
    store cannot be reached, 404 for an unknown revision."""
    try:
        return await services(request).leaderboard_body(
            filters,
            format,
            revision or None,
            gzipped=accepts_gzip(request.headers.get("accept-encoding")),
            page=page,
        )
    except StoreUnavailable as exc:
        raise HTTPException(
            503, {"message": "the results dataset cannot be reached right now; try again later"}
        ) from exc
    except StoreError as exc:
        raise not_found(str(exc)) from None
    except UnknownFilter as exc:  # a value known only from the data (the overview's licenses)
        raise unknown_filter(exc) from None


@router.get(
    "/leaderboard",
    summary="The leaderboard, filtered; JSON, CSV or parquet",
    description="JSON comes a page at a time (`limit` rows from `offset`; the first "
    f"{DEFAULT_PAGE_ROWS} by default, at most {MAX_PAGE_ROWS}): X-Total-Count is the number of rows, "
    "and the Link header names the next and previous pages; `complete=true` gives the whole table "
    "in one JSON body, as CSV and parquet always are. Responses carry an ETag (it changes with the results revision): send it back in "
    "If-None-Match to get 304 Not Modified while nothing was published.",
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        304: {"description": "not modified since the ETag given in If-None-Match"},
    },
)
async def leaderboard(
    request: Request,
    suite: str | None = None,
    task: str | None = None,
    setting: str | None = None,
    tier: str | None = None,
    revision: str | None = Query(
        None,
        description="a results-dataset revision (commit sha) or release name; default the newest",
    ),
    format: Literal["json", "csv", "parquet"] = "json",
    limit: int | None = Query(
        None,
        ge=1,
        le=MAX_PAGE_ROWS,
        description=f"JSON rows per page (default {DEFAULT_PAGE_ROWS})",
    ),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description="JSON: rows to skip"),
    complete: bool = Query(
        False, description="JSON: the whole table in one body (a download), not a page"
    ),
):
    if format != "json" and (limit is not None or offset):
        raise HTTPException(
            422,
            {"message": f"limit and offset page the JSON; format={format} is the complete table"},
        )
    if complete and (limit is not None or offset):
        raise HTTPException(
            422,
            {"message": "limit and offset page the JSON; complete=true asks for the whole table"},
        )
    filters = Filters(suite or None, task or None, setting or None, tier or None)
    checked(filters)
    body = await read_table(
        request, filters, format, revision, page_of(format, limit, offset, complete)
    )
    pinned = revision is not None and revision.lower() == body.revision
    return leaderboard_response(
        body,
        format,
        pinned,
        request.headers.get("if-none-match"),
        request.query_params.multi_items(),
    )


@router.get(
    "/overview",
    summary="The overview across suites: one row per model, one column per suite/task; "
    "JSON, CSV or parquet",
    description=OVERVIEW_NOTE
    + " Per model: `model_name`, `model_key` (its identity: two models sharing a display name are "
    "two rows), `source` (model run or predictions file), `model_link`, `model_type`, "
    "`parameters`, `size`, `license`, `tasks`. The filters (type, size, license, search) keep "
    "models and leave ranks as they are over all models."
    + " Per task column `S/T`: the value, then `S/T ci_low`, `ci_high`, `rank` (only among rows "
    "of that column that ran the same items; none for a copy of another row's predictions file), "
    "`n` (items), `setting`, `note` (why a row is not ranked), `submission_id`. Paged and cached "
    "as the leaderboard is (same ETag and Link headers).",
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        304: {"description": "not modified since the ETag given in If-None-Match"},
    },
)
async def overview(
    request: Request,
    suite: str | None = Query(None, description="keep this suite's columns"),
    task: str | None = Query(None, description="keep this task's columns"),
    search: str | None = Query(
        None, max_length=200, description="models whose name contains this (any case)"
    ),
    type: str | None = Query(
        None, max_length=100, description=f"models of this type: {', '.join(TYPE_CHOICES)}"
    ),
    size: str | None = Query(
        None,
        max_length=100,
        description=f"models of this size (parameters): {', '.join(SIZE_CHOICES)}",
    ),
    license: str | None = Query(
        None,
        max_length=200,
        description="models of this license (one the overview's models have; a 422 lists them)",
    ),
    revision: str | None = Query(
        None,
        description="a results-dataset revision (commit sha) or release name; default the newest",
    ),
    format: Literal["json", "csv", "parquet"] = "json",
    limit: int | None = Query(None, ge=1, le=MAX_PAGE_ROWS),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
    complete: bool = Query(False, description="JSON: the whole table in one body"),
):
    if (format != "json" or complete) and (limit is not None or offset):
        raise HTTPException(
            422, {"message": "limit and offset page the JSON; this asks for the whole table"}
        )
    filters = checked(
        Filters(
            suite or None,
            task or None,
            view=OVERVIEW,
            search=(search or "").strip() or None,
            model_type=type or None,
            size=size or None,
            license=license or None,
        )
    )
    body = await read_table(
        request, filters, format, revision, page_of(format, limit, offset, complete)
    )
    pinned = revision is not None and revision.lower() == body.revision
    name = download_stem(
        body.revision,
        filters.suite,
        filters.task,
        filters.model_type,
        filters.size,
        filters.license,
        filters.search,
    )
    return leaderboard_response(
        body,
        format,
        pinned,
        request.headers.get("if-none-match"),
        request.query_params.multi_items(),
        path=OVERVIEW_PATH,
        filename=name,
    )


@router.get(
    "/leaderboard/versions",
    summary="Every published version of the results dataset and its named releases, newest first",
)
def leaderboard_versions(request: Request):
    results = services(request).results
    try:
        return {
            "versions": [v.__dict__ for v in results.versions()],
            "releases": [r.__dict__ for r in results.releases()],
        }
    except StoreUnavailable as exc:
        raise HTTPException(
            503, {"message": "the results dataset cannot be reached right now; try again later"}
        ) from exc
