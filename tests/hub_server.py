"""A small, real HTTP server that speaks the part of the Hugging Face Hub API PersonaBoard uses.

The Hub cannot be reached from CI; this server stands in for it on 127.0.0.1, so huggingface_hub
(2.x) and `datasets` run their real HTTP code against it (point HF_ENDPOINT, or
`HfApi(endpoint=...)`, at it). State lives in a folder (JSON + content-addressed blobs), written
atomically after every change, so the server can be killed and restarted without losing a commit.

    python tests/hub_server.py --port 8123 --data /tmp/hub --token hf_test_write

Covered (route -> the huggingface_hub call that uses it):
    POST /api/repos/create                               create_repo (private too; 409 if it exists)
    GET  /api/{type}s/{repo}[/revision/{rev}]            repo_info / dataset_info / model_info (with
                                                         config and safetensors parameter counts)
    POST /api/{type}s/{repo}/preupload/{rev}             create_commit (upload mode: always "regular")
    POST /api/{type}s/{repo}/commit/{rev}                create_commit (ndjson; parentCommit -> 412 if
                                                         the branch moved, 409 while another commit runs)
    GET  /api/{type}s/{repo}/tree/{rev}[/{path}]         list_repo_tree (recursive or not), HfFileSystem
    POST /api/{type}s/{repo}/paths-info/{rev}            get_paths_info, HfFileSystem
    GET  /api/{type}s/{repo}/refs                        list_repo_refs (branches, tags)
    GET  /api/{type}s/{repo}/commits/{rev}               list_repo_commits (newest first)
    POST /api/{type}s/{repo}/tag/{rev}                   create_tag (409 if it exists)
    DELETE /api/{type}s/{repo}/tag/{tag}                 delete_tag
    HEAD/GET /[{type}s/]{repo}/resolve/{rev}/{path}      hf_hub_download, snapshot_download, datasets
    POST /api/validate-yaml                              create_commit of a README.md
    GET  /api/whoami-v2                                  whoami
    GET  /api/users/{name}/overview                      get_user_overview (createdAt, orgs; 404 if
                                                         unknown); accounts added with POST /_test/users
    GET  /_test/stats                                    (not the Hub's) refused commits since start

OpenID Connect provider ("Sign in with Hugging Face", what Gradio's /login/huggingface and
/login/callback talk to on a Space; point OPENID_PROVIDER_URL at this server):
    GET  /.well-known/openid-configuration   discovery: issuer and token/userinfo/jwks endpoints are the
                                             URL the app reached this server at (http://hub:8123 from a
                                             container), authorization_endpoint is --public-url's (what
                                             the browser reaches), else that same URL
    GET  /oauth/authorize                    the sign-in page (a username, "Authorize"); an unknown
                                             client_id or a redirect_uri the app did not register: a 400
                                             page, never a redirect; a bad response_type or scope:
                                             redirect with error=...
    POST /oauth/authorize                    the page's form: an existing account (POST /_test/users)
                                             -> 302 redirect_uri?code=...&state=...
    POST /oauth/token                        authorization_code grant; client_secret_basic or _post;
                                             the code once, within 60 s, by its client, with the same
                                             redirect_uri; -> access_token, id_token (RS256: iss, sub,
                                             aud, exp, iat, nonce, at_hash, preferred_username, name,
                                             picture, profile); RFC 6749 JSON errors (400, 401)
    GET  /oauth/userinfo                     Bearer access token -> sub, preferred_username, name,
                                             picture, profile; 401 otherwise
    GET  /oauth/jwks                         the public key (RSA, kid)
    POST /_test/oauth-apps                   (not the Hub's) register an app: {client_id, client_secret,
                                             redirect_uris}; also `--oauth-client ID:SECRET[:URI,...]`
A redirect_uri matches a registered one without its query (Gradio adds `_target_url`).

Not covered by the provider: the Hub's real sign-in (passwords, 2FA, SSO) and its consent screen
(here one button, no "deny"); scopes beyond openid and profile (email, read-repos, write-repos,
manage-repos, inference-api, read-billing) and tokens that act on the Hub API (the access token is
good for /oauth/userinfo only); token refresh and revocation; PKCE (code_challenge is ignored);
org membership and `canPay`/`isPro` in userinfo or the ID token; RP-initiated logout
(end_session_endpoint); key rotation (one key per process: a restart makes a new key and forgets
codes and tokens, apps persist); the `prompt`, `max_age`, `login_hint` parameters; https.

Not covered (write it down, do not assume it): LFS and Xet uploads (every file is committed
inline as a "regular" file, as the Hub does for small text files), pull requests, branches other
than main, squash, deletion of repos, rate limits (429), gated repos, the datasets-server
(/parquet conversion) API, pagination (every listing is one page), partial (Range) downloads.

Auth: `--token` (repeatable) lists the valid tokens. Writes need one; a private repo is invisible
(404 RepoNotFound, as the Hub answers) without one. Reads of public repos need none.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import html
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, unquote_plus, urlencode, urlsplit

REPO_TYPES = ("model", "dataset", "space")
TEST_TOKEN = "hf_personaboard_test_token"  # the token the tests' server accepts (tests/conftest.py)
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def git_blob_sha(content: bytes) -> str:
    """The git object id of a blob: what the Hub reports as a regular file's oid."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class HubState:
    """Repos, commits, refs and blobs, persisted under `root`."""

    def __init__(self, root: Path):
        self.root = Path(root)
        (self.root / "blobs").mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()  # guards the state dict and its file
        self.commit_locks: dict[str, threading.Lock] = {}
        self.refused_commits = (
            0  # 409 + 412 answers since start (GET /_test/stats): tests check conflicts happened
        )
        path = self.root / "state.json"
        self.repos: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
        users = self.root / "users.json"
        self.users: dict[str, dict] = json.loads(users.read_text()) if users.exists() else {}

    def save(self) -> None:
        for name, data in (("state.json", self.repos), ("users.json", self.users)):
            tmp = self.root / f"{name}.tmp"
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.root / name)

    # -- blobs --------------------------------------------------------------------------------
    def put_blob(self, content: bytes) -> str:
        oid = git_blob_sha(content)
        path = self.root / "blobs" / oid
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(content)
            os.replace(tmp, path)
        return oid

    def blob(self, oid: str) -> bytes:
        return (self.root / "blobs" / oid).read_bytes()

    # -- repos ----------------------------------------------------------------------------------
    def repo(self, key: str, authorized: bool) -> dict:
        repo = self.repos.get(key)
        if repo is None or (repo["private"] and not authorized):
            raise HubError(404, f"Repository {key.split(':', 1)[1]} not found", "RepoNotFound")
        return repo

    def create(self, key: str, private: bool) -> None:
        with self.lock:
            if key in self.repos:
                raise HubError(409, "You already created this repo")
            repo = {
                "private": private,
                "created": now_iso(),
                "branches": {},
                "tags": {},
                "commits": {},
            }
            self.repos[key] = repo
            oid = self._commit(
                repo, None, {".gitattributes": self.put_blob(GITATTRIBUTES)}, "initial commit", ""
            )
            repo["branches"]["main"] = oid
            self.save()

    def _commit(self, repo: dict, parent: str | None, tree: dict, title: str, message: str) -> str:
        date = now_iso()
        body = json.dumps(
            [parent, sorted(tree.items()), title, message, date, len(repo["commits"])]
        ).encode()
        oid = hashlib.sha1(body).hexdigest()
        repo["commits"][oid] = {
            "parent": parent,
            "tree": tree,
            "title": title,
            "message": message,
            "date": date,
        }
        return oid

    def resolve(self, repo: dict, revision: str) -> str:
        revision = revision or "main"
        if revision in repo["branches"]:
            return repo["branches"][revision]
        if revision in repo["tags"]:
            return repo["tags"][revision]["oid"]
        if revision in repo["commits"]:
            return revision
        matches = [
            oid for oid in repo["commits"] if len(revision) >= 7 and oid.startswith(revision)
        ]
        if len(matches) == 1:
            return matches[0]
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def tree(self, repo: dict, revision: str) -> tuple[str, dict]:
        oid = self.resolve(repo, revision)
        return oid, repo["commits"][oid]["tree"]

    def apply_commit(self, key: str, repo: dict, branch: str, lines: list[dict]) -> str:
        header = next((line["value"] for line in lines if line.get("key") == "header"), None)
        if header is None:
            raise HubError(400, "missing header line in the commit payload")
        if branch not in repo["branches"]:
            raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
        lock = self.commit_locks.setdefault(key, threading.Lock())
        if not lock.acquire(
            blocking=False
        ):  # the Hub refuses a commit while another is in progress
            self.refused_commits += 1
            raise HubError(409, "A commit is already in progress on this branch; please retry")
        try:
            with self.lock:
                head = repo["branches"][branch]
                parent = header.get("parentCommit")
                if parent and parent != head:
                    self.refused_commits += 1
                    raise HubError(
                        412, "A commit has happened since. Please refresh and try again."
                    )
                tree = dict(repo["commits"][head]["tree"])
            for line in lines:
                key_, value = line.get("key"), line.get("value") or {}
                if key_ == "file":
                    if value.get("encoding") != "base64":
                        raise HubError(400, "only base64 file content is supported")
                    tree[value["path"]] = self.put_blob(base64.b64decode(value["content"]))
                elif key_ == "deletedFile":
                    if value["path"] not in tree:
                        raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                    del tree[value["path"]]
                elif key_ == "deletedFolder":
                    prefix = value["path"].rstrip("/") + "/"
                    tree = {p: o for p, o in tree.items() if not p.startswith(prefix)}
                elif key_ in ("lfsFile", "copyFile"):
                    raise HubError(400, f"{key_} operations are not supported by this test server")
                elif key_ != "header":
                    raise HubError(400, f"unknown commit operation {key_!r}")
            with self.lock:
                if (
                    repo["branches"][branch] != head
                ):  # never happens with the lock, but keep it honest
                    raise HubError(
                        412, "A commit has happened since. Please refresh and try again."
                    )
                oid = self._commit(
                    repo, head, tree, header.get("summary", ""), header.get("description", "")
                )
                repo["branches"][branch] = oid
                self.save()
                return oid
        finally:
            lock.release()


def tree_entries(tree: dict, state: HubState, path: str, recursive: bool) -> list[dict]:
    """The Hub's tree listing of `path` (files and directories)."""
    prefix = path.strip("/") + "/" if path.strip("/") else ""
    entries: dict[str, dict] = {}
    for file_path, oid in sorted(tree.items()):
        if not file_path.startswith(prefix):
            continue
        rest = file_path[len(prefix) :]
        parts = rest.split("/")
        for depth in range(1, len(parts)):
            folder = prefix + "/".join(parts[:depth])
            if recursive or depth == 1:
                entries.setdefault(
                    folder,
                    {
                        "type": "directory",
                        "oid": hashlib.sha1(folder.encode()).hexdigest(),
                        "size": 0,
                        "path": folder,
                    },
                )
            if not recursive:
                break
        if recursive or len(parts) == 1:
            entries[file_path] = file_entry(file_path, oid, state)
    return list(entries.values())


def file_entry(path: str, oid: str, state: HubState) -> dict:
    return {
        "type": "file",
        "oid": oid,
        "size": (state.root / "blobs" / oid).stat().st_size,
        "path": path,
    }


# -- the OpenID Connect provider (huggingface.co's "Sign in with Hugging Face") ------------------------
OAUTH_SCOPES = ("openid", "profile")
CODE_LIFETIME_S = 60  # an authorization code is good for one exchange within this many seconds
ACCESS_TOKEN_LIFETIME_S = 8 * 3600
USERNAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,40}[A-Za-z0-9])?\Z")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OAuthError(Exception):
    """An RFC 6749 error answer of the token or userinfo endpoint."""

    def __init__(self, status: int, error: str, description: str):
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


class PageError(Exception):
    """A plain HTML error page of the authorize endpoint (never a redirect: the client or its
    redirect_uri cannot be trusted)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class OidcProvider:
    """OAuth apps, authorization codes, access tokens and the RS256 signing key (made at start:
    a restarted server signs with a new key, and the codes and tokens it gave out are gone)."""

    def __init__(self, state: HubState, clients: list[str], public_url: str | None):
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.state, self.public_url = state, (public_url or "").rstrip("/") or None
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = self.key.public_key().public_numbers()
        n = numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")
        self.jwk = {
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "n": b64url(n),
            "e": b64url(numbers.e.to_bytes(3, "big")),
        }
        self.jwk["kid"] = hashlib.sha256(json.dumps(self.jwk, sort_keys=True).encode()).hexdigest()[
            :16
        ]
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        path = state.root / "oauth_apps.json"
        self.apps: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
        for spec in clients:  # ID:SECRET[:URI[,URI...]]
            client_id, secret, *uris = spec.split(":", 2)
            self.register(client_id, secret, uris[0].split(",") if uris and uris[0] else [])

    def register(self, client_id: str, secret: str, redirect_uris: list[str]) -> dict:
        if not client_id or not secret:
            raise HubError(400, "an OAuth app needs a client_id and a client_secret")
        for uri in redirect_uris:
            if urlsplit(uri).scheme not in ("http", "https") or not urlsplit(uri).netloc:
                raise HubError(400, f"redirect URI {uri!r} is not an absolute http(s) URL")
        with self.state.lock:
            self.apps[client_id] = {"secret": secret, "redirect_uris": list(redirect_uris)}
            tmp = self.state.root / "oauth_apps.json.tmp"
            tmp.write_text(json.dumps(self.apps))
            os.replace(tmp, self.state.root / "oauth_apps.json")
        return {"client_id": client_id, "redirect_uris": list(redirect_uris)}

    def redirect_allowed(self, client_id: str, redirect_uri: str) -> bool:
        """As on the Hub, the callback must be one the app registered; the query (Gradio's
        `_target_url`) is the app's own business, so it is compared without it."""
        bare = urlsplit(redirect_uri)._replace(query="", fragment="").geturl()
        return bare in self.apps[client_id]["redirect_uris"]

    def sign(self, claims: dict) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        header = {"alg": "RS256", "typ": "JWT", "kid": self.jwk["kid"]}
        signing_input = (
            b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
        )
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    def profile(self, user: str, base: str) -> dict:
        account = self.state.users.get(user, {})
        web = self.public_url or base
        return {
            "sub": hashlib.sha256(f"user:{user}".encode()).hexdigest()[:24],
            "preferred_username": user,
            "name": account.get("fullname", user),
            "picture": f"{web}/avatars/{user}.png",
            "profile": f"{web}/{user}",
        }

    def issue_code(self, params: dict, user: str) -> str:
        code = secrets.token_urlsafe(24)
        with self.state.lock:
            now = time.time()
            self.codes = {c: v for c, v in self.codes.items() if v["expires"] > now}
            self.codes[code] = {**params, "user": user, "expires": now + CODE_LIFETIME_S}
        return code

    def exchange(self, client_id: str, form: dict, issuer: str) -> dict:
        """The authorization_code grant (RFC 6749 4.1.3): the code once, by the client it was
        given to, with the same redirect_uri; the ID token carries the authorize request's nonce."""
        code, redirect_uri = form.get("code", ""), form.get("redirect_uri", "")
        if not code or not redirect_uri:
            raise OAuthError(400, "invalid_request", "code and redirect_uri are required")
        with self.state.lock:
            grant = self.codes.pop(code, None)  # single use, whatever comes next
        if grant is None or grant["expires"] < time.time():
            raise OAuthError(400, "invalid_grant", "the code is unknown, used or expired")
        if grant["client_id"] != client_id:
            raise OAuthError(400, "invalid_grant", "the code was issued to another client")
        if grant["redirect_uri"] != redirect_uri:
            raise OAuthError(
                400, "invalid_grant", "redirect_uri differs from the authorize request"
            )
        now = int(time.time())
        access_token = "hf_oauth_" + secrets.token_urlsafe(24)
        profile = self.profile(grant["user"], issuer)
        with self.state.lock:
            self.tokens[access_token] = {
                "profile": profile,
                "scope": grant["scope"],
                "expires": now + ACCESS_TOKEN_LIFETIME_S,
            }
        digest = hashlib.sha256(access_token.encode()).digest()
        claims = {
            "iss": issuer,
            "sub": profile["sub"],
            "aud": client_id,
            "exp": now + ACCESS_TOKEN_LIFETIME_S,
            "iat": now,
            "auth_time": now,
            "at_hash": b64url(digest[:16]),
            **({"nonce": grant["nonce"]} if grant.get("nonce") else {}),
            **profile,
        }
        return {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_LIFETIME_S,
            "scope": grant["scope"],
            "id_token": self.sign(claims),
        }

    def userinfo(self, authorization: str) -> dict:
        token = authorization[7:] if authorization.startswith("Bearer ") else ""
        with self.state.lock:
            grant = self.tokens.get(token)
        if grant is None or grant["expires"] < time.time():
            raise OAuthError(401, "invalid_token", "a valid Bearer access token is required")
        return grant["profile"]


SIGNIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in - local Hub stand-in</title>
<style>body{{font-family:sans-serif;max-width:32rem;margin:3rem auto}}</style></head>
<body><h1>Sign in with Hugging Face</h1>
<p>The application <strong id="client">{client}</strong> asks to sign you in (scopes:
<span id="scopes">{scope}</span>). It will be sent back to <code>{redirect}</code>.</p>
<form method="post" action="/oauth/authorize">
{hidden}
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" required>
<button type="submit" id="authorize">Authorize</button>
</form>
<p><small>A test stand-in for huggingface.co: no password, the account must exist on this
Hub.</small></p></body></html>
"""
ERROR_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in error</title></head>
<body><h1>Sign-in error ({status})</h1><p id="error">{message}</p></body></html>
"""
AUTHORIZE_PARAMS = ("client_id", "redirect_uri", "response_type", "scope", "state", "nonce")
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class Handler(BaseHTTPRequestHandler):
    server_version = "PersonaBoardTestHub/1"
    protocol_version = "HTTP/1.1"
    state: HubState
    tokens: set[str]
    oidc: OidcProvider

    def log_message(self, fmt, *args):  # quiet unless asked
        if os.environ.get("HUB_SERVER_VERBOSE"):
            super().log_message(fmt, *args)

    # -- plumbing -------------------------------------------------------------------------------
    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and auth[7:] in self.tokens

    def _body(self) -> bytes:
        return self.body

    def _send(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: dict | None = None,
        head: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, data, status: int = 200, headers: dict | None = None) -> None:
        self._send(status, json.dumps(data).encode(), headers=headers)

    def _error(self, exc: HubError, head: bool = False) -> None:
        headers = {"X-Error-Message": exc.message}
        if exc.code:
            headers["X-Error-Code"] = exc.code
        self._send(
            exc.status, json.dumps({"error": exc.message}).encode(), headers=headers, head=head
        )

    def _dispatch(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.body = (
            self.rfile.read(length) if length else b""
        )  # always read, so keep-alive stays in step
        try:
            url = urlsplit(self.path)
            segments = [unquote(s) for s in url.path.split("/")[1:]]
            query = parse_qs(url.query)
            self._route(method, segments, query)
        except HubError as exc:
            self._error(exc, head=method == "HEAD")
        except OAuthError as exc:
            self._oauth_error(exc)
        except PageError as exc:
            body = ERROR_PAGE.format(status=exc.status, message=html.escape(exc.message))
            self._send(exc.status, body.encode(), "text/html; charset=utf-8", PAGE_HEADERS)
        except (KeyError, ValueError, json.JSONDecodeError) as exc:
            self._error(HubError(400, f"bad request: {exc}"), head=method == "HEAD")

    def _oauth_error(self, exc: OAuthError) -> None:
        headers = {"Cache-Control": "no-store", "Pragma": "no-cache"}
        if exc.status == 401:
            scheme = "Bearer" if exc.error == "invalid_token" else "Basic"
            headers["WWW-Authenticate"] = f'{scheme} realm="hub", error="{exc.error}"'
        body = {"error": exc.error, "error_description": exc.description}
        self._json(body, exc.status, headers)

    do_GET = lambda self: self._dispatch("GET")  # noqa: E731
    do_HEAD = lambda self: self._dispatch("HEAD")  # noqa: E731
    do_POST = lambda self: self._dispatch("POST")  # noqa: E731
    do_DELETE = lambda self: self._dispatch("DELETE")  # noqa: E731

    # -- OpenID Connect (the provider's half of "Sign in with Hugging Face") ------------------------
    def _base(self) -> str:
        """The URL this request reached the server at: the issuer and the back-channel endpoints
        (a container reaches it as http://hub:8123 while the browser uses 127.0.0.1:PORT)."""
        return f"http://{self.headers.get('Host') or f'127.0.0.1:{self.server.server_address[1]}'}"

    def _oidc(self, method: str, seg: list[str], query: dict) -> None:
        base = self._base()
        if seg == [".well-known", "openid-configuration"] and method == "GET":
            public = self.oidc.public_url or base
            return self._json(
                {
                    "issuer": base,
                    "authorization_endpoint": f"{public}/oauth/authorize",
                    "token_endpoint": f"{base}/oauth/token",
                    "userinfo_endpoint": f"{base}/oauth/userinfo",
                    "jwks_uri": f"{base}/oauth/jwks",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "scopes_supported": list(OAUTH_SCOPES),
                    "claims_supported": ["sub", "name", "preferred_username", "profile", "picture"],
                    "token_endpoint_auth_methods_supported": [
                        "client_secret_basic",
                        "client_secret_post",
                    ],
                }
            )
        if seg == ["_test", "oauth-apps"] and method == "POST":  # not a Hub route: an OAuth app
            app = json.loads(self._body() or b"{}")
            registered = self.oidc.register(
                app.get("client_id", ""), app.get("client_secret", ""), app.get("redirect_uris", [])
            )
            return self._json(registered, 201)
        if seg == ["oauth", "authorize"] and method in ("GET", "POST"):
            return self._authorize(method, query)
        if seg == ["oauth", "token"] and method == "POST":
            return self._token(base)
        if seg == ["oauth", "userinfo"] and method in ("GET", "POST"):
            return self._json(self.oidc.userinfo(self.headers.get("Authorization", "")))
        if seg == ["oauth", "jwks"] and method == "GET":
            return self._json({"keys": [self.oidc.jwk]})
        raise HubError(404, f"no route for {method} {self.path}")

    def _authorize(self, method: str, query: dict) -> None:
        """GET: the sign-in page; POST (its form): the person approves, back to the app with a code.
        An unknown client or an unregistered redirect_uri gets an error page, never a redirect."""
        form = query
        if method == "POST":
            form = parse_qs(self._body().decode(), keep_blank_values=True)
        params = {k: (form.get(k) or [""])[0] for k in AUTHORIZE_PARAMS}
        client_id, redirect_uri = params["client_id"], params["redirect_uri"]
        if client_id not in self.oidc.apps:
            raise PageError(400, f"Unknown OAuth app (client_id {client_id!r}).")
        if not self.oidc.redirect_allowed(client_id, redirect_uri):
            raise PageError(400, f"redirect_uri {redirect_uri!r} is not registered for this app.")
        scopes, error = params["scope"].split(), None
        if params["response_type"] != "code":
            error = ("unsupported_response_type", "only response_type=code is supported")
        elif "openid" not in scopes or set(scopes) - set(OAUTH_SCOPES):
            error = ("invalid_scope", f"scope must hold openid, among: {' '.join(OAUTH_SCOPES)}")
        # the redirect_uri is trusted now: the error goes back to the app (RFC 6749 4.1.2.1)
        if error:
            reply = {"error": error[0], "error_description": error[1], "state": params["state"]}
            return self._redirect(redirect_uri, reply)
        if method == "GET":
            hidden = "\n".join(
                f'<input type="hidden" name="{k}" value="{html.escape(v)}">'
                for k, v in params.items()
            )
            page = SIGNIN_PAGE.format(
                client=html.escape(client_id),
                scope=html.escape(params["scope"]),
                redirect=html.escape(redirect_uri),
                hidden=hidden,
            )
            return self._send(200, page.encode(), "text/html; charset=utf-8", PAGE_HEADERS)
        user = (form.get("username") or [""])[0].strip()
        if not USERNAME_RE.match(user):
            raise PageError(400, f"{user!r} is not a valid Hugging Face username.")
        with self.state.lock:
            known = user in self.state.users
        if not known:  # as on the Hub, only an existing account signs in (POST /_test/users)
            raise PageError(401, f"No account named {user!r} on this Hub.")
        grant = {k: params[k] for k in ("client_id", "redirect_uri", "nonce", "scope")}
        code = self.oidc.issue_code(grant, user)
        return self._redirect(redirect_uri, {"code": code, "state": params["state"]})

    def _redirect(self, uri: str, params: dict) -> None:
        parts = urlsplit(uri)
        extra = urlencode({k: v for k, v in params.items() if v})
        location = parts._replace(query="&".join(q for q in (parts.query, extra) if q)).geturl()
        self._send(302, b"", "text/plain", {"Location": location, "Cache-Control": "no-store"})

    def _token(self, issuer: str) -> None:
        form = {k: v[0] for k, v in parse_qs(self._body().decode(), keep_blank_values=True).items()}
        client_id, secret = self._client_credentials(form)
        app = self.oidc.apps.get(client_id)
        if app is None or not hmac.compare_digest(app["secret"].encode(), secret.encode()):
            raise OAuthError(401, "invalid_client", "unknown client or wrong client secret")
        if form.get("grant_type") != "authorization_code":
            raise OAuthError(400, "unsupported_grant_type", "only authorization_code is supported")
        answer = self.oidc.exchange(client_id, form, issuer)
        self._json(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    def _client_credentials(self, form: dict) -> tuple[str, str]:
        """client_secret_basic (form-urlencoded id and secret, RFC 6749 2.3.1) or client_secret_post;
        one of them, not both."""
        auth = self.headers.get("Authorization", "")
        posted = "client_secret" in form
        if auth.startswith("Basic "):
            if posted:
                raise OAuthError(400, "invalid_request", "client credentials sent twice")
            try:
                client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                raise OAuthError(401, "invalid_client", "malformed Basic credentials") from None
            return unquote_plus(client_id), unquote_plus(secret)
        if posted:
            return form.get("client_id", ""), form["client_secret"]
        raise OAuthError(401, "invalid_client", "client authentication is required")

    # -- routes -----------------------------------------------------------------------------------
    def _route(self, method: str, seg: list[str], query: dict) -> None:
        if seg[:1] in (["oauth"], [".well-known"]) or seg == ["_test", "oauth-apps"]:
            return self._oidc(method, seg, query)
        if seg == ["_test", "stats"]:  # not a Hub route: what the tests check about the traffic
            return self._json({"refused_commits": self.state.refused_commits})
        if seg == ["_test", "users"] and method == "POST":  # not a Hub route: make an account
            account = json.loads(self._body() or b"{}")
            with self.state.lock:
                self.state.users[account["user"]] = account
                self.state.save()
            return self._json(account)
        if len(seg) == 4 and seg[:2] == ["api", "users"] and seg[3] == "overview":
            account = self.state.users.get(seg[2])
            if account is None:
                raise HubError(404, "User not found")
            return self._json(
                {
                    "user": account["user"],
                    "fullname": account.get("fullname", account["user"]),
                    "avatarUrl": "",
                    "type": "user",
                    "createdAt": account["createdAt"],
                    "orgs": [
                        {"name": org, "fullname": org, "avatarUrl": ""}
                        for org in account.get("orgs", [])
                    ],
                }
            )
        if seg[:2] == ["api", "whoami-v2"]:
            if not self._authorized():
                raise HubError(401, "Invalid credentials in Authorization header")
            return self._json(
                {
                    "type": "user",
                    "name": "personaboard-test",
                    "auth": {"accessToken": {"role": "write"}},
                }
            )
        if seg[:2] == ["api", "validate-yaml"] and method == "POST":
            self._body()
            return self._json({"errors": [], "warnings": []})
        if seg[:3] == ["api", "repos", "create"] and method == "POST":
            return self._create_repo(json.loads(self._body() or b"{}"))
        if len(seg) >= 4 and seg[0] == "api" and seg[1].rstrip("s") in REPO_TYPES:
            return self._api_repo(method, seg[1][:-1], f"{seg[2]}/{seg[3]}", seg[4:], query)
        # downloads: /{repo}/resolve/... (models) or /{type}s/{repo}/resolve/...
        if len(seg) >= 5 and seg[0] in ("datasets", "spaces") and seg[3] == "resolve":
            return self._resolve(
                method, seg[0][:-1], f"{seg[1]}/{seg[2]}", seg[4], "/".join(seg[5:])
            )
        if len(seg) >= 4 and seg[2] == "resolve":
            return self._resolve(method, "model", f"{seg[0]}/{seg[1]}", seg[3], "/".join(seg[4:]))
        raise HubError(404, f"no route for {method} {self.path}")

    def _create_repo(self, payload: dict) -> None:
        if not self._authorized():
            raise HubError(401, "Invalid credentials in Authorization header")
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or 'personaboard-test'}/{payload['name']}"
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"http://{self.headers.get('Host', '127.0.0.1')}/{prefix}{repo_id}"
        try:
            self.state.create(f"{repo_type}:{repo_id}", private)
        except HubError as exc:  # the Hub names the existing repo's url in its 409
            return self._json(
                {"error": exc.message, "url": url}, exc.status, {"X-Error-Message": exc.message}
            )
        self._json({"url": url, "name": repo_id})

    def _api_repo(
        self, method: str, repo_type: str, repo_id: str, rest: list[str], query: dict
    ) -> None:
        key = f"{repo_type}:{repo_id}"
        with self.state.lock:
            repo = self.state.repo(key, self._authorized())
        action = rest[0] if rest else "info"
        if action in ("info", "revision") and method == "GET":
            revision = rest[1] if action == "revision" and len(rest) > 1 else "main"
            return self._repo_info(repo_type, repo_id, repo, revision)
        if method in ("POST", "DELETE") and action != "paths-info" and not self._authorized():
            raise HubError(401, "Invalid credentials in Authorization header")
        if action == "preupload" and method == "POST":
            payload = json.loads(self._body())
            with self.state.lock:
                _, tree = self.state.tree(repo, rest[1] if len(rest) > 1 else "main")
            files = [
                {
                    "path": f["path"],
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    "oid": tree.get(f["path"]),
                }
                for f in payload["files"]
            ]
            return self._json({"files": files, "commitOid": None})
        if action == "commit" and method == "POST":
            lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
            oid = self.state.apply_commit(key, repo, rest[1] if len(rest) > 1 else "main", lines)
            prefix = "" if repo_type == "model" else f"{repo_type}s/"
            host = self.headers.get("Host", "127.0.0.1")
            return self._json(
                {
                    "success": True,
                    "commitOid": oid,
                    "commitUrl": f"http://{host}/{prefix}{repo_id}/commit/{oid}",
                    "pullRequestUrl": None,
                }
            )
        if action == "tree" and method == "GET":
            with self.state.lock:
                _, tree = self.state.tree(repo, rest[1] if len(rest) > 1 else "main")
            path = "/".join(rest[2:])
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            if (
                path
                and path not in tree
                and not any(p.startswith(path.rstrip("/") + "/") for p in tree)
            ):
                raise HubError(404, f"{path} does not exist", "EntryNotFound")
            return self._json(tree_entries(tree, self.state, path, recursive))
        if action == "paths-info" and method == "POST":
            form = parse_qs(self._body().decode())
            with self.state.lock:
                _, tree = self.state.tree(repo, rest[1] if len(rest) > 1 else "main")
            out = []
            for path in form.get("paths", []):
                if path in tree:
                    out.append(file_entry(path, tree[path], self.state))
                elif any(p.startswith(path.rstrip("/") + "/") for p in tree):
                    out.append(
                        {
                            "type": "directory",
                            "oid": hashlib.sha1(path.encode()).hexdigest(),
                            "size": 0,
                            "path": path,
                        }
                    )
            return self._json(out)
        if action == "refs" and method == "GET":
            with self.state.lock:
                branches = [
                    {"name": n, "ref": f"refs/heads/{n}", "targetCommit": o}
                    for n, o in repo["branches"].items()
                ]
                tags = [
                    {"name": n, "ref": f"refs/tags/{n}", "targetCommit": t["oid"]}
                    for n, t in repo["tags"].items()
                ]
            return self._json(
                {"branches": branches, "tags": tags, "converts": [], "pullRequests": []}
            )
        if action == "commits" and method == "GET":
            with self.state.lock:
                oid = self.state.resolve(repo, rest[1] if len(rest) > 1 else "main")
                history = []
                while oid:
                    commit = repo["commits"][oid]
                    history.append(
                        {
                            "id": oid,
                            "title": commit["title"],
                            "message": commit["message"],
                            "date": commit["date"],
                            "authors": [{"user": "personaboard-test"}],
                        }
                    )
                    oid = commit["parent"]
            return self._json(history)
        if action == "tag" and method == "POST":
            payload = json.loads(self._body() or b"{}")
            with self.state.lock:
                oid = self.state.resolve(repo, rest[1] if len(rest) > 1 else "main")
                if payload["tag"] in repo["tags"]:
                    raise HubError(409, f"Tag {payload['tag']} already exists")
                repo["tags"][payload["tag"]] = {"oid": oid, "message": payload.get("message") or ""}
                self.state.save()
            return self._json({"name": payload["tag"], "targetCommit": oid})
        if action == "tag" and method == "DELETE":
            with self.state.lock:
                if repo["tags"].pop(rest[1], None) is None:
                    raise HubError(404, f"Invalid rev id: {rest[1]}", "RevisionNotFound")
                self.state.save()
            return self._json({})
        raise HubError(404, f"no route for {method} {self.path}")

    def _repo_info(self, repo_type: str, repo_id: str, repo: dict, revision: str) -> None:
        with self.state.lock:
            oid, tree = self.state.tree(repo, revision)
            commit = repo["commits"][oid]
        info = {
            "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24],
            "id": repo_id,
            "author": repo_id.split("/")[0],
            "sha": oid,
            "lastModified": commit["date"],
            "createdAt": repo["created"],
            "private": repo["private"],
            "disabled": False,
            "gated": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [{"rfilename": path} for path in sorted(tree)],
        }
        if repo_type == "model":
            info.update({"modelId": repo_id, **self._model_facts(tree)})
        self._json(info)

    def _model_facts(self, tree: dict) -> dict:
        """What the Hub derives from a model's files: `config` (config.json, with tokenizer_config's
        chat template) and `safetensors` (parameter counts from the files' headers)."""
        facts: dict = {}
        if "config.json" in tree:
            config = json.loads(self.state.blob(tree["config.json"]))
            facts["config"] = {
                k: config[k] for k in ("architectures", "model_type", "auto_map") if k in config
            }
            if "tokenizer_config.json" in tree:
                tokenizer = json.loads(self.state.blob(tree["tokenizer_config.json"]))
                facts["config"]["tokenizer_config"] = {
                    k: v for k, v in tokenizer.items() if k == "chat_template"
                }
        counts: dict[str, int] = {}
        for path, oid in tree.items():
            if path.endswith(".safetensors"):
                data = self.state.blob(oid)
                header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
                for name, meta in header.items():
                    if name != "__metadata__":
                        size = 1
                        for dim in meta["shape"]:
                            size *= dim
                        counts[meta["dtype"]] = counts.get(meta["dtype"], 0) + size
        if counts:
            facts["safetensors"] = {"parameters": counts, "total": sum(counts.values())}
        return facts

    def _resolve(self, method: str, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        if method not in ("GET", "HEAD"):
            raise HubError(405, "method not allowed")
        with self.state.lock:
            repo = self.state.repo(f"{repo_type}:{repo_id}", self._authorized())
            oid, tree = self.state.tree(repo, revision)
        if path not in tree:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        content = self.state.blob(tree[path])
        headers = {"X-Repo-Commit": oid, "ETag": f'"{tree[path]}"', "Accept-Ranges": "none"}
        self._send(200, content, "application/octet-stream", headers, head=method == "HEAD")


def serve(
    port: int,
    data: Path,
    tokens: list[str],
    host: str = "127.0.0.1",
    oauth_clients: Sequence[str] = (),
    public_url: str | None = None,
) -> ThreadingHTTPServer:
    state = HubState(data)
    oidc = OidcProvider(state, list(oauth_clients), public_url)
    bound = {"state": state, "tokens": set(tokens), "oidc": oidc}
    handler = type("BoundHandler", (Handler,), bound)
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


class HubServerProcess:
    """This server in its own process, on a free 127.0.0.1 port, stopped by its PID (tests/conftest.py).

    `kill()` then `start()` restarts it on the same port with the same state folder, as a Hub that
    went down and came back."""

    def __init__(
        self,
        data: Path,
        tokens: list[str],
        log_path: Path,
        oauth_clients: Sequence[str] = (),
        public_url: str | None = None,
    ):
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.data, self.tokens, self.log_path = Path(data), list(tokens), Path(log_path)
        self.url = f"http://127.0.0.1:{self.port}"
        self.oauth_clients, self.public_url = list(oauth_clients), public_url
        self.proc = None

    def start(self, timeout: float = 20.0) -> "HubServerProcess":
        import subprocess
        import sys
        import urllib.error
        import urllib.request

        argv = [sys.executable, __file__, "--port", str(self.port), "--data", str(self.data)]
        for token in self.tokens:
            argv += ["--token", token]
        for client in self.oauth_clients:
            argv += ["--oauth-client", client]
        if self.public_url:
            argv += ["--public-url", self.public_url]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/whoami-v2", timeout=1)
            except urllib.error.HTTPError:  # 401 without a token: it answers
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"hub server did not start: {self.log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.05)

    def stats(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(f"{self.url}/_test/stats", timeout=5) as answer:
            return json.loads(answer.read())

    def _post(self, path: str, payload: dict) -> dict:
        import urllib.request

        request = urllib.request.Request(
            f"{self.url}{path}", data=json.dumps(payload).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def add_account(self, user: str, age_days: float, orgs: tuple[str, ...] = ()) -> dict:
        """An account created `age_days` ago (what GET /api/users/{name}/overview reports); it can
        sign in on the OpenID provider."""
        created = datetime.now(timezone.utc) - timedelta(days=age_days)
        created_at = created.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return self._post(
            "/_test/users", {"user": user, "createdAt": created_at, "orgs": list(orgs)}
        )

    def add_oauth_app(self, client_id: str, secret: str, redirect_uris: list[str]) -> dict:
        return self._post(
            "/_test/oauth-apps",
            {"client_id": client_id, "client_secret": secret, "redirect_uris": redirect_uris},
        )

    def kill(self) -> None:
        """SIGKILL: no goodbye, as a crashed or unplugged server."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                self.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--token", action="append", default=[])
    # 0.0.0.0 only inside a container (tests/test_deploy.py), where other containers reach it by name
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--oauth-client",
        action="append",
        default=[],
        metavar="ID:SECRET[:REDIRECT_URI[,...]]",
        help="an OAuth app the OpenID provider knows (more: POST /_test/oauth-apps)",
    )
    parser.add_argument(
        "--public-url",
        help="the base the browser reaches this server at (authorization_endpoint); the other"
        " endpoints use the URL the app reached the discovery document at",
    )
    args = parser.parse_args()
    server = serve(
        args.port,
        args.data,
        args.token,
        host=args.host,
        oauth_clients=args.oauth_client,
        public_url=args.public_url,
    )
    print(f"hub server on http://{args.host}:{args.port} ({time.strftime('%H:%M:%S')})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
