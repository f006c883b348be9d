"""The board's SVG plots take model names as plain text (names are users' text)."""

from __future__ import annotations

import pandas as pd

from space.plots import grouped_bars, setting_comparison

TEX_NAMES = [r"m$\frac$", "price $5 to $10", "$x^2$"]  # invalid TeX, a pair of dollars, valid TeX


def test_model_names_with_dollars_are_drawn_as_typed_not_as_tex():
    svg = grouped_bars(
        ["total"], {name: [(0.5, 0.4, 0.6)] for name in TEX_NAMES}, "accuracy", "title $"
    )
    text = svg.decode()
    for name in TEX_NAMES:
        assert name in text, name  # svg.fonttype none: the legend keeps the typed characters


def test_setting_comparison_with_a_tex_model_name():
    board = pd.DataFrame(
        {
            "model_name": [r"m$\frac$", "plain"],
            "setting": ["zero_shot", "reminder"],
            "total": [0.4, 0.6],
            "total_ci_low": [0.3, 0.5],
            "total_ci_high": [0.5, 0.7],
            "metric": ["accuracy", "accuracy"],
        }
    )
    assert r"m$\frac$" in setting_comparison(board, "settings").decode()


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
