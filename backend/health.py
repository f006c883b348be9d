"""GET /api/v1/health, answered on the event loop before routing, so leaderboard load does not slow it.

Under load the web process's event loop is the queue every request waits in. The route version of
health ran on Starlette's thread pool: each of its blocking calls (the Redis ping's send and
receive, the outbox folder listings, the head's ref files) had to win the GIL back from a busy
event loop (up to `sys.getswitchinterval()`, 5 ms, each time), and the hop back to the loop waited
its turn again. Here it is answered inline by the outermost middleware: a few file reads and one
Redis round trip on loopback.

A ping on the event loop must never hang it: the probe has its own Redis client with short
timeouts, and after a failed ping it answers "unreachable" without pinging again for a while, so a
Redis that accepts connections but never answers stalls the loop for at most PING_TIMEOUT_S every
PING_BACKOFF_S, whatever the number of health requests.
"""
from __future__ import annotations

import time

from redis import ConnectionPool, Redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.exceptions import RedisError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

PATH = "/api/v1/health"
PING_CONNECT_TIMEOUT_S = 0.5
PING_TIMEOUT_S = 0.5  # a loopback PING takes well under 1 ms; this is a stalled Redis
PING_BACKOFF_S = 2.0  # after a failed ping: "unreachable" without pinging, for this long
SERVER_KWARGS = {"host", "port", "path", "db", "username", "password", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile",
                 "ssl_cert_reqs", "ssl_check_hostname", "client_name"}


class QueueProbe:
    """Whether Redis answers a PING, asked on every health request unless a recent ping failed."""

    def __init__(self, redis: Redis):
        # The same server (TCP or unix socket, credentials); short timeouts and no retries (redis-py
        # retries a timed-out command three times with backoff by default: seconds on the loop).
        pool = redis.connection_pool
        server = {k: v for k, v in pool.connection_kwargs.items() if k in SERVER_KWARGS}
        self.redis = Redis(connection_pool=ConnectionPool(
            connection_class=pool.connection_class, max_connections=1, retry=Retry(NoBackoff(), 0),
            socket_connect_timeout=PING_CONNECT_TIMEOUT_S, socket_timeout=PING_TIMEOUT_S, **server))
        self._failed_at = float("-inf")

    def answers(self) -> bool:
        if time.monotonic() - self._failed_at < PING_BACKOFF_S:
            return False
        try:
            if self.redis.ping():
                return True
        except (RedisError, OSError):
            pass
        self._failed_at = time.monotonic()
        return False


def health_report(services, probe: QueueProbe) -> dict:
    """What /api/v1/health says: the service lives, whether the queue answers, the results head,
    and the publish backlog."""
    backlog = services.outbox.backlog()
    results = services.results
    return {"status": "ok", "queue": "ok" if probe.answers() else "unreachable",
            "results_revision": services.results_head(),
            "results_store": {"kind": results.kind, "location": results.location if results.kind == "hub" else None},
            "publish_backlog": backlog, "publish_rejected": services.outbox.rejected(),
            "publish_message": f"{backlog} result(s) waiting to publish" if backlog else None}


class HealthFastPath:
    """Answers GET /api/v1/health itself (any query string is ignored, as the route ignores it);
    everything else goes on. The route stays, for the API schema."""

    def __init__(self, app: ASGIApp, services, probe: QueueProbe) -> None:
        self.app = app
        self.services = services
        self.probe = probe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == PATH and scope["method"] == "GET" \
                and getattr(self.services.results, "head_is_cheap", False):  # the Hub's head may need the network
            await JSONResponse(health_report(self.services, self.probe))(scope, receive, send)
            return
        await self.app(scope, receive, send)
