"""Hugging Face sign-in costs something (submissions/identity.py HfSigninPolicy), checked against
tests/hub_server.py's user API (GET /api/users/{name}/overview): account age, organisations, the
operator's allow-list, and the daily budget all new accounts share.

The figure (run with -s): how many submissions k fresh accounts get admitted per day under each
policy; with sign-in open, each account brought its own quota (and its own first release).
"""

from __future__ import annotations

import json
import urllib.request
from datetime import datetime, timedelta, timezone

import gradio as gr
import huggingface_hub
import pytest

from space.identity import ui_identity
from submissions.identity import HF_NEW_PROVIDER, HfSigninPolicy, IdentityStore
from submissions.intake import SubmissionError, Submitter, check_quota
from submissions.quotas import QuotaLimits
from submissions.records import Submission, SubmissionStore, new_submission_id, utc_now

K_ACCOUNTS = 8


@pytest.fixture
def hub(hub_server, monkeypatch):
    """The local Hub, reachable from this process (the tests run with HF_HUB_OFFLINE=1)."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return hub_server


def make_account(hub, user: str, age_days: float, orgs=()) -> None:
    created = datetime.now(timezone.utc) - timedelta(days=age_days)
    body = json.dumps(
        {"user": user, "createdAt": created.isoformat().replace("+00:00", "Z"), "orgs": list(orgs)}
    ).encode()
    request = urllib.request.Request(f"{hub.url}/_test/users", data=body, method="POST")
    urllib.request.urlopen(request, timeout=5).read()


def profile(user: str) -> gr.OAuthProfile:
    return gr.OAuthProfile({"preferred_username": user, "name": user, "profile": "", "picture": ""})


def sign_in(identities, user, policy):
    return ui_identity(identities, "", profile(user), policy)


def test_policy_admits_by_age_org_and_allow_list(hub, tmp_path):
    identities = IdentityStore(SubmissionStore(tmp_path / "s.sqlite3"))
    make_account(hub, "veteran", 400)
    make_account(hub, "fresh", 2)
    make_account(hub, "fresh-member", 1, orgs=["personaboard-lab"])
    policy = HfSigninPolicy(
        min_account_age_days=30,
        allowed_users=frozenset({"listed"}),
        allowed_orgs=frozenset({"personaboard-lab"}),
        hub_endpoint=hub.url,
    )
    assert sign_in(identities, "veteran", policy).provider == "hf"
    assert sign_in(identities, "fresh-member", policy).provider == "hf"  # an org the operator named
    assert sign_in(identities, "listed", policy).provider == "hf"  # no Hub account needed
    with pytest.raises(SubmissionError) as refused:
        sign_in(identities, "fresh", policy)
    assert refused.value.status == 403 and "younger than 30 days" in str(refused.value)
    assert "2 days old" in str(refused.value) and identities.get("hf:fresh") is None
    with pytest.raises(SubmissionError) as unknown:
        sign_in(identities, "nobody-on-the-hub", policy)
    assert unknown.value.status == 403 and "does not know" in str(unknown.value)
    # allow-list only: age no longer admits
    strict = HfSigninPolicy(
        allowlist_only=True, allowed_orgs=frozenset({"personaboard-lab"}), hub_endpoint=hub.url
    )
    with pytest.raises(SubmissionError):
        sign_in(identities, "veteran", strict)
    assert sign_in(identities, "fresh-member", strict).provider == "hf"
    # the Hub down: a clear 503, not an open door
    down = HfSigninPolicy(hub_endpoint="http://127.0.0.1:9")
    with pytest.raises(SubmissionError) as unreachable:
        sign_in(identities, "veteran", down)
    assert unreachable.value.status == 503
    # tokens the operator made keep working whatever the policy
    identities.add_user("token-user")
    token = identities.issue_token("token-user")[1]
    assert ui_identity(identities, token, None, strict).name == "token-user"


def admitted_per_day(hub, tmp_path, policy: HfSigninPolicy, monkeypatch, tag: str) -> int:
    """k fresh accounts (a day old) each try their whole daily quota of uploads."""
    records = SubmissionStore(tmp_path / f"{tag}.sqlite3")
    identities = IdentityStore(records)
    monkeypatch.setenv(
        "PERSONABOARD_HF_NEW_ACCOUNTS_DAILY_BUDGET", str(policy.new_accounts_daily_budget)
    )
    limits = QuotaLimits()
    admitted = 0
    for k in range(K_ACCOUNTS):
        user = f"sybil-{tag}-{k}"
        make_account(hub, user, 1)
        try:
            identity = sign_in(identities, user, policy)
        except SubmissionError:
            continue
        submitter = Submitter(identity, limits)
        for _ in range(limits.predictions):
            try:
                check_quota(records, submitter, "recentering", "predictions")
            except SubmissionError as exc:
                assert exc.status == 429
                break
            records.add(
                Submission(
                    id=new_submission_id(),
                    created_at=utc_now(),
                    kind="predictions",
                    suite="recentering",
                    task="relevance",
                    setting="zero_shot",
                    model_name=user,
                    state="queued",
                    owner=identity.name,
                )
            )
            admitted += 1
    return admitted


def test_k_fresh_accounts_share_one_budget(hub, tmp_path, monkeypatch):
    open_door = admitted_per_day(
        hub,
        tmp_path,
        HfSigninPolicy(min_account_age_days=0, hub_endpoint=hub.url),
        monkeypatch,
        "open",
    )
    shared = admitted_per_day(
        hub,
        tmp_path,
        HfSigninPolicy(new_accounts_daily_budget=5, hub_endpoint=hub.url),
        monkeypatch,
        "budget",
    )
    closed = admitted_per_day(
        hub, tmp_path, HfSigninPolicy(hub_endpoint=hub.url), monkeypatch, "age"
    )
    print(
        f"\n{K_ACCOUNTS} accounts a day old, each trying its daily quota ({QuotaLimits().predictions}):"
        f"\n  sign-in open: {open_door} uploads admitted"
        f"\n  30-day minimum age, shared new-account budget of 5: {shared}"
        f"\n  30-day minimum age, no budget (the default): {closed}"
    )
    assert open_door == K_ACCOUNTS * QuotaLimits().predictions
    assert shared == 5 and closed == 0
    assert HF_NEW_PROVIDER == "hf-new"
