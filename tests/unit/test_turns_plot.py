"""Accuracy against distractor turns: the data from published rows, and the PNG."""

from __future__ import annotations

from leaderboard.result_record import ResultRecord, checked_record
from leaderboard.turns_plot import accuracy_by_turns, plot_accuracy_by_turns


def record(model, by_turns, task="mcq_turns") -> ResultRecord:
    tiers = {
        "turns": {
            t: {"accuracy": {"value": v, "ci95": [v - 0.05, v + 0.05], "n": 30}}
            for t, v in by_turns.items()
        }
    }
    return checked_record(
        {
            "suite": "prefeval",
            "task": task,
            "submission_id": model,
            "model_name": model,
            "setting": "zero_shot",
            "source": "model run (generate_parse)",
            "submitted_at": "2026-12-01T10:00:00+00:00",
            "metrics": {"metric": "accuracy", "total": {}, "tiers": tiers},
        }
    )


def test_series_per_row_sorted_by_turns_without_missing_counts(tmp_path):
    records = [
        record("small", {"10": 0.4, "0": 0.6}),
        record("other", {"0": 0.5}, task="mcq"),
        record("big", {"0": 0.9, "300": 0.5, "10": 0.8, "70": 0.7}),
    ]
    series = accuracy_by_turns(records)
    assert [s["model_name"] for s in series] == ["small", "big"]
    assert [(p["turns"], p["value"]) for p in series[0]["points"]] == [
        (0, 0.6),
        (10, 0.4),
    ]  # 70, 300: n/a, not 0
    assert [p["turns"] for p in series[1]["points"]] == [0, 10, 70, 300]
    path = plot_accuracy_by_turns(series, tmp_path / "turns.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
