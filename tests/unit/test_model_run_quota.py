"""A model run takes what it costs of the daily model-run quota (submissions/quotas.py): a whole
run 1, a smoke run (`limit`) its share of the split's items, at least 0.1 of a run. Counted by
SubmissionStore.admit() in its transaction (intake.budgets_for -> quotas.ModelRunBudget), over the
real intake, SQLite store and a registered model (no queue: runs are recorded, stay queued)."""

from __future__ import annotations

import json

import pytest

from evaluator.models import ModelRegistry
from submissions.identity import IdentityStore
from submissions.intake import ModelForm, SubmissionError, Submitter, accept_model
from submissions.quotas import QuotaLimits, model_run_cost
from submissions.records import SubmissionStore


def test_costs():
    assert model_run_cost(None, 3000) == 1.0
    assert model_run_cost(3000, 3000) == model_run_cost(5000, 3000) == 1.0
    assert model_run_cost(60, 3000) == 0.1  # 0.02 of the items: the floor
    assert model_run_cost(600, 3000) == 0.2
    assert model_run_cost(1001, 3000) == 0.334  # rounded up to a thousandth
    assert sum(model_run_cost(n, 3000) for n in (30, 60, 12, 4)) == pytest.approx(0.4)


@pytest.fixture
def submit(tmp_path):
    records = SubmissionStore(tmp_path / "submissions.sqlite3")
    registry = ModelRegistry(tmp_path)
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (tiny / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ x }}"}))
    registry.add("tiny", tiny)
    identities = IdentityStore(records)
    identities.add_user("alice")
    identity = identities.authenticate(identities.issue_token("alice")[1])
    submitter = Submitter.of(identity, identities, QuotaLimits(model=4))

    def run(setting: str, limit: int | None = None, suite: str = "prefeval"):
        form = ModelForm("tiny", suite, "mcq", setting, model_type="generative", limit=limit)
        return accept_model(
            form, records=records, registry=registry, redis=None, submitter=submitter
        )

    return run


def test_smoke_runs_leave_the_day_for_real_runs(submit):
    # the issue's four smoke runs: 0.4 of the quota of 4, where they once spent all of it
    smoke = [submit("zero_shot", n) for n in (30, 60, 12, 4)]
    assert [s.details["quota_cost"] for s in smoke] == [0.1] * 4
    # then four whole runs: 3.4 spent before the fourth, so it is admitted (< 4); a fifth is not
    for setting in ("zero_shot", "reminder", "cot", "self_critic"):
        assert submit(setting).details["quota_cost"] == 1.0
    with pytest.raises(SubmissionError) as refused:
        submit("zero_shot", 100)
    answer = refused.value.answer()
    assert refused.value.status == 429
    assert (answer["quota"], answer["used"], answer["limit"]) == ("model", 4.4, 4)
    assert "4.4 of 4 model runs on prefeval today" in answer["message"]
    assert "at least 0.1 of a run" in answer["message"]


def test_whole_runs_still_count_one_each(submit):
    for setting in ("zero_shot", "reminder", "cot", "self_critic"):
        submit(setting)
    with pytest.raises(SubmissionError) as refused:
        submit("zero_shot", 30)  # even a smoke run: the day's quota is spent
    answer = refused.value.answer()
    assert (answer["used"], answer["limit"]) == (4, 4)
    assert "4 of 4 model runs" in answer["message"]
