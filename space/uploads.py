"""Files reach a UI event only as bytes this app's upload route received (issue 7 §4).

A Gradio event's FileData carries a server path chosen by the client, so a client can name any
file (/etc/passwd, another submission's stored upload) or probe which paths exist. Two checks
stand between such a path and the scorer:

- Gradio's own: when an app is `launch()`ed, Gradio's preprocess accepts FileData only inside its
  upload folder ("not uploaded by a user" otherwise); `mount_gradio_app` never marks the Blocks
  launched, which leaves that check off. backend/app.py turns it on (`enforce_upload_check`).
- Ours, in the handler: the path must be a regular file (no symlink) inside this app's upload
  folder (GRADIO_TEMP_DIR, set per data folder by backend/app.py), whose names are content hashes
  salted with a per-server secret, so another user's upload cannot be named either.

A refusal never names the path or says whether it exists.
"""

from __future__ import annotations

import os
from pathlib import Path

from gradio.utils import get_upload_folder

NOT_AN_UPLOAD = "choose the file again: only a file uploaded through this page can be submitted"


class NotAnUpload(ValueError):
    def __init__(self) -> None:
        super().__init__(NOT_AN_UPLOAD)


def uploaded_file(value: object) -> Path:
    """The path of a file uploaded through this app's upload route, or NotAnUpload."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise NotAnUpload()
    path = Path(value)
    root = Path(get_upload_folder()).resolve()
    try:
        inside = (
            path.is_absolute() and path.resolve().is_relative_to(root) and path.resolve() != root
        )
        ok = inside and not path.is_symlink() and path.is_file()
    except (OSError, ValueError):  # a path too long, NUL bytes...
        ok = False
    if not ok:
        raise NotAnUpload()
    return path


def enforce_upload_check(blocks) -> None:
    """Gradio checks FileData paths only for Blocks it launched itself; ours is mounted."""
    blocks.has_launched = True
