"""The results head signal (leaderboard/head_signal.py) on a real redis-server."""

from __future__ import annotations

import threading

from leaderboard.head_signal import UNKNOWN, RedisHeadSignal


def test_many_readers_at_once_all_get_the_token(redis_server):
    """The web app reads the head from many threads at once; none may read "Redis down" (which
    sends every reader to the kept head) just because the others hold the connections."""
    signal = RedisHeadSignal(redis_server)
    assert signal.token() is None  # nothing published yet
    signal.published("abc123")
    tokens = []
    threads = [
        threading.Thread(target=lambda: tokens.extend(signal.token() for _ in range(50)))
        for _ in range(48)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(tokens) == 48 * 50 and len(set(tokens)) == 1 and tokens[0].startswith("abc123 ")
    signal.published("abc123")
    assert signal.token() != tokens[0]  # the same revision again is still news: a fresh token


def test_redis_down_reads_as_unknown(tmp_path):
    from backend import processes

    signal = RedisHeadSignal(f"redis://127.0.0.1:{processes.free_port()}/0")
    signal.published("abc123")  # logged, not raised: the publish itself stands
    assert signal.token() is UNKNOWN and signal.token() is UNKNOWN
