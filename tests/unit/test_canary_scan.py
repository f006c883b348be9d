"""The canary scanner of tests/conftest.py finds a leak where it should, and only there."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from canary import GOLD_CANARY, leaks_in_tree  # noqa: E402


def test_scanner_finds_the_canary_in_logs_and_records_but_not_in_the_split(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "web.log").write_text("all quiet\n")
    (tmp_path / "data" / "splits" / "recentering" / "files").mkdir(parents=True)
    (tmp_path / "data" / "splits" / "recentering" / "files" / "relevance.jsonl").write_text(
        GOLD_CANARY
    )
    (tmp_path / "hidden-split").mkdir()
    (tmp_path / "hidden-split" / "relevance.jsonl").write_text(GOLD_CANARY)
    assert leaks_in_tree(tmp_path) == []
    (tmp_path / "logs" / "worker-0.log").write_text(f"item gold was {GOLD_CANARY}\n")
    record = (
        tmp_path / "data" / "results-dataset" / "results" / "recentering" / "relevance" / "x.json"
    )
    record.parent.mkdir(parents=True)
    record.write_text('{"note": "' + GOLD_CANARY + '"}')
    try:
        assert sorted(leaks_in_tree(tmp_path)) == sorted(
            [str(tmp_path / "logs" / "worker-0.log"), str(record)]
        )
    finally:  # planted on purpose: the session-wide watch (tests/conftest.py) would report them
        (tmp_path / "logs" / "worker-0.log").unlink()
        record.unlink()
