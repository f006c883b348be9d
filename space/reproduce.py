"""A result page's "Reproduce" section: the one `personaboard` command that re-runs the row from
its record's provenance, and what its output must match.

Plain functions of a published record (the typed ResultRecord; no services): a model run gives `personaboard evaluate`
with the model and its pinned revision, suite/task/setting, protocol, the item limit of a partial
run, backend and device, the judge (and its protocol) and retriever as environment variables, and
`--details` where the split is public (the per-item answers, to compare with the details
download); an uploaded file gives `personaboard score` and the answers' sha256 to check; a paper's
row or a reference line says it is not a run. Every word from the record is shell-quoted (model and
judge names are user text) and the HTML escapes it again.
"""

from __future__ import annotations

import html
import re
import shlex
from typing import Any, Mapping
from urllib.parse import quote

from evaluator.registry import all_suites
from leaderboard.result_record import KIND_REFERENCE, KIND_REPORTED, ResultRecord, provenance_of
from space.display import format_value, metric_label

LIMITED = re.compile(r"\[(\d+) of \d+\]")  # a --limit run's split name: "test[30 of 3000]"
OFFLINE_RETRIEVER = "sentence-transformers/all-MiniLM-L6-v2 (offline default"
DETAILS_API = "/api/v1/submissions/{}/details?format=parquet"


def _extra(record: ResultRecord) -> dict[str, Any]:
    """The provenance keys the typed Provenance leaves open (a run's stats: device, versions, seeds)."""
    return record.provenance


def _shell(word: Any) -> str:
    return shlex.quote(str(word))


def _public_split(record: ResultRecord) -> bool:
    """Whether the row's per-item answers may be written and shown (a public split)."""
    from evaluator.release import item_details_allowed

    suite = all_suites().get(record.suite)
    task = suite.tasks.get(record.task) if suite else None
    return bool(task and item_details_allowed(task))


def run_limit(record: ResultRecord) -> int | None:
    """The `--limit` a partial run was given: its split name says `[N of M]`; None otherwise."""
    name = str((provenance_of(record).get("split") or {}).get("name") or "")
    found = LIMITED.search(name)
    return int(found.group(1)) if found else None


def _environment(record: ResultRecord) -> list[str]:
    """`NAME=value` words the run needs before the command: the judge, its protocol, a retriever."""
    judge = _extra(record).get("judge")
    judge = judge if isinstance(judge, dict) else {}
    words = []
    if judge.get("model"):
        words.append(f"PERSONABOARD_JUDGE_MODEL={_shell(judge['model'])}")
        if judge.get("default_protocol") and judge.get("protocol"):  # not the task's default
            words.append(f"PERSONABOARD_JUDGE_PROTOCOL={_shell(judge['protocol'])}")
    retriever = _extra(record).get("retrieval_model")
    if isinstance(retriever, str) and retriever and not retriever.startswith(OFFLINE_RETRIEVER):
        words.append(f"PERSONABOARD_EMBEDDING_MODEL={_shell(retriever)}")
    return words


def _model_words(record: ResultRecord) -> list[str]:
    """`personaboard evaluate ...` of a model run, as words (unquoted)."""
    provenance, extra = provenance_of(record), _extra(record)
    model = provenance.get("model") or {}
    words = ["personaboard", "evaluate", "--model", model.get("name") or record.model_name]
    if model.get("revision") and model.get("source") in ("hub", "local"):
        words += ["--revision", model["revision"]]  # a local folder's content hash is checked too
    setting = record.setting.split("+judge:", 1)[0]
    words += ["--suite", record.suite, "--task", record.task, "--setting", setting]
    if provenance.get("protocol"):
        words += ["--protocol", provenance["protocol"]]
    if limit := run_limit(record):
        words += ["--limit", str(limit)]
    if model.get("source") != "endpoint" and extra.get("backend") in ("transformers", "vllm"):
        words += ["--backend", extra["backend"]]
        if extra["backend"] == "transformers" and extra.get("device") in ("cpu", "cuda"):
            words += ["--device", extra["device"]]  # the dtype follows the device
    if _public_split(record):
        words += ["--details", f"{record.submission_id}-details.parquet"]
    return words


def reproduce_command(record: ResultRecord) -> str:
    """The one shell command that re-runs (or re-scores) this row; a comment where none can."""
    provenance = provenance_of(record)
    if record.row_kind == KIND_REPORTED:
        return f"# Reported in the paper ({provenance.get('table', '')}); not run here."
    if record.row_kind == KIND_REFERENCE:
        return "# A reference line computed from the split's gold answers; not a run."
    if "model" in provenance:
        words = _model_words(record)
    else:
        words = ["personaboard", "score", "--suite", record.suite, "--task", record.task]
        words.append("predictions.jsonl")
    return " ".join([*_environment(record), *(_shell(w) for w in words)])


def _expected_score(record: ResultRecord) -> str:
    metrics = record.metrics
    metric = metrics.metric
    stats = metrics.total.get(metric) if metric else None
    value = stats.value if stats else None
    text = f"total.{metric}.value = {value!r} ({metric_label(metric or '')} {format_value(value, metric)})"
    text += f" on {(stats.n if stats else 0) or record.n_items} items"
    if metrics.release:
        text += "; a hidden split's published number is released rounded: the run prints it whole"
    return text


def reproduce_checks(record: ResultRecord) -> list[tuple[str, str]]:
    """What the command's output must match, as (what, text) pairs; none for papers' rows."""
    if record.row_kind in (KIND_REPORTED, KIND_REFERENCE):
        return []
    provenance, extra = provenance_of(record), _extra(record)
    split = provenance.get("split") or {}
    checks = [("Score", _expected_score(record))]
    if "model" not in provenance:
        checks.append(
            (
                "Answers",
                f"the file's answers must hash to predictions_sha256 {provenance.get('predictions_sha256', '?')} "
                "(`personaboard score` prints it: the parsed answers, whatever the file's encoding)",
            )
        )
    else:
        checks.append(("Answers", f"answers_sha256 {provenance.get('answers_sha256', '?')}"))
        if _public_split(record):
            where = DETAILS_API.format(quote(record.submission_id, safe=""))
            checks.append(("Per item", f"the --details file against {where}"))
    versions = [
        f"personaboard {extra.get('package_version', '(not recorded)')}",
        f"suite {provenance.get('suite_version', '?')}",
        f"scorer {provenance.get('scorer_version', '?')}",
    ]
    if "protocol_version" in extra:
        versions.append(f"protocol {extra['protocol_version']}")
    if extra.get("backend_version"):
        versions.append(f"{extra.get('backend')} {extra['backend_version']}")
    if extra.get("device"):
        versions.append(f"on {extra['device']} ({extra.get('dtype', '?')})")
    checks.append(("Versions", ", ".join(versions)))
    checks.append(("Split", f"sha256 {split.get('sha256', '?')} ({split.get('name', '?')})"))
    if isinstance(extra.get("seeds"), dict):
        seeds = ", ".join(f"{k}: {v}" for k, v in extra["seeds"].items())
        checks.append(("Seeds", seeds + "; a --limit run's items: a sample seeded 0"))
    checks += _model_source_note(provenance.get("model") or {})
    return checks


def _model_source_note(model: Mapping[str, object]) -> list[tuple[str, str]]:
    if model.get("source") == "local":
        return [
            (
                "Model",
                "a local model: register the same folder under this name first "
                "(`personaboard models add NAME FOLDER`); --revision checks its content hash",
            )
        ]
    if model.get("source") == "endpoint":
        return [
            (
                "Model",
                f"an OpenAI-compatible endpoint ({model.get('revision', '')}): register it under this "
                "name first (`personaboard endpoints add`); its replies may vary between calls",
            )
        ]
    return []


def reproduce_section(record: ResultRecord) -> str:
    """The result page's Reproduce section: the command in a copyable block, then the checks."""
    checks = "".join(
        f"<li><b>{html.escape(what)}:</b> {html.escape(text)}</li>"
        for what, text in reproduce_checks(record)
    )
    return (
        "<h2>Reproduce</h2>"
        f"<pre class=reproduce><code>{html.escape(reproduce_command(record))}</code></pre>"
        + (
            f'<p class="pb-note">Its output must match:</p><ul class=checks>{checks}</ul>'
            if checks
            else ""
        )
    )
