"""The web app: the REST API under /api/v1 and the Gradio UI at /, in one FastAPI process.

Run with `uvicorn backend.app:create_app --factory` (or `make serve`, which also starts Redis
and the workers).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
# Not offline: Hub model ids, private splits and the Hub results store need the Hub. When it cannot
# be reached, calls fail within seconds (evaluator/hub.py's timeouts) and submitters get a 503.

import gradio as gr  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.exceptions import RequestValidationError  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from starlette.exceptions import HTTPException as StarletteHTTPException  # noqa: E402

from backend.access_log import AccessLog  # noqa: E402
from backend.api import router  # noqa: E402
from backend.health import HealthFastPath, HealthListener, LoopHeartbeat, QueueProbe  # noqa: E402
from backend.leaderboard_http import LeaderboardFastPath  # noqa: E402
from backend.limits import FORM_OVERHEAD_BYTES, BodySizeLimit  # noqa: E402
from backend.metrics import metrics_router  # noqa: E402
from backend.settings import Settings, load_settings  # noqa: E402
from space.first_paint import FirstPaint  # noqa: E402
from space.first_paint import warm as warm_first_paint  # noqa: E402
from space.page_param import UnknownPageParam  # noqa: E402
from space.pages import build_pages  # noqa: E402
from space.session import SessionReader  # noqa: E402
from space.ui import build_ui  # noqa: E402
from space.uploads import (  # noqa: E402
    UploadIdentity,
    UploadPathAlias,
    enforce_upload_check,
    start_upload_sweeper,
)
from submissions.service import Services  # noqa: E402
from submissions.upload_budget import UploadBudget  # noqa: E402

log = logging.getLogger("personaboard")

GRADIO_UPLOAD_PATH = "/gradio_api/upload"  # where the UI's file components send their files


DOCS_ASSETS = "/docs-assets"


def add_offline_docs(app: FastAPI) -> None:
    """GET /docs: Swagger UI 5 from the files the fastapi-offline package ships, served at
    DOCS_ASSETS (FastAPI's default page loads them from a CDN and stays blank offline). Swagger
    UI 5 reads the `openapi: 3.1.0` document FastAPI writes; Swagger UI 4 (the swagger-ui-bundle
    package's) refuses it: "does not specify a valid version field"."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    folder = Path(fastapi_offline.__file__).parent / "static"
    files = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png")
    missing = [name for name in files if not (folder / name).is_file()]
    if missing:  # a release that moved them: said at start, not found later as a blank /docs
        raise RuntimeError(f"fastapi-offline has no {', '.join(missing)} in {folder}")
    app.mount(DOCS_ASSETS, StaticFiles(directory=folder), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",  # None: the app keeps the default
            title=f"{app.title} API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )


# Gradio's queue looks for work every millisecond while it has none (Queue.sleep_when_free is
# 0.001 s off Windows): an idle web process took 7.3 % of a core, 2.8 % with the queue looking every
# 10 ms (bench/bench_service_startup.py prints it). An event that arrives while the queue is idle
# (or all its slots busy) starts at most 10 ms later.
QUEUE_IDLE_POLL_S = 0.01


def slow_idle_queue_poll(blocks: gr.Blocks, every_s: float = QUEUE_IDLE_POLL_S) -> None:
    """Make the mounted UI's queue poll for work every `every_s` when it has none (never faster
    than Gradio's own default); a Gradio without that attribute keeps its own pace, and says so."""
    queue = getattr(blocks, "_queue", None)
    if queue is None or not isinstance(getattr(queue, "sleep_when_free", None), (int, float)):
        log.warning("Gradio's queue has no sleep_when_free: its idle polling is left as it is")
        return
    queue.sleep_when_free = max(queue.sleep_when_free, every_s)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    services = Services.create(settings)

    heartbeat = LoopHeartbeat()
    sweeper_stop = threading.Event()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services.start_reconciler()  # re-queue anything accepted but lost by the queue
        services.start_publisher()  # requests/ records and the outbox backlog, to the results store
        services.start_board_watcher()  # the leaderboard of each new results head, built before it is asked for
        services.start_event_folder()  # remote workers' state, progress and revisions, into the records
        # the default view's copy in the page's HTML (space/first_paint.py), drawn before it is asked for
        warm_first_paint(services)
        # UI uploads never submitted go after PERSONABOARD_UPLOAD_MAX_AGE_S
        start_upload_sweeper(sweeper_stop, max_age_s=settings.upload_max_age_s)
        heartbeat.start(asyncio.get_running_loop())
        # What start-up built lives as long as the process (modules, the suites' items, the app):
        # out of the collector's reach, a full collection scans only what came after (it paused
        # every request for 40-60 ms with 360,000 objects; a frozen object that turns into cyclic
        # garbage, such as the first head's table, is never collected: once, and bounded)
        gc.collect()
        gc.freeze()
        listener = None
        if (
            settings.health_port
        ):  # health on a port of its own: not queued behind the web port's requests
            listener = HealthListener(
                services, QueueProbe(services.redis), heartbeat, settings.host, settings.health_port
            )
            listener.start()
        yield
        if listener is not None:
            listener.stop()
        heartbeat.stop()
        sweeper_stop.set()
        services.stop()

    app = FastAPI(
        title="PersonaBoard",
        version="1.0.0",
        description="Leaderboard and submission service for LLM personalization benchmarks.",
        lifespan=lifespan,
        docs_url=None,  # served below from the app's own copy of Swagger UI (no CDN: works offline)
        redoc_url=None,
    )
    add_offline_docs(app)
    app.state.services = services
    app.state.queue_probe = QueueProbe(services.redis)  # health's own Redis client (short timeouts)
    app.include_router(router)
    app.include_router(metrics_router(services))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {
                "line": None,
                "field": ".".join(str(p) for p in err["loc"][1:]) or None,
                "message": err["msg"],
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
        return JSONResponse({"detail": {"message": message, "problems": problems}}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # The framework's own refusals (a body it cannot parse: 400; a method not allowed: 405) say
        # their detail as a string; every error body of this API is {"detail": {"message": ...}}.
        detail = exc.detail if isinstance(exc.detail, dict) else {"message": str(exc.detail)}
        return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
        # Logged with the traceback for the operator; the client gets no internals.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"detail": {"message": "internal error; the operator has the details"}}, status_code=500
        )

    # Gradio's signed session cookie, verified with the secret Gradio gives its SessionMiddleware
    # (configured below, once the UI is mounted): the upload route and the comparison form read it
    sessions = SessionReader()
    app.include_router(
        build_pages(services, sessions)
    )  # /model, /result, /plots, /examples: before the UI's catch-all mount
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_upload_bytes,
        paths=("/api/v1/submissions", GRADIO_UPLOAD_PATH),  # the UI's upload route too
    )
    app.add_middleware(
        UploadIdentity,
        identities=services.identities,
        path=GRADIO_UPLOAD_PATH,
        sessions=sessions,
        budget=UploadBudget(services.records, settings.upload_limits),
        max_request_bytes=settings.max_upload_bytes + FORM_OVERHEAD_BYTES,
    )  # outside the size limit: an anonymous or over-budget upload is refused before its body is read
    app.add_middleware(UploadPathAlias, upload_path=GRADIO_UPLOAD_PATH)  # no server path shown
    app.add_middleware(LeaderboardFastPath, services=services)  # cached bodies skip the rest
    app.add_middleware(
        HealthFastPath, services=services, probe=app.state.queue_probe
    )  # outermost: no queue behind routing
    # Uploads from the UI live in this service's own folder (space/uploads.py checks paths against it).
    os.environ.setdefault("GRADIO_TEMP_DIR", str(settings.data_dir / "gradio-uploads"))
    blocks = build_ui(services)
    app.add_middleware(UnknownPageParam, blocks=blocks)  # Gradio's route 500s on an unknown ?page=
    app.add_middleware(FirstPaint, services=services)  # the board in the page's first HTML
    # outermost: every answer logged (no query values), routine reads counted (uvicorn's line off)
    app.add_middleware(AccessLog)
    # show_error=False: an exception inside Gradio (e.g. its refusal of a foreign FileData path, which
    # quotes the path) reaches the client as a bare error; our handlers answer in Markdown themselves.
    mounted = gr.mount_gradio_app(app, blocks, path="", footer_links=["api"], show_error=False)
    slow_idle_queue_poll(blocks)
    enforce_upload_check(blocks)
    sessions.configure(mounted)  # on a Space with sign-in: fails here if Gradio added no session
    return mounted
