"""What a hidden split releases before a named release, attacked in process through the job's own
release path (submissions/jobs.py `_through_the_ladder`, evaluator/release.py), for every label
task of every suite that can have a hidden split.

The attack: 30 fresh identities each send one first upload, a constant answer with one item
changed (all NO but one YES), half the changed items in the public part and half in the private
part. Before, a first release was unconditional, and a tier cell's rounded interval bound taught
that item's label (8 of 60) and `yes_rate`'s the item's part (60 of 60). Now every field of every
result is compared across the 30: a field that varied with the item could carry its label or its
part; none may vary. A positive control (a good file is released, as one number) proves the path
releases at all. The same attack over HTTP, with every view, is in tests/test_attacks.py.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hidden_splits import (  # noqa: E402
    personafeedback_cells,
    realpref_copies,
    recentering_generated,
)

IDENTITIES = 30
BUILDERS = {
    "personafeedback": lambda into: personafeedback_cells(into, per_cell=40),
    "realpref": lambda into: realpref_copies(into, copies=4),
    "recentering": lambda into: recentering_generated(into, n=200, ratings=200),
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Every suite with a hidden split, installed hidden from splits built large enough."""
    from evaluator.registry import all_suites
    from evaluator.split_install import install
    from evaluator.suite import clear_split_cache

    root = tmp_path_factory.mktemp("hidden-release")
    saved = os.environ.get("PERSONABOARD_SPLITS_DIR")
    os.environ["PERSONABOARD_SPLITS_DIR"] = str(root / "splits")
    clear_split_cache()
    try:
        suites = all_suites()
        for name, build in BUILDERS.items():
            install(suites[name], str(build(root / name)))
        yield root
    finally:
        if saved is None:
            os.environ.pop("PERSONABOARD_SPLITS_DIR", None)
        else:
            os.environ["PERSONABOARD_SPLITS_DIR"] = saved
        clear_split_cache()


def hidden_label_tasks() -> list[tuple[str, str]]:
    from evaluator.registry import all_suites
    from evaluator.splits import private_fraction

    return [
        (suite.name, task.name)
        for suite in all_suites().values()
        if suite.split_hidden and private_fraction(suite) > 0
        for task in suite.tasks.values()
        if task.answer_kind == "label" and len(task.answer_labels) >= 2 and not task.judge
    ]


def test_every_suite_with_a_private_part_is_attacked():
    assert {s for s, _ in hidden_label_tasks()} == set(BUILDERS)


def through_the_job(store, task, owner: str, answers: dict[str, str]) -> dict | None:
    """Score `answers` and release them as the job does, as `owner`'s first result; returns what
    the submitter is told (the released metrics, or the withheld result)."""
    from evaluator.scoring import score_answers
    from submissions.jobs import _through_the_ladder
    from submissions.records import Submission, utc_now

    digest = hashlib.sha256(repr(sorted(answers.items())).encode()).hexdigest()
    submission = Submission(
        id=f"s-{owner}-{digest[:12]}",
        created_at=utc_now(),
        kind="predictions",
        suite=task.suite.name,
        task=task.name,
        setting="zero_shot",
        model_name=owner,
        file_sha256=digest,
        owner=owner,
    )
    store.add(submission)
    released = _through_the_ladder(
        store, submission, score_answers(task, task.load_split(), answers)
    )
    if released is not None:
        return dict(released)
    return store.get(submission.id).result


def fields_that_vary(told: list[dict | None]) -> set[str]:
    """The fields whose value is not the same in every result told (a withheld result: {})."""
    return {
        field
        for result in told
        for field in (result or {})
        if len({repr((r or {}).get(field)) for r in told}) > 1
    }


@pytest.mark.parametrize("suite,task_name", hidden_label_tasks())
def test_single_change_first_releases_learn_nothing(installed, tmp_path, suite, task_name):
    from evaluator.registry import get_task
    from evaluator.splits import private_item_ids
    from submissions.private_part import pending
    from submissions.records import SubmissionStore

    task = get_task(suite, task_name)
    split = task.load_split()
    private = private_item_ids(task)
    store = SubmissionStore(tmp_path / "submissions.sqlite3")
    base, changed = task.answer_labels[0], task.answer_labels[1]
    public_ids = [i.id for i in split.items if i.id not in private]
    private_ids = [i.id for i in split.items if i.id in private]
    assert len(public_ids) >= 50 and private_ids, (len(public_ids), len(private_ids))
    gold = {item.id: item.gold for item in split.items}

    def pick(ids: list[str], k: int) -> list[str]:
        """k items, half of them (where there are) ones the changed answer is right on."""
        hits = [i for i in ids if gold[i] == changed][: k // 2]
        return hits + [i for i in ids if gold[i] != changed][: k - len(hits)]

    probes = pick(public_ids, IDENTITIES // 2) + pick(private_ids, IDENTITIES - IDENTITIES // 2)
    told = []
    for k, probe in enumerate(probes):
        answers = {item.id: base for item in split.items}
        answers[probe] = changed
        told.append(through_the_job(store, task, f"fresh-{k}", answers))
    # every field the 30 were told, compared: a field that differs between items could carry the
    # item's label or its part; none does (labels learned: 0, memberships learned: 0)
    varying = fields_that_vary(told)
    assert not varying, (varying, told[:2])
    assert told[0]["released"] is False and "total" not in told[0], told[0]
    assert {gold[p] == changed for p in probes} == {True, False}  # both labels probed
    assert pending(store) == []  # nothing kept for a release either

    # the control: a file right on 90% of the items is released, as one rounded number
    right = {item.id: str(item.gold) if i % 10 else base for i, item in enumerate(split.items)}
    shown = through_the_job(store, task, "control", right)
    assert shown is not None and shown.get("released") is not False, shown
    ((metric, stats),) = shown["total"].items()
    assert metric == task.metric and set(stats) == {"value", "ci95", "n", "step"}
    assert shown["tiers"] == {} and "private" not in shown
    assert stats["n"] == len(public_ids) and round(stats["value"] / stats["step"], 6).is_integer()
    assert [row["submission_id"] for row in pending(store)] == [f"s-control-{_digest(right)}"]


def _digest(answers: dict[str, str]) -> str:
    return hashlib.sha256(repr(sorted(answers.items())).encode()).hexdigest()[:12]


def hidden_rating_tasks() -> list[tuple[str, str]]:
    from evaluator.registry import all_suites
    from evaluator.splits import private_fraction

    return [
        (suite.name, task.name)
        for suite in all_suites().values()
        if suite.split_hidden and private_fraction(suite) > 0
        for task in suite.tasks.values()
        if task.metric == "spearman"
    ]


@pytest.mark.parametrize("suite,task_name", hidden_rating_tasks())
def test_single_change_rating_files_learn_nothing(installed, tmp_path, suite, task_name):
    """The rating form of the attack: "every item 3, item i rated 5 (or 1)". A rank correlation
    moves by up to ~sqrt(3/n) for one item, about a step: with a floor of 0 such a file was
    released when item i's gold rating was high (or low). The floor is now the best such file's
    score (evaluator/release.py single_change_reach): none is released, whichever item."""
    from evaluator.registry import get_task
    from evaluator.splits import private_item_ids
    from submissions.private_part import pending
    from submissions.records import SubmissionStore

    task = get_task(suite, task_name)
    split = task.load_split()
    private = private_item_ids(task)
    store = SubmissionStore(tmp_path / "submissions.sqlite3")
    gold = {item.id: item.gold["rating"] for item in split.items}
    public_ids = sorted((i for i in gold if i not in private), key=gold.__getitem__)
    private_ids = sorted((i for i in gold if i in private), key=gold.__getitem__)
    assert len(public_ids) >= 50 and private_ids
    # the items most telling: the public part's highest and lowest rated, and private ones
    probes = public_ids[:4] + public_ids[-4:] + private_ids[:4] + private_ids[-3:]
    low, high = (str(int(r)) for r in task.answer_range)
    told = []
    for k, probe in enumerate(probes):
        for base, changed in (("3", high), ("3", low)):
            answers = {item.id: base for item in split.items}
            answers[probe] = changed
            told.append(through_the_job(store, task, f"rater-{k}-{changed}", answers))
    varying = fields_that_vary(told)
    assert not varying, (varying, told[:2])
    assert len(told) == 30 and told[0]["released"] is False and "total" not in told[0]
    assert pending(store) == []

    # the control: ratings that follow the gold are released, as one number
    right = {item.id: str(round(item.gold["rating"])) for item in split.items}
    right = {
        item.id: str(6 - int(r) if item.gold["personalized"] == "A" else int(r))
        for item, r in ((item, right[item.id]) for item in split.items)
    }
    shown = through_the_job(store, task, "control", right)
    assert shown is not None and shown.get("released") is not False, shown
    assert set(shown["total"]) == {"spearman"} and shown["tiers"] == {}
