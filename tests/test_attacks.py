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

import contextlib
import json
import math
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx  # noqa: F401
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_helpers import run_cli, wait_state, wait_until  # noqa: E402
from test_probing import N_ITEMS, SUITE, TASK, hidden_fixture, install  # noqa: E402

pytestmark = pytest.mark.slow

K_IDENTITIES = 3
BOUNDARY_PROBES = 10


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


@pytest.fixture(scope="module")
def gold(svc, tmp_path_factory) -> dict[str, str]:
    """The hidden 200-item split, installed once for the module: {item id: YES/NO}."""
    folder = tmp_path_factory.mktemp("attacks") / "hidden-split"
    labels = hidden_fixture(folder, public=False)
    install(svc, folder)
    return labels


def everything_shown(svc, http: httpx.Client) -> dict[str, object]:
    """Every view of the task's rows that anyone can read through the service: the API's board in
    each format, the overview, the plots (the dataset's files: `dataset_rows_of`)."""
    shown: dict[str, object] = {}
    for fmt in ("json", "csv", "parquet"):
        response = http.get(
            "/api/v1/leaderboard",
            params={"suite": SUITE, "task": TASK, "complete": "true", "format": fmt},
        )
        assert response.status_code == 200, response.text
        shown[f"leaderboard.{fmt}"] = response.content
    overview = http.get("/api/v1/overview", params={"suite": SUITE})
    assert overview.status_code == 200, overview.text
    shown["overview"] = overview.content
    for plot in ("tiers", "settings", "size"):
        figure = http.get(f"/plots/{plot}.json", params={"suite": SUITE, "task": TASK})
        assert figure.status_code == 200, figure.text
        shown[f"plots/{plot}"] = figure.content
    return shown


def dataset_rows_of(svc, submission_ids: set[str]) -> list[str]:
    """The results dataset's files (records, tables, boards; requests/ apart) that hold a row or a
    record of any of `submission_ids`. Its other files change meanwhile for reasons of their own
    (boards rewritten in batches after the service starts)."""
    dataset = svc.data_dir / "results-dataset"
    found = []
    for path in sorted(dataset.rglob("*")):
        parts = path.relative_to(dataset).parts
        if ".git" in parts or parts[0] == "requests" or not path.is_file():
            continue
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
            held = set(frame["submission_id"]) if "submission_id" in frame else set()
        else:
            text = path.read_text(errors="replace")
            held = {sid for sid in submission_ids if sid in text}
        if held & submission_ids:
            found.append(str(path.relative_to(dataset)))
    return found


def request_record(svc, submission_id: str) -> dict:
    """The submission's record in the dataset's requests/ folder (once the publisher wrote it)."""
    from leaderboard.layout import result_path

    path = svc.data_dir / "results-dataset" / result_path(SUITE, TASK, submission_id, "requests")

    def final() -> dict | None:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):  # not there yet, or being written
            return None
        return record if record["status"] != "queued" else None

    return wait_until(final, 120, f"the final request record of {submission_id}")


def test_single_yes_first_releases_teach_nothing(svc, gold):
    """Over HTTP: 30 fresh identities, each one first upload of all NO but one
    YES (15 items of the public part, 15 of the private): every field each is told is the same
    for all, and no view anyone can read changes (nothing is published). Before, a first release
    was unconditional and a tier cell's rounded interval bound taught 8 labels in 60 uploads,
    `yes_rate`'s rounded bound the part of 60 items in 60. tests/test_hidden_release.py runs the
    same attack in process for every suite with a hidden split."""
    ids = sorted(gold)
    private = private_ids(svc)
    probes = [i for i in ids if i not in private][:15] + [i for i in ids if i in private][:15]
    with svc.http() as http:
        before = everything_shown(svc, http)
        told = []
        for k, probe in enumerate(probes):
            with svc.http(token=svc.add_user(f"fresh-{k}")) as fresh:
                answers = {**{i: "NO" for i in ids}, probe: "YES"}
                told.append(upload(fresh, answers, f"fresh-{k}", "zero_shot"))
        after = everything_shown(svc, http)
    fields = {f for result in told for f in result if f != "id"}
    varying = sorted(f for f in fields if len({json.dumps(r.get(f)) for r in told}) > 1)
    assert not varying, (varying, told[:2])  # labels learned 0, parts learned 0
    assert told[0]["released"] is False and "total" not in told[0]
    assert {gold[p] for p in probes} == {"YES", "NO"}  # the probes hold both labels
    changed = sorted(view for view in before if before[view] != after[view])
    assert not changed, changed
    assert dataset_rows_of(svc, {r["id"] for r in told}) == []
    # each submission's public request record: the same status for all 30, no score
    statuses = {json.dumps(request_record(svc, r["id"])["status"]) for r in told}
    assert statuses == {'"finished"'}, statuses


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


def disagreeing(rows: list[dict]) -> list[str]:
    """The order of the two rows built to disagree, as a view lists them."""
    return [r["model_name"] for r in rows if r["model_name"] in ("public-strong", "private-strong")]


def per_100(labels: int, uploads: int) -> float:
    return 100 * labels / max(uploads, 1)


def good_file(gold: dict[str, str], items: list[str], right_share: float) -> dict[str, str]:
    """Right on the first `right_share` of `items` and on every other item, wrong on the rest."""
    flip = {"YES": "NO", "NO": "YES"}
    wrong = set(items[round(right_share * len(items)) :])
    return {i: (flip[g] if i in wrong else g) for i, g in gold.items()}


def test_attacks_on_a_hidden_split(svc, gold):
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
                    # under the first-release floor in every setting: one Ladder per task
                    assert result["released"] is False and "total" not in result, result
                # then a good file: released, as one number (the compare rows below)
                result = upload(
                    sybil, good_file(gold, ids, 0.9 - 0.05 * k), f"sybil-{k}", "zero_shot"
                )
                assert result.get("released") is not False, result
                assert set(result["total"]) == {"accuracy"} and result["tiers"] == {}
                first_rows.append(result["id"])
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
        assert precision is None and result["released"] is False  # under the floor

        # Ladder boundary, by an attacker who knows every other label and even which items are
        # public (an upper bound: the division is salted with the server's secret)
        public = sorted(set(ids) - private_ids(svc))
        private = sorted(set(ids) - set(public))
        assert len(private) == N_ITEMS // 2  # the manifest's private_fraction, per tier
        probes_public = public[-BOUNDARY_PROBES:]
        known = public[:-BOUNDARY_PROBES]
        right = {i: gold[i] for i in ids}
        wrong = {i: ("NO" if gold[i] == "YES" else "YES") for i in ids}
        # a first release must clear the majority line by a (shaky) step: start well above it
        majority = max(sum(gold[i] == v for i in public) for v in ("YES", "NO")) / len(public)
        base_right = math.ceil((majority + 0.2) * len(public))
        assert base_right < len(known)
        base = {**wrong, **{i: right[i] for i in known[:base_right]}}
        step = 0.1  # 100 public items
        correct = wrong_guesses = probes = flips = flip_tries = 0
        with contextlib.ExitStack() as clients:
            best = climber = None
            for probe in probes_public:
                if best is None or round((best + step) * len(public)) > len(known):
                    # the top is reached: a new identity starts from the base again
                    name = f"climber-{probes}"
                    climber = clients.enter_context(
                        svc.http(token=svc.add_user(name, predictions=100))
                    )
                    first = upload(climber, base, name, "zero_shot")
                    best = first["total"]["accuracy"]["value"]
                    # the private part does not move the live score: flipping its items is
                    # invisible (the same public score shows its submitter the same number)
                    for flipped in private[probes : probes + 1]:
                        again = upload(
                            climber, {**base, flipped: right[flipped]}, name, "zero_shot"
                        )
                        flips += again.get("released") is not False
                        flip_tries += 1
                target = round((best + step) * len(public))  # public items right if probe is YES
                others = known[probes:] + known[:probes]  # a different file every time
                answers = {**wrong, probe: "YES"}
                # built as if the probe were YES: target - 1 other public items right, so the file
                # is exactly on the bar when it is YES and one item below when it is NO
                answers.update({i: right[i] for i in others[: target - 1]})
                result = upload(climber, answers, name, "zero_shot")
                probes += 1
                inferred = "YES" if result.get("released") is not False else "NO"
                correct += inferred == gold[probe]
                wrong_guesses += inferred != gold[probe]
                if result.get("released") is not False:
                    best = result["total"]["accuracy"]["value"]
        # net labels: right inferences beyond the wrong ones (a coin flip nets 0)
        figures["Ladder boundary, public part (knows all other labels)"] = (
            max(correct - wrong_guesses, 0),
            probes,
        )
        figures["Ladder boundary, private part"] = (flips, flip_tries)
        assert probes == BOUNDARY_PROBES and correct < probes, (correct, probes)  # exact bar: all
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
        stored = http.post("/gradio_api/upload", files=small)
        # the answer names no server path: an alias the page sends back and links to
        shown = stored.json()[0]
        assert stored.is_success and shown.startswith("upload/"), stored.text
        assert str(svc.data_dir) not in stored.text and "gradio-uploads" not in stored.text
        assert http.get(f"/gradio_api/file={shown}").content == small["files"][1]

        # rows built to disagree: one right on every public item and wrong on
        # every private one, one right on every private item and just over the floor on the
        # public part; live they rank by the public part, from the named release by the private
        public_strong = good_file(gold, private, 0.0)
        private_strong = {
            **good_file(gold, ids, 0.0),
            **{i: right[i] for i in private + known[:base_right]},
        }
        for name, answers in (("public-strong", public_strong), ("private-strong", private_strong)):
            with svc.http(token=svc.add_user(name)) as client:
                assert upload(client, answers, name, "zero_shot").get("released") is not False
        board = {"suite": SUITE, "task": TASK, "setting": "zero_shot", "complete": "true"}
        live = http.get("/api/v1/leaderboard", params=board).json()
        assert disagreeing(live) == ["public-strong", "private-strong"]
        assert {r["ranked_on"] for r in live if r["row_kind"] == "computed"} == {"public"}

        # the operator names a release: every published result re-ranked on the private part, once
        proc = run_cli("release", "final-1", env=svc.env)
        assert proc.returncode == 0, proc.stderr
        released = json.loads(proc.stdout)
        reranked = set(released["reranked_on_private_part"])
        for view in ({}, {"revision": released["revision"]}):  # the default board and the release's
            rows = http.get("/api/v1/leaderboard", params={**board, **view}).json()
            assert disagreeing(rows) == ["private-strong", "public-strong"], view
            shown = {r["submission_id"]: r for r in rows}
            assert reranked and reranked <= set(shown) | set(first_rows)
            for sid in reranked & set(shown):
                row = shown[sid]
                assert row["ranked_on"] == "private" and row["part/private"] == row["total"]
                assert row["part/public"] is not None
                assert round(row["total"] / 0.1, 9) == round(row["total"] / 0.1)  # the 0.1 grid
        csv = http.get("/api/v1/leaderboard", params={**board, "format": "csv"}).text
        assert csv.index("private-strong") < csv.index("public-strong")
        # the results dataset's board file, rewritten at the release
        board_file = svc.data_dir / "results-dataset" / "boards" / SUITE / f"{TASK}.parquet"

        def board_file_ranked() -> list[str] | None:
            frame = pd.read_parquet(board_file)
            rows = frame[frame["setting"] == "zero_shot"].to_dict("records")
            order = disagreeing(rows)
            return order if "private" in set(frame["ranked_on"]) else None

        order = wait_until(board_file_ranked, 120, "the board file re-ranked at the release")
        assert order == ["private-strong", "public-strong"]
        overview = http.get("/api/v1/overview", params={"suite": SUITE}).json()
        by_model = {r["model_name"]: r for r in overview}
        column = f"{SUITE}/{TASK}"
        assert by_model["private-strong"][column] > by_model["public-strong"][column]
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
