"""Does the default run's budget buy evidence? (issue 28 point 6; figures, not a test)

Runs the default `mpiscope run` (no -b, no --sizes) a few times, each in a fresh runs directory,
and prints per run its wall time, the launch-level points, how many reached the launch target
(the interval's half-width within POLICY.launch_target, as auto launches judge it), the pingpong
sizes measured, the most launches of a point, the switches the headline names and the load
average when it started. `--mpiscope PATH` (repeatable) runs other installs, alternating run by
run so that each sees the same machine (the code before a change:
`--mpiscope OTHER/.venv/bin/mpiscope --mpiscope .venv/bin/mpiscope`); the records are read
with this one.

    nice -n 19 python bench/default_plan/run.py [--mpiscope PATH ...] [--repeats 3] [--mpi embedded]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpiscope.results.launches import aggregate, launches_needed
from mpiscope.results.policy import POLICY
from mpiscope.store.runs import Run


def measure(exe: list[str], mpi: str, runs_dir: Path) -> tuple[Run, float, str]:
    cmd = [*exe, "run", "--mpi", mpi, "--no-report", "--no-progress", "--runs-dir", str(runs_dir)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    took = time.monotonic() - t0
    found = re.search(r"saved in (\S+)", done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        sys.exit(f"mpiscope run failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return Run(Path(found.group(1))), took, done.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpiscope", action="append", help="an mpiscope executable to measure with (default: this one)")
    p.add_argument("--mpi", default="embedded")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    exes = {path: [path] for path in args.mpiscope} if args.mpiscope else {"this": [sys.executable, "-m", "mpiscope"]}
    print(f"{'mpiscope':<32} {'wall s':>7} {'points':>6} {'on target':>10} {'pp sizes':>8} {'launches':>8}  switch")
    shares: dict[str, list[float]] = {k: [] for k in exes}
    walls: dict[str, list[float]] = {k: [] for k in exes}
    for _ in range(args.repeats):
        for name, exe in exes.items():
            tmp = Path(tempfile.mkdtemp(prefix="mpiscope-default-plan-"))
            try:
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                run, took, text = measure(exe, args.mpi, tmp)
                lps = aggregate(list(run.records()))
                on = sum(launches_needed(lp, POLICY.launch_target) <= lp.launches for lp in lps)
                sizes = {lp.size for lp in lps if lp.benchmark == "pingpong"}
                switch = "; ".join(ln.strip() for ln in text.splitlines() if "(pingpong): ~" in ln) or "-"
                launches = max((lp.launches for lp in lps), default=0)
                print(f"{name[-32:]:<32} {took:7.1f} {len(lps):>6} {on:>4} ({100 * on / max(1, len(lps)):3.0f} %) "
                      f"{len(sizes):>8} {launches:>8}  {switch}  [load {load}]", flush=True)
                shares[name].append(on / max(1, len(lps)))
                walls[name].append(took)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    for name in exes:
        if shares[name]:
            print(f"{name}: mean wall {sum(walls[name]) / len(walls[name]):.1f} s, on target "
                  f"{100 * sum(shares[name]) / len(shares[name]):.0f} % over {len(shares[name])} runs")


if __name__ == "__main__":
    main()
