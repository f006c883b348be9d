"""Per-item details of a published result on a public split (the Open LLM Leaderboard's "details",
HELM's instances): each item's inputs, gold, the submission's answer and whether it was right.

Published with the result: the job that scored it writes its details file into the results
dataset (`details/<suite>/<task>/<xx>/<id>.parquet`, leaderboard/store.py details_path) in the
result's own commit, wherever the job ran (a remote worker keeps no checkpoint on the web node).
The file holds what is the result's own (item id, tiers, gold, answer, score, outcome, and for a
model run each item's prompt as sent, raw output, parse rule and log-probabilities, for a judged
task the judge's calls: RUN_COLUMNS, evaluator/item_records.py for their bounds); the inputs
are the public split's, the same for every result (about 3 MB for PrefEval mcq, against 25 KB for
the rest), so they are joined from the installed split when the details are shown. A result
published before details were (or put back by an unhide) has none: its details are built from the
answers the service keeps (an upload's file, a model run's checkpoint: as the paired comparison
reads them). A hidden split's per-item outcomes would give its gold away, so `details_allowed` is
the one rule, checked before anything is built, written or read, and a refusal is a 404 for
everyone, the submitter included.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, cast

import pandas as pd

from evaluator.item_records import CheckpointEntry, JudgeCall
from evaluator.metrics import get_metric
from evaluator.registry import UnknownSuiteError, get_task
from evaluator.scoring import item_arrays
from evaluator.suite import Split, Task
from leaderboard.columns import SPLIT_SHA256
from leaderboard.readpath import LeaderboardCache
from submissions.compare import _answers
from submissions.intake import SubmissionError
from submissions.records import Submission, SubmissionStore

log = logging.getLogger(__name__)

RIGHT, WRONG = "right", "wrong"
OUTCOMES = (RIGHT, WRONG)
KEPT = 8  # details tables kept in memory (a PrefEval mcq table is ~7 MB of inputs)
_kept: OrderedDict[tuple[str, str], pd.DataFrame] = OrderedDict()
_kept_lock = threading.Lock()


def details_allowed(task: Task) -> bool:
    """Whether anyone may see this task's per-item answers, inputs and gold: only on a public split
    (gold published elsewhere). On a hidden split nothing per item leaves the scorer. The rule
    itself lives with the other release rules (evaluator/release.py item_details_allowed)."""
    from evaluator.release import item_details_allowed

    return item_details_allowed(task)


def refused(submission_id: str) -> SubmissionError:
    # One answer for "no such result" and "hidden split": which results exist is public, but the
    # reason must not differ in a way that invites probing, and nobody gets the items.
    return SubmissionError(
        404,
        f"no per-item details for {submission_id!r}: details are published for finished, public "
        "results on public splits only (a hidden split's items and gold never leave the scorer)",
        field="submission_id",
    )


def published_submission(records: SubmissionStore, submission_id: str) -> tuple[Submission, Task]:
    """The finished, public, published submission and its task, if its details may be shown;
    else the 404 of `refused`."""
    submission = records.get(submission_id)
    if (
        submission is None
        or submission.visibility != "public"
        or submission.state != "finished"
        or not submission.revision
        or (submission.result or {}).get("released") is False
    ):
        raise refused(submission_id)
    try:
        task = get_task(submission.suite, submission.task)
    except UnknownSuiteError:
        raise refused(submission_id) from None
    if not details_allowed(task):
        raise refused(submission_id)
    return submission, task


def _text(value: Any) -> str | None:
    """A value as the details' text: a string as it is, anything else as JSON; None (no answer,
    nothing recorded) stays a null, so `isna()` finds it."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# What a model run records of each item (evaluator/item_records.py), as details columns: an item
# asked once holds its request's values; one asked several times (both orders of a pairwise
# judgment) holds in the text columns a JSON object {order: value} (`orders` lists the orders),
# its token count summed and its longest output's length. Null where the run recorded nothing
# (an uploaded file, a checkpoint written before they were kept, a protocol without it).
RUN_COLUMNS = [
    "rule",
    "prompt",
    "prompt_tokens",
    "prompt_messages",
    "prompt_sha256",
    "raw",
    "raw_chars",
    "logprobs",
    "orders",
    "judge",
]
INT_COLUMNS = ("prompt_tokens", "prompt_messages", "raw_chars")


def _run_fields(records: list[CheckpointEntry]) -> dict[str, Any]:
    """The RUN_COLUMNS of one item from its checkpoint records (one per request)."""
    if not records:
        return {}
    if len(records) == 1:
        one = records[0]
        return {
            "rule": one.get("rule"),
            "prompt": _text(one.get("messages")),
            "prompt_tokens": one.get("prompt_tokens"),
            "prompt_messages": one.get("prompt_messages"),
            "prompt_sha256": one.get("prompt_sha256"),
            "raw": one.get("raw"),
            "raw_chars": one.get("raw_chars"),
            "logprobs": _text(one.get("logprobs")),
        }
    orders = [r["id"].partition("::")[2] for r in records]

    def each(key: str) -> str | None:
        values = {o: r.get(key) for o, r in zip(orders, records)}
        return _text(values) if any(v is not None for v in values.values()) else None

    def total(key: str, pick=sum) -> int | None:
        values = [v for r in records if (v := r.get(key)) is not None]
        return pick(values) if values else None

    return {
        "rule": each("rule"),
        "prompt": each("messages"),
        "prompt_tokens": total("prompt_tokens"),
        "prompt_messages": total("prompt_messages", max),
        "prompt_sha256": each("prompt_sha256"),
        "raw": each("raw"),
        "raw_chars": total("raw_chars", max),
        "logprobs": each("logprobs"),
        "orders": ",".join(orders),
    }


def build_details(
    task: Task,
    answers: dict[str, Any],
    runs: dict[str, list[CheckpointEntry]] | None = None,
    judged: dict[str, list[JudgeCall]] | None = None,
) -> pd.DataFrame:
    """One row per answered item: `item_id`, one column per tier group, `input` (the public fields
    as JSON), `gold`, `answer` (null: none could be read), `score` (the item's value of the primary
    metric's per-item array: 1/0 for a share such as accuracy; empty for a judge-scored task,
    whose judgments are not re-run here) and `outcome` (right / wrong, where the score is 1 / 0);
    then what a model run recorded of it (`runs`: item id -> its checkpoint records, RUN_COLUMNS)
    and the judge's calls on it (`judged`: item id -> its transcript records, as JSON)."""
    split = task.load_split()
    items = [item for item in split.items if item.id in answers]
    scores: list[Any] = [None] * len(items)
    if items and not task.judge and get_metric(task.metric).kind != "statistic":
        field = get_metric(task.metric).reads[0]
        arrays = item_arrays(task, Split(split.name, items), {i.id: answers[i.id] for i in items})
        scores = [float(v) for v in arrays[field]]
    groups = [group.name for group in task.tier_groups]
    rows = []
    for item, score in zip(items, scores):
        public = {k: v for k, v in item.public.items() if k != "id" and k not in item.tiers}
        outcome = (
            RIGHT if score == 1.0 else WRONG if score == 0.0 else ""
        )  # NaN or a graded score: no verdict
        rows.append(
            {
                "item_id": item.id,
                **{group: item.tiers.get(group, "") for group in groups},
                "input": json.dumps(public, ensure_ascii=False),
                "gold": _text(item.gold),
                "answer": _text(answers[item.id]),
                "score": score,
                "outcome": outcome,
                **_run_fields((runs or {}).get(item.id, [])),
                "judge": _text((judged or {}).get(item.id)),
            }
        )
    return _details_frame(rows, task)


def _details_frame(rows: list[dict[str, Any]], task: Task) -> pd.DataFrame:
    groups = [group.name for group in task.tier_groups]
    columns = ["item_id", *groups, "input", "gold", "answer", "score", "outcome", *RUN_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns)
    frame["score"] = frame["score"].astype("float64")
    for column in INT_COLUMNS:  # counts, null where not recorded
        frame[column] = frame[column].astype("Int64")
    for column in ("answer", *(c for c in RUN_COLUMNS if c not in INT_COLUMNS)):
        # text or null: a missing value is None (NaN from a file without the column, or a reindex)
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


def _jsonl(path) -> list[dict[str, Any]]:
    """The records of a JSONL file (a torn last line ignored); [] when there is none."""
    records = []
    try:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    except FileNotFoundError:
        return []
    return records


def runs_by_item(checkpoint: Path) -> dict[str, list[CheckpointEntry]]:
    """A model run's checkpoint lines by item id (a request of several orders is `item::order`;
    a resumed run's later line of a request wins, evaluator/model_eval.py Checkpoint)."""
    from evaluator.model_eval import Checkpoint

    runs: dict[str, list[CheckpointEntry]] = {}
    for record in Checkpoint(checkpoint).load().values():
        runs.setdefault(record["id"].partition("::")[0], []).append(record)
    return runs


def judge_calls_by_item(transcript: Path) -> dict[str, list[JudgeCall]]:
    """Every call of the judge on each item (several per item, without the id), from its
    transcript; a torn last line is ignored."""
    judged: dict[str, list[JudgeCall]] = {}
    for call in _jsonl(transcript):
        if isinstance(call, dict) and "id" in call:
            item = str(call.pop("id"))
            judged.setdefault(item, []).append(cast(JudgeCall, call))
    return judged


def item_runs(
    submission: Submission,
) -> tuple[dict[str, list[CheckpointEntry]], dict[str, list[JudgeCall]]]:
    """What the service keeps of each item beyond its answer, by item id: a model run's checkpoint
    records (prompt, raw output, rule, log-probabilities) and the judge's transcript (its prompts
    and replies, for a judge-scored task, an upload's too)."""
    from evaluator.settings import load_evaluator_settings

    folder = load_evaluator_settings().checkpoints_dir
    runs = runs_by_item(folder / f"{submission.id}.jsonl") if submission.kind == "model" else {}
    return runs, judge_calls_by_item(folder / f"{submission.id}.judge.jsonl")


def details_file(task: Task, submission: Submission) -> bytes | None:
    """The details file a job publishes with its result: build_details without the inputs (the
    split's, joined back by with_inputs), as parquet; None on a hidden split, or when the answers
    cannot be read (the details are then built on request, if they still can be)."""
    if not details_allowed(task):
        return None
    try:
        frame = build_details(task, _answers(task, submission), *item_runs(submission))
    except (SubmissionError, OSError) as exc:
        log.warning("%s: no details file published: %s", submission.id, exc)
        return None
    buffer = io.BytesIO()
    # zstd: the prompts repeat the task's templates item after item (a third of snappy's size)
    frame.drop(columns=["input"]).to_parquet(
        buffer, index=False, compression="zstd", compression_level=9
    )
    return buffer.getvalue()


def with_inputs(task: Task, published: pd.DataFrame) -> pd.DataFrame:
    """A published details file with the installed split's public inputs joined back by item id:
    the columns and rows build_details gives for the same answers."""
    inputs = {
        item.id: json.dumps(
            {k: v for k, v in item.public.items() if k != "id" and k not in item.tiers},
            ensure_ascii=False,
        )
        for item in task.load_split().items
    }
    joined = published.assign(input=[inputs.get(i, "") for i in published["item_id"]])
    return _details_frame(joined.to_dict("records"), task)


class Published:
    """What the newest published version holds of a result, for result_details: called with a
    submission id, the split hash its row records ("" if none; None when the table does not hold
    it: withdrawn); `details(submission)`: its details file, if one was published."""

    def __init__(self, board: LeaderboardCache) -> None:
        self.board = board  # the read path (LeaderboardCache): its source is the results store

    def __call__(self, submission_id: str) -> str | None:
        rows = self.board.table().all_rows()
        found = rows.loc[rows["submission_id"] == submission_id]
        if found.empty:
            return None
        value = found.iloc[0].get(SPLIT_SHA256)
        return value if isinstance(value, str) else ""

    def details(self, submission: Submission) -> pd.DataFrame | None:
        reader = getattr(self.board.source, "published_details", None)
        if reader is None:
            return None
        data = reader(submission.suite, submission.task, submission.id)
        return pd.read_parquet(io.BytesIO(data)) if data is not None else None


def published_split(board: LeaderboardCache) -> Published:
    return Published(board)


def result_details(
    records: SubmissionStore,
    submission_id: str,
    split_of: Callable[[str], str | None] | None = None,
) -> tuple[Submission, pd.DataFrame]:
    """The details of a published result (see the module doc); 404 where they may not be shown
    (`split_of`, see published_split: not in the published table), 409 where the answers are no
    longer kept or were scored on another version of the split (the installed items or gold are
    not those it answered). Built once per result and split, then kept."""
    submission, task = published_submission(records, submission_id)
    current = task.load_split().sha256
    if split_of is not None:
        recorded = split_of(submission_id)
        if recorded is None:
            raise refused(submission_id)
        if recorded and recorded != current:
            raise SubmissionError(
                409,
                f"{submission_id} was scored on another version of the {task.key} split "
                f"({recorded[:12]}; installed now: {current[:12]}): its items are not shown "
                "against other items or gold",
                field="submission_id",
            )
    key = (submission.id, current)
    with _kept_lock:
        if key in _kept:
            _kept.move_to_end(key)
            return submission, _kept[key]
    published = getattr(split_of, "details", None)
    kept = published(submission) if published is not None else None
    try:
        frame = (
            with_inputs(task, kept)
            if kept is not None
            else build_details(task, _answers(task, submission), *item_runs(submission))
        )
    except FileNotFoundError:
        raise SubmissionError(
            409, f"the answers of {submission_id} are no longer kept: no per-item details"
        ) from None
    with _kept_lock:
        _kept[key] = frame
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return submission, frame


def filter_details(
    frame: pd.DataFrame, task: Task, tier: str | None = None, outcome: str | None = None
) -> pd.DataFrame:
    """Rows of one tier (`group/tier` or a bare tier name) and/or one outcome (right, wrong);
    ValueError naming what is unknown."""
    if tier:
        # compared whole, not split: a tier's own name may hold "/" (PersonaFeedback's
        # cell/specific/easy is the tier specific/easy of the group cell)
        matches = [
            (g.name, t) for g in task.tier_groups for t in g.tiers if tier in (t, f"{g.name}/{t}")
        ]
        if not matches:
            known = [f"{g.name}/{t}" for g in task.tier_groups for t in g.tiers]
            raise ValueError(
                f"tier={tier!r} is not a tier of {task.key}; one of: {', '.join(known)}"
            )
        group, name = matches[0]
        frame = frame[frame[group] == name]
    if outcome:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome={outcome!r}: one of {', '.join(OUTCOMES)}")
        frame = frame[frame["outcome"] == outcome]
    return frame.reset_index(drop=True)
