"""The app as a Hugging Face Space with `hf_oauth: true`, signing people in for real.

One live service (Redis, one worker, the web app) runs with the variables a Space injects
(SYSTEM=spaces, SPACE_ID, OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, OAUTH_SCOPES, OPENID_PROVIDER_URL),
and tests/hub_server.py stands in for huggingface.co: its OpenID Connect provider (discovery,
authorize page, token, userinfo, RS256 ID tokens) and the Hub API that says how old an account is.
Gradio's own /login/huggingface and /login/callback (authlib) talk to it as they would to the Hub.

    1. The app starts in Space mode; /login/huggingface sends the browser to the provider's authorize
       endpoint with this app's client_id, its /login/callback, a state and a nonce.
    2. Chromium: sign in on the provider's page, come back signed in, upload and submit: the
       submission is `hf:<user>`'s; an account younger than the minimum age is admitted on the
       budget all new accounts share (provider hf-new) until it is used up; signing out works.

What the stand-in provider does not cover is written in tests/hub_server.py's docstring.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from live_helpers import client, make_predictions, reordered
from space_steps import context_for, id_in_status, login_button, on_board, sign_in, submit

CHROMIUM = "/usr/bin/chromium"
CLIENT_ID, CLIENT_SECRET = "personaboard-space-client", "personaboard-space-secret"
MIN_AGE_DAYS, NEW_ACCOUNTS_BUDGET = 30, 1
VETERAN, NEWCOMER = "ada-veteran", "ben-newcomer"

pytestmark = [pytest.mark.service]

# Chromium keeps a `Secure` cookie set over plain http only from a potentially trustworthy origin;
# it treats http://localhost as one (and http://127.0.0.1: this file checks both ways, see
# test_session_cookie_is_kept_over_http). The browser test uses "localhost", as a person trying
# the Space image on their machine would.
BROWSER_HOST = "localhost"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from hub_server import TEST_TOKEN, HubServerProcess

    root = tmp_path_factory.mktemp("space-hub")
    server = HubServerProcess(root / "state", [TEST_TOKEN], root / "hub.log").start()
    try:
        server.add_account(VETERAN, age_days=400)
        server.add_account(NEWCOMER, age_days=2)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def space(tmp_path_factory, hub):
    """The live service in Space mode (SPACE_HOST unset: Gradio then builds the callback URL from
    the request, as the provider's registered redirect URIs below expect)."""
    from live_service import start_live_service

    extra_env = {
        "SYSTEM": "spaces",
        "SPACE_ID": "personaboard/personaboard",
        "OAUTH_CLIENT_ID": CLIENT_ID,
        "OAUTH_CLIENT_SECRET": CLIENT_SECRET,
        "OAUTH_SCOPES": "openid profile",
        "OPENID_PROVIDER_URL": hub.url,
        "HF_ENDPOINT": hub.url,  # nothing in the service reaches huggingface.co
        "HF_HUB_OFFLINE": "0",  # the sign-in policy reads account ages from the (local) Hub
        "PERSONABOARD_HF_USER_API_ENDPOINT": hub.url,
        "PERSONABOARD_HF_MIN_ACCOUNT_AGE_DAYS": str(MIN_AGE_DAYS),
        "PERSONABOARD_HF_NEW_ACCOUNTS_DAILY_BUDGET": str(NEW_ACCOUNTS_BUDGET),
    }
    svc = start_live_service(tmp_path_factory.mktemp("space-service"), 1, extra_env)
    try:
        port = svc.web_port
        hub.add_oauth_app(
            CLIENT_ID,
            CLIENT_SECRET,
            [f"http://{host}:{port}/login/callback" for host in ("127.0.0.1", "localhost")],
        )
        yield svc
    finally:
        svc.stop()


# -- 0. the provider on its own ---------------------------------------------------------------------
def test_provider_speaks_openid_connect_and_refuses_what_rfc_6749_says(hub):
    """The stand-in is a real provider: discovery, a code good once, client authentication both
    ways, an ID token that verifies against its JWKS, and refusals as the RFCs spell them."""
    from joserfc import jwt
    from joserfc.jwk import KeySet

    callback = "http://app.test/login/callback"
    hub.add_oauth_app("provider-test", "s3cret", [callback])
    with client(hub.url) as http:
        discovery = http.get("/.well-known/openid-configuration").json()
        assert discovery["issuer"] == hub.url
        assert discovery["id_token_signing_alg_values_supported"] == ["RS256"]
        assert {"client_secret_basic", "client_secret_post"} <= set(
            discovery["token_endpoint_auth_methods_supported"]
        )
        params = {
            "client_id": "provider-test",
            "redirect_uri": f"{callback}?_target_url=%2F",
            "response_type": "code",
            "scope": "openid profile",
            "state": "<script>x</script>",
            "nonce": "n-0123456789",
        }
        page = http.get("/oauth/authorize", params=params)
        assert "<script>x" not in page.text and "&lt;script&gt;x" in page.text  # echoed inert
        bad_scope = http.get("/oauth/authorize", params={**params, "scope": "openid write-repos"})
        assert bad_scope.status_code == 302
        error = parse_qs(urlsplit(bad_scope.headers["location"]).query)
        assert error["error"] == ["invalid_scope"] and error["state"] == [params["state"]]
        assert "code" not in error
        unknown = http.post("/oauth/authorize", data={**params, "username": "nobody-here"})
        assert unknown.status_code == 401 and "location" not in unknown.headers
        approved = http.post("/oauth/authorize", data={**params, "username": VETERAN})
        assert approved.status_code == 302
        back = urlsplit(approved.headers["location"])
        answer = {k: v[0] for k, v in parse_qs(back.query).items()}
        assert answer["state"] == params["state"] and answer["_target_url"] == "/"

        grant = {"grant_type": "authorization_code", "code": answer["code"]}
        grant["redirect_uri"] = params["redirect_uri"]
        wrong_secret = http.post("/oauth/token", data=grant, auth=("provider-test", "nope"))
        assert wrong_secret.status_code == 401 and wrong_secret.json()["error"] == "invalid_client"
        assert wrong_secret.headers["www-authenticate"].startswith("Basic")
        other_uri = http.post(
            "/oauth/token",
            data={**grant, "redirect_uri": callback},
            auth=("provider-test", "s3cret"),
        )
        assert other_uri.status_code == 400 and other_uri.json()["error"] == "invalid_grant"
        # that refusal spent the code (single use, whatever happens): a fresh one for the rest
        approved = http.post("/oauth/authorize", data={**params, "username": VETERAN})
        grant["code"] = parse_qs(urlsplit(approved.headers["location"]).query)["code"][0]
        posted = {**grant, "client_id": "provider-test", "client_secret": "s3cret"}
        token = http.post("/oauth/token", data=posted)
        assert token.status_code == 200, token.text
        assert token.headers["cache-control"] == "no-store"
        again = http.post("/oauth/token", data=posted)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

        keys = KeySet.import_key_set(http.get("/oauth/jwks").json())
        claims = jwt.decode(token.json()["id_token"], keys, algorithms=["RS256"]).claims
        assert (claims["iss"], claims["aud"], claims["nonce"]) == (
            hub.url,
            "provider-test",
            "n-0123456789",
        )
        assert claims["preferred_username"] == VETERAN and claims["exp"] > claims["iat"]
        bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
        assert http.get("/oauth/userinfo", headers=bearer).json()["sub"] == claims["sub"]
        refused = http.get("/oauth/userinfo", headers={"Authorization": "Bearer forged"})
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_token"


# -- 1. Space mode, without a browser ---------------------------------------------------------------
def test_app_starts_in_space_mode_and_login_goes_to_the_provider(space, hub):
    with client(space.base_url) as http:
        page = http.get("/")
        assert page.status_code == 200, space.logs()
        # the LoginButton, not the token box (the page embeds Gradio's config)
        assert "Sign in with Hugging Face" in page.text
        assert re.search(r'"elem_id":\s*"api-token-hf-login"', page.text)
        assert not re.search(r'"elem_id":\s*"api-token"', page.text)

        login = http.get("/login/huggingface", params={"_target_url": "/?tab=submit"})
        assert login.status_code in (302, 307), login.text
        target = urlsplit(login.headers["location"])
        assert f"{target.scheme}://{target.netloc}{target.path}" == f"{hub.url}/oauth/authorize"
        query = {k: v[0] for k, v in parse_qs(target.query).items()}
        assert query["client_id"] == CLIENT_ID and query["response_type"] == "code"
        callback = urlsplit(query["redirect_uri"])
        assert (callback.netloc, callback.path) == (
            f"127.0.0.1:{space.web_port}",
            "/login/callback",
        )
        assert parse_qs(callback.query)["_target_url"] == ["/?tab=submit"]
        assert set(query["scope"].split()) == {"openid", "profile"}
        assert len(query["state"]) >= 16 and len(query["nonce"]) >= 16
        # the state and nonce live in Gradio's signed session cookie, made for https and iframes
        cookie = login.headers["set-cookie"].lower()
        assert cookie.startswith("session=") and "secure" in cookie and "samesite=none" in cookie

        # the provider: this app's page renders; an unknown app or a foreign callback gets an
        # error page, never a redirect carrying a code
        authorize = http.get(login.headers["location"])
        assert authorize.status_code == 200 and 'id="authorize"' in authorize.text
        for bad in ({"client_id": "someone-else"}, {"redirect_uri": "http://evil.test/cb"}):
            refused = http.get(f"{hub.url}/oauth/authorize", params={**query, **bad})
            assert refused.status_code == 400 and "location" not in refused.headers, bad


# -- 2. the round trip in Chromium --------------------------------------------------------------------
def _browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")
    from browser_helpers import launch_chromium

    return launch_chromium()


@pytest.fixture(scope="module")
def browser():
    with _browser() as browser:
        yield browser


def _provider(identities, name: str) -> str | None:
    identity = identities.get(name)
    return identity.provider if identity is not None else None


def _session_data(context) -> dict:
    """What Gradio's signed `session` cookie holds in this browser ({} when there is none): the
    payload is base64 JSON before the signature (Starlette's SessionMiddleware, itsdangerous)."""
    import base64
    import json

    value = next((c["value"] for c in context.cookies() if c["name"] == "session"), "")
    if not value:
        return {}
    payload = value.split(".", 1)[0]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _owner(space, submission_id: str) -> str:
    with client(space.base_url) as http:
        answer = http.get(f"/api/v1/submissions/{submission_id}")
        assert answer.status_code == 200, answer.text
        return answer.json()["owner"]


def test_session_cookie_is_kept_over_http(browser, space):
    """Gradio's `session` cookie is `Secure; SameSite=None` (made for https in the Hub's iframe);
    Chromium itself (a navigation, not Playwright's own request client) keeps it over plain http
    from localhost and 127.0.0.1 alike: the round trip below tests Gradio's real cookie."""
    for host in ("localhost", "127.0.0.1"):
        context = context_for(browser, f"http://{host}:{space.web_port}")
        try:
            page = context.new_page()
            page.goto("/login/huggingface")  # sets the cookie, then on to the provider's page
            page.locator("#authorize").wait_for()
            names = {c["name"]: c for c in context.cookies()}
            assert "session" in names, (host, context.cookies())
            assert names["session"]["secure"] and names["session"]["sameSite"] == "None", names
        finally:
            context.close()


def test_sign_in_submit_as_hf_user_new_account_budget_and_sign_out(browser, space, hub, tmp_path):
    from browser_helpers import screenshot
    from playwright.sync_api import expect

    from submissions.identity import IdentityStore
    from submissions.records import SubmissionStore

    base = f"http://{BROWSER_HOST}:{space.web_port}"
    body = make_predictions(lambda item: item.tiers["form"] == "explicit").body
    identities = IdentityStore(SubmissionStore(space.data_dir / "submissions.sqlite3"))

    # An established account: signed in, the submission is hf:<user>'s, in the UI and the API.
    context = context_for(browser, base)
    try:
        page = context.new_page()
        sign_in(page, hub.url, CLIENT_ID, VETERAN)
        model = f"space-{uuid.uuid4().hex[:8]}"
        text = submit(page, tmp_path, body, model)
        assert "Error" not in text, text
        expect(page.locator("#submit-status")).to_contain_text(f"Submitted by hf:{VETERAN}")
        sid = id_in_status(text)
        assert _owner(space, sid) == f"hf:{VETERAN}"
        assert _provider(identities, f"hf:{VETERAN}") == "hf"
        assert _session_data(context)["oauth_info"]["userinfo"]["preferred_username"] == VETERAN
        screenshot(page, tmp_path, "space-signed-in-submitted")

        # Signing out: the button offers sign-in again, and a submission is refused. The logout
        # comes back to "/" with this page's query, maybe this very URL: wait for the new page.
        with page.expect_navigation(url=re.compile(r"^http://[^/?#]+/(\?.*)?$")):
            login_button(page).click()
        on_board(page)
        expect(login_button(page)).to_have_text(re.compile("Sign in with Hugging Face"))
        page.locator("#submit-model textarea, #submit-model input").first.fill("after-logout")
        page.locator("#submit-button").click()
        expect(page.locator("#submit-status")).to_contain_text(
            "submitting needs an identity: sign in with Hugging Face"
        )
        assert "oauth_info" not in _session_data(context)
    finally:
        context.close()

    # An account the Hub says is 2 days old: admitted on the budget new accounts share (hf-new),
    # which says so once it is used up.
    context = context_for(browser, base)
    try:
        page = context.new_page()
        sign_in(page, hub.url, CLIENT_ID, NEWCOMER)
        model = f"space-new-{uuid.uuid4().hex[:8]}"
        text = submit(page, tmp_path, reordered(body, 1), model)
        assert "Error" not in text, text
        expect(page.locator("#submit-status")).to_contain_text(f"Submitted by hf:{NEWCOMER}")
        sid = id_in_status(text)
        assert _owner(space, sid) == f"hf:{NEWCOMER}"
        assert _provider(identities, f"hf:{NEWCOMER}") == "hf-new"
        page.goto("/")  # a fresh page (an empty upload box); the session stays
        on_board(page)
        expect(login_button(page)).to_have_text(re.compile(rf"Logout \({NEWCOMER}\)"))
        text = submit(page, tmp_path, reordered(body, 2), f"{model}-again")
        assert "daily budget shared by all new Hugging Face accounts" in text, text
        screenshot(page, tmp_path, "space-new-account-budget")
    finally:
        context.close()
