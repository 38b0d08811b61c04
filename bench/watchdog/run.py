#!/usr/bin/env python3
"""The README's first command (`mpiscope run`, embedded MPICH) beside a CPU load this script
starts, and what the run stored: points, time-outs (hangs), sizes mpiscope gave up on, points the
watchdog extended (slowed, not hung), and how long each launch ran against mpiscope's own
wall-clock limit for it. The question: does a busy machine pass for a deadlock?

A benchmark script, not a test: it prints figures. Compare two source trees with --source (a
checkout's src/ directory, put first on PYTHONPATH; the engine is built from its engine/).

Usage: python bench/watchdog/run.py [--load 3] [--source DIR] [--runs-dir DIR] [-- extra run options]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def spinners(n: int) -> list[subprocess.Popen]:
    """n busy loops at normal priority, each ended after 600 s at the latest."""
    return [subprocess.Popen(["timeout", "600", "sh", "-c", "while :; do :; done"]) for _ in range(n)]


def report(run: Path, wall_s: float, status: int) -> None:
    recs = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line.strip()]
    meta = json.loads((run / "run.json").read_text())
    kinds: dict[str, int] = defaultdict(int)
    for r in recs:
        kinds[r["type"]] += 1
    print(f"run {run.name}: exit {status}, {wall_s:.0f} s, status {meta['status']}, "
          f"{len(meta.get('launches', []))} engine launches; records: {dict(kinds)}")
    given_up: dict[str, int] = defaultdict(int)
    for r in recs:
        if r["type"] == "timeout":
            print(f"  time-out: {r['benchmark']} {r['size']} B on {r['ranks']} ranks, limit "
                  f"{r.get('limit_s')} s{', source: ' + r['source'] if r.get('source') else ''}")
        elif r["type"] == "skip" and r.get("source") == "mpiscope":
            given_up[f"{r['benchmark']} ({r['reason']})"] += 1
        elif r["type"] == "point" and r.get("watchdog_extensions"):
            rq = max((r.get("disturbance") or {}).get("run_queue") or [0])
            print(f"  slowed, not hung: {r['benchmark']} {r['size']} B ran {r['elapsed_s']:.1f} s against a limit "
                  f"of {r['watchdog_limit_s']:.1f} s ({r['watchdog_extensions']} extension(s), run queue {rq})")
    for what, n in given_up.items():
        print(f"  given up: {n} (point, launch) entries of {what}")
    # every launch as run.json keeps it: how long it ran against mpiscope's wall-clock limit for it
    for i, launch in enumerate(meta.get("launches", [])):
        wall, limit = launch.get("wall_s"), launch.get("limit_s")
        share = f" ({wall / limit:.0%})" if wall is not None and limit else ""
        print(f"  launch {i} {json.dumps(launch.get('tag', {}))}: {launch['status']}, {launch['points']} points, "
              f"{wall if wall is not None else '?'} s against mpiscope's limit of "
              f"{limit if limit is not None else '? (an older mpiscope)'} s{share}")
    for w in meta.get("warnings", []):
        print(f"  run.json warning: {w}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load", type=int, default=3, help="busy loops beside the run (3)")
    ap.add_argument("--source", type=Path, help="a checkout's src/ to run instead of the installed mpiscope")
    ap.add_argument("--runs-dir", type=Path)
    ap.add_argument("extra", nargs="*", help="more `mpiscope run` options (after --)")
    a = ap.parse_args()
    runs = a.runs_dir or Path(tempfile.mkdtemp(prefix="watchdog-bench-"))
    runs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if a.source:
        env["PYTHONPATH"] = f"{a.source.resolve()}{os.pathsep}{env.get('PYTHONPATH', '')}"
    before = set(runs.iterdir())
    load = spinners(a.load)
    try:
        time.sleep(1)
        with open("/proc/loadavg") as f:
            print(f"load started: {a.load} busy loops; /proc/loadavg {f.read().split()[:4]}")
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "mpiscope", "run", "--no-progress", "--no-report",
                               "--runs-dir", str(runs), *a.extra], env=env, capture_output=True, text=True,
                              timeout=1800)
        wall = time.monotonic() - t0
    finally:
        for p in load:
            p.terminate()  # timeout(1) passes SIGTERM on to its loop; SIGKILL would leave the loop running
            p.wait()
    (run,) = set(runs.iterdir()) - before
    report(run, wall, done.returncode)
    print("  terminal warnings:")
    for line in done.stdout.splitlines() + done.stderr.splitlines():
        if line.startswith("warning:") or "error" in line:
            print(f"    {line[:400]}")


if __name__ == "__main__":
    main()
