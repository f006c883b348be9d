"""PrefEval's headline axis as data and as a picture: accuracy against the number of distractor turns.

`accuracy_by_turns(records)` reads published mcq_turns rows (typed records) (their `turns` tier blocks) into one
series per row; `plot_accuracy_by_turns(series, path)` draws them (PNG) with their 95 % intervals.
A turn count a model could not run (its window is too short) is absent from its series, never
drawn as zero. The model page (space/) shows the picture or the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from leaderboard.result_record import ResultRecord

TURNS_TASK = ("prefeval", "mcq_turns")


def accuracy_by_turns(records: Iterable[ResultRecord]) -> list[dict[str, Any]]:
    series: list[dict[str, Any]] = []
    for record in records:
        if (record.suite, record.task) != TURNS_TASK:
            continue
        metric = record.metrics.metric or "accuracy"
        points: list[dict[str, Any]] = []
        for turns, block in record.metrics.tiers.get("turns", {}).items():
            stats = block.get(metric)
            if stats is None or stats.value is None:
                continue
            low, high = (stats.ci95 or [None, None])[:2]
            points.append(
                {"turns": int(turns), "value": stats.value, "ci95": [low, high], "n": stats.n}
            )
        if points:
            series.append(
                {
                    "submission_id": record.submission_id,
                    "model_name": record.model_name,
                    "setting": record.setting,
                    "metric": metric,
                    "points": sorted(points, key=lambda p: p["turns"]),
                }
            )
    return series


def plot_accuracy_by_turns(series: list[dict[str, Any]], path, title: str = "PrefEval mcq_turns"):
    """Draw to `path` (PNG), or to a binary stream (SVG: the model page's image)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"text.parse_math": False}):  # names are users' text, never TeX
        return _draw(plt, series, path, title)


def _draw(plt, series, path, title):
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for line in series:
        x = [p["turns"] for p in line["points"]]
        y = [100 * p["value"] for p in line["points"]]
        label = f"{line['model_name']} ({line['setting']})"
        drawn = axes.plot(x, y, marker="o", label=label)[0]
        bounded = [p for p in line["points"] if None not in p["ci95"]]
        if bounded:
            axes.fill_between(
                [p["turns"] for p in bounded],
                [100 * p["ci95"][0] for p in bounded],
                [100 * p["ci95"][1] for p in bounded],
                alpha=0.15,
                color=drawn.get_color(),
            )
    axes.set_xscale("symlog", linthresh=10)
    axes.set_xticks([0, 10, 70, 300], labels=["0", "10", "70", "300"])
    axes.set_xlabel("distractor turns between preference and question")
    axes.set_ylabel("accuracy (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title)
    if series:
        axes.legend(fontsize=8)
    figure.tight_layout()
    if hasattr(path, "write"):
        figure.savefig(path, format="svg")
    else:
        path = Path(path)
        figure.savefig(path)
    plt.close(figure)
    return path
