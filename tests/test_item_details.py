"""Per-item details over HTTP (GET /api/v1/submissions/{id}/details) through the live service:
a result on PrefEval's public split shows every item's inputs, gold, answer and outcome, filtered by
tier and by right/wrong, as JSON pages and complete CSV / parquet files; a result on a hidden split
is a 404 for everyone, the submitter included, and nothing per item of it is in the results store."""

from __future__ import annotations

import io
import json
import subprocess

import live_helpers
import pandas as pd
import pytest
from live_helpers import explicit_only, submit_ok, wait_finished, wait_state
from test_probing import hidden_fixture, install

from leaderboard.store import LocalDatasetStore


@pytest.fixture(scope="module")
def svc(module_live_service):
    return module_live_service


@pytest.fixture(scope="module")
def public_result(svc):
    """PrefEval mcq, right exactly on the explicit form (1,000 of 3,000 items)."""
    with svc.http() as http:
        sid = submit_ok(http, explicit_only().body, model_name="details-public")
        final = wait_finished(http, sid)
    assert final["revision"], final
    return sid


def details(http, sid, **params):
    return http.get(f"/api/v1/submissions/{sid}/details", params=params)


def test_public_split_details_show_every_item_with_gold_answer_and_outcome(svc, public_result):
    with svc.http() as http:
        first = details(http, public_result, limit=50)
        assert first.status_code == 200, first.text
        assert first.headers["x-total-count"] == "3000"
        rows = first.json()
        assert len(rows) == 50
        for row in rows:
            assert json.loads(row["input"])["question"]
            assert (row["outcome"] == "right") == (row["answer"] == row["gold"])
            assert row["outcome"] == ("right" if row["form"] == "explicit" else "wrong")

        wrong = details(http, public_result, outcome="wrong", limit=1000)
        assert wrong.headers["x-total-count"] == "2000"
        assert all(r["form"] != "explicit" for r in wrong.json())
        explicit = details(http, public_result, tier="form/explicit", outcome="right")
        assert explicit.headers["x-total-count"] == "1000"
        by_name = details(http, public_result, tier="travel_hotel")
        assert {r["topic"] for r in by_name.json()} == {"travel_hotel"}

        csv = details(http, public_result, format="csv")
        assert csv.headers["content-disposition"].endswith(f'{public_result}.csv"')
        frame = pd.read_csv(io.StringIO(csv.text))
        assert len(frame) == 3000 and frame["score"].sum() == 1000
        parquet = details(http, public_result, format="parquet", outcome="right")
        assert len(pd.read_parquet(io.BytesIO(parquet.content))) == 1000

        # published with the result: the dataset's details file (item, tiers, gold, answer,
        # outcome; not the inputs, which are the public split's and are joined back)
        store = LocalDatasetStore(svc.data_dir / "results-dataset")
        published = pd.read_parquet(
            io.BytesIO(store.published_details("prefeval", "mcq", public_result))
        )
        assert len(published) == 3000 and "input" not in published.columns
        assert published["score"].sum() == 1000
        full = pd.read_csv(io.StringIO(csv.text))
        assert list(full.columns) == [*published.columns[:3], "input", *published.columns[3:]]

        bad = details(http, public_result, tier="form/nope")
        assert bad.status_code == 422 and bad.json()["detail"]["problems"][0]["field"] == "tier"
        assert details(http, "no-such-id").status_code == 404


def test_details_are_served_from_the_published_file_once_the_answers_are_gone(svc):
    """As for a remote worker's run, whose answers the web node never had: the published file."""
    with svc.http() as http:
        sid = submit_ok(
            http, explicit_only().body, setting="reminder", model_name="details-published"
        )
        assert wait_finished(http, sid)["revision"]
        (svc.data_dir / "uploads" / f"{sid}.jsonl").unlink()  # the answers the service kept
        served = details(http, sid, tier="form/explicit")
        assert served.status_code == 200, served.text
        assert served.headers["x-total-count"] == "1000"
        rows = served.json()
        assert all(r["outcome"] == "right" and json.loads(r["input"])["question"] for r in rows)


def test_hidden_split_details_are_refused_to_everyone_and_never_stored(svc, tmp_path):
    gold = hidden_fixture(tmp_path / "hidden-split", public=False)
    install(svc, tmp_path / "hidden-split")
    # right on nine items in ten: well above the floor a first release must clear
    answers = {
        i: g if k % 10 else ("NO" if g == "YES" else "YES") for k, (i, g) in enumerate(gold.items())
    }
    body = "".join(json.dumps({"id": i, "answer": a}) + "\n" for i, a in answers.items()).encode()
    with svc.http() as http:
        sid = submit_ok(
            http, body, suite="recentering", task="relevance", model_name="details-hidden"
        )
        final = wait_state(http, sid, timeout=120)
        assert final["state"] == "finished" and final["revision"], final  # published (released)
        for params in ({}, {"format": "csv"}, {"format": "parquet"}, {"outcome": "wrong"}):
            refused = details(http, sid, **params)  # the submitter's own client
            assert refused.status_code == 404, refused.text
            assert "hidden split" in refused.json()["detail"]["message"]
            assert not any(item_id in refused.text for item_id in list(gold)[:20])
    with live_helpers.client(svc.base_url) as anonymous:  # no token: browsing is anonymous
        assert details(anonymous, sid).status_code == 404

    # the store: the result record is there, nothing per item (no details file, no item id)
    store = LocalDatasetStore(svc.data_dir / "results-dataset")
    head = store.head_revision()
    files = subprocess.run(
        ["git", "-C", str(store.root), "ls-tree", "-r", "--name-only", head],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert any(sid in path and path.startswith("results/") for path in files)
    assert any(path.startswith("details/prefeval/") for path in files)  # public results have one
    assert not [p for p in files if p.startswith("details/") and ("recentering" in p or sid in p)]
    # nor does the store take one for a hidden split, whoever hands it one
    record = store.current_record(sid)
    record["submission_id"] = "handed-details"
    store.publish(record, details=b"per-item rows of a hidden split")
    assert store.published_details("recentering", "relevance", "handed-details") is None
    assert store.current_record("handed-details") is not None  # the result itself went out
    dataset = subprocess.run(
        ["git", "-C", str(store.root), "grep", "-c", "-e", "h000", "-e", "h199", head],
        capture_output=True,
        text=True,
    )
    assert dataset.stdout == "", dataset.stdout  # no item id of the hidden split anywhere
