"""REST API, version 1. Every error is JSON with a `detail.message`; bad input is never a 500."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from redis.exceptions import RedisError
from starlette.datastructures import UploadFile

from backend.auth import optional_identity, require_admin, require_identity
from backend.health import health_report
from backend.leaderboard_http import (
    MAX_OFFSET,
    accepts_gzip,
    leaderboard_response,
    page_links,
    page_of,
    rows_suffix,
)
from evaluator.protocols import known_protocols
from evaluator.registry import UnknownSuiteError, all_suites, get_task
from evaluator.splits import SplitNotInstalled
from leaderboard.columns import chooser_entries
from leaderboard.overview import OVERVIEW_NOTE, SIZE_CHOICES, TYPE_CHOICES, overview_stem
from leaderboard.readpath import (
    DEFAULT_PAGE_ROWS,
    MAX_PAGE_ROWS,
    OVERVIEW,
    Filters,
    Page,
    UnknownFilter,
    check_filters,
    filter_values,
)
from leaderboard.store import StoreError, StoreUnavailable
from leaderboard.table import EXPORT_FORMATS, export
from leaderboard.view_query import (
    BOARD_TYPE_CHOICES,
    DIRECTIONS,
    NO_COLUMNS,
    parse_columns,
    parse_sort,
    sort_columns,
)
from submissions import moderation
from submissions.details import filter_details, published_split, result_details
from submissions.identity import Identity
from submissions.intake import (
    MAX_DESCRIPTION,
    MAX_LIMIT,
    MAX_MODEL_NAME,
    AlreadyAccepted,
    ModelForm,
    SubmissionError,
    SubmissionForm,
)
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


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# Every error any route of this API can answer, with the one body schema they share (declared so
# clients and schema checkers see the object `detail` the service sends, not FastAPI's list).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
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

PAGING = (
    "`limit` rows from `offset` page every format. Without `limit`, JSON answers a page of the "
    f"first {DEFAULT_PAGE_ROWS} rows (from `offset`), and a download (CSV, parquet, or JSON with "
    "`complete=true`) every row (from `offset`)."
)
LIMIT_NOTE = f"rows to answer, any format (default: JSON {DEFAULT_PAGE_ROWS}, a download all)"
OFFSET_NOTE = "rows to skip, any format"
COMPLETE_NOTE = "JSON: every row when no `limit` is given (a download, as CSV and parquet are)"


@functools.cache
def _chars_matching(test: Callable[[str], bool]) -> tuple[tuple[int, int], ...]:
    """The code point ranges whose characters pass `test` (this Python's Unicode tables: the ones
    the intake's checks read)."""
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        if test(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return tuple(ranges)


def _refused(char: str) -> bool:  # what submissions.names.normalise_text refuses in a name
    return unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")


@functools.cache
def _char_class(*tests: Callable[[str], bool], allowed: str = "") -> str:
    """A regex class body of the characters that pass any of `tests`, less `allowed` and the
    surrogates (a request's UTF-8 cannot carry them). Read alike by Python's re and the schema
    validators' ECMA regexes: \\uXXXX escapes within the BMP, the characters themselves above it."""
    ranges = sorted(r for test in tests for r in _chars_matching(test))
    escape = lambda code: f"\\u{code:04X}" if code <= 0xFFFF else chr(code)  # noqa: E731
    parts = []
    for low, high in ranges:
        codes = [
            c for c in range(low, high + 1) if chr(c) not in allowed and not 0xD800 <= c <= 0xDFFF
        ]
        for start, end in _runs(codes):
            parts.append(escape(start) if start == end else f"{escape(start)}-{escape(end)}")
    return "".join(parts)


def _runs(codes: list[int]) -> list[tuple[int, int]]:
    """Consecutive code points as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def text_schema(max_length: int, non_blank: bool = False, multiline: bool = False) -> dict:
    """What the intake accepts in a name, link or description: no control, format, private-use or
    line-separator character (tabs and newlines where `multiline`), at most `max_length`
    characters; `non_blank`: something besides whitespace."""
    refused = _char_class(_refused, allowed="\t\n" if multiline else "")
    if not non_blank:
        return {"type": "string", "maxLength": max_length, "pattern": f"^[^{refused}]*$"}
    blank = _char_class(_refused, str.isspace)
    pattern = f"^[^{refused}]*[^{blank}][^{refused}]*$"
    return {"type": "string", "minLength": 1, "maxLength": max_length, "pattern": pattern}


def http_url_schema() -> dict:
    """An http(s) URL the intake reads a host from (ASCII host name, optional port)."""
    refused = _char_class(_refused)
    return {
        "type": "string",
        "maxLength": 2000,
        "pattern": f"^https?://[A-Za-z0-9.-]+(?::[0-9]{{1,5}})?(?:[/?#][^{refused}]*)?$",
    }


def submission_schema() -> dict:
    """POST /submissions' request bodies, built when the schema is (the registry's suites, tasks
    and settings as enums; names, links and descriptions as the intake accepts them)."""
    values = filter_values()
    enum = lambda name, example: {"type": "string", "enum": values[name], "example": example}  # noqa: E731
    model = ModelSubmission.model_json_schema(ref_template="#/components/schemas/{model}")
    model["properties"].update(
        suite=enum("suite", "prefeval"),
        task=enum("task", "mcq"),
        setting={**enum("setting", "zero_shot"), "description": "a setting of the suite"},
        model={**model["properties"]["model"], **text_schema(MAX_MODEL_NAME, non_blank=True)},
        description=text_schema(MAX_DESCRIPTION, multiline=True),
    )
    model["required"] = ["model", "suite", "task", "setting"]
    model["properties"]["protocol"] = {
        "anyOf": [{"type": "string", "enum": list(known_protocols())}, {"type": "null"}],
        "description": model["properties"]["protocol"]["description"],
    }
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file", "suite", "task", "setting", "model_name"],
                        "additionalProperties": False,
                        "properties": {
                            "file": {
                                "type": "string",
                                "format": "binary",
                                "description": "predictions, JSONL",
                            },
                            "suite": enum("suite", "prefeval"),
                            "task": enum("task", "mcq"),
                            "setting": enum("setting", "zero_shot"),
                            "model_name": text_schema(MAX_MODEL_NAME, non_blank=True),
                            "link": {
                                "anyOf": [http_url_schema(), {"type": "string", "maxLength": 0}],
                                "description": "optional http(s) URL",
                            },
                            "description": text_schema(MAX_DESCRIPTION, multiline=True),
                        },
                    }
                },
                "application/json": {"schema": model},
            },
        }
    }


class BuiltWhenRead(dict):
    """A route's openapi_extra, built when FastAPI first reads it (at the first /openapi.json, which
    it then keeps): what the suites' manifests declare is read then, not at import."""

    def __init__(self, build: Callable[[], dict]) -> None:
        super().__init__()
        self._build = build

    def _built(self) -> None:
        if not dict.__len__(self):
            self.update(self._build())

    def __bool__(self) -> bool:
        self._built()
        return True

    def items(self):
        self._built()
        return super().items()


class ModelSubmission(BaseModel):
    """A model to run on a task's hidden split (one run per submission)."""

    model_config = ConfigDict(
        extra="forbid", protected_namespaces=()
    )  # a misspelt field is an error, not ignored

    model: str = Field(
        "", description="a Hugging Face Hub id, or the name of a model the operator registered"
    )
    revision: str | None = Field(
        None, description="branch, tag or commit; pinned to a commit sha before queueing"
    )
    model_type: Literal["generative", "reward", "auto"] = "auto"
    # Required, and limit's range, as the schema says; the intake refuses a missing value or one
    # out of range (the same answer the UI and the CLI give), so no default refusal here.
    suite: str = ""
    task: str = ""
    setting: str = ""
    protocol: str | None = Field(
        None, description="how the decision is read, e.g. choice_logprobs or generate_parse"
    )
    limit: int | None = Field(
        None,
        description="smoke run on N items spread over the split; marked partial",
        json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT},
    )
    description: str = ""


def registry_enum(parameter: str) -> Any:  # pydantic's json_schema_extra: a callable that edits
    """A filter parameter's schema: the values the suites' manifests declare (a suite, task,
    setting or tier), read from the registry when the schema is built (the app has loaded every
    suite by then), so any other value is a schema-invalid request (422 naming the parameter and
    the allowed values). A setting may carry a judge (`zero_shot+judge:NAME`, as judged rows do).
    An empty value is no filter (as an HTML form sends an unset field)."""

    def schema(field: dict) -> None:
        values = ["", *filter_values()[parameter]]
        field.pop("anyOf", None)
        if parameter == "setting":
            # a judge after a setting, never after none (`+judge:...` alone is no setting)
            judged = "^(?:" + "|".join(re.escape(v) for v in values if v) + r")\+judge:"
            field["anyOf"] = [
                {"type": "string", "enum": values},
                {"type": "string", "pattern": judged},
            ]
        else:
            field.update(type="string", enum=values)

    return schema


def fixed_enum(values: tuple[str, ...] | list[str]) -> Any:
    """A parameter's schema: one of `values` (checked by the route, which names the allowed
    values in its 422), or empty (no filter)."""

    def schema(field: dict) -> None:
        field.pop("anyOf", None)
        field.update(type="string", enum=["", *values])

    return schema


def sort_schema() -> Any:
    """`sort`: `column:asc` or `column:desc`, the column one a board may have (read when the
    schema is built, as registry_enum reads the suites), or empty. A pattern, not an enum of
    every column twice: a list that long would read as data."""

    def schema(field: dict) -> None:
        column = "(?:" + "|".join(re.escape(c) for c in sort_columns()) + ")"
        field.pop("anyOf", None)
        field.update(type="string", pattern=f"^(?:|{column}:(?:{'|'.join(DIRECTIONS)}))$")

    return schema


def columns_schema() -> Any:
    """`columns`: the column chooser's entries, comma-separated, or `none`, or empty."""

    def schema(field: dict) -> None:
        entry = "(?:" + "|".join(re.escape(e) for e in chooser_entries()) + ")"
        field.pop("anyOf", None)
        field.update(type="string", pattern=f"^(?:|{NO_COLUMNS}|{entry}(?:,{entry})*)$")

    return schema


def services(request: Request) -> Services:
    return request.app.state.services


def _query_names(dependant: Any) -> set[str]:
    """The query parameters a route declares, its dependencies' included (FastAPI's Dependant)."""
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


_ROUTE_PARAMETERS: dict[int, tuple[Any, frozenset[str]]] = {}  # id(route) -> (route, names)


def _route_parameters(route: Any) -> frozenset[str]:
    """The query parameters of a route (APIRoute is not hashable: kept by id, with the route)."""
    known = _ROUTE_PARAMETERS.get(id(route))
    if known is None or known[0] is not route:
        known = (route, frozenset(_query_names(route.dependant)))
        _ROUTE_PARAMETERS[id(route)] = known
    return known[1]


def known_parameters(request: Request) -> None:
    """A route dependency: a query parameter the route does not declare is a 422 naming it (FastAPI
    ignores one, so `?search=` on a route without it answered every row as if it filtered)."""
    route = request.scope.get("route")
    if route is None:
        return
    allowed = _route_parameters(route)
    unknown = [name for name in dict.fromkeys(request.query_params.keys()) if name not in allowed]
    if unknown:
        listed = ", ".join(sorted(allowed))
        problems = [
            {
                "line": None,
                "field": name,
                "message": f"unknown query parameter {name[:100]!r}; this route takes: {listed}",
            }
            for name in unknown[:20]
        ]
        raise HTTPException(
            422,
            {
                "message": "; ".join(
                    f"{name[:100]}: {p['message']}" for name, p in zip(unknown, problems)
                ),
                "problems": problems,
                "allowed": sorted(allowed),
            },
        )


# The routes that answer tables and their downloads refuse a parameter they do not know.
CHECKED = [Depends(known_parameters)]


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
    openapi_extra=BuiltWhenRead(submission_schema),
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
    except SubmissionError as exc:  # the intake's refusal, as every entry point answers it
        raise HTTPException(exc.status, exc.detail, headers=exc.headers() or None) from None
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
        fields = SubmissionForm(  # what was sent; the intake refuses what is missing or wrong
            suite=str(form.get("suite") or ""),
            task=str(form.get("task") or ""),
            setting=str(form.get("setting") or ""),
            model_name=str(form.get("model_name") or ""),
            model_link=str(form.get("link") or ""),
            description=str(form.get("description") or ""),
        )
        submission = await run_in_threadpool(
            svc.submit_predictions,
            fields,
            upload.file if isinstance(upload, UploadFile) else None,
            (upload.filename if isinstance(upload, UploadFile) else None) or "predictions.jsonl",
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
    form = ModelForm(**body.model_dump())  # the same fields: the intake's form, as sent
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
    current = svc.records.get(submission_id)  # the action's submission: it exists
    return {
        "action": {k: v for k, v in entry.items() if k != "details"},
        "submission": svc.submission_status(current) if current is not None else None,
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
        raise HTTPException(exc.status, exc.detail, headers=exc.headers() or None) from None


@router.get(
    "/submissions/{submission_id}/details",
    dependencies=CHECKED,
    summary="Per-item details of a published result on a public split: inputs, gold, answer, "
    "right or wrong, a model run's prompt and output; JSON (paged), CSV or parquet",
    description="Only for finished, public results on a public split (the Open LLM Leaderboard's "
    "details): on a hidden split nothing per item is shown to anyone, the submitter included, and "
    "the answer is 404. `tier` (`group/tier` or a tier name) and `outcome` (right, wrong) filter "
    "the items; `score` is the item's value of the primary metric (1/0 for accuracy), empty for a "
    "judge-scored task; `answer` is null where no answer could be read. A model run's items also "
    "hold `rule` (what read the answer, or `unparsed`), `prompt` (the chat as sent, JSON), "
    "`prompt_tokens`, `prompt_messages`, `prompt_sha256`, `raw` (the generated text) and "
    "`raw_chars`, `logprobs` (the labels' log-probabilities, JSON) and `orders` (an item asked in "
    "several orders: the text columns hold {order: value}); a judge-scored one `judge` (each judge "
    "call's prompt, reply and reading, JSON). Texts are stored up to 4,000 characters and a "
    "prompt up to 6,000, elided in the middle (docs/architecture.md). "
    + PAGING
    + ' A paged answer has a Link header (rel="next", '
    '"prev") and a paged download\'s file name says which page (`-page-2-of-20-rows-101-200`). '
    "A tier no task declares is a 422; a tier of another task than the result's is a 404 naming "
    "its tiers; a query parameter the route does not take is a 422 naming it.",
    response_class=Response,
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        404: _error(
            "no such published result, its split is hidden, or a tier of another task: "
            "`problems` names the parameter"
        ),
    },
)
async def submission_details(
    submission_id: str,
    request: Request,
    tier: str | None = Query(None, max_length=200, json_schema_extra=registry_enum("tier")),
    outcome: Literal["right", "wrong"] | None = None,
    format: Literal["json", "csv", "parquet"] = "json",
    limit: int | None = Query(
        None,
        ge=1,
        le=MAX_PAGE_ROWS,
        description=f"rows to answer, any format (default: JSON {DEFAULT_PAGE_ROWS}, CSV and "
        "parquet all)",
    ),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description=OFFSET_NOTE),
    complete: bool = Query(False, description=COMPLETE_NOTE),
):
    svc = services(request)
    try:
        submission, frame = await run_in_threadpool(
            result_details, svc.records, submission_id, published_split(svc.board)
        )
    except SubmissionError as exc:
        raise HTTPException(exc.status, exc.detail) from None
    task = get_task(submission.suite, submission.task)
    try:
        frame = filter_details(frame, task, tier, outcome)
    except ValueError as exc:
        # a tier some task declares, but not the result's: a well-formed request for rows that
        # are not there (404); one no task declares is a bad request (422)
        elsewhere = tier is not None and tier in filter_values()["tier"]
        raise HTTPException(
            404 if elsewhere else 422,
            {
                "message": str(exc),
                "problems": [
                    {"line": None, "field": str(exc).split("=", 1)[0], "message": str(exc)}
                ],
                "allowed": [f"{g.name}/{t}" for g in task.tier_groups for t in g.tiers],
            },
        ) from None
    # published: its revision is set (submissions/details.py published_submission)
    total = len(frame)
    headers = {"X-Total-Count": str(total), "X-Results-Revision": submission.revision or ""}
    page = page_of(format, limit, offset, complete)  # as the leaderboard pages: never silently
    if page is not None:
        frame = frame.iloc[page.offset : page.end]
        links = page_links(request.query_params.multi_items(), page, total, request.url.path)
        if links:
            headers["Link"] = links
    if format != "json" or complete:  # a download: named, its page (if paged) in the name
        name = f"details-{submission.suite}-{submission.task}-{submission.id}"
        name += rows_suffix(page, total)
        headers["Content-Disposition"] = f'attachment; filename="{name}.{format}"'
    return Response(export(frame, format), media_type=EXPORT_FORMATS[format], headers=headers)


@router.get("/submissions", summary="Recent submissions")
def list_submissions(request: Request, limit: int = Query(50, ge=1, le=1000)):
    svc = services(request)
    return {"submissions": [s.public() for s in svc.recent_submissions(limit)]}


def unknown_filter(exc: UnknownFilter) -> HTTPException:
    """A 422 naming the unknown parameter and its allowed values; a 404 (the same body) when the
    value is a real one but not of the suite or task given (only the combination is wrong)."""
    return HTTPException(
        422 if exc.scope is None else 404,
        {
            "message": str(exc),
            "problems": [
                {"line": None, "field": exc.parameter, "message": str(exc)},
            ],
            "allowed": exc.allowed,
        },
    )


def checked(filters: Filters) -> Filters:
    """`filters`, or a 422 (404) naming the unknown parameter and its allowed values."""
    try:
        check_filters(filters)
    except UnknownFilter as exc:
        raise unknown_filter(exc) from None
    return filters


@dataclass(frozen=True)
class TableRows:
    """What a table route (the board, the overview) is asked for besides its filters."""

    revision: str | None
    format: str
    page: Page | None


def table_rows(
    revision: str | None = Query(
        None,
        description="a results-dataset revision (commit sha) or release name; default the newest",
    ),
    format: Literal["json", "csv", "parquet"] = "json",
    limit: int | None = Query(None, ge=1, le=MAX_PAGE_ROWS, description=LIMIT_NOTE),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description=OFFSET_NOTE),
    complete: bool = Query(False, description=COMPLETE_NOTE),
) -> TableRows:
    """The version, format and rows parameters the table routes share (a FastAPI dependency)."""
    return TableRows(revision, format, page_of(format, limit, offset, complete))


async def table_response(
    request: Request,
    filters: Filters,
    rows: TableRows,
    path: str | None = None,
    name_of: Callable[[str], str] | None = None,
) -> Response:
    """A table route's answer: its body through the read path, 200 or 304, named by `name_of`
    (the revision shown -> a file name stem) where the route names its downloads."""
    body = await read_table(request, filters, rows.format, rows.revision, rows.page)
    pinned = rows.revision is not None and rows.revision.lower() == body.revision
    return leaderboard_response(
        body,
        rows.format,
        pinned,
        request.headers.get("if-none-match"),
        request.query_params.multi_items(),
        **({"path": path} if path else {}),
        **({"filename": name_of(body.revision)} if name_of else {}),
    )


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
    dependencies=CHECKED,
    summary="The leaderboard, filtered; JSON, CSV or parquet",
    description=PAGING + " X-Total-Count is the number of rows of the table, and the Link header "
    "names the next and previous pages of a page. Responses carry an ETag (it changes with the "
    "results revision): send it back in If-None-Match to get 304 Not Modified while nothing was "
    "published. A suite, task, setting or tier no suite declares is a 422; one another suite or "
    "task declares (a task of another suite, a tier of another task) is a 404 naming the parameter "
    "and the values allowed there. The board's own filters narrow the rows as the board does "
    "(`search`, `type`, `size`, `license`; ranks stay those of the whole view), `sort` orders them "
    "as a click on its header does and `columns` keeps its column chooser's columns: the board's "
    "download links carry every one, so a download holds the rows on screen. A paged download's "
    "file name says which page (`-page-2-of-7-rows-101-200`). A query parameter the route does "
    "not take is a 422 naming it.",
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        304: {"description": "not modified since the ETag given in If-None-Match"},
        404: _error(
            "no such results revision, or a filter value of another suite or task than the one "
            "given: `problems` names the parameter, `allowed` its values there"
        ),
    },
)
async def leaderboard(
    request: Request,
    suite: str | None = Query(None, json_schema_extra=registry_enum("suite")),
    task: str | None = Query(
        None, description="a task of the suite", json_schema_extra=registry_enum("task")
    ),
    setting: str | None = Query(
        None,
        description="a setting of the suite (a judged one may name its judge: `zero_shot+judge:NAME`)",
        json_schema_extra=registry_enum("setting"),
    ),
    tier: str | None = Query(
        None,
        description="a tier of the task: `group/tier`, or the tier's name",
        json_schema_extra=registry_enum("tier"),
    ),
    search: str | None = Query(
        None, max_length=200, description="rows whose model name contains this (any case)"
    ),
    type: str | None = Query(
        None,
        max_length=100,
        description="rows of this model type",
        json_schema_extra=fixed_enum(BOARD_TYPE_CHOICES),
    ),
    size: str | None = Query(
        None,
        max_length=100,
        description="rows of this model size (parameters)",
        json_schema_extra=fixed_enum(SIZE_CHOICES),
    ),
    license: str | None = Query(
        None,
        max_length=200,
        description="rows of this license (one the board's rows have; a 404 lists them)",
    ),
    columns: str | None = Query(
        None,
        max_length=500,
        description="the column chooser's entries to keep, comma-separated (`none`: none of "
        "them); the columns the board always shows, those only downloads carry (ids, "
        "provenance) and the ranking tier stay; empty: every column",
        json_schema_extra=columns_schema(),
    ),
    sort: str | None = Query(
        None,
        max_length=200,
        description="`column:asc` or `column:desc`, as a click on the board's header sorts: "
        "within each section (verified, reference, partial, papers), blanks last; `ci` keeps "
        "the order, `reference` sorts by `above_reference`, `size` by `parameters`. A column "
        "this view lacks is a 404",
        json_schema_extra=sort_schema(),
    ),
    rows: TableRows = Depends(table_rows),
):
    try:
        chosen, order = parse_columns(columns), parse_sort(sort)
    except UnknownFilter as exc:
        raise unknown_filter(exc) from None
    filters = Filters(
        suite or None,
        task or None,
        setting or None,
        tier or None,
        search=(search or "").strip() or None,
        model_type=type or None,
        size=size or None,
        license=license or None,
        columns=chosen,
        sort=order,
    )
    return await table_response(request, checked(filters), rows)


@router.get(
    "/overview",
    dependencies=CHECKED,
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
    "as the leaderboard is (same ETag and Link headers; a paged download names its page). "
    + PAGING
    + " A query parameter the route does not take is a 422 naming it.",
    responses={
        200: {
            "content": {
                "application/json": {},
                "text/csv": {},
                "application/vnd.apache.parquet": {},
            }
        },
        304: {"description": "not modified since the ETag given in If-None-Match"},
        404: _error(
            "no such results revision, a task of another suite than the one given, or a license "
            "none of the overview's models has: `problems` names the parameter, `allowed` its values"
        ),
    },
)
async def overview(
    request: Request,
    suite: str | None = Query(
        None, description="keep this suite's columns", json_schema_extra=registry_enum("suite")
    ),
    task: str | None = Query(
        None, description="keep this task's columns", json_schema_extra=registry_enum("task")
    ),
    search: str | None = Query(
        None, max_length=200, description="models whose name contains this (any case)"
    ),
    type: str | None = Query(
        None,
        max_length=100,
        description="models of this type",
        json_schema_extra=fixed_enum(TYPE_CHOICES),
    ),
    size: str | None = Query(
        None,
        max_length=100,
        description="models of this size (parameters)",
        json_schema_extra=fixed_enum(SIZE_CHOICES),
    ),
    license: str | None = Query(
        None,
        max_length=200,
        description="models of this license (one the overview's models have; a 404 lists them)",
    ),
    rows: TableRows = Depends(table_rows),
):
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
    return await table_response(
        request,
        filters,
        rows,
        path=OVERVIEW_PATH,
        name_of=functools.partial(overview_stem, filters),
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
