"""The outbox: every publish is written to the data folder first, then pushed to the store in order.

    outbox/pending/<sequence>-<submission id>-<kind>.json   waiting, oldest first
    outbox/done/<same name>                                  published: {"revision": ...} (kept a day),
                                                             or withheld: {"revision": null, "withheld": true}
    outbox/rejected/<same name>                              refused for good by the store (with the reason)

A publish is durable once `put` returns (written, fsynced, renamed into place). One publisher at a
time per data folder (an exclusive lock on outbox/publisher.lock) takes entries oldest first and
stops at the first that cannot go out because the store is unavailable (a Hub outage): nothing is
lost and nothing overtakes it; the next drain, when the Hub is back, carries on from there.
Whoever holds the lock drains: the job that just wrote an entry, an idle worker's maintenance
pass, or the web node's background thread, so the backlog goes out without anyone watching it.

The publisher also keeps the dataset's boards current (leaderboard/boards.py): a publish only marks
its task's board as lagging, and every drain (each pass of the web node's thread, every 2 s, even
with nothing to publish) rewrites, in one commit, the lagging boards whose oldest missing change is
`boards_every_s` old and whose task has, since, received results weighing `boards_added_share`
times the board file (a withdrawal: by the time alone): at most one refresh per interval however
many results arrive, and the boards' bytes in the history bounded by the results' own.
"""

from __future__ import annotations

import base64
import fcntl
import json
import logging
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Required, TypedDict

from leaderboard.boards import BOARDS_ADDED_SHARE, BOARDS_EVERY_S
from leaderboard.layout import RequestRecord
from leaderboard.result_record import RecordData
from leaderboard.store import StoreError, StoreUnavailable

log = logging.getLogger(__name__)

DONE_KEPT_S = 24 * 3600
KINDS = ("result", "requests", "withdraw")


class OutboxPayload(TypedDict, total=False):
    """What one queued publish carries, by kind (Outbox.put)."""

    record: RecordData  # "result": the result record, as the store writes it (JSON)
    request: RequestRecord | None  # "result": its request record
    details: str  # "result", public splits: base64 of the per-item details parquet
    requests: list[RequestRecord]  # "requests"
    submission_id: str  # "withdraw"
    message: str  # "withdraw": the commit's message


class OutboxEntry(OutboxPayload, total=False):
    """A queued publish as its file holds it: the payload and its kind (one of KINDS)."""

    kind: Required[str]


# called after an entry went out: (entry, revision or None if it changed nothing)
OnPublished = Callable[[OutboxEntry, "str | None"], None]
# asked right before a result entry goes out: True = do not publish it (e.g. an operator hid the
# submission after its job put it here); it then takes care of the record. May raise StoreUnavailable
# (it cannot tell now): the entry waits, in order, like any other.
Withhold = Callable[[OutboxEntry], bool]


class Outbox:
    def __init__(
        self,
        folder: Path,
        store,
        on_published: OnPublished | None = None,
        withhold: Withhold | None = None,
        boards_every_s: float = BOARDS_EVERY_S,
        boards_added_share: float = BOARDS_ADDED_SHARE,
    ):
        self.folder = Path(folder)
        self.store = store
        self.on_published = on_published
        self.withhold = withhold
        self.boards_every_s = boards_every_s
        self.boards_added_share = boards_added_share
        for name in ("pending", "done", "rejected"):
            (self.folder / name).mkdir(parents=True, exist_ok=True)

    # -- writing ------------------------------------------------------------------------------------
    def put(self, kind: str, payload: OutboxPayload) -> str:
        """Queue a publish durably; returns the entry's name.

        kind "result": {"record": ..., "request": ... or None, "details": base64 of the per-item
        details parquet (public splits; optional)}; kind "requests": {"requests": [...]};
        kind "withdraw": {"submission_id": ..., "message": ...} (an operator hid or deleted a result:
        in the outbox so that it can never be overtaken by that result's own pending publish).
        """
        if kind not in KINDS:
            raise ValueError(f"unknown outbox entry kind {kind!r}")
        requests = payload.get("requests") or []
        submission_id = (
            payload.get("submission_id")
            or (record["submission_id"] if (record := payload.get("record")) else None)
            or (requests[0]["submission_id"] if requests else "-")
        )
        # time first, so names sort in the order entries were written (a counter would need a lock)
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:6]}-{submission_id}-{kind}.json"
        tmp = self.folder / f".{name}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            json.dump({"kind": kind, **payload}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.folder / "pending" / name)
        _fsync_dir(self.folder / "pending")
        return name

    # -- state ----------------------------------------------------------------------------------------
    def pending(self) -> list[str]:
        return sorted(p.name for p in (self.folder / "pending").glob("*.json"))

    def backlog(self) -> int:
        """How many publishes are waiting (shown in health and the UI)."""
        return len(self.pending())

    def rejected(self) -> int:
        return sum(1 for _ in (self.folder / "rejected").glob("*.json"))

    def revision_of(self, name: str) -> str | None:
        done = self.folder / "done" / name
        return (
            json.loads(done.read_text(encoding="utf-8")).get("revision") if done.exists() else None
        )

    # -- publishing -----------------------------------------------------------------------------------
    @contextmanager
    def _publisher(self, wait_s: float) -> Iterator[bool]:
        """Yields True while this process is the one publisher of this folder (waits up to wait_s)."""
        with open(self.folder / "publisher.lock", "w") as lock:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.05)
            try:
                yield True
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def drain(self, wait_s: float = 0.0, until: str | None = None) -> int:
        """Publish pending entries oldest first; returns how many went out.

        Stops at the first entry the store cannot take now (StoreUnavailable), or once `until` has
        gone out. Returns -1 if another process is the publisher (and stayed so for wait_s).
        """
        published = 0
        with self._publisher(wait_s) as mine:
            if not mine:
                return -1
            boards_checked = time.monotonic()
            for name in self.pending():
                if time.monotonic() - boards_checked >= self.boards_every_s:  # a long backlog
                    self._refresh_boards()
                    boards_checked = time.monotonic()
                path = self.folder / "pending" / name
                try:
                    entry: OutboxEntry = json.loads(path.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    continue
                try:
                    if (
                        entry.get("kind") == "result"
                        and self.withhold is not None
                        and self.withhold(entry)
                    ):
                        _write_json(
                            self.folder / "done" / name,
                            {"revision": None, "withheld": True, "at": time.time()},
                        )
                        path.unlink(missing_ok=True)
                        if name == until:
                            break
                        continue
                    revision = self._publish(entry)
                except StoreUnavailable as exc:
                    log.warning(
                        "outbox: %d publish(es) waiting; the store is unavailable: %s",
                        len(self.pending()),
                        exc,
                    )
                    break
                except (StoreError, KeyError, ValueError, TypeError) as exc:
                    # refused for good (a malformed entry): set aside with the reason, never block the rest
                    log.error("outbox: %s refused by the store and set aside: %s", name, exc)
                    _write_json(
                        self.folder / "rejected" / name, {**entry, "rejected_because": str(exc)}
                    )
                    path.unlink(missing_ok=True)
                    continue
                _write_json(self.folder / "done" / name, {"revision": revision, "at": time.time()})
                path.unlink(missing_ok=True)
                published += 1
                if self.on_published is not None:
                    try:
                        self.on_published(entry, revision)
                    except Exception:  # noqa: BLE001 - the publish itself stands; the report is best effort
                        log.exception("outbox: reporting %s as published failed", name)
                if name == until:
                    break
            self._refresh_boards()
            self._prune_done()
        return published

    def _refresh_boards(self) -> None:
        """Rewrite the lagging boards if the oldest change they lack is old enough; a store that
        cannot be reached now leaves them lagging (marked in the dataset) for a later pass."""
        try:
            self.store.refresh_boards(self.boards_every_s, self.boards_added_share)
        except StoreUnavailable as exc:
            log.warning("outbox: the boards wait for the store: %s", exc)
        except StoreError:
            log.exception("outbox: refreshing the boards failed; the next pass tries again")

    def publish_now(
        self, kind: str, payload: OutboxPayload, wait_s: float = 30.0
    ) -> tuple[str, str | None]:
        """put, then drain up to and including this entry: (name, revision or None if it is still
        waiting, the store being unavailable or another publisher busy for longer than wait_s)."""
        name = self.put(kind, payload)
        self.drain(wait_s=wait_s, until=name)
        return name, self.revision_of(name)

    def _publish(self, entry: OutboxEntry) -> str | None:
        if entry["kind"] == "result":
            details = entry.get("details")  # a public split's per-item file, base64 (JSON entry)
            return self.store.publish(
                entry["record"],
                entry.get("request"),
                base64.b64decode(details) if details else None,
            )
        if entry["kind"] == "withdraw":
            return self.store.withdraw(entry["submission_id"], entry["message"])
        return self.store.publish_requests(entry["requests"])

    def _prune_done(self) -> None:
        cutoff = time.time() - DONE_KEPT_S
        for path in (self.folder / "done").glob("*.json"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except FileNotFoundError:
                pass


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
