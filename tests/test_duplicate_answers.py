"""Copies are told by their answers, not their bytes, over HTTP against the live service: one
owner's predictions sent plain, then with a UTF-8 BOM and with CRLF line endings, are one submission
(the two re-sends get the 409 an identical file gets, naming the first); another owner's BOM + CRLF
copy of the same answers is admitted and scored, and on the board it is the first row's copy
(`duplicate_of` names it, no rank of its own), as a byte-identical copy is."""

from __future__ import annotations

import hashlib
import zlib

import pandas as pd
from live_helpers import make_predictions, status, submit, submit_ok, wait_finished, wait_until

BOM = b"\xef\xbb\xbf"


def board(http) -> pd.DataFrame:
    answer = http.get(
        "/api/v1/leaderboard",
        params={"suite": "prefeval", "task": "mcq", "setting": "zero_shot", "format": "json"},
    )
    assert answer.status_code == 200, answer.text
    return pd.DataFrame(answer.json())


def test_the_same_answers_in_another_encoding_are_one_result(shared_live_service):
    svc = shared_live_service
    # answers no other test sends (wrong where an id's crc32 is 2 mod 5), so no other row is a copy;
    # 80% right: above the reference lines, so the first is ranked
    predictions = make_predictions(lambda item: zlib.crc32(item.id.encode()) % 5 != 2)
    plain = predictions.body
    variants = {"bom": BOM + plain, "crlf": plain.replace(b"\n", b"\r\n")}
    with (
        svc.http(token=svc.add_user("dup-alice")) as alice,
        svc.http(token=svc.add_user("dup-bob")) as bob,
    ):
        first = submit_ok(alice, plain, model_name="dup-alice-model")
        for name, data in variants.items():
            again = submit(alice, data, model_name="dup-alice-model")
            assert again.status_code == 409, (name, again.text)
            detail = again.json()["detail"]
            assert detail["existing_id"] == first, name
            assert "the same predictions were already submitted" in detail["message"]
        copy_bytes = BOM + variants["crlf"]
        copy = submit_ok(bob, copy_bytes, model_name="dup-bob-model")
        wait_finished(alice, first, logs=svc.logs)
        wait_finished(bob, copy, logs=svc.logs)
        mine, theirs = status(alice, first), status(bob, copy)
        # one identity (the answers), two files (the bytes' hash kept for the stored file)
        assert mine["file_sha256"] == theirs["file_sha256"]
        assert mine["raw_sha256"] == hashlib.sha256(plain).hexdigest()
        assert theirs["raw_sha256"] == hashlib.sha256(copy_bytes).hexdigest()

        def both_on_the_board():
            rows = board(alice)
            rows = rows[rows["submission_id"].isin([first, copy])]
            return (rows.set_index("submission_id"),) if len(rows) == 2 else None

        (rows,) = wait_until(both_on_the_board, 120, "both rows on the board")
        assert rows.loc[first, "duplicate_of"] == ""
        assert pd.notna(rows.loc[first, "rank"])
        assert rows.loc[copy, "duplicate_of"] == "dup-alice-model (zero_shot)"
        assert pd.isna(rows.loc[copy, "rank"])
        # the same scores: the copy is the same result, ranked once
        assert rows.loc[copy, "total"] == rows.loc[first, "total"] == predictions.total
