"""Hidden splits that are not shipped with the code: installed by the operator, hashed, versioned.

A suite's manifest says where its split comes from (`split.source`): `bundled` (the suite folder's
data/, as PrefEval) or `installed` (a Hugging Face Hub dataset at a pinned revision, or a local
folder, copied into the data folder by `personaboard splits install`: evaluator/split_install.py).
This module only locates and reads splits. Until then the suite shows
its reported rows, and uploads and model runs for it are refused with the command to run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from evaluator.settings import load_evaluator_settings


class SuiteLike(Protocol):
    """What these functions read of a suite (evaluator.suite.Suite; not imported: suite.py imports this module)."""

    name: str
    folder: Path
    split_spec: dict[str, Any]


FIXTURE_MARKER = "FIXTURE"  # a file of this name in a split folder marks it as a test fixture
# A file of this name in a split folder declares its gold public (a synthetic fixture whose gold is
# in this repository, a dataset released with its labels): scores on it are released exactly.
PUBLIC_MARKER = "PUBLIC"
VISIBILITY_NOTES = {
    "hidden": "hidden: gold labels stay on this server; scores are released through the Ladder "
    "(only improvements on your best, rounded to the noise level, large tiers only); where the "
    "manifest declares a private part, live scores are of the public part and the private part "
    "is released once, when the operator names a release (the part/private column)",
    "public": "public by convention: the gold labels of this split are published elsewhere, so scores "
    "are exact and nothing here protects them from being fitted; compare results with that in mind",
}


class SplitNotInstalled(LookupError):
    pass


def splits_root() -> Path:
    return load_evaluator_settings().splits_dir


def install_command(suite: SuiteLike) -> str:
    source = suite.split_spec.get("hub_id") or "PATH_TO_SPLIT_FOLDER"
    return f"personaboard splits install {suite.name} --source {source}"


def installed_dir(suite: SuiteLike) -> Path:
    return splits_root() / suite.name


def installed_info(suite: SuiteLike) -> dict | None:
    info = installed_dir(suite) / "INSTALLED.json"
    return json.loads(info.read_text(encoding="utf-8")) if info.exists() else None


def split_files(suite: SuiteLike) -> Path:
    """The folder a suite's hooks read its split from."""
    if suite.split_spec.get("source", "bundled") == "bundled":
        return suite.folder / "data"
    files = installed_dir(suite) / "files"
    if not (installed_dir(suite) / "INSTALLED.json").exists():
        raise SplitNotInstalled(
            f"the hidden split of {suite.name} is not installed on this server; "
            f"the operator installs it with `{install_command(suite)}`"
        )
    return files


def split_visibility(suite: SuiteLike) -> str:
    """'hidden' or 'public': the manifest's `split.visibility` (default hidden), unless the installed
    folder declared itself public (PUBLIC_MARKER, recorded at install)."""
    declared = suite.split_spec.get("visibility", "hidden")
    if suite.split_spec.get("source", "bundled") != "bundled":
        info = installed_info(suite)
        if info and info.get("visibility"):
            return info["visibility"]
    return declared


def split_marker(suite: SuiteLike) -> float | None:
    """Changes when the installed split changes (so per-process caches rebuild)."""
    if suite.split_spec.get("source", "bundled") == "bundled":
        return None
    info = installed_dir(suite) / "INSTALLED.json"
    return info.stat().st_mtime_ns if info.exists() else None


SECRET_FILE = "SECRET"


def installation_secret(files: Path) -> str:
    """The installation's private salt for seeded shuffles ("" for bundled splits and bare folders).

    Where a split's hooks shuffle something the gold depends on (which response of a pair is shown
    first, the letters of options), a seed that is public (manifest + code) would let anyone
    recompute the gold from the public inputs. Mixing in this salt, made at install and kept on the
    server only, keeps the shuffle reproducible for this installation and unpredictable outside it.
    """
    path = Path(files).parent / SECRET_FILE
    return path.read_text(encoding="utf-8").strip() if path.exists() else ""


class SplitFormatError(ValueError):
    """A split file does not have the fields the manifest declares: says which file, line and field."""


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    """(line number, record) for every non-blank line; malformed lines are errors naming the line."""
    if not path.exists():
        raise SplitFormatError(f"{path.name}: missing from the split (expected at {path})")
    rows = []
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SplitFormatError(
                    f"{path.name}, line {number}: not valid JSON ({exc.msg})"
                ) from None
            if not isinstance(record, dict):
                raise SplitFormatError(f"{path.name}, line {number}: expected a JSON object")
            rows.append((number, record))
    return rows


def require(record: dict, field: str, where: str):
    """record[field], or a SplitFormatError naming the field and where it was expected."""
    if field not in record or record[field] is None:
        raise SplitFormatError(
            f"{where}: missing field '{field}' (declared in the suite's manifest)"
        )
    return record[field]


# -- the private part of a hidden split -----------------------------------------------------------

PRIVATE_TIER_GROUP = "part"  # the tier group a released private score is shown under
PUBLIC_PART, PRIVATE_PART = "public", "private"


def private_fraction(suite: SuiteLike) -> float:
    """The manifest's `split.private_fraction`, for a hidden split only (0: no private part)."""
    if split_visibility(suite) != "hidden":
        return 0.0
    return float(suite.split_spec.get("private_fraction") or 0.0)


def release_tier_columns(task: Any) -> list[str]:
    """The tier columns a named release adds to a divided hidden split's rows (`part/public`,
    `part/private`: submissions/private_part.py); none where the split has no private part."""
    if private_fraction(task.suite) <= 0:
        return []
    return [f"{PRIVATE_TIER_GROUP}/{part}" for part in (PUBLIC_PART, PRIVATE_PART)]


def private_by(suite: SuiteLike) -> str:
    """What the division keeps together (the manifest's `split.private_by`): 'item' or 'unit'."""
    return str(suite.split_spec.get("private_by") or "item")


def _outer_unit(item: Any) -> str:
    """The outermost level of an item's bootstrap unit (RealPref: the user); the item if none."""
    unit = item.unit
    if isinstance(unit, tuple):
        unit = unit[0] if unit else None
    return str(unit) if unit is not None else f"item:{item.id}"


def private_item_ids(
    task: Any, items: list | None = None, secret: str | None = None, fraction: float | None = None
) -> frozenset[str]:
    """The ids of a hidden split's private part, as Kaggle divides a test set: scored apart and
    released only when the operator names a release, so the Ladder's bit per upload (which reads
    the public part) teaches nothing about the part that decides the final ranking.

    Stratified: within every tier of the task's first tier group, round(fraction x tier size)
    members, chosen by a hash of the installation secret and the member: reproducible on this
    server, unpredictable outside it (a public rule would tell an attacker which items count).
    A member is an item (`private_by: item`, hashed with the task), or with `private_by: unit` a
    whole unit (hashed with the suite, so a unit falls in the same part in every task: RealPref's
    multiple-choice gold is its true/false gold); a unit whose items span several tiers is in the
    stratum of units that do (RealPref's users each span every tier, so halving the users halves
    every tier). `items`: the whole split's items (default: task.load_split().items); `secret`:
    the installation's salt (default: read from the installed split; install passes its own);
    `fraction`: default private_fraction(task.suite) (install passes the manifest's)."""
    if fraction is None:
        fraction = private_fraction(task.suite)
    if fraction <= 0:
        return frozenset()
    import hashlib

    if items is None:
        items = task.load_split().items
    if secret is None:
        try:
            secret = installation_secret(split_files(task.suite))
        except SplitNotInstalled:
            secret = ""
    by_unit = private_by(task.suite) == "unit"
    scope = task.suite.name if by_unit else task.key
    group = task.tier_groups[0].name if task.tier_groups else None
    members: dict[str, list[str]] = {}  # member -> its item ids
    tiers_of: dict[str, set[str]] = {}
    for item in items:
        member = _outer_unit(item) if by_unit else item.id
        members.setdefault(member, []).append(item.id)
        tiers_of.setdefault(member, set()).add(item.tiers.get(group, "") if group else "")
    strata: dict[str, list[str]] = {}
    for member, tiers in tiers_of.items():
        strata.setdefault(next(iter(tiers)) if len(tiers) == 1 else "(mixed)", []).append(member)

    def rank(member: str) -> str:
        return hashlib.sha256(f"{secret}\0{scope}\0{member}".encode()).hexdigest()

    chosen: set[str] = set()
    for stratum in strata.values():
        for member in sorted(stratum, key=rank)[: round(fraction * len(stratum))]:
            chosen.update(members[member])
    return frozenset(chosen)


def part_sizes(task: Any, items: list, secret: str) -> dict[str, Any]:
    """How a hidden task's split is divided (the manifest's fraction, this installation's secret):
    items per part, and the public part's tiers below the release minimum (never shown live:
    evaluator/release.py). Recorded by `personaboard splits install`, for the operator."""
    from evaluator.release import MIN_ITEMS

    fraction = float(task.suite.split_spec.get("private_fraction") or 0.0)
    private = private_item_ids(task, items, secret, fraction)
    counts: dict[str, int] = {}
    for item in items:
        if item.id not in private:
            for group, tier in item.tiers.items():
                counts[f"{group}/{tier}"] = counts.get(f"{group}/{tier}", 0) + 1
    known = {f"{g.name}/{t}" for g in task.tier_groups for t in g.tiers}
    return {
        PUBLIC_PART: len(items) - len(private),
        PRIVATE_PART: len(private),
        "public_tiers_under_min": sorted(
            name for name in known if 0 < counts.get(name, 0) < MIN_ITEMS
        ),
    }
