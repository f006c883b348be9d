"""What the pages read from the results store, cached per store revision (every publish is a new
revision, so a cache keyed by it is never stale)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Iterable

import pandas as pd

from evaluator.registry import all_suites
from evaluator.splits import SplitNotInstalled, split_files
from leaderboard.board import manifest_tier_order, table_facts  # noqa: F401  (re-exported)
from leaderboard.boards import BOARDS_MESSAGE
from leaderboard.result_record import KIND_COMPUTED, KIND_REFERENCE, ResultRecord
from leaderboard.table import result_summaries as table_result_summaries

if TYPE_CHECKING:
    from submissions.service import Services

_CACHE: dict[str, tuple[str, object]] = {}
_LOCK = threading.Lock()
_PAST: dict[
    str, tuple[pd.DataFrame, pd.DataFrame]
] = {}  # older revisions' board inputs, oldest read first
PAST_KEPT = 4
VERSIONS_LISTED = (
    30  # most recent revisions offered beside the releases (the API reaches any revision)
)
# commits that change no score: submissions' records (leaderboard/store.py requests_message) and
# the dataset's board files rewritten (leaderboard/boards.py)
BOOKKEEPING_PREFIXES = ("Requests:", BOARDS_MESSAGE)
LATEST, LATEST_LABEL = "latest", "Latest (updates as results arrive)"


def per_head(services, name: str, build):
    """build() once per results head (kept under `name` until the head moves)."""
    revision = services.results.head_revision()
    with _LOCK:
        hit = _CACHE.get(f"{id(services)}:{name}")
    if hit and hit[0] == revision:
        return hit[1]
    value = build()
    with _LOCK:
        _CACHE[f"{id(services)}:{name}"] = (revision, value)
    return value


def result_records(services, submission_ids: Iterable[str]) -> list[ResultRecord]:
    """The newest version's records of these results (those it holds), typed, read by path: the
    table says each one's suite and task. The web process keeps no parsed record between requests: at
    20,000 results they were 1.9 million Python objects, and each full garbage collection paused
    every request for 0.3-0.7 s (bench/bench_read_path.py's p99 and health under load)."""
    wanted = list(dict.fromkeys(submission_ids))
    if not wanted:
        return []
    scores, _ = board_inputs(services)
    rows = scores[scores["submission_id"].isin(wanted)].drop_duplicates("submission_id")
    keys = list(zip(rows["suite"], rows["task"], rows["submission_id"], strict=True))
    return [r for r in services.results.records_of(keys) if r is not None]


def result_summaries(services) -> pd.DataFrame:
    """One row per result of the newest version (leaderboard/table.py result_summaries)."""
    return per_head(
        services, "summaries", lambda: table_result_summaries(board_inputs(services)[0])
    )


def board_inputs(services, revision: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long scores table, model facts per result) at the newest revision, or at an older one (a sha,
    its prefix or a release name; StoreError when there is none such)."""
    if not revision or revision == LATEST:
        return (
            per_head(services, "scores", services.results.scores),
            per_head(
                services,
                "facts",
                lambda: table_facts(per_head(services, "scores", services.results.scores)),
            ),
        )
    sha = services.results.resolve_revision(revision)
    key = f"{id(services)}:at:{sha}"
    with _LOCK:
        hit = _PAST.get(key)
    if (
        hit is None
    ):  # a past revision never changes: built once, kept while it is among the last few read
        past = services.results.scores(sha)
        hit = (past, table_facts(past))
        with _LOCK:
            _PAST[key] = hit
            while len(_PAST) > PAST_KEPT:
                _PAST.pop(next(iter(_PAST)))
    scores, facts = hit
    # a result an operator withdrew since stays out of the pages, whichever version is opened
    withdrawn = set(services.records.withdrawn_ids())
    if withdrawn and "submission_id" in scores:
        scores = scores[~scores["submission_id"].isin(withdrawn)]
    return scores, facts


def version_choices(services, limit: int = VERSIONS_LISTED) -> list[tuple[str, str]]:
    """The leaderboard's versions a reader can open: the newest (LATEST), every release, then the most
    recent revisions (each publish is one), as (label, value) for a dropdown. Built once per head
    (a release is a commit too): a page load costs no Hub calls beyond the head's."""

    def build() -> list[tuple[str, str]]:
        choices = [(LATEST_LABEL, LATEST)]
        for release in services.results.releases():
            choices.append(
                (
                    f"Release {release.name} ({release.created_at[:10]}, {release.revision[:8]})",
                    release.name,
                )
            )
        head = services.results.head_revision()
        # result revisions only: the requests/ bookkeeping commits change no score
        changed = [
            v
            for v in services.results.versions()
            if not v.message.startswith(BOOKKEEPING_PREFIXES) and v.revision != head
        ]
        for version in changed[:limit]:  # the head is "latest" already
            choices.append(
                (
                    f"{version.revision[:8]} · {version.created_at[:16].replace('T', ' ')} · "
                    f"{version.message[:60]}",
                    version.revision,
                )
            )
        return choices

    return list(
        per_head(services, f"versions:{limit}", build)
    )  # a copy: the tab appends a deep link's revision


def default_view(services, suite: str | None = None) -> tuple[str | None, str | None]:
    """The (suite, task) a reader sees first: the one with the most verified rows, else the one with
    the most rows of any kind (papers' numbers), else the first suite's first task; within `suite`
    when given."""
    suite_, task, _ = default_board(services, suite)
    return suite_, task


def default_board(
    services: Services, suite: str | None = None, task: str | None = None
) -> tuple[str | None, str | None, str | None]:
    """(suite, task, setting) of the first screen: as default_view, ranked within one setting (the
    one with the most verified rows, else the most rows; rows of different settings answer
    different prompts, so they are never ranked together by default)."""
    scores, _ = board_inputs(services)
    suites = [suite] if suite else list(all_suites())
    pairs = [(s, t) for s in suites for t in all_suites()[s].tasks if task in (None, t)]
    if not pairs:
        return None, None, None
    rows = scores[scores["row_kind"] != KIND_REFERENCE] if "row_kind" in scores else scores
    per_result = rows.drop_duplicates("submission_id") if "submission_id" in rows else rows
    verified = per_result[per_result["row_kind"] == KIND_COMPUTED]

    def counts(frame, keys):
        return frame.groupby(keys).size().to_dict() if not frame.empty else {}

    by_task = (counts(verified, ["suite", "task"]), counts(per_result, ["suite", "task"]))

    def installed(pair) -> bool:
        # with no verified rows anywhere (a new server), a task this server can score says more to a
        # newcomer than one showing only the papers' numbers and "split not installed" (a look at
        # the split's folder, not a build of its items)
        try:
            split_files(all_suites()[pair[0]])
        except SplitNotInstalled:
            return False
        return True

    # most verified rows, then an installed split, then most rows, then manifest order (max keeps
    # the first of equals)
    chosen = max(
        pairs,
        key=lambda p: (by_task[0].get(p, 0), installed(p), by_task[1].get(p, 0), -pairs.index(p)),
    )
    settings = list(all_suites()[chosen[0]].settings)
    here = per_result[(per_result["suite"] == chosen[0]) & (per_result["task"] == chosen[1])]
    if not here.empty:
        by_setting = (
            counts(here[here["row_kind"] == KIND_COMPUTED], "setting"),
            counts(here, "setting"),
        )
        present = list(dict.fromkeys(here["setting"]))
        setting = max(present, key=lambda s: (by_setting[0].get(s, 0), by_setting[1].get(s, 0)))
    else:
        setting = settings[0] if settings else None
    return chosen[0], chosen[1], setting
