"""The attacks on a hidden split, replayed over HTTP against a live service: what each learns.

The split is the 200-item Re-Centering relevance split of tests/test_probing.py, installed hidden
(no PUBLIC marker). Each attack is the one that worked before the release rules of
evaluator/release.py were tightened; the test counts the labels it recovers now, per upload, and
asserts the bound docs/security.md states. Figures (run with -s): labels per 100 uploads by attack.

- single-YES precision probe: all NO but one YES, as the first upload of an identity (released
  unconditionally): precision was that item's label.
- group testing: ten YES answers; precision x 10 was their YES count.
- settings: the same probe as the first upload in every other setting (the Ladder was per setting).
- k identities: the same probe once per identity (each its own first release).
- Ladder boundary: an attacker who knows every other label builds an upload exactly on the bar;
  released iff the unknown item is YES. The shaky threshold makes that a near coin flip.
- limit=1 model run, a setting without a model prompt: refused at once (422).
- compare: no p-value or overlap count on a hidden split; hidden and deleted rows answer 404; an
  identity is needed there (401) and each answer takes one of its daily comparisons (429 when spent).
- slow line: the worst line at the 256 KiB limit is refused quickly; health answers meanwhile.
- large Gradio upload: refused (413) before it is read.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx  # noqa: F401
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import run_cli, wait_state  # noqa: E402
from test_probing import N_ITEMS, SUITE, TASK, hidden_fixture, install  # noqa: E402

pytestmark = pytest.mark.slow

K_IDENTITIES = 3
BOUNDARY_PROBES = 10


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


def upload(http: httpx.Client, answers: dict[str, str], model_name: str, setting: str) -> dict:
    body = "".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in answers.items()).encode()
    response = http.post(
        "/api/v1/submissions",
        files={"file": ("p.jsonl", body, "application/x-ndjson")},
        data={"suite": SUITE, "task": TASK, "setting": setting, "model_name": model_name},
    )
    assert response.status_code == 201, response.text
    final = wait_state(http, response.json()["id"], timeout=120)
    assert final["state"] == "finished", final
    return {"id": final["id"], **(final["result"] or {})}


def label_from_precision(result: dict) -> str | None:
    """What the single-YES probe reads: precision 1.0 = YES, 0.0 = NO; None when not released."""
    precision = (result.get("total") or {}).get("precision")
    if result.get("released") is False or precision is None or precision["value"] is None:
        return None
    return "YES" if precision["value"] >= 0.5 else "NO"


def private_ids(svc) -> set[str]:
    """The private part as the service divided it (read with the service's data folder)."""
    import os

    from evaluator.registry import get_task
    from evaluator.splits import private_item_ids

    saved = {k: os.environ.get(k) for k in ("PERSONABOARD_DATA_DIR", "PERSONABOARD_SPLITS_DIR")}
    try:
        for key in saved:
            if svc.env.get(key):
                os.environ[key] = svc.env[key]
            else:
                os.environ.pop(key, None)
        return set(private_item_ids(get_task(SUITE, TASK)))
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def per_100(labels: int, uploads: int) -> float:
    return 100 * labels / max(uploads, 1)


def test_attacks_on_a_hidden_split(svc, tmp_path):
    gold = hidden_fixture(tmp_path / "hidden-split", public=False)
    install(svc, tmp_path / "hidden-split")
    ids = sorted(gold)
    all_no = {i: "NO" for i in ids}
    figures: dict[str, tuple[int, int]] = {}  # attack -> (labels recovered, uploads)

    with svc.http() as http:
        suite = {s["name"]: s for s in http.get("/api/v1/suites").json()["suites"]}[SUITE]
        assert suite["split"]["visibility"] == "hidden"
        task = {t["name"]: t for t in suite["tasks"]}[TASK]
        settings = [s if isinstance(s, str) else s["name"] for s in task.get("settings") or []]
        settings = settings or [s["name"] for s in suite["settings"]]

        # k identities x every setting, each first upload a single-YES probe
        tokens = [svc.add_user(f"sybil-{k}") for k in range(K_IDENTITIES)]
        recovered = uploads = 0
        first_rows = []
        for k, token in enumerate(tokens):
            with svc.http(token=token) as sybil:
                for j, setting in enumerate(settings):
                    probe = ids[k * len(settings) + j]
                    result = upload(sybil, {**all_no, probe: "YES"}, f"sybil-{k}", setting)
                    uploads += 1
                    learned = label_from_precision(result)
                    recovered += learned == gold[probe]
                    if j == 0:
                        assert result.get("released") is not False  # an identity's first result
                        assert set(result["total"]) <= {"accuracy", "yes_rate", "human_yes_rate"}
                        first_rows.append(result["id"])
                        best = result["total"]["accuracy"]["value"]
                    elif result.get("released") is not False:
                        # one Ladder per task: another setting is released only past the shared
                        # best (before, every setting's first result was released unconditionally)
                        value = result["total"]["accuracy"]["value"]
                        assert value >= best + 0.1 - 1e-9, (setting, value, best)
                        best = value
        figures["single-YES probe, k identities x settings"] = (recovered, uploads)

        # group testing: ten YES answers as a fresh identity's first upload
        group = ids[100:110]
        with svc.http(token=svc.add_user("grouper")) as grouper:
            result = upload(
                grouper, {**all_no, **{i: "YES" for i in group}}, "grouper", "zero_shot"
            )
        precision = (result.get("total") or {}).get("precision")
        figures["group testing (10 YES)"] = (
            len(group) if precision is not None else 0,
            1,
        )
        assert precision is None and "human_yes_rate" in result["total"]
        assert result["total"]["human_yes_rate"]["value"] * 10 == pytest.approx(
            round(result["total"]["human_yes_rate"]["value"] * 10)
        )  # on the 0.1 grid of 200 items, not the exact share

        # Ladder boundary, by an attacker who knows every other label and even which items are
        # public (an upper bound: the division is salted with the server's secret)
        public = sorted(set(ids) - private_ids(svc))
        private = sorted(set(ids) - set(public))
        assert len(private) == N_ITEMS // 2  # the manifest's private_fraction, per tier
        probes_public = public[-BOUNDARY_PROBES:]
        known = public[:-BOUNDARY_PROBES]
        right = {i: gold[i] for i in ids}
        wrong = {i: ("NO" if gold[i] == "YES" else "YES") for i in ids}
        with svc.http(token=svc.add_user("climber", predictions=100)) as climber:
            base = {**wrong, **{i: right[i] for i in known[: len(public) * 3 // 10]}}
            first = upload(climber, base, "climber", "zero_shot")
            best, step = first["total"]["accuracy"]["value"], 0.1  # 100 public items: step 0.1
            correct = wrong_guesses = probes = 0
            for probe in probes_public:
                target = round((best + step) * len(public))  # public items right if probe is YES
                if target > len(known):
                    break
                others = known[probes:] + known[:probes]  # a different file every time
                answers = {**wrong, probe: "YES"}
                # built as if the probe were YES: target - 1 other public items right, so the file
                # is exactly on the bar when it is YES and one item below when it is NO
                answers.update({i: right[i] for i in others[: target - 1]})
                result = upload(climber, answers, "climber", "zero_shot")
                probes += 1
                inferred = "YES" if result.get("released") is not False else "NO"
                correct += inferred == gold[probe]
                wrong_guesses += inferred != gold[probe]
                if result.get("released") is not False:
                    best = result["total"]["accuracy"]["value"]
            # the private part does not move the live score at all: flipping its items is invisible
            flips = 0
            for probe in private[:3]:
                result = upload(climber, {**base, probe: right[probe]}, "climber", "zero_shot")
                flips += result.get("released") is not False
        # net labels: right inferences beyond the wrong ones (a coin flip nets 0)
        figures["Ladder boundary, public part (knows all other labels)"] = (
            max(correct - wrong_guesses, 0),
            probes,
        )
        figures["Ladder boundary, private part"] = (flips, 3)
        assert probes >= 5 and correct < probes, (correct, probes)  # deterministic bar: all right
        assert flips == 0

        # a limit=1 model run and a setting with no model prompt: refused at once
        for body, field in (
            (
                {
                    "model": "someone/any-model",
                    "suite": SUITE,
                    "task": TASK,
                    "setting": "zero_shot",
                    "limit": 1,
                },
                "limit",
            ),
            (
                {"model": "someone/any-model", "suite": SUITE, "task": TASK, "setting": "default"},
                "setting",
            ),
        ):
            response = http.post("/api/v1/submissions", json=body)
            assert response.status_code == 422, response.text
            assert response.json()["detail"]["problems"][0]["field"] == field
        figures["limit=1 model run"] = (0, 1)

        # compare: released values only, no p-value or counts; hidden and deleted rows are 404
        a, b = first_rows[0], first_rows[1]
        response = http.get("/api/v1/compare", params={"a": a, "b": b})
        assert response.status_code == 200, response.text
        compared = response.json()
        assert compared["p_value"] is None and compared["n"] is None and not compared["paired"]
        rows = {r: http.get(f"/api/v1/submissions/{r}").json() for r in (a, b)}
        assert compared["difference"] == pytest.approx(
            rows[a]["result"]["total"]["accuracy"]["value"]
            - rows[b]["result"]["total"]["accuracy"]["value"]
        )
        # metered like submissions: no identity 401, a spent daily budget 429, per identity
        with svc.http(token="") as anonymous:
            refused = anonymous.get("/api/v1/compare", params={"a": a, "b": b})
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert "hidden split needs an identity" in refused.json()["detail"]["message"]
            bad = anonymous.get(
                "/api/v1/compare", params={"a": a, "b": b}, headers={"Authorization": "Bearer x"}
            )
            assert bad.status_code == 401, bad.text
        with svc.http(token=svc.add_user("comparer", comparisons=2)) as comparer:
            # a refused comparison (a row that is not there) takes none of the budget
            assert comparer.get("/api/v1/compare", params={"a": a, "b": "nope"}).status_code == 404
            answers = [comparer.get("/api/v1/compare", params={"a": a, "b": b}) for _ in range(3)]
            assert [r.status_code for r in answers] == [200, 200, 429], [r.text for r in answers]
            spent = answers[2].json()["detail"]
            assert (spent["quota"], spent["limit"], spent["used"]) == ("comparisons", 2, 2)
            assert int(answers[2].headers["retry-after"]) == spent["retry_after_s"] > 0
        # the model page's compare form on a hidden split posts the API token (never in the URL)
        page = f"/model/{quote(rows[a]['model_name'], safe='')}"
        form = http.get(page).text
        form = form[form.index(f'data-a="{a}"') - 200 :]
        form = form[: form.index("</form>")]
        assert 'method="post"' in form and 'type="password" name="token"' in form
        asked = http.get(page, params={"a": a, "b": b})  # the address alone: no identity
        assert "No comparison: a comparison on a hidden split needs an identity" in asked.text
        posted = {"a": a, "b": b}
        wrong = http.post(page, data={**posted, "token": "pb_wrong"})
        assert "No comparison: the API token is not valid" in wrong.text
        # the same as the API: no interval, p-value or counts, said why
        shown = http.post(page, data={**posted, "token": svc.token})
        assert shown.status_code == 200, shown.text
        comparison = shown.text[shown.text.index('id="comparison"') :]
        assert "withheld on a hidden split" in comparison and "None" not in comparison
        assert "p-value</th>" not in comparison and svc.token not in shown.text
        figures["compare p-values"] = (0, 1)
        with svc.http(token=svc.admin_token) as admin:
            for action, row in (("hide", first_rows[1]), ("delete", first_rows[2])):
                done = admin.post(
                    f"/api/v1/admin/submissions/{row}/{action}", json={"reason": "attack test"}
                )
                assert done.status_code == 200, done.text
                response = http.get("/api/v1/compare", params={"a": a, "b": row})
                assert response.status_code == 404, (action, response.text)
                page = http.get(f"/model/sybil-0?a={a}&b={row}")
                assert page.status_code in (200, 404) and page.status_code != 500
                if page.status_code == 200:  # the page says there is no comparison, nothing more
                    assert "No comparison" in page.text and "Difference (A" not in page.text

        # the slow line: the worst line at the 256 KiB limit, 40 of them (10 MiB), refused in
        # bounded time while health keeps answering (it stalled for 27.5 s on one 100 KB line)
        line = '"' + '\\"' * ((256 * 1024 - 42) // 2) + "[" * 40 + "\n"
        health_waits: list[float] = []
        done = threading.Event()

        def probe_health() -> None:
            with svc.http(token="") as prober:
                while not done.is_set():
                    asked = time.monotonic()
                    assert prober.get("/api/v1/health").status_code == 200
                    health_waits.append(time.monotonic() - asked)
                    time.sleep(0.02)

        prober = threading.Thread(target=probe_health)
        prober.start()
        started = time.monotonic()
        try:
            response = http.post(
                "/api/v1/submissions",
                files={"file": ("slow.jsonl", line.encode() * 40, "application/x-ndjson")},
                data={"suite": SUITE, "task": TASK, "setting": "zero_shot", "model_name": "slow"},
            )
        finally:
            refused_in = time.monotonic() - started
            done.set()
            prober.join(timeout=30)
        # generous bounds (a shared 2-core machine): the refusal is linear, ~1 s of CPU per 256 KiB
        # line at worst, and health is answered throughout (a held interpreter lock stalled it 27 s)
        assert response.status_code == 422 and refused_in < 30, (response.status_code, refused_in)
        problem = response.json()["detail"]["problems"][0]
        assert problem["count"] == 40 and problem["lines"] == [1, 2, 3, 4, 5]  # said once
        assert health_waits and max(health_waits) < 2.5, max(health_waits or [0])
        figures_timing = (refused_in, max(health_waits), len(health_waits))

        # a Gradio upload over the size limit: refused before it is read
        big = svc.env.get("PERSONABOARD_MAX_UPLOAD_BYTES")
        limit = int(big) if big else 64 * 1024 * 1024
        response = http.post(
            "/gradio_api/upload",
            files={"files": ("big.jsonl", b"0" * (limit + 1024 * 1024), "application/x-ndjson")},
        )
        assert response.status_code == 413, response.status_code
        # and the same identity as the submit tabs: anonymous uploads are refused, tokens work
        small = {"files": ("p.jsonl", b'{"id": "h000", "answer": "NO"}\n', "application/x-ndjson")}
        with svc.http(token="") as anonymous:
            assert anonymous.post("/gradio_api/upload", files=small).status_code == 401
            anonymous.cookies.set("pb_upload_token", svc.token)  # what the token field sets
            assert anonymous.post("/gradio_api/upload", files=small).is_success
        assert http.post("/gradio_api/upload", files=small).is_success

        # the operator names a release: every published result re-ranked on the private part, once
        proc = run_cli("release", "final-1", env=svc.env)
        assert proc.returncode == 0, proc.stderr
        reranked = set(json.loads(proc.stdout)["reranked_on_private_part"])
        rows = http.get(
            "/api/v1/leaderboard", params={"suite": SUITE, "task": TASK, "complete": "true"}
        ).json()
        shown = {r["submission_id"]: r for r in rows}
        assert reranked and reranked <= set(shown)
        for sid in reranked:
            row = shown[sid]
            assert row["part/public"] == row["total"] and row["part/private"] is not None
            assert round(row["part/private"] / 0.1, 9) == round(row["part/private"] / 0.1)
        again = run_cli("release", "final-2", env=svc.env)
        assert again.returncode == 0 and json.loads(again.stdout)["reranked_on_private_part"] == []

    print(f"\nattacks on a hidden {N_ITEMS}-item split (labels recovered per 100 uploads):")
    for attack, (labels, n) in figures.items():
        print(f"  {attack}: {labels} labels in {n} uploads = {per_100(labels, n):.0f} per 100")
    print(
        f"  slow lines (40 x 256 KiB): refused in {figures_timing[0]:.2f} s; health answered "
        f"{figures_timing[2]} times meanwhile, slowest {1000 * figures_timing[1]:.0f} ms"
    )
    assert figures["single-YES probe, k identities x settings"][0] == 0
    assert figures["group testing (10 YES)"][0] == 0
