"""space/uploads.py: a UI event's file must be a regular file inside this app's upload folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from space.uploads import (
    NOT_AN_UPLOAD,
    NotAnUpload,
    _unaliased,
    alias_of,
    path_of,
    uploaded_file,
)


@pytest.fixture
def one_upload(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(upload folder, a file uploaded into it), the folder being this app's (GRADIO_TEMP_DIR)."""
    root = tmp_path / "gradio-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(root))
    stored = root / "5f2a" / "predictions.jsonl"
    stored.parent.mkdir(parents=True)
    stored.write_text("{}\n")
    return root, stored


def test_only_regular_files_inside_the_upload_folder(tmp_path, one_upload):
    root, good = one_upload
    assert uploaded_file(str(good)) == good
    outside = tmp_path / "stored.jsonl"
    outside.write_text("secret line\n")
    (root / "5f2a" / "link.jsonl").symlink_to(outside)
    (root / "5f2a" / "up.jsonl").symlink_to("../../stored.jsonl")
    refused = [
        str(outside),
        "/etc/passwd",
        str(root / "5f2a" / "link.jsonl"),
        str(root / "5f2a" / "up.jsonl"),
        str(root / "5f2a" / ".." / ".." / "stored.jsonl"),
        str(root),
        str(root / "5f2a"),
        str(root / "missing.jsonl"),
        "5f2a/predictions.jsonl",
        "",
        None,
        42,
        "/x\0y",
        "/" + "a" * 5000,
    ]
    for value in refused:
        with pytest.raises(NotAnUpload) as info:
            uploaded_file(value)
        assert (
            str(info.value) == NOT_AN_UPLOAD
        )  # the same words for every path: names none, no oracle
    assert os.sep not in NOT_AN_UPLOAD


def test_uploads_go_after_use_or_after_an_hour(tmp_path, monkeypatch):
    import time

    from space.uploads import UPLOAD_MAX_AGE_S, discard_upload, sweep_uploads

    root = tmp_path / "gradio-uploads"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(root))
    old, fresh, used = (root / h / "p.jsonl" for h in ("aa11", "bb22", "cc33"))
    for path in (old, fresh, used):
        path.parent.mkdir(parents=True)
        path.write_text("{}\n")
    hour_ago = time.time() - UPLOAD_MAX_AGE_S - 5
    os.utime(old, (hour_ago, hour_ago))
    discard_upload(uploaded_file(str(used)))  # submitted: the service keeps its own copy
    assert not used.exists() and not used.parent.exists()
    assert sweep_uploads() == 1
    assert not old.exists() and not old.parent.exists() and fresh.exists()
    # an hour later the fresh one goes too; the folder itself stays
    assert sweep_uploads(now=time.time() + UPLOAD_MAX_AGE_S + 5) == 1 and root.is_dir()


def test_the_page_sees_an_alias_of_the_upload_folder(tmp_path, one_upload):
    root, stored = one_upload
    shown = alias_of(str(stored))
    assert shown == "upload/5f2a/predictions.jsonl" and str(tmp_path) not in shown
    assert uploaded_file(path_of(shown)) == stored
    assert alias_of("/etc/passwd") == "/etc/passwd"  # only the upload folder's paths are aliased
    assert alias_of(str(root) + "-other/x.jsonl") == str(root) + "-other/x.jsonl"
    event = {"data": [{"path": shown, "meta": {"_type": "gradio.FileData"}}, "upload/x", None]}
    mapped = _unaliased(event)
    assert mapped["data"][0]["path"] == str(stored) and mapped["data"][1] == "upload/x"
    for climbing in ("upload/../../stored.jsonl", "upload/" + "../" * 24 + "etc/passwd"):
        with pytest.raises(NotAnUpload):
            uploaded_file(path_of(climbing))
