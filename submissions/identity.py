"""Who submits: users, their API tokens, model-name ownership and per-user quota overrides.

Tokens are random (256 bits) and shown once; only their sha256 is stored, so a leaked database
does not leak usable tokens, and a 256-bit random secret needs no slow hash. A token is looked up
by its hash and the stored hash is compared in constant time as well. Hugging Face users signed in
through the Space's OAuth become identities named `hf:<username>` on first use.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from submissions.names import InvalidName, check_user_name, name_key, normalise_text
from submissions.records import SubmissionStore, utc_now

ROLES = ("user", "admin")
TOKEN_PREFIX = "pb_"
HF_PREFIX = "hf:"
QUOTA_KINDS = ("predictions", "model", "failed_validations", "comparisons")
HF_PROVIDER = "hf"
HF_NEW_PROVIDER = "hf-new"  # admitted on the daily budget shared by all new accounts


class IdentityError(ValueError):
    pass


@dataclass(frozen=True)
class Identity:
    name: str
    role: str = "user"
    provider: str = "token"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class IdentityStore:
    """Users and tokens, in the submissions database (see records.IDENTITY_SCHEMA)."""

    def __init__(self, records: SubmissionStore):
        self.records = records

    def _connect(self):
        return self.records._connect()

    # -- users ----------------------------------------------------------------------------------
    def add_user(self, name: str, role: str = "user") -> Identity:
        try:
            name = check_user_name(name)
        except InvalidName as exc:
            raise IdentityError(str(exc)) from None
        if role not in ROLES:
            raise IdentityError(f"role must be one of {', '.join(ROLES)}")
        with closing(self._connect()) as db, db:
            if db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise IdentityError(f"user {name!r} exists already")
            db.execute(
                "INSERT INTO users (name, role, provider, created_at) VALUES (?, ?, 'token', ?)",
                (name, role, utc_now()),
            )
        return Identity(name, role)

    def get(self, name: str) -> Identity | None:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT name, role, provider FROM users WHERE name = ?", (name,)
            ).fetchone()
        return Identity(row["name"], row["role"], row["provider"]) if row else None

    def require(self, name: str) -> Identity:
        found = self.get(name)
        if found is None:
            raise IdentityError(f"no user {name!r}")
        return found

    def set_role(self, name: str, role: str) -> Identity:
        self.require(name)
        if role not in ROLES:
            raise IdentityError(f"role must be one of {', '.join(ROLES)}")
        with closing(self._connect()) as db, db:
            db.execute("UPDATE users SET role = ? WHERE name = ?", (role, name))
        return self.require(name)

    def hf_user(self, username: str, provider: str = HF_PROVIDER) -> Identity:
        """The identity of a Hugging Face account signed in through OAuth (created on first use).
        `provider` is what the sign-in policy decided: HF_PROVIDER, or HF_NEW_PROVIDER for an
        account admitted on the budget shared by new accounts (updated at every sign-in, so an
        account that grew old enough leaves that budget)."""
        try:
            name = HF_PREFIX + check_user_name(username, "username")
        except InvalidName as exc:
            raise IdentityError(str(exc)) from None
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT OR IGNORE INTO users (name, role, provider, created_at) VALUES (?, 'user', ?, ?)",
                (name, provider, utc_now()),
            )
            db.execute(
                "UPDATE users SET provider = ? WHERE name = ? AND provider != ?",
                (provider, name, provider),
            )
        return self.require(name)

    def new_accounts_submissions_since(self, since: str) -> int:
        """Submissions (every suite and kind) since `since` by accounts on the shared new-account budget."""
        with closing(self._connect()) as db:
            return db.execute(
                "SELECT COUNT(*) FROM submissions s JOIN users u ON s.owner = u.name "
                "WHERE u.provider = ? AND s.created_at >= ?",
                (HF_NEW_PROVIDER, since),
            ).fetchone()[0]

    def users(self) -> list[dict[str, Any]]:
        with closing(self._connect()) as db:
            users = [dict(r) for r in db.execute("SELECT * FROM users ORDER BY name")]
            tokens = [
                dict(r)
                for r in db.execute(
                    "SELECT id, user, created_at, revoked_at FROM tokens ORDER BY created_at"
                )
            ]
        for user in users:
            user["quotas"] = json.loads(user["quotas"]) if user["quotas"] else {}
            user["tokens"] = [
                {k: t[k] for k in ("id", "created_at", "revoked_at")}
                for t in tokens
                if t["user"] == user["name"]
            ]
        return users

    # -- tokens ---------------------------------------------------------------------------------
    def issue_token(self, name: str) -> tuple[str, str]:
        """A new token for `name`: (token id, the token). The token is not stored and not shown again."""
        self.require(name)
        token_id = secrets.token_hex(4)
        token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT INTO tokens (id, user, token_sha256, created_at) VALUES (?, ?, ?, ?)",
                (token_id, name, hash_token(token), utc_now()),
            )
        return token_id, token

    def revoke(self, name: str, token_id: str | None = None) -> int:
        """Revoke one of the user's tokens (by id) or all of them; returns how many were live."""
        self.require(name)
        query, args = (
            "UPDATE tokens SET revoked_at = ? WHERE user = ? AND revoked_at IS NULL",
            [utc_now(), name],
        )
        if token_id:
            query += " AND id = ?"
            args.append(token_id)
        with closing(self._connect()) as db, db:
            return db.execute(query, args).rowcount

    def authenticate(self, token: str | None) -> Identity | None:
        """The identity a live token belongs to, or None (missing, unknown or revoked)."""
        if not token or len(token) > 200:
            return None
        digest = hash_token(token)
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT t.token_sha256, t.revoked_at, u.name, u.role, u.provider FROM tokens t "
                "JOIN users u ON u.name = t.user WHERE t.token_sha256 = ?",
                (digest,),
            ).fetchone()
        if (
            row is None
            or row["revoked_at"] is not None
            or not hmac.compare_digest(row["token_sha256"], digest)
        ):
            return None
        return Identity(row["name"], row["role"], row["provider"])

    # -- quotas ---------------------------------------------------------------------------------
    def set_quotas(self, name: str, **limits: int | None) -> dict[str, int]:
        """Override the daily limits of one user (None leaves a limit as it is, -1 goes back to the default)."""
        self.require(name)
        unknown = set(limits) - set(QUOTA_KINDS)
        if unknown:
            raise IdentityError(f"unknown quota(s): {', '.join(sorted(unknown))}")
        current = self.quota_overrides(name)
        for kind, value in limits.items():
            if value is None:
                continue
            if value < 0:
                current.pop(kind, None)
            else:
                current[kind] = int(value)
        with closing(self._connect()) as db, db:
            db.execute(
                "UPDATE users SET quotas = ? WHERE name = ?",
                (json.dumps(current) if current else None, name),
            )
        return current

    def quota_overrides(self, name: str) -> dict[str, int]:
        with closing(self._connect()) as db:
            row = db.execute("SELECT quotas FROM users WHERE name = ?", (name,)).fetchone()
        return json.loads(row["quotas"]) if row and row["quotas"] else {}

    def take_failed_validation(self, owner: str, suite: str, limit: int, since: str) -> int:
        """Count one failed validation of `owner` on `suite` if fewer than `limit` were counted
        since `since`; returns how many there were before (>= limit: none taken, and the request
        is refused as a spent quota, the answer it would have had a moment later)."""
        return self._take("validation_failures", owner, suite, limit, since)

    def failed_validations_since(self, owner: str, suite: str, since: str) -> int:
        with closing(self._connect()) as db:
            return db.execute(
                "SELECT COUNT(*) FROM validation_failures WHERE owner = ? AND suite = ? AND at >= ?",
                (owner, suite, since),
            ).fetchone()[0]

    def take_comparison(self, owner: str, suite: str, limit: int, since: str) -> int:
        """Count one comparison of `owner` on `suite` if fewer than `limit` were made since `since`;
        returns how many there were before (>= limit: none taken)."""
        return self._take("comparisons", owner, suite, limit, since)

    def _take(self, table: str, owner: str, suite: str, limit: int, since: str) -> int:
        """One row into `table` (a daily count: owner, suite, at) unless `limit` rows of `owner` on
        `suite` are there since `since`; returns how many there were before. One write
        transaction, so concurrent requests cannot all take the last one."""
        assert table in ("validation_failures", "comparisons")  # names, never user text
        with closing(self._connect()) as db, db:
            db.execute("BEGIN IMMEDIATE")
            used = db.execute(
                f"SELECT COUNT(*) FROM {table} WHERE owner = ? AND suite = ? AND at >= ?",
                (owner, suite, since),
            ).fetchone()[0]
            if used < limit:
                db.execute(
                    f"INSERT INTO {table} (owner, suite, at) VALUES (?, ?, ?)",
                    (owner, suite, utc_now()),
                )
        return used

    def submissions_since(self, owner: str, suite: str, kind: str, since: str) -> int:
        with closing(self._connect()) as db:
            return db.execute(
                "SELECT COUNT(*) FROM submissions WHERE owner = ? AND suite = ? AND kind = ? "
                "AND created_at >= ?",
                (owner, suite, kind, since),
            ).fetchone()[0]

    # -- model names ----------------------------------------------------------------------------
    def name_owner(self, model_name: str) -> str | None:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT owner FROM model_names WHERE name_key = ?", (name_key(model_name),)
            ).fetchone()
        return row["owner"] if row else None

    def names(self) -> list[dict[str, Any]]:
        with closing(self._connect()) as db:
            return [
                dict(r)
                for r in db.execute(
                    "SELECT name, owner, claimed_at FROM model_names ORDER BY name_key"
                )
            ]

    def transfer_name(self, model_name: str, new_owner: str) -> dict[str, Any]:
        """Give a model name (and its future submissions) to another identity; the operator's call."""
        self.require(new_owner)
        try:
            name = normalise_text(model_name, "model_name", 200)
        except InvalidName as exc:
            raise IdentityError(str(exc)) from None
        key = name_key(name)
        with closing(self._connect()) as db, db:
            row = db.execute("SELECT owner FROM model_names WHERE name_key = ?", (key,)).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO model_names (name_key, name, owner, claimed_at) VALUES (?, ?, ?, ?)",
                    (key, name, new_owner, utc_now()),
                )
            else:
                db.execute("UPDATE model_names SET owner = ? WHERE name_key = ?", (new_owner, key))
        return {"name": name, "previous_owner": row["owner"] if row else None, "owner": new_owner}


# -- who of the Hugging Face accounts may submit ---------------------------------------------------


@dataclass(frozen=True)
class HfSigninPolicy:
    """Which Hugging Face accounts signed in on a Space may submit (tokens the operator issues are
    not concerned: the operator chose those identities).

    Every identity has its own quotas and its own Ladder, so free identities multiply both: with
    sign-in open to any account, 3 fresh accounts learned 15 labels in 15 uploads. An account must
    therefore cost something: an age on the Hub (making many old accounts takes time), membership
    of an organisation the operator names, or the operator's allow-list. Accounts younger than the
    minimum age may share one small daily budget (all of them together), so a newcomer can try the
    service without each new account adding a budget of its own.
    """

    min_account_age_days: int = 30  # 0: no age required
    allowed_users: frozenset[str] = frozenset()  # always admitted (Hub usernames)
    allowed_orgs: frozenset[str] = frozenset()  # members of these organisations are admitted
    allowlist_only: bool = False  # admit only allowed_users and members of allowed_orgs
    new_accounts_daily_budget: int = 0  # submissions per UTC day shared by all too-young accounts
    hub_endpoint: str | None = None  # the Hub the account is read from (None: HF_ENDPOINT's)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "HfSigninPolicy":
        import os

        env = os.environ if environ is None else environ

        def names(key: str) -> frozenset[str]:
            return frozenset(n.strip() for n in env.get(key, "").split(",") if n.strip())

        return cls(
            min_account_age_days=int(env.get("PERSONABOARD_HF_MIN_ACCOUNT_AGE_DAYS", "30")),
            allowed_users=names("PERSONABOARD_HF_ALLOWED_USERS"),
            allowed_orgs=names("PERSONABOARD_HF_ALLOWED_ORGS"),
            allowlist_only=env.get("PERSONABOARD_HF_ALLOWLIST_ONLY", "").lower()
            in ("1", "true", "yes"),
            new_accounts_daily_budget=int(
                env.get("PERSONABOARD_HF_NEW_ACCOUNTS_DAILY_BUDGET", "0")
            ),
            hub_endpoint=env.get("PERSONABOARD_HF_USER_API_ENDPOINT") or None,
        )

    def needs_hub(self) -> bool:
        return bool(self.allowed_orgs) or (
            not self.allowlist_only and self.min_account_age_days > 0
        )


class SigninRefused(ValueError):
    """The account may not submit here; the message says why and what would change it."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.status = status


def admit_hf_account(policy: HfSigninPolicy, username: str, lookup=None, now=None) -> str:
    """HF_PROVIDER (admitted), HF_NEW_PROVIDER (admitted on the shared new-account budget), or
    SigninRefused. `lookup(username, endpoint)` reads the account from the Hub (evaluator.hub)."""
    from datetime import datetime, timezone

    from evaluator import hub

    if username in policy.allowed_users:
        return HF_PROVIDER
    if not policy.needs_hub():
        if policy.allowlist_only:
            raise SigninRefused(
                f"this service takes submissions from accounts the operator listed; "
                f"{username!r} is not one of them"
            )
        return HF_PROVIDER
    lookup = lookup or hub.user_overview
    try:
        account = lookup(username, policy.hub_endpoint)
    except hub.HubUnreachable:
        raise SigninRefused(
            "the Hugging Face Hub cannot be reached to check this account; try again later", 503
        ) from None
    except hub.HubRefused:
        raise SigninRefused(
            f"the Hugging Face Hub does not know the account {username!r}"
        ) from None
    if policy.allowed_orgs & set(account.orgs):
        return HF_PROVIDER
    if policy.allowlist_only:
        raise SigninRefused(
            "this service takes submissions from members of "
            f"{', '.join(sorted(policy.allowed_orgs))} and accounts the operator listed"
        )
    now = now or datetime.now(timezone.utc)
    try:
        created = datetime.fromisoformat(str(account.created_at).replace("Z", "+00:00"))
    except ValueError:
        created = now  # no creation time: treated as new
    age_days = (now - created).total_seconds() / 86400
    if age_days >= policy.min_account_age_days:
        return HF_PROVIDER
    if policy.new_accounts_daily_budget > 0:
        return HF_NEW_PROVIDER
    raise SigninRefused(
        f"Hugging Face accounts younger than {policy.min_account_age_days} days cannot submit here "
        f"(this one is {max(int(age_days), 0)} days old): each account has its own quotas, so new "
        "accounts would multiply them; ask the operator for a token or to be listed"
    )
