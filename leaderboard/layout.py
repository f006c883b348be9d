"""The results dataset's layout: where each file lives, how a stored file is written, the dataset
card. The one place that spells the layout out; both stores (leaderboard/store.py, the local git
folder, and leaderboard/hub_store.py, the Hub dataset) and the core that builds their changes
(leaderboard/changes.py) read it from here.

    README.md                                    dataset card (configs point at the parquet table)
    results/<suite>/<task>/<xx>/<submission id>.json   one immutable record per result, with provenance
    requests/<suite>/<task>/<xx>/<submission id>.json  one record per submission: public metadata, status
                                                 (<xx>: id_shard(submission id), 256 folders per task)
    releases/<name>.json                         a named release's notes (the release is a tag)
    data/scores/part-NNNNN.parquet               the leaderboard table (one row per result and tier),
                                                 in parts of 1, 10, 100 or SHARD_RECORDS results
                                                 (log-structured: changes.py _appended), in order
    boards/<suite>/<task>.parquet                the task's board as the API downloads it (ranks,
                                                 reference verdicts: leaderboard/boards.py), derived,
                                                 rewritten in batches by the publisher
    boards/stale.json                            the boards that lag behind the table, and since when
    details/<suite>/<task>/<xx>/<id>.parquet     a result's per-item answers, gold and outcome, on a
                                                 public split only (submissions/details.py)
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, TypedDict

import pandas as pd

log = logging.getLogger(__name__)

SCORES_DIR = "data/scores"
SCORES_GLOB = f"{SCORES_DIR}/*.parquet"
# one file, rewritten on every publish (stores made before parts)
LEGACY_SCORES_PATH = "data/scores.parquet"
FIRST_PART = f"{SCORES_DIR}/part-00000.parquet"
DETAILS_DIR = "details"
CARD_PATH = "README.md"


class StoreError(RuntimeError):
    pass


class StoreUnavailable(StoreError):
    """The store cannot be reached right now (the Hub is down): nothing was published; try again later."""


CARD_BODY = """# PersonaBoard results

- `results/<suite>/<task>/<xx>/<submission id>.json`: one JSON record per evaluated submission
  (`<xx>`: the first two hex digits of the sha256 of the submission id, so no folder grows past a few
  hundred files), with its provenance (suite version, split hash, predictions sha256 or model
  revision, setting, scorer version, timings).
- `data/scores/*.parquet` (config `scores`, the default): the long table, one row per result, tier
  and metric.
- `boards/<suite>/<task>.parquet` (config `board-<suite>-<task>`): the task's board as the
  leaderboard shows and downloads it: rank, rank group, above the reference line, model facts, one
  column per tier; each setting ranked on its own. Boards are rewritten in batches, a few seconds
  after results arrive and at every named release: `boards/stale.json` lists the boards that lack
  a result published since they were written (and since when); a board not listed there is exact.
- `details/<suite>/<task>/<xx>/<submission id>.parquet`: per-item answers of a result on a public
  split (never for a hidden split).
- Which items rank a board: the `ranked_on` column of every board file. `all` on a public split.
  On a hidden split divided into a public and a private part: `public` for a live row (one
  number, the public part's score rounded to the split's noise level, interval a band of it) and
  `private` for a row a named release re-ranked on the private part (its total is then the
  private part's score; `part/public` keeps the live number). At a release's revision, the
  board is ranked on the private part: the board of record.

Every publish is a new revision. Each suite's data keeps its own license; see the PersonaBoard README.
"""


def dataset_card(boards: Iterable[tuple[str, str]] = ()) -> str:
    """The dataset card: its YAML `configs` name the scores table (the default config) and each
    task's board (leaderboard/boards.py), so `datasets.load_dataset(repo, "board-<suite>-<task>")`
    reads a board."""
    from leaderboard.boards import board_path, config_name

    configs = ["- config_name: scores\n  data_files: data/scores/*.parquet\n  default: true"]
    configs += [
        f"- config_name: {config_name(suite, task)}\n  data_files: {board_path(suite, task)}"
        for suite, task in sorted(set(boards))
    ]
    front = "license: other\npretty_name: PersonaBoard results\nconfigs:\n" + "\n".join(configs)
    return f"---\n{front}\n---\n{CARD_BODY}"


def card_is_current(card: bytes) -> bool:
    """Whether a dataset card describes this layout (whatever boards its configs list)."""
    return card.decode("utf-8", errors="replace").endswith("\n---\n" + CARD_BODY)


def id_shard(submission_id: str) -> str:
    """The folder, under results/<suite>/<task>/ and requests/<suite>/<task>/, of a submission's records:
    two hex digits of its id's sha256, so a task holds at most 256 folders of ~1/256 of its records.

    Why: a commit rehashes every tree on a changed path, and a flat folder of 20,000 records is a ~1 MB
    tree rehashed and recompressed on every publish (the Hub also wants < 10k files per folder). A hash,
    not the id's first characters: ids of one kind share a prefix ("reported-", the benches' "bench-")."""
    return hashlib.sha256(submission_id.encode()).hexdigest()[:2]


def result_path(suite: str, task: str, submission_id: str, folder: str = "results") -> str:
    """Where a result record (folder "requests": a request record) lives in the dataset."""
    return f"{folder}/{suite}/{task}/{id_shard(submission_id)}/{submission_id}.json"


def flat_result_path(suite: str, task: str, submission_id: str, folder: str = "results") -> str:
    """Where stores made before id_shard kept the record (read when following it across the move)."""
    return f"{folder}/{suite}/{task}/{submission_id}.json"


def result_glob(submission_id: str, folder: str = "results") -> str:
    """A glob, relative to the dataset root, for a submission's record whatever its suite and task."""
    return f"{folder}/*/*/{id_shard(submission_id)}/{submission_id}.json"


def details_path(suite: str, task: str, submission_id: str) -> str:
    """Where a result's per-item details file lives (public splits only: see details_to_publish)."""
    return f"{DETAILS_DIR}/{suite}/{task}/{id_shard(submission_id)}/{submission_id}.parquet"


def details_glob(submission_id: str) -> str:
    return f"{DETAILS_DIR}/*/*/{id_shard(submission_id)}/{submission_id}.parquet"


def record_path(record: Mapping[str, Any]) -> str:
    return result_path(record["suite"], record["task"], record["submission_id"])


def request_path(request: RequestRecord) -> str:
    return result_path(request["suite"], request["task"], request["submission_id"], "requests")


def submission_of_path(path: str) -> str:
    """The submission id a record or details file is named after."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def flat_record_paths(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(old path, sharded path) for each record stored in the flat layout of stores made before
    id_shard (results|requests/<suite>/<task>/<id>.json); other paths are left out."""
    moves = []
    for path in paths:
        parts = path.split("/")
        if len(parts) == 4 and parts[0] in ("results", "requests") and parts[3].endswith(".json"):
            folder, suite, task, name = parts
            moves.append((path, f"{folder}/{suite}/{task}/{id_shard(name[:-5])}/{name}"))
    return moves


def record_order(path: str) -> tuple[str, str, str]:
    """Sort key of a record's path in the dataset (results|requests/<suite>/<task>/[<xx>/]<id>.json):
    suite, task, id; the shard folder is no order."""
    parts = path.split("/")
    return parts[1], parts[2], parts[-1]


def record_files(folder: Path) -> list[Path]:
    """The record files under a dataset's results/ (or requests/) folder, either layout, in record_order."""
    return sorted(
        folder.glob("*/*/**/*.json"),
        key=lambda p: record_order(p.relative_to(folder.parent).as_posix()),
    )


def is_part_path(path: str) -> bool:
    """Whether a dataset path is a part of the scores table (the one-file table of old stores too)."""
    return path == LEGACY_SCORES_PATH or (
        path.startswith(SCORES_DIR + "/") and path.endswith(".parquet")
    )


def details_to_publish(record: Mapping[str, Any], details: bytes | None) -> bytes | None:
    """`details` if the record's task may show anything per item (a public split), else None.

    The job builds details only for public splits; this is the store's own check of the same rule
    (evaluator/release.py item_details_allowed), so nothing per item of a hidden split is ever
    written to the dataset, whoever asks."""
    if details is None:
        return None
    from evaluator.registry import UnknownSuiteError, get_task
    from evaluator.release import item_details_allowed

    try:
        allowed = item_details_allowed(get_task(record["suite"], record["task"]))
    except UnknownSuiteError:
        allowed = False
    if not allowed:
        log.error("details of %s not published: its split is hidden", record["submission_id"])
        return None
    return details


# -- releases ---------------------------------------------------------------------------------------
RELEASE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RE_SHA = re.compile(r"[0-9a-f]{7,40}")


def release_path(name: str) -> str:
    return f"releases/{name}.json"


def check_release_name(name: str) -> str:
    if not RELEASE_NAME.fullmatch(name or "") or RE_SHA.fullmatch(name):
        raise StoreError(
            f"release name {name!r}: use letters, digits, '.', '_' or '-' (at most 64), not a commit sha"
        )
    return name


def release_note(name: str, notes: str, table_revision: str) -> dict[str, Any]:
    return {
        "name": name,
        "notes": notes,
        "table_revision": table_revision,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


# -- request records --------------------------------------------------------------------------------
RequestStatus = Literal["queued", "finished", "failed", "cancelled"]
STATUS_RANK: dict[str, int] = {"queued": 0, "finished": 1, "failed": 1, "cancelled": 1}


class RequestModel(TypedDict):
    """A model run's model as a request record shows it (no server-side path)."""

    source: str | None
    revision: str | None
    model_type: str | None
    parameters: int | float | None
    license: str | None


class RequestRecord(TypedDict):
    """The `requests/` record the dataset keeps of every submission, as the Open LLM Leaderboard's
    requests dataset does: public metadata and status only (submissions/records.py
    Submission.request_record writes it; it reaches the store as JSON, through the outbox)."""

    submission_id: str
    submitted_at: str
    status: RequestStatus
    kind: str  # "predictions" | "model"
    suite: str
    task: str
    setting: str
    model_name: str
    model_link: str
    model: RequestModel | None  # model runs only
    protocol: str | None
    limit: int | None
    predictions_sha256: str | None  # uploads only


def supersedes(request: RequestRecord, current: Mapping[str, Any] | None) -> bool:
    """Whether `request` should replace the stored record (`current`, as read back: any JSON): it
    changed, and its status is not older."""
    if current == request:
        return False
    return current is None or STATUS_RANK.get(str(request.get("status")), 0) >= STATUS_RANK.get(
        str(current.get("status")), 0
    )


# -- commit messages (the history's titles; nothing is decided by reading them back) -----------------
def publish_message(record: Mapping[str, Any]) -> str:
    return f"Add result {record['submission_id']} ({record['suite']}/{record['task']})"


def requests_message(requests: list[RequestRecord]) -> str:
    shown = ", ".join(f"{r['submission_id']} {r.get('status')}" for r in requests[:5])
    return f"Requests: {shown}" + (f" and {len(requests) - 5} more" if len(requests) > 5 else "")


CREATE_MESSAGE = "Create the results dataset"
SPLIT_MESSAGE = "Split the scores table into parts (appends stay cheap)"
SHARD_MESSAGE = "Shard the records folders by id (a commit rehashes small trees only)"


# -- serialisation ----------------------------------------------------------------------------------
def as_json(data: Mapping[str, Any]) -> str:
    """The one serialisation of a stored record (so an unchanged record is an unchanged file)."""
    return json.dumps(data, indent=1, sort_keys=True)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def part_bytes(frame: pd.DataFrame) -> bytes:
    """A scores-table part as stored: parquet without what no reader needs, since a publish writes
    a part of one result (leaderboard/changes.py _appended) and parquet's per-file overhead is most
    of it (15.2 KB -> 4.1 KB for one result's 24 rows; a 1,000-result part 726 KB -> 414 KB):
    no pandas metadata (a RangeIndex and the dtypes, which pyarrow's types give back as they
    are), no embedded arrow schema, no column statistics (readers scan whole parts), no
    dictionary pages (mostly overhead in a small part, and larger under zstd), zstd. pandas, pyarrow and `datasets` read
    the same columns and dtypes (tests/unit/test_changes.py)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
    buffer = io.BytesIO()
    pq.write_table(
        table,
        buffer,
        compression="zstd",
        compression_level=9,  # 30 ms for a full part (rare: a merge), a fifth smaller than level 1
        use_dictionary=False,
        write_statistics=False,
        store_schema=False,
    )
    return buffer.getvalue()


def git_blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (sha1 object format, git's default)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
