"""GET /metrics: the service's state in Prometheus text format (see submissions/metrics.py).

Public by default, like /api/v1/health (queue lengths and job counts reveal no scores); set
PERSONABOARD_METRICS_TOKEN to require `Authorization: Bearer <token>` from the scraper.
"""

from __future__ import annotations

import hmac
import os

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from submissions.metrics import ServiceCollector
from submissions.service import Services

TOKEN_ENV = "PERSONABOARD_METRICS_TOKEN"


def metrics_router(services: Services) -> APIRouter:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        ServiceCollector(
            services.redis,
            publish_backlog=services.outbox.backlog,  # entries written, not yet in the results dataset
            read_path=lambda: {"builds": services.board.builds},
            publish_rejected=services.outbox.rejected,
        )
    )
    token = os.environ.get(TOKEN_ENV, "")
    router = APIRouter()

    @router.get("/metrics", include_in_schema=False)
    def metrics(
        request: Request,
    ) -> Response:  # sync: Redis is read on a worker thread, not the event loop
        if token:
            given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(given.encode(), token.encode()):
                raise HTTPException(
                    401, {"message": f"/metrics needs the bearer token set in {TOKEN_ENV}"}
                )
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router
