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


def test_the_model_pages_plot_keeps_its_text_as_svg_text():
    """Drawn as the page draws it (space/plots.py one_at_a_time, whose first drawing imports and
    sets up pyplot): labels are <text> a reader can copy, not glyph paths."""
    import io

    from leaderboard.turns_plot import plot_accuracy_by_turns
    from space import plots

    series = [
        {
            "model_name": "copyable-name",
            "setting": "zero_shot",
            "points": [{"turns": 0, "value": 0.5, "ci95": [0.4, 0.6]}],
        }
    ]
    stream = io.BytesIO()
    plots.one_at_a_time(plot_accuracy_by_turns)(series, stream)
    svg = stream.getvalue().decode()
    assert "<text" in svg and "copyable-name (zero_shot)" in svg
    assert "<text" in plots._empty("nothing chosen").decode()
