#!/usr/bin/env python3
"""Soak: the default `mpiscope run` N times back to back, then what failed and how much the
headline figures moved between launches.

A benchmark script, not a test: it prints figures. Every run goes through the real CLI into
a private runs directory; a run that fails, hangs or leaves processes behind is counted.

Usage: python bench/soak/run.py [-N 10] [--mpi NAME] [-- extra `mpiscope run` options]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# (benchmark, size in bytes, figure): small-message latency and large-message bandwidth.
HEADLINES = [("pingpong", 8, "time_us"), ("pingpong", 1 << 20, "bw_MBps"), ("bw", 1 << 20, "bw_MBps"),
             ("allreduce", 8, "time_us")]


def one_run(runs: Path, args: list[str]) -> tuple[dict, dict, float]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "mpiscope", "run", "--no-progress", "--runs-dir", str(runs), *args],
                       capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    run = max(runs.iterdir(), key=lambda p: p.stat().st_mtime)
    meta = json.loads((run / "run.json").read_text())
    meta["exit_status"] = r.returncode
    figures = {}
    for line in (run / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for bench, size, fig in HEADLINES:
            if rec.get("type") == "point" and rec.get("benchmark") == bench and rec.get("size") == size:
                figures[(bench, size, fig)] = rec[fig]["median"]
    return meta, figures, wall


def leftovers() -> list[str]:
    ps = subprocess.run(["pgrep", "-a", "mpiscope-engine"], capture_output=True, text=True).stdout
    return ps.splitlines()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-N", type=int, default=10, help="runs (default 10)")
    p.add_argument("--mpi", help="MPI library name (default: the embedded one)")
    p.add_argument("extra", nargs="*", help="more `mpiscope run` options, after --")
    a = p.parse_args()
    args = (["--mpi", a.mpi] if a.mpi else []) + a.extra
    failures, walls, series = [], [], {h: [] for h in HEADLINES}
    with tempfile.TemporaryDirectory(prefix="mpiscope-soak-") as tmp:
        for i in range(a.N):
            meta, figures, wall = one_run(Path(tmp), args)
            walls.append(wall)
            status = f"{meta.get('status')} (exit {meta['exit_status']})"
            if meta["exit_status"] != 0 or meta.get("status") != "ok" or meta.get("timeouts"):
                failures.append(f"run {i + 1}: {status} {meta.get('error') or ''} {meta.get('timeouts') or ''}")
            for h in HEADLINES:
                if h in figures:
                    series[h].append(figures[h])
            print(f"run {i + 1}/{a.N}: {status}, {wall:.1f} s", flush=True)
    left = leftovers()
    print(f"\n{a.N} runs, {len(failures)} failed or hung, wall time median {statistics.median(walls):.1f} s")
    for f in failures:
        print("  " + f)
    print("processes left behind: " + ("none" if not left else "; ".join(left)))
    print(f"\n{'figure':28} {'median':>10} {'min':>10} {'max':>10} {'spread':>8}")
    for (bench, size, fig), xs in series.items():
        if xs:
            med = statistics.median(xs)
            unit = "us" if fig == "time_us" else "MB/s"
            print(f"{bench} {size} B {unit:5}".ljust(28) + f" {med:10.3g} {min(xs):10.3g} {max(xs):10.3g}"
                  f" {100 * (max(xs) - min(xs)) / med:7.1f}%")
    return 1 if failures or left else 0


if __name__ == "__main__":
    sys.exit(main())
