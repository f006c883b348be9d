"""Typed manifests, registries and the hooks contract, checked at discovery: refusals name the file,
the key and the allowed values; a plain multiple-choice suite needs no Python (generic hooks)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from suite_builder import MC_ITEMS, MC_MANIFEST, file_stats, write_suite
from unit_helpers import jsonl

from evaluator.manifest import ManifestError, dump_manifest, parse_manifest, read_manifest
from evaluator.metrics import get_metric, known_metrics, metric_scale
from evaluator.predictions import PredictionsError, read_predictions
from evaluator.protocols import default_protocol, known_protocols, protocol_problem
from evaluator.registry import all_suites, discover_suite
from evaluator.scoring import score_answers


def edited(change) -> dict:
    manifest = copy.deepcopy(MC_MANIFEST)
    change(manifest)
    return manifest


def refusal(tmp_path, manifest: dict, **files) -> str:
    path = write_suite(tmp_path, manifest, extra_files=files or None)
    with pytest.raises(ManifestError) as caught:
        discover_suite(path, package="tinymc_not_importable")
    return str(caught.value)


def test_the_example_suite_holds(tmp_path):
    suite = discover_suite(write_suite(tmp_path))
    assert list(suite.tasks) == ["mcq"] and suite.tasks["mcq"].metrics == ("accuracy",)


@pytest.mark.parametrize(
    "change,key,allowed",
    [
        (
            lambda m: m["tasks"]["mcq"].update(metrix=["accuracy"]),
            "tasks.mcq.metrix: unknown key",
            "metrics",
        ),
        (lambda m: m.update(licence="x"), "licence: unknown key", "license"),
        (
            lambda m: m["tasks"]["mcq"]["answer"].update(kind="score"),
            "tasks.mcq.answer.kind",
            "'label' or 'rating'",
        ),
        (
            lambda m: m["tasks"]["mcq"]["tier_groups"]["domain"].update(colour="red"),
            "tasks.mcq.tier_groups.domain.colour",
            "label, tiers, labels",
        ),
        (lambda m: m.update(split={"source": "hub"}), "split.source", "'bundled' or 'installed'"),
        (
            lambda m: m["tasks"]["mcq"].update(metrics=["accuracy", "acuracy"]),
            "tasks.mcq.metrics[1]: unknown metric 'acuracy'",
            "accuracy, yes_rate",
        ),
        (
            lambda m: m["tasks"]["mcq"]["model"].update(
                protocols=["choice_logprobs", "choice_logprob"]
            ),
            "tasks.mcq.model.protocols[1]: unknown protocol 'choice_logprob'",
            "generate_parse",
        ),
        (
            lambda m: m["tasks"]["mcq"]["model"].update(default_protocol="reward"),
            "tasks.mcq.model.default_protocol",
            "choice_logprobs, generate_parse",
        ),
        (
            lambda m: m["tasks"]["mcq"]["items"]["tiers"].update(level="domain"),
            "tasks.mcq.items.tiers.level: unknown tier group",
            "domain",
        ),
        (lambda m: m["tasks"]["mcq"].pop("answer"), "tasks.mcq.answer: missing", ""),
    ],
)
def test_refusals_name_file_key_and_allowed_values(tmp_path, change, key, allowed):
    message = refusal(tmp_path, edited(change))
    assert str(tmp_path / "tinymc" / "manifest.yaml") in message
    assert key in message and allowed in message


def test_reported_columns_must_name_tier_groups_and_metrics(tmp_path):
    reported = (
        "tables:\n  - id: table1\n    task: mcq\n    columns: {Acc: accuracy, Math: domain/math, Art: domain/art}\n"
        "    rows: []\n"
    )
    message = refusal(tmp_path, MC_MANIFEST, **{"reported.yaml": reported})
    assert (
        "reported.yaml" in message
        and "columns.Art" in message
        and "unknown tier 'art'" in message
        and "math, geo" in message
    )
    bad_family = reported.replace("domain/art", "level/hard")
    message = refusal(tmp_path, MC_MANIFEST, **{"reported.yaml": bad_family})
    assert "columns.Art" in message and "'level/hard'" in message and "(domain)" in message


def test_python_without_init_is_refused(tmp_path):
    """A suite folder with modules but no __init__.py would drop out of a normal install."""
    message = refusal(tmp_path, MC_MANIFEST, **{"helpers.py": "X = 1\n"})
    assert "__init__.py" in message


def test_suite_metric_as_data(tmp_path):
    """A suite adds a metric in its own folder (metrics.yaml), no Python: a share of a hook's array."""
    manifest = edited(lambda m: m["tasks"]["mcq"].update(metrics=["accuracy", "tinymc_share"]))
    path = write_suite(
        tmp_path,
        manifest,
        extra_files={
            "metrics.yaml": "tinymc_share: {label: Tiny share, kind: share, reads: [correct], scale: percent}\n"
        },
    )
    discover_suite(path)
    assert "tinymc_share" in known_metrics() and get_metric("tinymc_share").label == "Tiny share"
    assert metric_scale("tinymc_share") == 100 and metric_scale("spearman") == 1
    bad = tmp_path / "bad"
    bad.mkdir()
    message = refusal(
        bad,
        manifest,
        **{"metrics.yaml": "tinymc_share: {label: X, kind: median, reads: [correct]}\n"},
    )
    assert (
        "metrics.yaml: tinymc_share.kind: 'median'" in message
        and "share, mean, statistic" in message
    )


def test_default_protocol_is_one_rule():
    pf = all_suites()["personafeedback"].tasks["binary_choice"]
    assert default_protocol(pf, "generative") == "generate_parse"  # the paper's judges wrote
    assert default_protocol(pf, "reward") == "reward"
    rc = all_suites()["recentering"].tasks["relevance"]
    assert (
        default_protocol(rc, "reward") == "reward"
    )  # not offered: refused by protocol_problem, not swapped
    assert "runs models with generate_parse, choice_logprobs, not 'reward'" in protocol_problem(
        rc, "reward", "reward"
    )
    assert (
        protocol_problem(pf, "reward", "generative")
        == "protocol 'reward' does not fit a generative model"
    )
    assert protocol_problem(pf, "pairwise_logprobs", "generative") is None
    assert set(known_protocols()) >= {
        "choice_logprobs",
        "pairwise_logprobs",
        "rating_logprobs",
        "generate_parse",
        "reward",
    }


def test_hooks_contract_checked_at_discovery(tmp_path):
    """A hooks module missing a hook the manifest implies, or with a wrong signature, fails at discovery."""
    import sys

    package = tmp_path / "hookpkg_contract"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mcq.py").write_text(
        "def build_items(task, folder):\n    return []\n"
    )  # no build_requests
    (package / "wrong.py").write_text("def build_items(task):\n    return []\n")
    sys.path.insert(0, str(tmp_path))
    try:
        no_items = edited(lambda m: m["tasks"]["mcq"].pop("items"))
        path = write_suite(tmp_path / "a", no_items)
        with pytest.raises(
            ManifestError, match=r"build_requests is missing; the manifest lists model protocols"
        ):
            discover_suite(path, package="hookpkg_contract")
        wrong = edited(
            lambda m: (
                m["tasks"]["mcq"].pop("items"),
                m["tasks"]["mcq"].pop("model"),
                m["tasks"]["mcq"].update(hooks="wrong"),
            )
        )
        with pytest.raises(ManifestError, match=r"build_items must take \(task, folder\)"):
            discover_suite(write_suite(tmp_path / "b", wrong), package="hookpkg_contract")
        missing = edited(
            lambda m: (m["tasks"]["mcq"].pop("items"), m["tasks"]["mcq"].update(hooks="absent"))
        )
        with pytest.raises(
            ManifestError, match=r"tasks.mcq.hooks: no module 'hookpkg_contract.absent'"
        ):
            discover_suite(write_suite(tmp_path / "c", missing), package="hookpkg_contract")
    finally:
        sys.path.remove(str(tmp_path))


def test_manifests_round_trip():
    for suite in all_suites().values():
        manifest = read_manifest(suite.folder / "manifest.yaml")
        again = parse_manifest(dump_manifest(manifest), "round trip")
        assert again == manifest and dump_manifest(again) == dump_manifest(manifest)


def test_a_multiple_choice_suite_needs_no_python(tmp_path):
    """One folder, three files (manifest, data, prompts), no Python: items, scoring, refusals, model requests."""
    path = write_suite(tmp_path)
    suite = discover_suite(path)
    task = suite.tasks["mcq"]
    split = task.load_split()
    assert [i.id for i in split.items] == [i["id"] for i in MC_ITEMS]
    assert all("answer" not in i.public for i in split.items)
    assert {i.tiers["domain"] for i in split.items} == {"math", "geo"}
    perfect = {i["id"]: i["answer"] for i in MC_ITEMS}
    result = score_answers(task, split, perfect)
    assert (
        result["total"]["accuracy"]["value"] == 1.0
        and result["tiers"]["domain"]["geo"]["accuracy"]["n"] == 2
    )
    all_a = score_answers(task, split, {i["id"]: "A" for i in MC_ITEMS})
    assert all_a["total"]["accuracy"]["value"] == pytest.approx(2 / 5)
    with pytest.raises(PredictionsError) as caught:
        read_predictions(
            jsonl({"id": "q1", "answer": "B"}, {"id": "q2", "answer": "E"}), task, split
        )
    assert (2, "answer") in [(p.line, p.field) for p in caught.value.problems]

    class Tools:
        protocol = "choice_logprobs"

    request = task.hooks.build_requests(task, [split.items[0].public], "cot", Tools())[0]
    assert (
        request.labels == ("A", "B", "C", "D")
        and request.messages[0]["content"] == "Answer with one letter."
    )
    assert "B. 4" in request.messages[-1]["content"] and request.messages[-1]["content"].endswith(
        "then give the letter."
    )
    assert (
        task.hooks.parse_answer("The answer is C.") == "C"
        and task.hooks.parse_answer("no idea") is None
    )
    files, lines = file_stats(path)
    print(
        f"\nnew multiple-choice suite: {files} files, {lines} lines (of which {len(MC_ITEMS)} data lines), no Python"
    )
    assert files == 3 and lines <= 60
    assert not list(path.parent.glob("*.py"))
    np.testing.assert_equal(
        task.hooks.item_arrays(task, split.items, perfect)["correct"], np.ones(5, dtype=bool)
    )


def test_suites_check_command(capsys, monkeypatch, tmp_path):
    """`personaboard suites check`: 0 and the suites when all hold; 1 and each problem otherwise."""
    from backend import cli
    from evaluator import registry

    assert cli.main(["suites", "check"]) == 0
    assert f"{len(all_suites())} suites hold" in capsys.readouterr().out
    write_suite(tmp_path, edited(lambda m: m["tasks"]["mcq"].update(metrics=["acuracy"])))
    monkeypatch.setattr(registry, "SUITES_DIR", tmp_path)
    assert cli.main(["suites", "check"]) == 1
    err = capsys.readouterr().err
    assert "tinymc: " in err and "tasks.mcq.metrics[0]: unknown metric 'acuracy'" in err
