"""First paint: how soon after navigation a reader sees the board's first row, in Chromium.

Seeds a results store with the browser tests' board (tests/board_fixture.py: four verified rows
with known intervals and a partial run) plus --rows more verified rows of PrefEval mcq, starts
Redis and the web app as `make serve` does (backend.processes; no workers: nothing is submitted),
twice on copies of that store: one web app as it was before the first paint
(`PERSONABOARD_FIRST_PAINT=0`: Gradio alone draws the board, after its on_load queue calls) and
one with it (space/first_paint.py: the URL's view rendered into the page's HTML). Then, for each
scenario (the default view at 1,400 and 390 px, a shared link's view at 1,400 px) and each app,
alternating the two apps, --runs navigations in a fresh browser context each (a first visit: no
cache), measuring in the page (performance.now(), from navigation start):

    first row    the first board row (`tr[role=row][data-id]`) drawn (laid out, not hidden),
                 wherever it comes from (the first paint, at the top of the page, or Gradio's
                 table, which at 390 px is under the filters, below the fold)
    gradio row   the first row of Gradio's own table (#leaderboard-table): the board as it was
    html         responseEnd of the page's HTML (the server's time for "/", plus the transfer)

and, once Gradio's board has drawn, whether the rows the first paint showed (ids, in order) are
the rows Gradio then shows. Beside them, the API's own time for the same rows: GET
/api/v1/leaderboard with the same view (median of --runs, full body, one keep-alive client).

Prints medians [min-max] per line, the ratios before/after, the machine's load before and after.

    .venv/bin/python bench/bench_first_paint.py               # 5 navigations each, 45 extra rows
    .venv/bin/python bench/bench_first_paint.py --runs 3 --rows 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from board_fixture import board_record, board_records  # noqa: E402

from backend.processes import (  # noqa: E402
    base_url,
    child_env,
    free_port,
    start_redis,
    start_web,
    stop_process,
    wait_http,
)
from leaderboard.store import LocalDatasetStore  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DEADLINE_MS = 60_000
GOALS_S = {"default": 1.0, "link": 1.5}
# A shared link naming every part of the view: suite, task, setting, a tier to rank by, a search,
# the columns and a header sort (in the page's own parameter names).
LINK = {
    "suite": "prefeval",
    "task": "mcq",
    "setting": "zero_shot",
    "tier": "form/explicit",
    "q": "a",
    "columns": "ci,reference,tiers,model_type",
    "sort": "model_name:asc",
}
# The same view in the API's names (space/tabs/leaderboard.py download_params).
LINK_API = {**{k: v for k, v in LINK.items() if k != "q"}, "search": LINK["q"], "format": "json"}
# The default view's rows in the API's names: the task with the most verified rows, one setting.
DEFAULT_API = {"suite": "prefeval", "task": "mcq", "setting": "zero_shot", "format": "json"}
# Each navigation of the link outlines another of its rows (`highlight`): a view the server has
# not rendered yet, as a link someone shared is (the default view is the same for everyone).
HIGHLIGHTS = ["fx-alpha", "fx-beta", "fx-gamma", "fx-delta", "fx-partial"]
SETTLE_S = 20.0  # how long Gradio's table may take to show the copy's rows after its own

# Recorded in the page from its first script on: when a board row is first drawn (checked every
# animation frame, i.e. just before each paint), anywhere and in Gradio's
# own table, and the ids of the rows the first one showed.
PROBE_JS = """
(() => {
  const seen = {first: null, gradio: null, firstIds: null, firstFrom: null};
  window.__pbFirstPaint = seen;
  // drawn: laid out with a box, not hidden (below the fold counts: at 390 px Gradio's filters
  // fill the first screen, and its board is drawn under them)
  const visible = (row) => {
    if (!row || !row.checkVisibility || !row.checkVisibility({visibilityProperty: true})) return false;
    return row.getBoundingClientRect().height > 0;
  };
  const ids = (table) => [...table.querySelectorAll('tr[role=row][data-id]')].map(r => r.dataset.id);
  const tick = () => {
    const now = performance.now();
    if (seen.first === null) {
      const row = [...document.querySelectorAll('table.pb-board tr[role=row][data-id]')].find(visible);
      if (row) {
        seen.first = now;
        seen.firstIds = ids(row.closest('table'));
        seen.firstFrom = row.closest('#leaderboard-table') ? 'gradio' : 'first paint';
      }
    }
    if (seen.gradio === null) {
      const row = [...document.querySelectorAll('#leaderboard-table tr[role=row][data-id]')].find(visible);
      if (row) seen.gradio = now;
    }
    if (seen.first === null || seen.gradio === null) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();
"""


@dataclass
class App:
    name: str
    base: str
    procs: list = field(default_factory=list)


def seed(data_dir: Path, extra_rows: int) -> int:
    """The fixture's board plus `extra_rows` verified rows; returns the rows published."""
    store = LocalDatasetStore(data_dir / "results-dataset")
    for record in board_records():
        store.publish(record)
    extra = []
    for i in range(extra_rows):
        value = 0.30 + 0.45 * ((i * 37) % 100) / 100
        half = 0.02 + 0.03 * ((i * 13) % 10) / 10
        extra.append(
            board_record(
                f"fp-{i:05d}",
                f"model-{(i * 7919) % 100000:05d}",
                value,
                value - half,
                value + half,
                parameters=(1 + i % 70) * 1_000_000_000,
                license=("mit", "apache-2.0", "llama3")[i % 3],
            )
        )
    if extra:
        store.sync_group("fp-", extra, f"Seed {extra_rows} rows")
    store.refresh_boards()
    return len(board_records()) + extra_rows


def start_app(name: str, data_dir: Path, first_paint: bool) -> App:
    redis_port, port = free_port(), free_port()
    redis = start_redis(redis_port, data_dir / "redis")
    env = child_env(
        data_dir,
        f"redis://127.0.0.1:{redis_port}/0",
        extra={"PERSONABOARD_FIRST_PAINT": "1" if first_paint else "0"},
    )
    web = start_web("127.0.0.1", port, env, log_path=data_dir / "web.log")
    app = App(name, base_url("127.0.0.1", port), [web, redis])
    wait_http(app.base, timeout=240, proc=web, log_path=data_dir / "web.log")
    return app


def stop_app(app: App) -> None:
    web, redis = app.procs
    stop_process(web)
    redis.stop()


def navigate(browser, base: str, path: str, width: int) -> dict:
    """One first visit: a fresh context (no cache), `path` opened, the probe read once Gradio's
    board has drawn; the rows Gradio settles on (a sorted link sorts 50 ms after its redraw)."""
    context = browser.new_context(
        viewport={"width": width, "height": 900 if width > 600 else 844}, base_url=base
    )
    context.set_default_timeout(DEADLINE_MS)
    page = context.new_page()
    page.add_init_script(PROBE_JS)
    try:
        page.goto(path, wait_until="commit")
        page.wait_for_function(
            "window.__pbFirstPaint && window.__pbFirstPaint.first !== null"
            " && window.__pbFirstPaint.gradio !== null",
            timeout=DEADLINE_MS,
        )
        probe = page.evaluate("window.__pbFirstPaint")
        probe["html"] = page.evaluate("performance.getEntriesByType('navigation')[0].responseEnd")
        # the rows Gradio settles on (a link's sort is applied 50 ms after its redraw), checked
        # against the copy's; the copy is gone by then (one table)
        ids = None
        deadline = time.monotonic() + (SETTLE_S if probe["firstFrom"] == "first paint" else 0)
        while True:
            ids = page.evaluate(
                "[...document.querySelectorAll('#leaderboard-table tr[role=row][data-id]')]"
                ".map(r => r.dataset.id)"
            )
            tables = page.locator("table.pb-board").count()
            if (tables == 1 and ids == probe["firstIds"]) or time.monotonic() > deadline:
                break
            page.wait_for_timeout(100)
        probe["gradio_ids"] = ids
        probe["tables"] = page.locator("table.pb-board").count()
        return probe
    finally:
        context.close()


def api_time(base: str, params: dict, runs: int) -> float:
    import httpx

    with httpx.Client(base_url=base, timeout=60) as http:
        http.get("/api/v1/leaderboard", params=params)  # warm: the first build of this view
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            answer = http.get("/api/v1/leaderboard", params=params)
            answer.raise_for_status()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s [{min(values):.2f}-{max(values):.2f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="navigations per scenario and app")
    parser.add_argument("--rows", type=int, default=45, help="verified rows beside the fixture's")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    print(f"load average before: {os.getloadavg()}", flush=True)
    scenarios = [
        ("default 1400px", "/", 1400, "default"),
        ("default 390px", "/", 390, "default"),
        ("link 1400px", "/?" + urlencode(LINK), 1400, "link"),
    ]
    path_of = {
        label: [path + (f"&highlight={h}" if kind == "link" else "") for h in HIGHLIGHTS]
        for label, path, _, kind in scenarios
    }
    with tempfile.TemporaryDirectory(prefix="pb-bench-paint-") as tmp:
        before_dir, after_dir = Path(tmp) / "before", Path(tmp) / "after"
        started = time.perf_counter()
        rows = seed(before_dir, args.rows)
        shutil.copytree(before_dir, after_dir)
        print(f"seeded {rows} rows in {time.perf_counter() - started:.1f} s", flush=True)
        apps = []
        try:
            apps.append(start_app("before", before_dir, first_paint=False))
            apps.append(start_app("after", after_dir, first_paint=True))
            api = {  # the API's own time for the same rows (the app with the copy answers)
                "default": api_time(apps[1].base, DEFAULT_API, args.runs),
                "link": api_time(apps[1].base, LINK_API, args.runs),
            }
            results: dict[tuple[str, str], list[dict]] = {}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for app in apps:  # a first load of each: Python's lazy imports, caches
                    navigate(browser, app.base, "/", 1400)
                for label, _, width, _ in scenarios:
                    for run in range(args.runs):
                        path = path_of[label][run % len(HIGHLIGHTS)]
                        for app in apps:  # alternated: the machine's load falls on both
                            found = navigate(browser, app.base, path, width)
                            results.setdefault((label, app.name), []).append(found)
                browser.close()
            report(results, scenarios, apps, args.runs, api)
        finally:
            for app in apps:
                stop_app(app)
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


def report(results, scenarios, apps, runs: int, api: dict[str, float]) -> None:
    print(f"\nmedian of {runs} first visits [min-max], from navigation start")
    for label, _, _, kind in scenarios:
        medians = {}
        for app in apps:
            found = results[(label, app.name)]
            first = [r["first"] / 1000 for r in found]
            gradio = [r["gradio"] / 1000 for r in found]
            html = [r["html"] / 1000 for r in found]
            copied = [r for r in found if r["firstFrom"] == "first paint"]
            same = sum(r["gradio_ids"] == r["firstIds"] for r in copied)
            tables = max(r["tables"] for r in found)
            sources = sorted({r["firstFrom"] for r in found})
            medians[app.name] = statistics.median(first)
            print(
                f"{label:15s} {app.name:6s} first row {spread(first)}  gradio row {spread(gradio)}"
                f"  html {spread(html)}  from {'/'.join(sources)}"
                + (f"; copy's rows = Gradio's {same}/{len(copied)}" if copied else "")
                + f"; tables at the end {tables}"
            )
        ratio = medians["before"] / medians["after"] if medians["after"] else float("nan")
        goal = GOALS_S[kind]
        print(
            f"{label:15s} before/after {ratio:.1f}x; goal {goal:.1f} s: "
            f"{'met' if medians['after'] <= goal else 'NOT met'}; API for the same rows "
            f"{api[kind] * 1000:.1f} ms"
        )


if __name__ == "__main__":
    sys.exit(main())
