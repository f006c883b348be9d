"""The flip-one-answer probing attack against a hidden fixture split, over HTTP.

The split is Re-Centering relevance with 200 generated items (YES/NO by majority of three votes),
installed twice into one live service: first declared public (a PUBLIC marker: exact scores, the
"before"), then hidden (the default: the Ladder of evaluator/release.py, the "after"). The attacker
uploads an all-NO baseline, then flips one item to YES per upload and reads the score back:
up means YES, down means NO, nothing released means it learnt nothing and must guess.

Figures (run with -s to see them): labels recovered per 100 probing uploads, before and after.
The rows of the hidden split also carry a gold canary in a gold-only field (tests/conftest.py
checks that it never appears in a response or log of the whole test run).
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from canary import GOLD_CANARY  # noqa: E402
from live_helpers import run_cli, scrape, wait_state, wait_until  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.service]

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "splits" / "recentering"
SUITE, TASK = "recentering", "relevance"
N_ITEMS = 200
PROBES = 12  # probing uploads per phase (bounded: the per-100 figure is scaled from these)


def hidden_fixture(folder: Path, public: bool) -> dict[str, str]:
    """A recentering split folder: 200 generated relevance items, the fixture's other two tasks.
    Returns the gold {id: YES/NO}."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in ("attribute_verification.jsonl", "response_preference.jsonl", "FIXTURE"):
        shutil.copy(FIXTURE / name, folder / name)
    if public:
        (folder / "PUBLIC").write_text("the 'before' phase of the probing test: exact scores\n")
    rng = random.Random(7)
    gold, lines = {}, []
    for i in range(N_ITEMS):
        votes = [rng.choice(("YES", "NO")) for _ in range(3)]
        item_id = f"h{i:03d}"
        gold[item_id] = "YES" if votes.count("YES") >= 2 else "NO"
        lines.append(
            json.dumps(
                {
                    "id": item_id,
                    "prompt": f"Prompt {i}: plan a weekend.",
                    "attribute": f"Attribute {i}.",
                    "votes": votes,
                    "annotator_note": GOLD_CANARY,
                }
            )
        )
    (folder / "relevance.jsonl").write_text("\n".join(lines) + "\n")
    return gold


def install(svc, folder: Path) -> None:
    proc = run_cli("splits", "install", SUITE, "--source", str(folder), env=svc.env)
    assert proc.returncode == 0, proc.stderr


def upload(http: httpx.Client, answers: dict[str, str], model_name: str) -> dict:
    body = "".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in answers.items()).encode()
    response = http.post(
        "/api/v1/submissions",
        files={"file": ("p.jsonl", body, "application/x-ndjson")},
        data={"suite": SUITE, "task": TASK, "setting": "zero_shot", "model_name": model_name},
    )
    assert response.status_code == 201, response.text
    final = wait_state(http, response.json()["id"], timeout=120)
    assert final["state"] == "finished", final
    return final["result"]


def released_accuracy(result: dict) -> float | None:
    if result.get("released") is False:
        return None
    return result["total"]["accuracy"]["value"]


def above_the_floor(gold: dict[str, str], variant: int = 0) -> dict[str, str]:
    """Answers right on nine items in ten (wrong on those at positions `variant` mod 10, and at
    position `variant`): a distinct file per variant, and on the hidden split a first result that
    clears the floor (the best constant answer, by a step) by far, so it is released."""
    flip = {"YES": "NO", "NO": "YES"}
    ids = sorted(gold)
    wrong = {i for k, i in enumerate(ids) if k % 10 == variant % 10 or k == variant % len(ids)}
    return {i: flip[gold[i]] if i in wrong else gold[i] for i in ids}


def flip_one_attack(
    http: httpx.Client, gold: dict[str, str], model_name: str, baseline: dict[str, str]
) -> dict:
    """The baseline, then one upload per probed item with that item's answer flipped."""
    ids = sorted(gold)
    base = released_accuracy(upload(http, baseline, model_name))
    assert base is not None  # a submitter's first result (above the floor) is released
    recovered = wrong = 0
    for item_id in ids[:PROBES]:
        flipped = "YES" if baseline[item_id] == "NO" else "NO"
        score = released_accuracy(upload(http, {**baseline, item_id: flipped}, model_name))
        if score is None or score == base:
            continue  # learnt nothing: the attacker has to guess this label
        inferred = flipped if score > base else baseline[item_id]
        recovered += inferred == gold[item_id]
        wrong += inferred != gold[item_id]
    return {
        "uploads": PROBES,
        "recovered": recovered,
        "wrong": wrong,
        "per_100_uploads": 100 * recovered / PROBES,
        "baseline_accuracy": base,
    }


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


def test_flip_one_attack_recovers_labels_before_and_nothing_after(svc, tmp_path):
    # two attackers, one per phase (each its own identity: the Ladder and duplicates are per owner)
    second = svc.add_user("prober-2", predictions=100_000, failed_validations=100_000)
    with svc.http() as http, svc.http(token=second) as http_after:
        gold = hidden_fixture(tmp_path / "public-split", public=True)
        install(svc, tmp_path / "public-split")
        suite = {s["name"]: s for s in http.get("/api/v1/suites").json()["suites"]}[SUITE]
        assert suite["split"]["visibility"] == "public"
        before = flip_one_attack(http, gold, "prober-before", {i: "NO" for i in gold})

        assert hidden_fixture(tmp_path / "hidden-split", public=False) == gold
        install(svc, tmp_path / "hidden-split")
        suite = {s["name"]: s for s in http.get("/api/v1/suites").json()["suites"]}[SUITE]
        assert (
            suite["split"]["visibility"] == "hidden"
            and "Ladder" in suite["split"]["visibility_note"]
        )
        jobs_before = scrape(http)
        after = flip_one_attack(http_after, gold, "prober-after", above_the_floor(gold))

        # what the public sees of the hidden split: the released baseline only, rounded, large tiers only
        rows = http.get("/api/v1/leaderboard", params={"suite": SUITE, "task": TASK}).json()
        mine = sorted(r["total"] for r in rows if r["model_name"] == "prober-after")
        # The withheld probes published nothing. One probe can be released, by chance: the
        # baseline's released value is its exact score rounded with a dither, up to a step below
        # it, so a probe one item away (up or down) can clear the shaky bar best + 0.1 + u for a
        # low draw u. That release raises the best a full step, above the baseline's exact score,
        # so no other probe (one item from the baseline) can follow it: at most one release, and
        # what it says of its item is a noisy bit (the bound docs/security.md gives).
        assert len(mine) in (1, 2), mine
        assert all(round(t / 0.1, 9) == round(t / 0.1) for t in mine), mine  # the 0.1 grid
        if len(mine) == 2:
            assert mine[1] == pytest.approx(mine[0] + 0.1), mine  # one full step up
        # every job is counted by how it ended, the withheld probes too (1 + PROBES uploads ran); a
        # job's count follows its state by a moment (the worker counts after it records the state)
        expected = {"finished": len(mine), "withheld": 1 + PROBES - len(mine)}

        def ended() -> dict[str, float]:
            now = scrape(http)
            return {
                outcome: now[("personaboard_jobs_total", (("outcome", outcome),))]
                - jobs_before[("personaboard_jobs_total", (("outcome", outcome),))]
                for outcome in expected
            }

        try:
            wait_until(lambda: ended() == expected, 60, f"job counts {expected}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; counted {ended()}") from None

    print(
        f"\nflip-one-answer probing, {N_ITEMS}-item split, {PROBES} probing uploads per phase:"
        f"\n  before (exact scores): {before['recovered']} labels recovered ({before['per_100_uploads']:.0f} per 100 uploads),"
        f" {before['wrong']} wrong"
        f"\n  after (Ladder, hidden): {after['recovered']} labels recovered ({after['per_100_uploads']:.0f} per 100 uploads),"
        f" {after['wrong']} wrong; every other label is a guess"
    )
    assert (
        before["recovered"] == PROBES and before["wrong"] == 0
    )  # exact scores: one label per upload
    # the Ladder: no probe released anything, or (by chance, above) one, which raised the best a
    # step; its inference may be right or wrong
    assert after["recovered"] + after["wrong"] == len(mine) - 1
