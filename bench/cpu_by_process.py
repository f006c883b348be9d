"""CPU seconds per kind of process while a command runs (the web app, RQ workers, Chromium, ...).

    .venv/bin/python bench/cpu_by_process.py -- .venv/bin/python -m pytest -q -n 3 --dist loadfile

The test suite is CPU-bound on a 2-core machine, so its wall time follows the CPU its processes
burn; this says which processes burn it. Every second it reads /proc for every process started
after the command (Redis, workers and Chromium are started detached, so they are not all its
descendants); at the end it adds each process's last-seen user + system time to its kind. A
child that lived less than a sample (an RQ work-horse that scored one small file) is counted
through its parent's reaped-children time (cutime + cstime), less the children that were seen.
Linux only. The command's own output passes through; the table goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.processes import proc_stat  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")

# (kind, a substring of the command line): the first that matches names the process
KINDS = (
    ("chromium", "chrom"),
    ("web app", "uvicorn"),
    ("web app", "backend.serve"),
    ("rq worker", "rq.cli"),
    ("redis", "redis-server"),
    ("llama.cpp server", "llama_cpp"),
    ("hub server", "hub_server"),
    ("pytest", "pytest"),
    ("pytest", "execnet"),
    ("personaboard cli", "personaboard"),
    ("other python", "python"),
)


@dataclass
class Seen:
    kind: str
    ppid: int
    own_s: float  # utime + stime
    reaped_children_s: float  # cutime + cstime: children it has waited for


def kind_of(cmdline: str) -> str:
    return next((kind for kind, part in KINDS if part in cmdline), "other")


def boot_ticks_now() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * TICKS


def sample(seen: dict[tuple[int, int], Seen], since_ticks: float) -> None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        fields = proc_stat(pid)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            fields = None
        if fields is None:  # gone between listdir and open
            continue
        ppid, started = int(fields[1]), int(fields[19])
        if started < since_ticks:
            continue
        utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
        key = (pid, started)
        previous = seen.get(key)
        # a forked child has its parent's command line; a zombie has none: keep the first kind
        kind = previous.kind if previous else kind_of(cmdline)
        seen[key] = Seen(kind, ppid, (utime + stime) / TICKS, (cutime + cstime) / TICKS)


def totals(seen: dict[tuple[int, int], Seen]) -> dict[str, float]:
    by_kind: dict[str, float] = {}
    seen_children: dict[int, float] = {}
    for proc in seen.values():
        seen_children[proc.ppid] = (
            seen_children.get(proc.ppid, 0.0) + proc.own_s + proc.reaped_children_s
        )
    for (pid, _), proc in seen.items():
        unseen = max(0.0, proc.reaped_children_s - seen_children.get(pid, 0.0))
        by_kind[proc.kind] = by_kind.get(proc.kind, 0.0) + proc.own_s + unseen
    return dict(sorted(by_kind.items(), key=lambda item: -item[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    since = boot_ticks_now() - 1
    started = time.monotonic()
    seen: dict[tuple[int, int], Seen] = {}
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        sample(seen, since)
        time.sleep(args.every)
    sample(seen, since)
    wall = time.monotonic() - started
    by_kind = totals(seen)
    cpu = sum(by_kind.values())
    print(f"\nCPU seconds by process kind ({len(seen)} processes seen)", file=sys.stderr)
    for kind, seconds in by_kind.items():
        print(f"  {kind:<18} {seconds:>8.1f} s  {seconds / cpu:>5.1%}", file=sys.stderr)
    cores = os.cpu_count() or 1
    print(
        f"  {'all':<18} {cpu:>8.1f} s in {wall:.1f} s wall "
        f"({cpu / wall:.2f} of {cores} cores busy on average)",
        file=sys.stderr,
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
