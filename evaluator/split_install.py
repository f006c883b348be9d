"""Installing a hidden split: fetch (a local folder, or a Hub dataset pinned to its commit),
validate by building every task's items, hash, then swap it in atomically.

`personaboard splits install SUITE --source FOLDER_OR_HUB_ID [--revision R]` calls `install`.
Reading an installed split is evaluator/splits.py; this module is the only writer.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from evaluator import hub
from evaluator.splits import (
    FIXTURE_MARKER,
    PUBLIC_MARKER,
    SECRET_FILE,
    installed_dir,
    part_sizes,
)
from evaluator.suite import Split, Suite, check_item_tiers, clear_split_cache


def _fetch(source: str, revision: str | None, into: Path) -> dict:
    """Copy a local folder, or download a Hub dataset at a revision; returns where it came from."""
    local = Path(source)
    if local.exists():
        if not local.is_dir():
            raise ValueError(f"{source} is not a folder")
        shutil.copytree(local, into)
        return {"source": str(local.resolve()), "kind": "local", "revision": revision or "local"}
    try:
        sha, path = hub.download_dataset(source, revision)
    except hub.HubRefused as refused:
        if refused.reason in ("not_found", "revision", "invalid"):
            raise ValueError(
                f"{source} (revision {revision or 'main'}) is neither a local folder nor a Hub dataset"
            ) from None
        raise ValueError(
            f"the Hub refused {source}: {refused.reason} {refused.detail}".strip()
        ) from None
    shutil.copytree(path, into)
    return {"source": source, "kind": "hub", "revision": sha}


def install(
    suite: Suite, source: str, revision: str | None = None, secret: str | None = None
) -> dict:
    """Fetch, validate (every task's items must build: a missing field is named), hash, then swap in.

    `secret`: the salt of another installation of the same split (a remote worker installing the web
    node's pinned split), so both build identical items; by default this installation's own."""
    root = installed_dir(suite)
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{suite.name}-", dir=root.parent))
    try:
        origin = _fetch(source, revision, staging / "files")
        # keep the salt across reinstalls, so the same data gives the same split (and hash)
        previous = root / SECRET_FILE
        if secret is None:
            secret = (
                previous.read_text(encoding="utf-8") if previous.exists() else secrets.token_hex(16)
            )
        (staging / SECRET_FILE).write_text(secret, encoding="utf-8")
        os.chmod(staging / SECRET_FILE, 0o600)
        hidden = (
            not (staging / "files" / PUBLIC_MARKER).exists()
            and suite.split_spec.get("visibility", "hidden") == "hidden"
        )
        tasks = {}
        for task in suite.tasks.values():
            items = task.hooks.build_items(task, staging / "files")
            check_item_tiers(task, items)
            split = Split(name=task.options.get("split", "test"), items=items)
            tasks[task.name] = {"n_items": len(items), "sha256": split.sha256}
            if hidden and suite.split_spec.get(
                "private_fraction"
            ):  # the division, for the operator to see
                tasks[task.name]["parts"] = part_sizes(task, items, secret)
        info = {
            **origin,
            "suite": suite.name,
            "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "fixture": (staging / "files" / FIXTURE_MARKER).exists(),
            "visibility": "hidden" if hidden else "public",
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
