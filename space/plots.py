"""What the SVG plots share (matplotlib, text kept as text so a reader can copy it and a test can
read the series): one drawing at a time with users' text taken as typed, the SVG bytes, an empty
plot's message. The board's plots are interactive (space/interactive_plots.py); the one SVG plot
left is PrefEval's accuracy against turns on the result page (leaderboard/turns_plot.py).
"""

from __future__ import annotations

import functools
import io
import threading

MAX_SERIES = 8  # results compared in one plot: beyond this its series stop being readable
# pyplot's figure registry and mathtext's parser are not thread-safe: plots requested together (in
# the server's thread pool) broke each other's tick labels
_DRAWING = threading.RLock()


@functools.cache
def pyplot():
    """matplotlib's pyplot, set up for SVG on a server: imported on the first drawing, not with the
    app (~0.4 CPU s of every web start, and the plot is on one page only)."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def one_at_a_time(draw):
    """Draws under the lock, with mathtext off: model names and settings are users' text, and a name
    like `m$\\frac$` would otherwise be parsed as TeX (and fail the whole image)."""

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        with _DRAWING, pyplot().rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return drawn


def _svg(figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="svg")
    pyplot().close(figure)
    return buffer.getvalue()


def _empty(message: str) -> bytes:
    figure, axis = pyplot().subplots(figsize=(6, 1.2))
    axis.axis("off")
    axis.text(0.5, 0.5, message, ha="center", va="center")
    return _svg(figure)
