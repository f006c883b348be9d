"""No path from the UI to the server's files , over Gradio's own HTTP API.

Every Gradio event of the app is called through /gradio_api/call/<name> with a FileData naming a
server file (/etc/passwd, another submission's stored upload, a missing path, a path inside the
upload folder that was never uploaded, the upload route's alias of such paths) in each of its inputs in turn. Each answer must quote no
line of that file and name no server path (a dropdown may echo the value the client itself sent),
a missing path must get the same answer as an existing one (no existence oracle), the submit
event must answer with its refusal, and nothing may be queued.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import explicit_only, reordered, submit_ok  # noqa: E402

pytestmark = pytest.mark.service

PLACEHOLDER = "<PATH>"


def file_data(path: str) -> dict:
    return {"path": path, "orig_name": "predictions.jsonl", "meta": {"_type": "gradio.FileData"}}


def call(http: httpx.Client, name: str, data: list) -> str:
    """POST /gradio_api/call/<name>, then read its event stream to the end; the whole answer as text."""
    started = http.post(f"/gradio_api/call/{name}", json={"data": data})
    if started.status_code != 200:
        return f"HTTP {started.status_code}: {started.text}"
    event_id = started.json()["event_id"]
    with http.stream("GET", f"/gradio_api/call/{name}/{event_id}") as stream:
        return f"HTTP {stream.status_code}: " + "".join(stream.iter_text())


@pytest.fixture(scope="module")
def svc(shared_live_service):
    """The session's service: the test counts submissions before and after, so others' do no harm."""
    return shared_live_service


def test_every_event_refuses_foreign_paths(svc):
    with svc.http() as http:
        # answers of its own: the shared service may hold explicit_only() from another module
        stored_id = submit_ok(http, reordered(explicit_only().body, 41), model_name="someone-else")
        stored = next((svc.data_dir / "uploads").glob(f"{stored_id}*"))
        upload_root = svc.data_dir / "gradio-uploads"
        foreign = {
            "/etc/passwd": Path("/etc/passwd").read_text().splitlines(),
            str(stored): stored.read_text().splitlines(),
            "/nonexistent/predictions.jsonl": [],
            str(
                upload_root / "0123abcd" / "predictions.jsonl"
            ): [],  # inside the upload folder, never uploaded
            # the alias the upload route answers with (space/uploads.py), climbing out, and unused
            "upload/" + "../" * 24 + "etc/passwd": Path("/etc/passwd").read_text().splitlines(),
            "upload/0123abcd/predictions.jsonl": [],
        }
        info = http.get("/gradio_api/info").json()
        endpoints = {
            name.lstrip("/"): spec["parameters"] for name, spec in info["named_endpoints"].items()
        }
        assert "submit" in endpoints, sorted(endpoints)
        before = len(http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"])

        checked = 0
        for name, parameters in endpoints.items():
            for slot in range(len(parameters)):
                answers = {}
                # the submit event gets every kind of path; the others an existing/missing pair (bounded)
                paths = foreign if name == "submit" else dict(list(foreign.items())[::2])
                for path, lines in paths.items():
                    data = [
                        p.get("parameter_default") if p.get("parameter_has_default") else None
                        for p in parameters
                    ]
                    if (
                        name == "submit"
                    ):  # everything else valid (a real identity too): only the file is wrong
                        data[1:5] = ["prefeval", "mcq", "zero_shot", "path-prober"]
                        data[7:8] = [svc.token] if len(data) > 7 else []
                    data[slot] = file_data(path)
                    answer = call(http, name, data)
                    quoted = [line for line in lines if len(line) > 8 and line in answer]
                    assert not quoted, (name, slot, path, quoted[:2], answer[:500])
                    answers[path] = answer.replace(path, PLACEHOLDER)
                    # the client's own value may be echoed back (a dropdown's "not in the list of
                    # choices"); no other server path may appear: not the data folder, not the upload folder
                    assert (
                        str(svc.data_dir) not in answers[path] and "/etc/" not in answers[path]
                    ), answers[path]
                    checked += 1
                    if name == "submit" and slot == 0:
                        # Gradio's own check answers first (a bare error); ours (space/uploads.py, unit
                        # tested) stands behind it: either way a refusal naming nothing
                        ours = "only a file uploaded through this page" in answer
                        assert (
                            ours
                            or answer.strip() == 'HTTP 200: event: error\ndata: {"error": null}'
                        ), answer[:500]
                        assert path not in answer, answer
                # an existing and a missing path (outside the upload folder) get the same answer: no oracle
                outside = {
                    answers[p] for p in list(paths)[:3] if not p.startswith(str(upload_root))
                }
                assert len(outside) == 1, (name, slot, answers)
        after = len(http.get("/api/v1/submissions", params={"limit": 1000}).json()["submissions"])
        assert after == before, "a foreign path was accepted as a submission"
        assert checked >= 2 * len(endpoints)
        print(
            f"\n{checked} calls over {len(endpoints)} Gradio events: all refused, no line quoted, "
            f"no server path named (beyond the caller's own value echoed), no existence oracle"
        )


def test_an_unknown_page_parameter_is_a_404_not_a_500(svc):
    # Gradio's own route raised KeyError (500) for a page the app does not have
    with svc.http() as http:
        assert (
            http.get("/", params={"page": ""}).status_code == 200
        )  # Gradio's name of the one page
        for name in ("2", "<b>x</b>"):
            answer = http.get("/", params={"page": name})
            assert answer.status_code == 404, answer.text[:200]
            assert "no page named" in answer.text and "<b>x</b>" not in answer.text
        assert http.head("/?page=2").status_code == 404
        assert http.get("/", params={"tab": "items", "pg": "2"}).status_code == 200
