"""The submissions made from this browser: their ids kept in its localStorage (gr.BrowserState), so
the Submission status tab still lists them after a reload or a closed tab. Nothing server-side: a
signed-out visitor has them too, and another browser does not see them."""

from __future__ import annotations

import re

import gradio as gr

MAX_REMEMBERED = 20
SUBMISSION_ID = re.compile(r"[0-9a-f]{8,64}")


def browser_submissions() -> gr.BrowserState:
    """Ids of the submissions made from this browser, newest first. Gradio encrypts localStorage
    with a key it sends to the browser, so the fixed key hides nothing; what comes back is read as
    untrusted input (remembered_ids) wherever it is used."""
    return gr.BrowserState(
        [], storage_key="personaboard-submissions", secret="personaboard-submission-ids"
    )


def remembered_ids(stored) -> list[str]:
    """The well-formed ids in what the browser sent (anyone can write anything there), at most
    MAX_REMEMBERED, in order, without repeats."""
    if not isinstance(stored, list):
        return []
    ids = [s for s in stored if isinstance(s, str) and SUBMISSION_ID.fullmatch(s)]
    return list(dict.fromkeys(ids))[:MAX_REMEMBERED]


def remember(new, stored) -> list[str]:
    """Put the ids a submit tab just got (one id, or the model tab's {"ids": [...]}) first."""
    ids = (
        [new]
        if isinstance(new, str)
        else list((new or {}).get("ids") or [])
        if isinstance(new, dict)
        else []
    )
    return remembered_ids([*ids, *remembered_ids(stored)])


def identity_field(field, shared: gr.State):
    """One identity for both submit tabs: the token typed in either goes into `shared` and from
    there into the other tab's field. Returns what the events take: the tab's own field (kept equal
    to the other's; a field, unlike a State, is also an input of the event's API, so a client of
    /gradio_api/call/submit names its token), or the Space's sign-in state where OAuth is on."""
    if not isinstance(field, gr.Textbox):
        return field
    field.change(lambda value: value, field, shared, show_progress="hidden")
    shared.change(lambda value: value, shared, field, show_progress="hidden")
    return field
