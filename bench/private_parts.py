"""How hidden splits are divided into a public and a private part (`split.private_fraction`,
`split.private_by` in the manifests): prints the items per part and the public part's tiers under
the 50-item release minimum, per task, from `personaboard splits install`'s own record
(INSTALLED.json). Prints figures; asserts nothing.

    .venv/bin/python bench/private_parts.py [--realpref-copies 50]

The real splits cannot be installed on a machine without the Hub, so the splits divided here are:

1. Each suite's fixture split (tests/fixtures/splits), installed as hidden (its PUBLIC marker left
   out): what can be installed here.
2. Splits of the papers' sizes built from those fixtures: PersonaFeedback with the cell counts of
   its Table 2 (8,298 items; questions from the fixture, numbered apart); RealPref with the
   fixture's two users copied `--realpref-copies` times (100 users, but 2.5 preferences per user,
   not the paper's 13); Re-Centering relevance of 200 items (as tests/test_attacks.py).
Every installation draws a new secret, so the counts of a stratum of odd size may differ by one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

sys.path[:0] = [str(ROOT / "tests")]
from hidden_splits import (  # noqa: E402  (tests/hidden_splits.py: shared with the attack tests)
    hidden_fixture,
    personafeedback_cells,
    realpref_copies,
    recentering_generated,
)


def show(title: str, suite_name: str, source: Path) -> None:
    from evaluator.registry import get_suite
    from evaluator.split_install import install

    suite = get_suite(suite_name)
    info = install(suite, str(source))
    spec = suite.split_spec
    print(
        f"{title}: private_fraction {spec.get('private_fraction')}, "
        f"private_by {spec.get('private_by', 'item')}"
    )
    print(f"  {'task':<24} {'items':>7} {'public':>7} {'private':>8}  public tiers < 50 items")
    for task, entry in info["tasks"].items():
        parts = entry.get("parts", {})
        under = parts.get("public_tiers_under_min", [])
        print(
            f"  {task:<24} {entry['n_items']:>7} {parts.get('public', '-'):>7} "
            f"{parts.get('private', '-'):>8}  {len(under)}: {', '.join(under) or '-'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realpref-copies", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["PERSONABOARD_SPLITS_DIR"] = str(work / "splits")
        from evaluator.suite import clear_split_cache

        clear_split_cache()
        print("1. fixture splits, installed as hidden")
        for suite in ("recentering", "realpref", "personafeedback"):
            show(suite, suite, hidden_fixture(suite, work / f"fixture-{suite}"))
        print("\n2. splits of the papers' sizes, built from the fixtures")
        show(
            "personafeedback, Table 2's cells (8,298 items)",
            "personafeedback",
            personafeedback_cells(work / "pf-paper"),
        )
        show(
            f"realpref, {2 * args.realpref_copies} users",
            "realpref",
            realpref_copies(work / "rp-copies", args.realpref_copies),
        )
        show(
            "recentering, relevance of 200 items",
            "recentering",
            recentering_generated(work / "rc-200"),
        )


if __name__ == "__main__":
    main()
