"""GET /api/v1/health: answered on the event loop before routing, and on a port of its own.

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

Answered first on the web port, health still waits for its turn in that one event loop: under a load
of cheap cached hits that loop is saturated and health takes as long as a hit (measured: the same p50).
Answering in the HTTP protocol's data_received, before any ASGI task, saves one loop iteration at
most (measured: still 0.75-0.9x a hit's p50), since the wait is for the loop to reach the socket at
all. So `HealthListener` answers the same report on a port of its own (PERSONABOARD_HEALTH_PORT),
from a thread with its own event loop: no queue behind the web port's requests, only the GIL
(measured under the same load: p50 1.1-1.3 ms, as idle). A stuck web loop must not pass a liveness
check answered elsewhere: the web loop beats a `LoopHeartbeat`, and the listener answers 503 when
the beat is older than LOOP_STALL_S.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import uvicorn
from redis import ConnectionPool, Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from submissions.service import Services

log = logging.getLogger(__name__)

PATH = "/api/v1/health"
HEARTBEAT_S = 0.25  # how often the web event loop says it runs
LOOP_STALL_S = 10.0  # a web loop silent this long is stalled: the health port answers 503
PING_CONNECT_TIMEOUT_S = 0.5
PING_TIMEOUT_S = 0.5  # a loopback PING takes well under 1 ms; this is a stalled Redis
PING_BACKOFF_S = 2.0  # after a failed ping: "unreachable" without pinging, for this long
SERVER_KWARGS = {
    "host",
    "port",
    "path",
    "db",
    "username",
    "password",
    "ssl_ca_certs",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_cert_reqs",
    "ssl_check_hostname",
    "client_name",
}


class QueueProbe:
    """Whether Redis answers a PING, asked on every health request unless a recent ping failed."""

    def __init__(self, redis: Redis):
        # The same server (TCP or unix socket, credentials); short timeouts and no retries (redis-py
        # retries a timed-out command three times with backoff by default: seconds on the loop).
        pool = redis.connection_pool
        server = {k: v for k, v in pool.connection_kwargs.items() if k in SERVER_KWARGS}
        self.redis = Redis(
            connection_pool=ConnectionPool(
                connection_class=pool.connection_class,
                max_connections=1,
                retry=Retry(NoBackoff(), 0),
                socket_connect_timeout=PING_CONNECT_TIMEOUT_S,
                socket_timeout=PING_TIMEOUT_S,
                **server,
            )
        )
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


def health_report(services: Services, probe: QueueProbe) -> dict[str, Any]:
    """What /api/v1/health says: the service lives, whether the queue answers, the results head,
    and the publish backlog."""
    backlog = services.outbox.backlog()
    results = services.results
    return {
        "status": "ok",
        "queue": "ok" if probe.answers() else "unreachable",
        "results_revision": services.results_head(),
        "results_store": {
            "kind": results.kind,
            "location": results.location if results.kind == "hub" else None,
        },
        "publish_backlog": backlog,
        "publish_rejected": services.outbox.rejected(),
        "publish_message": f"{backlog} result(s) waiting to publish" if backlog else None,
    }


class HealthFastPath:
    """Answers GET /api/v1/health itself (any query string is ignored, as the route ignores it);
    everything else goes on. The route stays, for the API schema."""

    def __init__(self, app: ASGIApp, services: Services, probe: QueueProbe) -> None:
        self.app = app
        self.services = services
        self.probe = probe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == PATH
            and scope["method"] == "GET"
            and getattr(self.services.results, "head_is_cheap", False)
        ):  # the Hub's head may need the network
            await JSONResponse(health_report(self.services, self.probe))(scope, receive, send)
            return
        await self.app(scope, receive, send)


class LoopHeartbeat:
    """The web event loop's proof of life: a timestamp it renews every HEARTBEAT_S while it runs."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self._handle: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        def beat() -> None:
            self.last = time.monotonic()
            self._handle = loop.call_later(HEARTBEAT_S, beat)

        beat()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def silent_for(self) -> float:
        return time.monotonic() - self.last


class HealthListener:
    """GET /api/v1/health on a port of its own, answered by a uvicorn server in a thread with its own
    event loop and its own QueueProbe: the web port's load does not queue it. 503 when the web event
    loop has not beaten its heartbeat for LOOP_STALL_S (the process lives, the service does not)."""

    def __init__(
        self, services: Services, probe: QueueProbe, heartbeat: LoopHeartbeat, host: str, port: int
    ) -> None:
        self.services, self.probe, self.heartbeat = services, probe, heartbeat
        # log_config/log_level None: a Config otherwise reconfigures the process's uvicorn loggers
        config = uvicorn.Config(
            self.app,
            host=host,
            port=port,
            lifespan="off",
            interface="asgi3",
            log_config=None,
            log_level=None,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="health-listener", daemon=True)

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != PATH or scope["method"] not in ("GET", "HEAD"):
            await JSONResponse(
                {"detail": {"message": f"only GET {PATH} is served on this port"}}, 404
            )(scope, receive, send)
            return
        report = health_report(self.services, self.probe)
        silent = self.heartbeat.silent_for()
        if silent > LOOP_STALL_S:
            report = {
                **report,
                "status": "stalled",
                "message": f"the web event loop has not run for {silent:.0f} s",
            }
        await JSONResponse(report, 503 if silent > LOOP_STALL_S else 200)(scope, receive, send)

    def start(self, timeout: float = 30.0) -> None:
        """Listening when it returns (RuntimeError if the port cannot be bound)."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"health listener did not start on {self.server.config.host}:{self.server.config.port}"
                )
            time.sleep(0.01)
        log.info("health also answered on %s:%s", self.server.config.host, self.server.config.port)

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
