"""Traps a new user met in the submit tabs, in process (space/tabs/submit_model.py).

The model tab chooses the task's default setting from the first render and keeps one chosen (and
valid) as the suite, task or protocol changes, so the first click runs something; every setting
it offers is one the intake accepts for a model run of that task."""

from __future__ import annotations

import gradio as gr
import pytest

from evaluator.registry import all_suites
from space.tabs import submit_model as model_tab
from submissions import intake

MODEL_TASKS = [
    (suite, task)
    for suite, found in all_suites().items()
    for task, spec in found.tasks.items()
    if spec.model_protocols
]


@pytest.fixture(autouse=True)
def splits_everywhere(monkeypatch):
    """The settings question does not depend on a split being installed on this machine (the
    intake asks that first and would hide the answer for suites whose split is not here)."""
    monkeypatch.setattr(intake, "check_available", lambda task: None)


def setting_refusal(suite: str, task: str, setting: str) -> str | None:
    """The intake's refusal of `setting` for a model run (its checks before the model is
    resolved), None when it accepts the setting."""
    try:
        intake.check_model_form(intake.ModelForm("m", suite, task, setting))
    except intake.SubmissionError as exc:
        return exc.message
    return None


@pytest.mark.parametrize(("suite", "task"), MODEL_TASKS)
def test_the_preselected_setting_is_one_the_intake_runs(suite, task):
    protocols, settings = model_tab.task_view(suite, task)
    chosen = model_tab.default_settings(suite, task, settings)
    assert len(chosen) == 1 and chosen[0] in settings
    # every offered setting, the preselected one first, passes the intake's own checks
    for setting in settings:
        assert setting_refusal(suite, task, setting) is None, (suite, task, setting)
    # a task naming its model prompts: the first it declares is its default
    prompts = all_suites()[suite].tasks[task].options.get("prompt_for_setting")
    if prompts:
        assert chosen == [next(s for s in prompts if s in settings)]


def test_recentering_offers_only_the_settings_its_prompts_cover():
    # relevance has prompts for zero_shot, grpo and trained: optimized_prompt was offered, refused
    _, settings = model_tab.task_view("recentering", "relevance")
    assert "optimized_prompt" not in settings and "default" not in settings
    assert setting_refusal("recentering", "relevance", "optimized_prompt") is not None
    # stage 3 declares `default` (the paper's only stage-3 setup) first: preselected
    view = model_tab._on_task("recentering", "response_preference")[1]
    assert view["value"] == ["default"] and view["value"][0] in view["choices"]


def test_suite_and_task_changes_keep_a_valid_setting_chosen():
    for suite in all_suites():
        tasks, settings, _ = model_tab._on_suite(suite)
        assert settings["value"] and set(settings["value"]) <= set(settings["choices"]), suite
        for _, task in tasks["choices"]:
            settings = model_tab._on_task(suite, task)[1]
            assert len(settings["value"]) == 1, (suite, task)
            assert settings["value"][0] in settings["choices"], (suite, task)
    # a protocol that cannot honour the chosen setting: back to the default, not to nothing
    _, kept = model_tab.kept_settings("realpref", "mcq", "choice_logprobs", ["cot"])
    assert kept == ["zero_shot"]


class Registered:
    def registered_models(self) -> dict:
        return {}


def test_the_first_render_already_holds_the_task_and_its_default_setting():
    """Before the page's load event narrows the choices, a click must already carry a task and a
    setting (it used to carry none: 'setting is required')."""
    with gr.Blocks():
        c = model_tab._layout(Registered(), "prefeval")
    assert c["task"].value == "mcq"
    assert c["settings"].value == ["zero_shot"]
    assert set(c["settings"].value) <= {value for _, value in c["settings"].choices}
