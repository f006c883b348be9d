"""The SVG plot takes model names as plain text (names are users' text)."""

from __future__ import annotations


def test_turns_plot_keeps_a_tex_model_name_as_typed():
    import io

    from leaderboard.turns_plot import plot_accuracy_by_turns

    series = [
        {
            "model_name": r"m$\frac$",
            "setting": "zero_shot",
            "points": [
                {"turns": 0, "value": 0.5, "ci95": [0.4, 0.6]},
                {"turns": 10, "value": 0.4, "ci95": [0.3, 0.5]},
            ],
        }
    ]
    stream = io.BytesIO()
    plot_accuracy_by_turns(series, stream)
    assert r"m$\frac$ (zero_shot)" in stream.getvalue().decode()
