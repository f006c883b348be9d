"""Every call to the Hugging Face Hub, in one module: model metadata and downloads, hidden splits,
the results dataset (leaderboard/hub_store.py).

Callers never import huggingface_hub themselves; they get the Hub's answer, or one of two errors:
`HubRefused` (the Hub answered no: unknown repo or revision, gated, invalid id; `reason` says
which, for the caller to word) or `HubUnreachable` (offline mode, DNS, refused connection,
timeouts, 5xx: "try again later", with the library's own text in the log only).

Every HTTP call has a timeout: the library's default is none, so a Hub that does not answer would
hang a request forever; here an unreachable Hub is reported within seconds (a 503 to submitters).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

log = logging.getLogger(__name__)

INFO_TIMEOUT_S = 15
MODEL_FILE_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.txt", "tokenizer*"]

# connect quickly or give up (an unreachable Hub answers 503 within seconds); reads may take longer
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0


def _configure_client() -> None:
    """The library's shared HTTP client, with timeouts (set once per process)."""
    import httpx2
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils._http import hf_request_event_hook

    timeout = httpx2.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    set_client_factory(
        lambda: httpx2.Client(
            event_hooks={"request": [hf_request_event_hook]}, follow_redirects=True, timeout=timeout
        )
    )


_configured = False


def _api(endpoint: str | None, token: str | None):
    global _configured
    from huggingface_hub import HfApi

    if not _configured:
        _configure_client()
        _configured = True
    return HfApi(endpoint=endpoint or None, token=token or None)


class HubRefused(ValueError):
    """The Hub answered, and the answer is no. `reason`: invalid | not_found | revision | gated | refused."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class HubUnreachable(ValueError):
    """The submitter sees what happened and what to do; the library's own text (often advice for
    the operator, such as unsetting HF_HUB_OFFLINE) goes to the log only."""

    status = 503

    def __init__(self, detail: str, name: str | None = None):
        about = f"{name!r} is not a model registered on this server, and " if name else ""
        super().__init__(
            f"{about}the Hugging Face Hub cannot be reached from this server right now; "
            "submit again later, or ask the operator to register the model locally"
        )
        log.warning("Hub unreachable%s: %s", f" while resolving {name}" if name else "", detail)


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


def _classified(exc: Exception, name: str | None = None) -> Exception:
    """The Hub library's exception as HubRefused or HubUnreachable."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, HFValidationError):
        return HubRefused("invalid", str(exc))
    if isinstance(exc, RevisionNotFoundError):
        return HubRefused("revision")
    if isinstance(exc, GatedRepoError):  # a RepositoryNotFoundError too: tested first
        return HubRefused("gated")
    if isinstance(exc, RepositoryNotFoundError):
        return HubRefused("not_found")
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status and status < 500:
            return HubRefused("refused", str(exc))
        return HubUnreachable(_first_line(exc), name)
    # offline mode, DNS, refused connection, timeouts: all "unreachable"
    return HubUnreachable(f"{type(exc).__name__}: {_first_line(exc)}", name)


def model_info(repo_id: str, revision: str | None) -> Any:
    """A model repo's metadata at a revision (config, files, card, safetensors size, commit sha)."""
    try:
        return _api(None, None).model_info(
            repo_id, revision=revision or None, files_metadata=False, timeout=INFO_TIMEOUT_S
        )
    except Exception as exc:  # noqa: BLE001 - classified: refused or unreachable
        raise _classified(exc, repo_id) from None


@dataclass(frozen=True)
class HubUser:
    """What the sign-in policy reads of a Hub account (submissions/identity.py)."""

    name: str
    created_at: str | None  # ISO timestamp from the Hub's user overview
    orgs: tuple[str, ...]


def user_overview(username: str, endpoint: str | None = None) -> HubUser:
    """A Hub account's creation time and organisations (GET /api/users/{name}/overview)."""
    try:
        user = _api(endpoint, None).get_user_overview(username, token=False)
    except Exception as exc:  # noqa: BLE001 - classified: refused (no such user) or unreachable
        raise _classified(exc, username) from None
    return HubUser(
        name=getattr(user, "username", "") or username,
        created_at=getattr(user, "createdAt", None),
        orgs=tuple(o.name for o in getattr(user, "orgs", []) or [] if getattr(o, "name", None)),
    )


def download_model(repo_id: str, revision: str) -> str:
    """The local copy of a model at a pinned commit (cached by huggingface_hub); the folder's path."""
    from huggingface_hub import snapshot_download

    _api(None, None)  # the shared client, with timeouts
    return snapshot_download(repo_id, revision=revision, allow_patterns=MODEL_FILE_PATTERNS)


def download_dataset(repo_id: str, revision: str | None) -> tuple[str, str]:
    """A dataset repo pinned to the commit `revision` resolves to, downloaded: (commit sha, folder)."""
    from huggingface_hub import snapshot_download

    try:
        sha = _api(None, None).dataset_info(repo_id, revision=revision, timeout=INFO_TIMEOUT_S).sha
        return sha, snapshot_download(repo_id, repo_type="dataset", revision=sha)
    except Exception as exc:  # noqa: BLE001 - classified: refused or unreachable
        raise _classified(exc) from None


# -- the results dataset (leaderboard/hub_store.py) and private split datasets ------------------------


class HubUnavailable(RuntimeError):
    """The Hub could not be reached or failed (offline, refused connection, timeout, 5xx): try later."""


class HubCommitConflict(RuntimeError):
    """The branch moved since the parent commit (412), or another commit was in progress (409): re-read, retry."""


class HubNotFound(LookupError):
    """The repo, the revision or the file does not exist (or the token cannot see it)."""


def _translated(exc: Exception) -> Exception:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError)):
        return HubNotFound(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    if isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (409, 412):
            return HubCommitConflict(f"{status}: the branch moved; re-read and retry")
        if status in (401, 403):
            return HubNotFound(f"the Hub refused the token ({status})")
        if status and status < 500 and status not in (408, 429):
            return RuntimeError(
                f"the Hub refused the request ({status}): {str(exc).splitlines()[0]}"
            )
    import httpx2
    from huggingface_hub.errors import OfflineModeIsEnabled

    if not isinstance(exc, (HfHubHTTPError, httpx2.HTTPError, OSError, OfflineModeIsEnabled)):
        return exc  # a bug, not the Hub: let it show as what it is
    first = str(exc).splitlines()[0] if str(exc) else ""
    return HubUnavailable(f"{type(exc).__name__}: {first}")


@dataclass(frozen=True)
class Commit:
    revision: str
    created_at: str
    message: str


@dataclass(frozen=True)
class Tag:
    name: str
    revision: str


class DatasetRepo:
    """One Hub dataset repository: read any revision, commit on top of a known parent, tag releases."""

    def __init__(
        self,
        repo_id: str,
        token: str | None,
        endpoint: str | None = None,
        cache_dir: Path | None = None,
    ):
        self.repo_id = repo_id
        self.token = token
        self.endpoint = endpoint
        self.cache_dir = Path(cache_dir) if cache_dir else None

    def _call(self, method: str, *args, **kwargs):
        try:
            return getattr(_api(self.endpoint, self.token), method)(
                *args, repo_type="dataset", **kwargs
            )
        except Exception as exc:  # noqa: BLE001 - translated: not found | conflict | unavailable | refused
            raise _translated(exc) from None

    def create(self, private: bool) -> None:
        try:
            _api(self.endpoint, self.token).create_repo(
                self.repo_id, repo_type="dataset", private=private, exist_ok=True
            )
        except Exception as exc:  # noqa: BLE001
            raise _translated(exc) from None

    def resolve(self, revision: str | None = None) -> str:
        """The commit sha a branch, tag or sha names (default: main's head)."""
        try:
            return (
                _api(self.endpoint, self.token)
                .dataset_info(
                    self.repo_id, revision=revision or None, timeout=CONNECT_TIMEOUT_S * 2
                )
                .sha
            )
        except Exception as exc:  # noqa: BLE001
            raise _translated(exc) from None

    def files(self, revision: str, prefix: str | None = None) -> dict[str, str]:
        """Every file under `prefix` at `revision`, path -> blob id (one listing call)."""
        try:
            try:  # the listing is a lazy iterator: its errors arrive while iterating
                entries = _api(self.endpoint, self.token).list_repo_tree(
                    self.repo_id,
                    path_in_repo=prefix,
                    recursive=True,
                    revision=revision,
                    repo_type="dataset",
                )
                return {
                    e.path: e.blob_id for e in entries if getattr(e, "blob_id", None) is not None
                }
            except Exception as exc:  # noqa: BLE001
                raise _translated(exc) from None
        except HubNotFound:
            if prefix:  # the folder does not exist yet
                return {}
            raise

    def read(self, path: str, revision: str) -> bytes | None:
        """A file's bytes at a revision (cached on disk per commit), None if it does not exist there."""
        from huggingface_hub import hf_hub_download

        try:
            local = hf_hub_download(
                self.repo_id,
                path,
                repo_type="dataset",
                revision=revision,
                token=self.token,
                endpoint=self.endpoint,
                cache_dir=self.cache_dir,
                etag_timeout=CONNECT_TIMEOUT_S * 2,
            )
        except Exception as exc:  # noqa: BLE001
            translated = _translated(exc)
            if isinstance(translated, HubNotFound) and type(exc).__name__ in (
                "EntryNotFoundError",
                "RemoteEntryNotFoundError",
            ):
                return None
            raise translated from None
        return Path(local).read_bytes()

    def download(self, revision: str) -> Path:
        """The whole repo at a commit, as a local folder (the library's cache)."""
        from huggingface_hub import snapshot_download

        _api(self.endpoint, self.token)  # the client with timeouts
        try:
            return Path(
                snapshot_download(
                    self.repo_id,
                    repo_type="dataset",
                    revision=revision,
                    token=self.token,
                    endpoint=self.endpoint,
                    cache_dir=self.cache_dir,
                    etag_timeout=CONNECT_TIMEOUT_S * 2,
                )
            )
        except Exception as exc:  # noqa: BLE001
            raise _translated(exc) from None

    def commit(
        self, files: dict[str, bytes], message: str, parent: str, deletions: Sequence[str] = ()
    ) -> str:
        """One commit on main, refused (HubCommitConflict) unless main is still at `parent`."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        operations: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationAdd(path_in_repo=path, path_or_fileobj=data)
            for path, data in files.items()
        ]
        operations += [CommitOperationDelete(path_in_repo=path) for path in deletions]
        return self._call(
            "create_commit", self.repo_id, operations, commit_message=message, parent_commit=parent
        ).oid

    def commits(self) -> list[Commit]:
        """main's history, newest first."""
        return [
            Commit(c.commit_id, c.created_at.isoformat(), c.title)
            for c in self._call("list_repo_commits", self.repo_id)
        ]

    def tags(self) -> list[Tag]:
        return [
            Tag(t.name, t.target_commit) for t in self._call("list_repo_refs", self.repo_id).tags
        ]

    def tag(self, name: str, revision: str, message: str) -> None:
        self._call(
            "create_tag", self.repo_id, tag=name, tag_message=message or None, revision=revision
        )
