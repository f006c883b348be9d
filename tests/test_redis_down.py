"""Redis stopped under a running web app: every route that reads Redis answers as documented, never
500. /api/v1/workers has nothing to show without the queue (503); health reports the queue
unreachable (200); submissions are still accepted and recorded (the reconciler queues them once
Redis is back); a submission's status says its job status is unknown; operator actions that write
to Redis still apply to the record; /metrics says the queue is down."""

from __future__ import annotations

import pytest
from live_helpers import explicit_only, reordered, submit

pytestmark = pytest.mark.service


@pytest.fixture
def service_without_redis(start_service, tmp_path):
    # no worker: nothing runs the submission, it stays queued
    svc = start_service(tmp_path / "service", n_workers=0)
    with svc.http() as http:
        accepted = submit(http, explicit_only().body, model_name="before-redis-stops")
        assert accepted.status_code == 201, accepted.text
    svc.redis.stop(timeout=20)
    return svc, accepted.json()["id"]


def test_every_route_that_reads_redis_answers_without_it(service_without_redis):
    svc, queued_id = service_without_redis
    with svc.http() as http, svc.http(token=svc.admin_token) as admin:
        workers = http.get("/api/v1/workers")
        assert workers.status_code == 503, workers.text
        assert workers.json()["detail"]["message"] == "the queue cannot be reached right now"

        health = http.get("/api/v1/health")
        assert health.status_code == 200 and health.json()["queue"] == "unreachable"

        status = http.get(f"/api/v1/submissions/{queued_id}")
        assert status.status_code == 200, status.text
        assert status.json()["job_status"] == "unknown (queue unreachable)"

        during = submit(http, reordered(explicit_only().body, 1), model_name="while-redis-down")
        assert during.status_code == 201, during.text
        assert http.get(f"/api/v1/submissions/{during.json()['id']}").json()["state"] == "queued"

        for action in ("hide", "unhide", "cancel"):
            answer = admin.post(
                f"/api/v1/admin/submissions/{queued_id}/{action}", json={"reason": "redis down"}
            )
            assert answer.status_code == 200, (action, answer.text)

        metrics = http.get("/metrics")
        assert metrics.status_code == 200 and "personaboard_queue_up 0.0" in metrics.text
