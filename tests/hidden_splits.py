"""Hidden splits large enough to release from, built from the fixtures (tests/fixtures/splits):
for the attack tests (tests/test_hidden_release.py, tests/test_attacks.py) and
bench/private_parts.py. The real splits need the Hub, which this machine cannot reach.

Each builder copies a suite's fixture folder without its PUBLIC marker (so it installs hidden) and
multiplies its items under new ids. Install with `evaluator.split_install.install(suite, folder)`
or `personaboard splits install SUITE --source FOLDER`.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "splits"

# PersonaFeedback, Table 2 (and docs/SUITES.md): items per type/difficulty cell
PERSONAFEEDBACK_CELLS = {
    ("spedific", "easy"): 1108,
    ("spedific", "medium"): 1667,
    ("spedific", "hard"): 1682,
    ("general", "easy"): 1510,
    ("general", "medium"): 1321,
    ("general", "hard"): 1010,
}


def hidden_fixture(suite: str, into: Path) -> Path:
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(FIXTURES / suite, into)
    (into / "PUBLIC").unlink()
    return into


def personafeedback_cells(into: Path, per_cell: int | None = None) -> Path:
    """PersonaFeedback with the paper's cell counts (8,298 items), or `per_cell` items per cell;
    questions from the fixture, numbered apart."""
    hidden_fixture("personafeedback", into)
    for (folder, difficulty), count in PERSONAFEEDBACK_CELLS.items():
        path = into / "data" / folder / f"{difficulty}.jsonl"
        template = path.read_text().splitlines()
        lines = []
        for i in range(per_cell or count):
            record = json.loads(template[i % len(template)])
            record["question"] += f" ({i})"
            lines.append(json.dumps(record))
        path.write_text("\n".join(lines) + "\n")
    return into


def realpref_copies(into: Path, copies: int) -> Path:
    """RealPref with the fixture's two users copied `copies` times (2 x copies users)."""
    hidden_fixture("realpref", into)
    for name in ("users.jsonl", "preferences.jsonl", "sessions.jsonl"):
        lines = (FIXTURES / "realpref" / name).read_text().splitlines()
        out = [line for line in lines if '"user_id"' not in line]  # shared random sessions
        for c in range(copies):
            out += [
                line.replace("u001", f"c{c}u001").replace("u002", f"c{c}u002")
                for line in lines
                if '"user_id"' in line
            ]
        (into / name).write_text("\n".join(out) + "\n")
    return into


def recentering_generated(into: Path, n: int = 200, seed: int = 0, ratings: int = 0) -> Path:
    """Re-Centering with `n` generated relevance items (three random votes each) and `n`
    attribute-verification items (the fixture's, renumbered, with random labels); with `ratings`,
    that many response-preference items too (the fixture's, renumbered, random order and human
    mean rating)."""
    hidden_fixture("recentering", into)
    rng = random.Random(seed)
    if ratings:
        source = FIXTURES / "recentering" / "response_preference.jsonl"
        template = source.read_text().splitlines()
        rated = []
        for i in range(ratings):
            record = json.loads(template[i % len(template)])
            record.update(id=f"p{i:03d}", personalized=rng.choice("AB"))
            record.update(human_rating=rng.choice([1 + k / 3 for k in range(13)]))
            record["prompt"] += f" ({i})"
            rated.append(record)
        (into / "response_preference.jsonl").write_text("\n".join(map(json.dumps, rated)) + "\n")
    relevance = [
        {
            "id": f"h{i:03d}",
            "prompt": f"Prompt {i}.",
            "attribute": "A.",
            "votes": [rng.choice(("YES", "NO")) for _ in range(3)],
        }
        for i in range(n)
    ]
    (into / "relevance.jsonl").write_text("\n".join(map(json.dumps, relevance)) + "\n")
    template = (FIXTURES / "recentering" / "attribute_verification.jsonl").read_text().splitlines()
    verification = []
    for i in range(n):
        record = json.loads(template[i % len(template)])
        record.update(id=f"v{i:03d}", label=rng.choice(("accepted", "rejected")))
        record["attribute"] += f" ({i})"
        verification.append(record)
    (into / "attribute_verification.jsonl").write_text(
        "\n".join(map(json.dumps, verification)) + "\n"
    )
    return into
