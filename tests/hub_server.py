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
import json
import os
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

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


class Handler(BaseHTTPRequestHandler):
    server_version = "PersonaBoardTestHub/1"
    protocol_version = "HTTP/1.1"
    state: HubState
    tokens: set[str]

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
        except (KeyError, ValueError, json.JSONDecodeError) as exc:
            self._error(HubError(400, f"bad request: {exc}"), head=method == "HEAD")

    do_GET = lambda self: self._dispatch("GET")  # noqa: E731
    do_HEAD = lambda self: self._dispatch("HEAD")  # noqa: E731
    do_POST = lambda self: self._dispatch("POST")  # noqa: E731
    do_DELETE = lambda self: self._dispatch("DELETE")  # noqa: E731

    # -- routes -----------------------------------------------------------------------------------
    def _route(self, method: str, seg: list[str], query: dict) -> None:
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


def serve(port: int, data: Path, tokens: list[str], host: str = "127.0.0.1") -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"state": HubState(data), "tokens": set(tokens)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


class HubServerProcess:
    """This server in its own process, on a free 127.0.0.1 port, stopped by its PID (tests/conftest.py).

    `kill()` then `start()` restarts it on the same port with the same state folder, as a Hub that
    went down and came back."""

    def __init__(self, data: Path, tokens: list[str], log_path: Path):
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.data, self.tokens, self.log_path = Path(data), list(tokens), Path(log_path)
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self, timeout: float = 20.0) -> "HubServerProcess":
        import subprocess
        import sys
        import urllib.error
        import urllib.request

        argv = [sys.executable, __file__, "--port", str(self.port), "--data", str(self.data)]
        for token in self.tokens:
            argv += ["--token", token]
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
    args = parser.parse_args()
    server = serve(args.port, args.data, args.token, host=args.host)
    print(f"hub server on http://{args.host}:{args.port} ({time.strftime('%H:%M:%S')})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
