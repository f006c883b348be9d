"""Every call to the Hugging Face Hub, in one module: model metadata and downloads, hidden splits.

Callers never import huggingface_hub themselves; they get the Hub's answer, or one of two errors:
`HubRefused` (the Hub answered no: unknown repo or revision, gated, invalid id; `reason` says
which, for the caller to word) or `HubUnreachable` (offline mode, DNS, refused connection,
timeouts, 5xx: "try again later", with the library's own text in the log only).
"""
from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

INFO_TIMEOUT_S = 15
MODEL_FILE_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.txt", "tokenizer*"]


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
        super().__init__(f"{about}the Hugging Face Hub cannot be reached from this server right now; "
                         "submit again later, or ask the operator to register the model locally")
        log.warning("Hub unreachable%s: %s", f" while resolving {name}" if name else "", detail)


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


def _classified(exc: Exception, name: str | None = None) -> Exception:
    """The Hub library's exception as HubRefused or HubUnreachable."""
    from huggingface_hub.errors import (
        GatedRepoError, HfHubHTTPError, HFValidationError, RepositoryNotFoundError, RevisionNotFoundError,
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
    from huggingface_hub import HfApi

    try:
        return HfApi().model_info(repo_id, revision=revision or None, files_metadata=False, timeout=INFO_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - classified: refused or unreachable
        raise _classified(exc, repo_id) from None


def download_model(repo_id: str, revision: str) -> str:
    """The local copy of a model at a pinned commit (cached by huggingface_hub); the folder's path."""
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id, revision=revision, allow_patterns=MODEL_FILE_PATTERNS)


def download_dataset(repo_id: str, revision: str | None) -> tuple[str, str]:
    """A dataset repo pinned to the commit `revision` resolves to, downloaded: (commit sha, folder)."""
    from huggingface_hub import HfApi, snapshot_download

    try:
        sha = HfApi().dataset_info(repo_id, revision=revision).sha
        return sha, snapshot_download(repo_id, repo_type="dataset", revision=sha)
    except Exception as exc:  # noqa: BLE001 - classified: refused or unreachable
        raise _classified(exc) from None
