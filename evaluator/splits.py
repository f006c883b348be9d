"""Hidden splits that are not shipped with the code: installed by the operator, hashed, versioned.

A suite's manifest says where its split comes from (`split.source`): `bundled` (the suite folder's
data/, as PrefEval) or `installed` (a Hugging Face Hub dataset at a pinned revision, or a local
folder, copied into the data folder by `personaboard splits install`). Until then the suite shows
its reported rows, and uploads and model runs for it are refused with the command to run.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluator.suite import Suite

FIXTURE_MARKER = "FIXTURE"  # a file of this name in a split folder marks it as a test fixture


class SplitNotInstalled(LookupError):
    pass


def splits_root() -> Path:
    configured = os.environ.get("PERSONABOARD_SPLITS_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("PERSONABOARD_DATA_DIR", "./var")).resolve() / "splits"


def install_command(suite: "Suite") -> str:
    source = suite.split_spec.get("hub_id") or "PATH_TO_SPLIT_FOLDER"
    return f"personaboard splits install {suite.name} --source {source}"


def installed_dir(suite: "Suite") -> Path:
    return splits_root() / suite.name


def installed_info(suite: "Suite") -> dict | None:
    info = installed_dir(suite) / "INSTALLED.json"
    return json.loads(info.read_text(encoding="utf-8")) if info.exists() else None


def split_files(suite: "Suite") -> Path:
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


def split_marker(suite: "Suite") -> float | None:
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


def _fetch(source: str, revision: str | None, into: Path) -> dict:
    """Copy a local folder, or download a Hub dataset at a revision; returns where it came from."""
    local = Path(source)
    if local.exists():
        if not local.is_dir():
            raise ValueError(f"{source} is not a folder")
        shutil.copytree(local, into)
        return {"source": str(local.resolve()), "kind": "local", "revision": revision or "local"}
    from huggingface_hub import HfApi, snapshot_download

    from submissions.models import HubUnreachable  # the same "Hub cannot be reached" wording

    try:
        sha = HfApi().dataset_info(source, revision=revision).sha
        path = snapshot_download(source, repo_type="dataset", revision=sha)
    except Exception as exc:  # noqa: BLE001 - every failure here is reported with its cause
        if type(exc).__name__ in ("RepositoryNotFoundError", "RevisionNotFoundError"):
            raise ValueError(f"{source} (revision {revision or 'main'}) is neither a local folder nor a Hub dataset") from None
        raise HubUnreachable(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    shutil.copytree(path, into)
    return {"source": source, "kind": "hub", "revision": sha}


def install(suite: "Suite", source: str, revision: str | None = None) -> dict:
    """Fetch, validate (every task's items must build: a missing field is named), hash, then swap in."""
    from evaluator.suite import Split, clear_split_cache

    root = installed_dir(suite)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{suite.name}-", dir=root.parent))
    try:
        origin = _fetch(source, revision, staging / "files")
        # keep the salt across reinstalls, so the same data gives the same split (and hash)
        previous = root / SECRET_FILE
        secret = previous.read_text(encoding="utf-8") if previous.exists() else secrets.token_hex(16)
        (staging / SECRET_FILE).write_text(secret, encoding="utf-8")
        os.chmod(staging / SECRET_FILE, 0o600)
        tasks = {}
        for task in suite.tasks.values():
            items = task.hooks.build_items(task, staging / "files")
            split = Split(name=task.options.get("split", "test"), items=items)
            tasks[task.name] = {"n_items": len(items), "sha256": split.sha256}
        info = {
            **origin,
            "suite": suite.name,
            "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "fixture": (staging / "files" / FIXTURE_MARKER).exists(),
            "tasks": tasks,
        }
        (staging / "INSTALLED.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
        old = root.with_name(root.name + ".old")
        if root.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(root, old)
        os.replace(staging, root)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    clear_split_cache(suite.name)
    return info


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
                raise SplitFormatError(f"{path.name}, line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise SplitFormatError(f"{path.name}, line {number}: expected a JSON object")
            rows.append((number, record))
    return rows


def require(record: dict, field: str, where: str):
    """record[field], or a SplitFormatError naming the field and where it was expected."""
    if field not in record or record[field] is None:
        raise SplitFormatError(f"{where}: missing field '{field}' (declared in the suite's manifest)")
    return record[field]
