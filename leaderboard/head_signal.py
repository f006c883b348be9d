"""A publish seen at once by every process: publishers leave a fresh token in Redis after each commit.

The Hub store cannot ask the Hub for main's head on every leaderboard request (a network round trip
per request), so it keeps the head it read; alone, that hides another process's publish (a worker on
another machine, a second web process) until the kept head expires. With a head signal:

    publisher: commit on the Hub  ->  SET personaboard:results-head "<revision> <random token>"
    reader:    GET the token (one Redis round trip, no Hub call)  ->  if it differs from the token
               read just before the kept head was read from the Hub: read the head from the Hub again

Guarantee: a publish whose SET returned before a reader's GET is in the head that reader serves
(its commit came before the SET, the SET before the GET, the GET before the Hub read). A publish
returns only after its SET, so a request that starts after a publish returned sees the new row.
The Hub is read once per publish per reading process, not per request.

Why a random token and not the revision as the head: two publishers' SETs can arrive in either
order, so the key could name the older of two commits; the token only says "something was
published since", and the Hub says what the head is. A unique token also survives a Redis restart
that lost writes (a counter could come back to a value a reader saw before).

Best effort on both sides: Redis down at a publish, or at a read, and the reader falls back to
re-reading the Hub's head every HEAD_TTL_S (leaderboard/hub_store.py), as without a signal.
"""

from __future__ import annotations

import logging
import time
import uuid

from redis import BlockingConnectionPool, Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

log = logging.getLogger(__name__)

HEAD_KEY = "personaboard:results-head"
TIMEOUT_S = 0.5  # a read path waits at most this long for Redis ...
BACKOFF_S = 2.0  # ... and after a failure does not ask again for this long
UNKNOWN = object()  # token(): Redis could not be asked


class RedisHeadSignal:
    def __init__(self, redis_url: str, key: str = HEAD_KEY):
        # Own short-timeout client, no retries (redis-py retries a timed-out command with backoff by
        # default: seconds on a request's path). 64 connections: more than the web app's threads that
        # may read the head at once (~40 in Gradio's pool); any more wait for one rather than being
        # refused, which would read as "Redis down" and switch every reader to the kept head.
        self.redis = Redis(
            connection_pool=BlockingConnectionPool.from_url(
                redis_url,
                max_connections=64,
                timeout=TIMEOUT_S,
                socket_connect_timeout=TIMEOUT_S,
                socket_timeout=TIMEOUT_S,
                retry=Retry(NoBackoff(), 0),
            )
        )
        self.key = key
        self._failed_at = float("-inf")

    def published(self, revision: str) -> None:
        """Called once a commit is on the Hub, before the publish returns."""
        try:
            self.redis.set(self.key, f"{revision} {uuid.uuid4().hex}")
        except RedisError as exc:  # readers see it when their kept head expires
            log.warning("could not signal the new results head %s: %s", revision[:12], exc)

    def token(self):
        """The latest publish's token (None: no publish signalled yet), or UNKNOWN if Redis cannot say."""
        if time.monotonic() - self._failed_at < BACKOFF_S:
            return UNKNOWN
        try:
            value = self.redis.get(self.key)
        except RedisError:
            self._failed_at = time.monotonic()
            return UNKNOWN
        return value.decode() if isinstance(value, bytes) else value
