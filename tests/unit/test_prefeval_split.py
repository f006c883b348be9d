"""The PrefEval MCQ split built from the shipped upstream data."""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest

from evaluator.registry import get_task
from evaluator.suite import Split

# Per-topic row counts as documented by the upstream PrefEval data (1000 rows in all).
TOPIC_COUNTS = {
    "education_learning_styles": 31,
    "education_resources": 54,
    "entertain_games": 51,
    "entertain_music_book": 56,
    "entertain_shows": 62,
    "entertain_sports": 52,
    "lifestyle_beauty": 53,
    "lifestyle_dietary": 57,
    "lifestyle_fit": 52,
    "lifestyle_health": 49,
    "pet_ownership": 43,
    "professional_work_location_style": 36,
    "shop_fashion": 54,
    "shop_home": 56,
    "shop_motors": 45,
    "shop_technology": 35,
    "travel_activities": 58,
    "travel_hotel": 54,
    "travel_restaurant": 56,
    "travel_transportation": 46,
}
FORMS = ("explicit", "implicit_choice", "implicit_persona")


@pytest.fixture(scope="module")
def task():
    return get_task("prefeval", "mcq")


@pytest.fixture(scope="module")
def split(task):
    return task.load_split()


def test_documented_counts_add_up():
    assert len(TOPIC_COUNTS) == 20
    assert sum(TOPIC_COUNTS.values()) == 1000


def test_sizes_per_form_and_topic(split):
    assert len(split.items) == 3000
    per_form = collections.Counter(item.tiers["form"] for item in split.items)
    assert per_form == {form: 1000 for form in FORMS}
    for form in FORMS:
        per_topic = collections.Counter(
            i.tiers["topic"] for i in split.items if i.tiers["form"] == form
        )
        assert dict(per_topic) == TOPIC_COUNTS, form


def test_manifest_tiers_match_the_data(task):
    assert task.tier_group("form").tiers == FORMS
    assert set(task.tier_group("topic").tiers) == set(TOPIC_COUNTS)
    assert task.answer_labels == ("A", "B", "C", "D")


def test_ids_unique(split):
    ids = [item.id for item in split.items]
    assert len(set(ids)) == len(ids) == 3000
    assert len(split.by_id) == 3000


def _by_pair(split):
    pairs = collections.defaultdict(dict)
    for item in split.items:
        row = int(item.id.rsplit("-", 1)[1])
        pairs[(item.tiers["topic"], row)][item.tiers["form"]] = item
    return pairs


def test_same_pair_same_letters_and_gold_in_all_forms(split):
    pairs = _by_pair(split)
    assert len(pairs) == 1000
    for key, forms in pairs.items():
        assert set(forms) == set(FORMS), key
        explicit = forms["explicit"]
        for form in FORMS[1:]:
            assert forms[form].public["options"] == explicit.public["options"], (key, form)
            assert forms[form].gold == explicit.gold, (key, form)
            assert forms[form].public["question"] == explicit.public["question"], (key, form)


def test_gold_option_is_upstream_aligned_option(task, split):
    data = task.suite.data_dir / "mcq_options"
    pairs = _by_pair(split)
    golds = collections.Counter()
    for topic in TOPIC_COUNTS:
        rows = json.loads((data / f"{topic}.json").read_text(encoding="utf-8"))
        assert len(rows) == TOPIC_COUNTS[topic]
        for row, upstream in enumerate(rows):
            item = pairs[(topic, row)]["explicit"]
            options = item.public["options"]
            assert options[item.gold] == upstream["classification_task_options"][0], (topic, row)
            # the four lettered options are a permutation of the upstream four
            assert sorted(options.values()) == sorted(upstream["classification_task_options"])
            golds[item.gold] += 1
    # a shuffle that is really a shuffle: every letter is gold for a fair share of 1000 pairs
    assert set(golds) == {"A", "B", "C", "D"}
    assert all(150 < count < 350 for count in golds.values()), golds


def test_public_inputs_hide_the_gold(split):
    lines = split.public_jsonl().decode("utf-8").splitlines()
    assert len(lines) == 3000
    for line, item in zip(lines, split.items):
        public = json.loads(line)
        assert public["id"] == item.id
        assert not {"gold", "label", "correct", "answer", "aligned"} & {k.lower() for k in public}
        assert list(public["options"]) == ["A", "B", "C", "D"]
        assert all(isinstance(v, str) and v for v in public["options"].values())
        assert public["context"] and public["question"]


def test_contexts_differ_by_form(split):
    pairs = _by_pair(split)
    forms = pairs[("travel_hotel", 0)]
    assert len(forms["explicit"].public["context"]) == 1
    assert len(forms["implicit_choice"].public["context"]) == 4
    assert len(forms["implicit_persona"].public["context"]) >= 2
    assert forms["implicit_choice"].public["context"] != forms["implicit_persona"].public["context"]


def test_split_hash_stable_and_sensitive(task, split):
    rebuilt_a = Split(name=split.name, items=task.hooks.build_items(task, task.suite.data_dir))
    rebuilt_b = Split(name=split.name, items=task.hooks.build_items(task, task.suite.data_dir))
    assert rebuilt_a.sha256 == rebuilt_b.sha256 == split.sha256
    assert len(split.sha256) == 64

    items = list(rebuilt_a.items)
    first = items[0]
    other = next(letter for letter in "ABCD" if letter != first.gold)
    items[0] = dataclasses.replace(first, gold=other)
    assert Split(name=split.name, items=items).sha256 != split.sha256

    items = list(rebuilt_a.items)
    changed_public = {**items[5].public, "question": items[5].public["question"] + "?"}
    items[5] = dataclasses.replace(items[5], public=changed_public)
    assert Split(name=split.name, items=items).sha256 != split.sha256
