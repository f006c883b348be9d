"""Builds small suite folders in a tmp dir (tests/unit is on sys.path): what a new suite author writes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

MC_ITEMS = [
    {
        "id": "q1",
        "question": "2 + 2 = ?",
        "options": ["3", "4", "5", "6"],
        "answer": "B",
        "domain": "math",
    },
    {
        "id": "q2",
        "question": "Capital of France?",
        "options": ["Paris", "Rome", "Oslo", "Bern"],
        "answer": "A",
        "domain": "geo",
    },
    {
        "id": "q3",
        "question": "3 x 3 = ?",
        "options": ["6", "8", "9", "12"],
        "answer": "C",
        "domain": "math",
    },
    {
        "id": "q4",
        "question": "Largest ocean?",
        "options": ["Indian", "Arctic", "Atlantic", "Pacific"],
        "answer": "D",
        "domain": "geo",
    },
    {
        "id": "q5",
        "question": "5 - 3 = ?",
        "options": ["2", "1", "0", "3"],
        "answer": "A",
        "domain": "math",
    },
]

MC_MANIFEST = {
    "name": "tinymc",
    "version": "0.1.0",
    "description": "A 5-item multiple-choice suite made in a test.",
    "license": "CC0",
    "settings": {"zero_shot": "The question and its options.", "cot": "Asked to think first."},
    "tasks": {
        "mcq": {
            "title": "Multiple choice",
            "items": {
                "file": "test.jsonl",
                "gold": "answer",
                "public": ["question", "options"],
                "tiers": {"domain": "domain"},
                "options": "options",
            },
            "answer": {"field": "answer", "labels": ["A", "B", "C", "D"]},
            "metrics": ["accuracy"],
            "model": {
                "protocols": ["choice_logprobs", "generate_parse"],
                "default_protocol": "choice_logprobs",
                "max_new_tokens": 4,
            },
            "tier_groups": {"domain": {"label": "Domain", "tiers": ["math", "geo"]}},
        }
    },
}

MC_PROMPTS = {
    "mcq": {
        "system": "Answer with one letter.",
        "user": "{question}\n{options}\nAnswer:",
        "settings": {"cot": "Think step by step, then give the letter."},
    }
}


def write_suite(
    root: Path,
    manifest: dict = MC_MANIFEST,
    items: list[dict] = MC_ITEMS,
    prompts: dict = MC_PROMPTS,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """A suite folder as an author writes it: manifest.yaml, data/test.jsonl, prompts.yaml. Returns the manifest path."""
    folder = root / manifest["name"]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(
        yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8"
    )
    (folder / "data" / "test.jsonl").write_text(
        "".join(json.dumps(i) + "\n" for i in items), encoding="utf-8"
    )
    (folder / "prompts.yaml").write_text(yaml.safe_dump(prompts, sort_keys=False), encoding="utf-8")
    for name, text in (extra_files or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / "manifest.yaml"


def file_stats(manifest: Path) -> tuple[int, int]:
    """(files, lines) of a suite folder: what adding it costs."""
    files = [p for p in manifest.parent.rglob("*") if p.is_file()]
    return len(files), sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files)
