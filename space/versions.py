"""The Version selector of the Leaderboard and Overview tabs: its choices (releases and recent
revisions, space/data.py version_choices) and the note above a table of an older version."""

from __future__ import annotations

import html

import gradio as gr

from leaderboard.store import StoreError
from space.data import LATEST, version_choices


def versions_update(services, current: str | None = None):
    """The selector's choices, keeping the reader's choice (a link's revision, or one that left
    the recent list, is added); skipped while the store cannot be reached."""
    try:
        choices = version_choices(services)
    except StoreError:
        return gr.skip()  # the store unreachable for now: keep what is offered
    if current and current not in {value for _, value in choices}:
        choices.append((current, current))
    return gr.update(choices=choices, value=current or LATEST)


def older_version_note(version: str, what: str, elem_id: str) -> str:
    """Above a table of an older version, so no one takes it for the current one."""
    return (
        f'<p class="pb-version-note" id="{elem_id}">Showing the {what} as of '
        f"<code>{html.escape(str(version))}</code>, not the newest.</p>"
    )
