"""The About tab, built from the manifests: each suite's purpose, tasks, tiers, metrics, settings,
which protocol reproduces the paper and which are ours, citation and data license; the submission
rules; the current results revision and when it was published."""

from __future__ import annotations

import html

import gradio as gr

from evaluator.registry import all_suites
from space.choices import pretty
from space.display import metric_label

RULES = """### Submission rules
- Scores are computed here, on the hidden test splits; gold labels never leave the scorer. A result is
  *verified* only when a full run or a complete predictions file was scored here.
- A run on fewer items (a `limit` smoke run) is a *partial* row: shown with its item counts, never ranked.
- The papers' own numbers are *reported* rows: shown for reference, never ranked among verified ones.
- Ranks come from 95% bootstrap intervals: rows whose intervals overlap share a rank. Intervals resample
  each suite's independent units (a preference pair, a persona, a user with all their preferences), not items.
- A row's protocol is in its columns. Each task's default protocol is the one that reproduces its paper
  where the paper or the authors' code states it (listed per task below); the others are ours, labelled.
  A verified row is comparable to a paper row only under the same setting and protocol.
- Every result is published with its provenance (split hash, scorer and suite versions, model revision or
  predictions sha256, protocol, settings) in a versioned results dataset; each result page shows them and the
  command that reproduces it.
- One submission per model, revision, task, setting and protocol: the same again is refused as a duplicate.
- Each suite's data keeps its own license (below): cite the suite's paper and respect its terms (PrefEval's
  CC BY-NC 4.0 asks for attribution and non-commercial use).
"""


def protocol_lines(task) -> list[str]:
    """Which of the task's protocols reproduces the authors' runs and which are ours (manifest
    `model.authors_protocols` and `authors_note`), and the same for its judge (`judge:` block)."""
    e = html.escape
    lines = []
    model = task.model or {}
    protocols = list(model.get("protocols", []))
    if protocols:
        declared = "authors_protocols" in model  # {} declared: the paper states none
        authors = model.get("authors_protocols") or {}
        default = model.get("default_protocol")
        named = []
        for name in protocols:
            marks = ["default"] if name == default else []
            owners = [kind for kind, p in authors.items() if p == name]
            if owners:
                marks.append(f"reproduces the paper for {' and '.join(owners)} models")
            elif declared:
                marks.append("ours")
            named.append(f"`{e(name)}`" + (f" ({', '.join(marks)})" if marks else ""))
        line = "Protocols: " + "; ".join(named) + "."
        if not declared:
            line += " Which of them reproduces the paper is not declared for this task."
        elif not authors:
            line += " The paper states no protocol for this task: every one here is ours."
        if model.get("authors_note"):
            line += " " + e(model["authors_note"])
        lines.append(line)
    judge = task.judge or {}
    offered = [p.strip() for p in str(judge.get("protocols", "")).split(",") if p.strip()]
    if judge.get("protocol") and offered:
        described = "; ".join(
            f"`{e(name)}`{' (default)' if name == judge['protocol'] else ''}: {e(judge.get(name, ''))}"
            for name in offered
        )
        lines.append(f"Judge protocols: {described}.")
    elif judge.get("protocol"):
        lines.append(f"Judge protocol: {e(judge['protocol'])}.")
    return lines


def _suite_section(suite) -> str:
    e = html.escape
    parts = [
        f"## {e(suite.title)}",
        e(suite.description) or "",
        f"Version {e(suite.version)}"
        + (f" · [homepage]({e(suite.homepage)})" if suite.homepage.startswith("https://") else ""),
    ]
    status = suite.split_status()
    parts.append(
        "Hidden split: "
        + (
            "installed here"
            if status.get("installed")
            else "**not installed here** (no submissions yet)"
        )
    )
    parts.append("**Tasks**")
    for task in suite.tasks.values():
        tiers = "; ".join(
            f"{e(g.label)}: " + ", ".join(e(pretty(t, g.label_of(t))) for t in g.tiers)
            for g in task.tier_groups
        )
        metrics = ", ".join(e(metric_label(m)) for m in task.metrics)
        parts.append(
            f"- **{e(task.title)}** (`{e(task.name)}`): {e(task.description)}  \n"
            f"  Metric: {metrics} (ranked by {e(metric_label(task.metric))}). Tiers: {tiers or 'none'}."
            + "".join(f"  \n  {line}" for line in protocol_lines(task))
        )
    parts.append("**Settings**")
    parts.extend(f"- `{e(name)}`: {e(text)}" for name, text in suite.settings.items())
    parts.append(f"**Data license**: {e(suite.license)}")
    parts.append(_citation(suite))
    return "\n\n".join(p for p in parts if p)


def _citation(suite) -> str:
    """The paper as a link (when the manifest names it), the citation and its BibTeX to copy."""
    e = html.escape
    title = f"[{e(suite.title)} paper]({e(suite.paper_url)})" if suite.paper_url else ""
    text = f"**Citation** {title}\n\n```\n{suite.citation}\n```"
    if suite.bibtex:
        text += f"\n\nBibTeX:\n\n```bibtex\n{suite.bibtex}\n```"
    return text


def about_markdown(services) -> str:
    versions = services.results.versions()
    current = versions[0] if versions else None
    head = (
        (
            "### Current results\n\nRevision `"
            + html.escape(current.revision[:12])
            + "`, published "
            + html.escape(current.created_at)
            + f" ({len(versions)} versions in all)."
        )
        if current
        else ""
    )
    intro = (
        "# About PersonaBoard\n\nA leaderboard for LLM personalization benchmarks: each suite below measures "
        "how well a model follows what it knows about a user. Submit a model (the service runs it) or a "
        "predictions file (JSONL) in the Submit tabs."
    )
    return "\n\n".join([intro, head, RULES, *(_suite_section(s) for s in all_suites().values())])


def build_about_tab(ui: gr.Blocks, services) -> None:
    with gr.Tab("About", id="about"):
        text = gr.Markdown(elem_id="about")
    ui.load(lambda: about_markdown(services), None, text)
