"""The results store: a folder laid out like a Hugging Face Hub dataset repository, versioned by git.

    README.md                                   dataset card (configs point at the parquet table)
    results/<suite>/<task>/<submission id>.json one immutable record per result, with provenance
    data/scores.parquet                         the leaderboard table (one row per result and tier)

Every publish is one git commit, so every version is immutable and can be read back by its
commit sha, exactly as a Hub revision. A Hub backend (later) maps `publish` to
`HfApi.create_commit` with the same paths. Publishing is idempotent per submission id, so a job
that is retried after its worker died publishes its result exactly once.
"""
from __future__ import annotations

import fcntl
import io
import json
import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from leaderboard.table import records_to_scores

SCORES_PATH = "data/scores.parquet"

DATASET_CARD = """---
license: other
pretty_name: PersonaBoard results
configs:
- config_name: scores
  data_files: data/scores.parquet
---
# PersonaBoard results

One JSON record per evaluated submission under `results/<suite>/<task>/`, with its provenance
(suite version, split hash, predictions sha256 or model revision, setting, scorer version, timings),
and the leaderboard table in `data/scores.parquet`. Every publish is a new revision.
Each suite's data keeps its own license; see the PersonaBoard README.
"""


@dataclass(frozen=True)
class Version:
    revision: str
    created_at: str
    message: str


class StoreError(RuntimeError):
    pass


class LocalDatasetStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    # -- plumbing -------------------------------------------------------------------------------
    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        proc = subprocess.run(
            ["git", "-c", "user.name=PersonaBoard", "-c", "user.email=personaboard@localhost",
             "-c", "commit.gpgsign=false", *args],
            cwd=self.root, input=input, capture_output=True,
        )
        if proc.returncode != 0:
            raise StoreError(f"git {args[0]} failed in {self.root}: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time across processes (several workers publish into one folder)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root.parent / f".{self.root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def ensure(self) -> None:
        with self._locked():
            if (self.root / ".git").exists():
                return
            self._git("init", "-q", "-b", "main")
            (self.root / "README.md").write_text(DATASET_CARD, encoding="utf-8")
            self._write_scores([])
            self._git("add", "-A")
            self._git("commit", "-q", "-m", "Create the results dataset")

    # -- writing --------------------------------------------------------------------------------
    @staticmethod
    def record_path(record: dict[str, Any]) -> str:
        return f"results/{record['suite']}/{record['task']}/{record['submission_id']}.json"

    def publish(self, record: dict[str, Any]) -> str:
        """Add one result record and rebuild the table in a new version; returns its revision.

        If this submission was already published (a retried job), nothing is written and the
        revision that first published it is returned.
        """
        self.ensure()
        relative = self.record_path(record)
        with self._locked():
            published = self._git("log", "-1", "--format=%H", "--", relative).decode().strip()
            if published:
                return published
            self._discard_uncommitted()
            target = self.root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, target)
            self._write_scores(self._read_records_from_disk())
            self._git("add", "-A")
            self._git("commit", "-q", "-m", f"Add result {record['submission_id']} ({record['suite']}/{record['task']})")
            return self._git("rev-parse", "HEAD").decode().strip()

    def sync_group(self, prefix: str, records: list[dict[str, Any]], message: str) -> str | None:
        """Make the records whose id starts with `prefix` exactly `records`: add new ones, rewrite
        changed ones, remove ones no longer listed; one new version if anything changed, else None.
        (The papers' reported rows: a corrected transcription replaces the old rows, in history.)"""
        self.ensure()
        with self._locked():
            self._discard_uncommitted()
            wanted = {self.record_path(r): json.dumps(r, indent=1, sort_keys=True) for r in records}
            present = {str(p.relative_to(self.root)): p for p in (self.root / "results").glob(f"*/*/{prefix}*.json")}
            changed = False
            for relative, text in wanted.items():
                target = self.root / relative
                if not target.exists() or target.read_text(encoding="utf-8") != text:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                    changed = True
            for relative, path in present.items():
                if relative not in wanted:
                    path.unlink()
                    changed = True
            if not changed:
                return None
            self._write_scores(self._read_records_from_disk())
            self._git("add", "-A")
            self._git("commit", "-q", "-m", message)
            return self._git("rev-parse", "HEAD").decode().strip()

    def _discard_uncommitted(self) -> None:
        """Drop whatever a writer that died mid-publish left (a record, a half-built table).

        Called with the lock held, so nothing uncommitted can belong to a live writer. Without this
        the next publish's `git add -A` would commit the dead attempt's record inside another
        submission's commit; instead that submission's retried job publishes it in its own.
        """
        self._git("reset", "-q", "--hard", "HEAD")
        self._git("clean", "-q", "-f", "-d")

    def _write_scores(self, records: list[dict[str, Any]]) -> None:
        path = self.root / SCORES_PATH
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        records_to_scores(records).to_parquet(tmp, index=False)
        os.replace(tmp, path)

    def _read_records_from_disk(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((self.root / "results").glob("*/*/*.json"))]

    # -- reading --------------------------------------------------------------------------------
    def head(self) -> str:
        self.ensure()
        return self._git("rev-parse", "HEAD").decode().strip()

    def versions(self) -> list[Version]:
        self.ensure()
        out = self._git("log", "--format=%H%x09%cI%x09%s").decode()
        return [Version(*line.split("\t", 2)) for line in out.splitlines() if line]

    def scores(self, revision: str | None = None) -> pd.DataFrame:
        """The leaderboard table at a revision (default: the newest)."""
        self.ensure()
        if revision is None:
            return pd.read_parquet(self.root / SCORES_PATH)
        return pd.read_parquet(io.BytesIO(self._show(revision, SCORES_PATH)))

    def records(self, revision: str | None = None) -> list[dict[str, Any]]:
        self.ensure()
        if revision is None:
            return self._read_records_from_disk()
        rev = self._verify(revision)
        names = self._git("ls-tree", "-r", "--name-only", rev, "--", "results").decode().split()
        return [json.loads(self._show(rev, name)) for name in names if name.endswith(".json")]

    def _verify(self, revision: str) -> str:
        if not revision or any(c not in "0123456789abcdefABCDEF" for c in revision) and revision != "main":
            raise StoreError(f"unknown revision {revision!r}")
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").decode().strip()
        except StoreError:
            raise StoreError(f"unknown revision {revision!r}") from None

    def _show(self, revision: str, path: str) -> bytes:
        return self._git("show", f"{self._verify(revision)}:{path}")
