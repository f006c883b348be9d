"""Model resolution: the operator's local registry (tiny model folders) and Hub ids, against
offline mode and a small fake Hub HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiny_models import build_tiny_model  # noqa: E402

from evaluator.models import (  # noqa: E402
    HubUnreachable,
    ModelError,
    ModelRegistry,
    folder_hash,
    resolve_hub_model,
    resolve_model,
)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "generative": build_tiny_model(root / "gen", "generative"),
        "reward": build_tiny_model(root / "rew", "reward"),
    }


def copy_with(
    folder: Path, target: Path, config_changes: dict | None = None, drop: tuple[str, ...] = ()
) -> Path:
    shutil.copytree(folder, target)
    if config_changes:
        config = json.loads((target / "config.json").read_text())
        config.update(config_changes)
        (target / "config.json").write_text(json.dumps(config))
    for name in drop:
        (target / name).unlink()
    if "chat_template.jinja" in drop:  # the template may also sit in tokenizer_config.json
        tok = json.loads((target / "tokenizer_config.json").read_text())
        tok.pop("chat_template", None)
        (target / "tokenizer_config.json").write_text(json.dumps(tok))
    return target


# -- local registry --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,cls", [("generative", "LlamaForCausalLM"), ("reward", "LlamaForSequenceClassification")]
)
def test_registry_add_detects_type_revision_parameters_template(folders, tmp_path, kind, cls):
    import torch  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    folder = folders[kind]
    assert json.loads((folder / "config.json").read_text())["architectures"] == [cls]
    registry = ModelRegistry(tmp_path / "data")
    entry = registry.add("tiny", folder)
    assert entry["model_type"] == kind
    assert entry["revision"].startswith("sha256:") and len(entry["revision"]) == len("sha256:") + 64
    assert entry["revision"] == folder_hash(folder)
    model_class = AutoModelForSequenceClassification if kind == "reward" else AutoModelForCausalLM
    model = model_class.from_pretrained(folder)
    assert entry["parameters"] == sum(p.numel() for p in model.parameters())
    assert entry["has_chat_template"] is True
    assert entry["path"] == str(folder.resolve())
    assert registry.get("tiny") == entry and set(registry.all()) == {"tiny"}
    resolved = resolve_model("tiny", None, "auto", registry)
    assert (resolved.source, resolved.model_type, resolved.revision, resolved.path) == (
        "local",
        kind,
        entry["revision"],
        entry["path"],
    )


def test_registry_revision_changes_with_the_files(folders, tmp_path):
    copy = copy_with(folders["generative"], tmp_path / "gen-copy")
    registry = ModelRegistry(tmp_path / "data")
    before = registry.add("m", copy)["revision"]
    (copy / "generation_config.json").write_text("{}")
    assert registry.add("m", copy)["revision"] != before


def test_registry_refuses_remote_code_and_non_model_folders(folders, tmp_path):
    registry = ModelRegistry(tmp_path / "data")
    remote = copy_with(
        folders["generative"],
        tmp_path / "remote",
        {"auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}},
    )
    with pytest.raises(ModelError, match="remote code"):
        registry.add("remote", remote)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="config.json"):
        registry.add("empty", empty)
    with pytest.raises(ModelError, match="not a folder"):
        registry.add("missing", tmp_path / "nope")
    assert registry.all() == {}


def test_resolve_local_checks_type_revision_and_template(folders, tmp_path):
    registry = ModelRegistry(tmp_path / "data")
    registry.add("gen", folders["generative"])
    registry.add("rm", folders["reward"])
    with pytest.raises(ModelError, match="reward"):
        resolve_model("gen", None, "reward", registry)
    with pytest.raises(ModelError, match="generative"):
        resolve_model("rm", None, "generative", registry)
    with pytest.raises(ModelError, match="model_type"):
        resolve_model("gen", None, "classifier", registry)
    with pytest.raises(ModelError, match="revision"):
        resolve_model("gen", "sha256:" + "0" * 64, "auto", registry)
    with pytest.raises(ModelError, match="required"):
        resolve_model("  ", None, "auto", registry)
    assert resolve_model("gen", "main", "generative", registry).model_type == "generative"
    no_template = copy_with(folders["generative"], tmp_path / "bare", drop=("chat_template.jinja",))
    entry = registry.add("bare", no_template)
    assert entry["has_chat_template"] is False
    with pytest.raises(ModelError, match="chat template"):
        resolve_model("bare", None, "auto", registry)


# -- the Hub ---------------------------------------------------------------------------------------


def test_hub_offline_is_unreachable_503(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubUnreachable) as caught:
        resolve_hub_model("HuggingFaceTB/SmolLM2-135M-Instruct", None, "auto")
    assert caught.value.status == 503
    assert "Hub cannot be reached" in str(caught.value)
    # through resolve_model too, for a name the registry does not know
    with pytest.raises(HubUnreachable):
        resolve_model("someone/some-model", None, "auto", ModelRegistry(tmp_path))


SHA = "0123456789abcdef0123456789abcdef01234567"
REPOS = {
    "org/chat-model": {
        "siblings": ["config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"],
        "config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
        "license": "apache-2.0",
        "total": 135_000_000,
    },
    "org/reward-model": {
        "siblings": ["config.json", "model.safetensors", "tokenizer.json"],
        "config": {"architectures": ["LlamaForSequenceClassification"]},
        "license": "mit",
        "total": 1_000_000,
    },
    "org/remote-code": {
        "siblings": ["config.json", "modeling_x.py", "chat_template.jinja"],
        "config": {
            "architectures": ["XForCausalLM"],
            "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"},
        },
        "license": "mit",
        "total": 10,
    },
    "org/base-model": {
        "siblings": ["config.json", "model.safetensors", "tokenizer.json"],
        "config": {"architectures": ["LlamaForCausalLM"]},
        "license": "mit",
        "total": 10,
    },
}


class FakeHub(BaseHTTPRequestHandler):
    requests: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802
        FakeHub.requests.append(self.path)
        path = unquote(self.path.split("?", 1)[0])
        prefix = "/api/models/"
        repo = path[len(prefix) :].split("/revision/")[0] if path.startswith(prefix) else ""
        spec = REPOS.get(repo)
        if spec is None:
            body = json.dumps({"error": "Repository not found"}).encode()
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("X-Error-Message", "Repository not found")
        else:
            body = json.dumps(
                {
                    "id": repo,
                    "modelId": repo,
                    "sha": SHA,
                    "private": False,
                    "siblings": [{"rfilename": name} for name in spec["siblings"]],
                    "config": spec["config"],
                    "cardData": {"license": spec["license"]},
                    "safetensors": {"parameters": {"F32": spec["total"]}, "total": spec["total"]},
                }
            ).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake_hub(monkeypatch):
    from huggingface_hub import constants

    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for proxy in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    FakeHub.requests = []
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()


def test_hub_resolution_pins_sha_license_parameters(fake_hub):
    resolved = resolve_hub_model("org/chat-model", "main", "auto")
    assert FakeHub.requests and FakeHub.requests[0].startswith(
        "/api/models/org/chat-model/revision/main"
    )
    assert (resolved.source, resolved.revision, resolved.model_type) == ("hub", SHA, "generative")
    assert resolved.license == "apache-2.0"
    assert resolved.parameters == 135_000_000
    assert resolved.has_chat_template is True and resolved.path is None
    reward = resolve_hub_model("org/reward-model", None, "auto")
    assert (reward.model_type, reward.revision, reward.license, reward.parameters) == (
        "reward",
        SHA,
        "mit",
        1_000_000,
    )
    # a reward model needs no chat template
    assert (
        resolve_model(
            "org/reward-model", None, "reward", ModelRegistry(Path("/nonexistent-pb"))
        ).model_type
        == "reward"
    )


def test_hub_resolution_refusals(fake_hub, tmp_path):
    registry = ModelRegistry(tmp_path)
    with pytest.raises(ModelError, match="remote code") as caught:
        resolve_model("org/remote-code", None, "auto", registry)
    assert caught.value.status == 422
    with pytest.raises(ModelError, match="chat template"):
        resolve_model("org/base-model", None, "auto", registry)
    with pytest.raises(ModelError, match="no model") as caught:
        resolve_model("org/does-not-exist", None, "auto", registry)
    assert caught.value.status == 422 and not isinstance(caught.value, HubUnreachable)
    with pytest.raises(ModelError, match="reward"):
        resolve_model("org/chat-model", None, "reward", registry)


def test_hub_server_down_is_unreachable(monkeypatch):
    import socket

    from huggingface_hub import constants

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(HubUnreachable) as caught:
        resolve_hub_model("org/chat-model", None, "auto")
    assert caught.value.status == 503
