"""Who submits from the UI: a Hugging Face account on a Space (OAuth), an API token elsewhere.

Browsing needs no identity; both submit tabs take the one identity field built here.
"""

from __future__ import annotations

import os

import gradio as gr

from submissions.identity import (
    HfSigninPolicy,
    Identity,
    IdentityError,
    IdentityStore,
    SigninRefused,
    admit_hf_account,
)
from submissions.intake import SubmissionError


def hf_oauth_enabled() -> bool:
    """Sign in with Hugging Face where it works: a Space with `hf_oauth: true` (Gradio reads these variables)."""
    return bool(gr.utils.get_space() and os.environ.get("OAUTH_CLIENT_ID"))


UPLOAD_TOKEN_COOKIE = "pb_upload_token"
UPLOAD_COOKIE_LISTENER_JS = (
    "() => { document.addEventListener('input', (event) => {"
    " if (!event.target.closest || !event.target.closest('[id^=api-token]')) return;"
    " document.cookie = '"
    + UPLOAD_TOKEN_COOKIE
    + "=' + encodeURIComponent(event.target.value || '')"
    " + '; path=/gradio_api/upload; SameSite=Strict'; }, true); }"
)


def build_identity_row(elem_id: str = "api-token"):
    """The sign-in control (one per submit tab, `elem_id` telling them apart: api-token...); returns
    the component whose value the submit events take as the token
    (an empty State when the Space's OAuth is on: the profile then comes from Gradio's session)."""
    with gr.Row(elem_id=f"{elem_id}-row"):
        if hf_oauth_enabled():
            gr.LoginButton(elem_id=f"{elem_id}-hf-login")  # one per submit tab: ids unique
            return gr.State("")
        box = gr.Textbox(
            label="API token (needed to submit; the operator issues it)",
            type="password",
            elem_id=elem_id,
            scale=3,
        )
        # The file components upload before any event runs: the upload route needs the same
        # identity (space/uploads.py UploadIdentity), so the token also goes into a cookie sent
        # only to that route, set by a listener on the field's own input events (synchronous:
        # a Gradio event would set it after the file may already be on its way).
        root = gr.context.Context.root_block
        if root is not None:
            root.load(None, None, None, js=UPLOAD_COOKIE_LISTENER_JS)
        return box


def ui_identity(
    identities: IdentityStore,
    token: str | None,
    profile: gr.OAuthProfile | None,
    policy: HfSigninPolicy | None = None,
) -> Identity:
    """The Hugging Face account signed in on the Space (Gradio injects `profile` from its signed
    session cookie, never from the request's data), if the sign-in policy admits it
    (PERSONABOARD_HF_*: submissions/identity.py HfSigninPolicy), else the API token typed into the
    page. Raises SubmissionError 401 when neither identifies anyone, 403 when the policy refuses."""
    if profile is not None and getattr(profile, "username", None):
        try:
            provider = admit_hf_account(policy or HfSigninPolicy.from_env(), profile.username)
        except SigninRefused as refused:
            raise SubmissionError(refused.status, str(refused), field="login") from None
        try:
            return identities.hf_user(profile.username, provider)
        except IdentityError as exc:
            raise SubmissionError(
                401, f"this Hugging Face account cannot submit here: {exc}", field="login"
            ) from None
    token = (token or "").strip()
    identity = identities.authenticate(token)
    if identity is not None:
        return identity
    how = (
        "sign in with Hugging Face"
        if hf_oauth_enabled()
        else "paste the API token the operator gave you"
    )
    message = (
        "the API token is not valid (unknown or revoked)"
        if token
        else f"submitting needs an identity: {how}"
    )
    raise SubmissionError(401, message, field="token")
