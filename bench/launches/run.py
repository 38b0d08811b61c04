"""Do the intervals hold across runs? (issue 16; figures, not a test)

Runs `mpiscope run` back to back, alternating launch-level runs (the default, auto launches)
with single-launch runs (`--launches 1`), and prints per point the share of consecutive runs in
which run i's 95 % interval contains run i+1's estimate, beside the interval's median half-width
(an interval wide enough to contain everything is no answer). For a correct 95 % interval the
share is about 83 % (two independent estimates of equal precision); far above it, the interval
is wider than it needs to be. Three intervals of the launch-level runs: as printed (with the
drift from run to run learnt from the earlier runs, from the third run on), the same over the
pairs whose first run had the drift, and the launches' own interval without the drift.

    python bench/launches/run.py [--mpi embedded,openmpi] [--runs 10] [--bench pingpong,allreduce]
                                 [--sizes 8,1K,64K,1M] [--launches auto] [-n 2] [--no-single]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpiscope.results.launches import PRIOR_DRIFT, LaunchPoint, aggregate, drifts_kept, with_drift
from mpiscope.store.runs import Run
from mpiscope.util.units import human_size


def measure(mpi: str, args: argparse.Namespace, launches: str, runs_dir: Path) -> tuple[Run, float]:
    cmd = [sys.executable, "-m", "mpiscope", "run", "--mpi", mpi, "-n", str(args.ranks), "-b", args.bench,
           "--sizes", args.sizes, "--launches", launches, "--no-report", "--no-progress", "--runs-dir", str(runs_dir)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    took = time.monotonic() - t0
    found = re.search(r"saved in (\S+)", done.stdout)
    if done.returncode != 0 or not found:
        sys.exit(f"mpiscope run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return Run(Path(found.group(1))), took


def coverage(series: list[dict[tuple, LaunchPoint]], drifted_only: bool = False
             ) -> dict[tuple, tuple[int, int, float, float]]:
    """Per point: (hits, pairs, median relative half-width, mean launches) over consecutive runs
    (only the pairs whose first run's interval includes the drift, with `drifted_only`)."""
    out: dict[tuple, tuple[int, int, float, float]] = {}
    for key in series[0] if series else ():
        pts = [s[key] for s in series if key in s]
        pairs = [(a, b) for a, b in zip(pts, pts[1:]) if a.drift is not None or not drifted_only]
        hits = sum(a.ci_low is not None and a.ci_low <= b.median <= a.ci_high for a, b in pairs)
        firsts = [a for a, _ in pairs] or pts
        width = float(np.median([p.half_width_rel for p in firsts]))
        out[key] = (hits, len(pairs), width, sum(p.launches for p in pts) / len(pts))
    return out


def row(cells: list[tuple[int, int, float]]) -> str:
    return "  ".join(f"{h:>3}/{n:<3} ({100 * h / n:3.0f} %) {100 * w:6.1f}%" if n else f"{'-':<21}"
                     for h, n, w in cells)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="embedded,openmpi")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--bench", default="pingpong,allreduce")
    p.add_argument("--sizes", default="8,1K,64K,1M")
    p.add_argument("--launches", default="auto", help="the launch-level runs' --launches (default auto)")
    p.add_argument("-n", "--ranks", type=int, default=2)
    p.add_argument("--no-single", action="store_true", help="no single-launch runs between the launch-level ones")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpiscope-launches-") as tmp:
        for mpi in args.mpi.split(","):
            levels: dict[str, list[dict[tuple, LaunchPoint]]] = defaultdict(list)
            plain: list[dict[tuple, LaunchPoint]] = []
            took: dict[str, list[float]] = defaultdict(list)
            for i in range(args.runs):  # alternating, so both see the same drift of the machine
                for mode in (args.launches,) if args.no_single else (args.launches, "1"):
                    run, seconds = measure(mpi, args, mode, Path(tmp) / mpi)
                    lps = aggregate(run.records())
                    drift = drifts_kept(run.meta().extra)
                    levels[mode].append({lp.key: with_drift(lp, drift.get((lp.key, lp.config)) or PRIOR_DRIFT)
                                         for lp in lps})
                    if mode != "1":
                        plain.append({lp.key: lp for lp in lps})
                    took[mode].append(seconds)
            columns = [coverage(levels[args.launches]), coverage(levels[args.launches], drifted_only=True),
                       coverage(plain), coverage(levels["1"])]
            print(f"\n{mpi}: {args.runs} runs{'' if args.no_single else ' each, alternating'}; run i's 95 % "
                  f"interval contains run i+1's "
                  f"estimate (target ~83 %, at least 80 %), and the interval's median half-width")
            print(f"{'benchmark':<10} {'size':>7}  {'as printed':<21}  {'with drift':<21}  "
                  f"{'launches only':<21}  {'one launch':<21}  launches")
            totals = [[0, 0] for _ in columns]
            for key in sorted(columns[0], key=lambda k: (k[0], k[1])):
                cells = [c.get(key, (0, 0, float("nan"), 1)) for c in columns]
                for t, (h, n, _, _) in zip(totals, cells):
                    t[0] += h
                    t[1] += n
                print(f"{key[0]:<10} {human_size(key[1]):>7}  {row([c[:3] for c in cells])}  {cells[0][3]:8.1f}")
            print(f"{'all':<10} {'':>7}  " + "  ".join(f"{h:>3}/{n:<3} ({100 * h / max(n, 1):3.0f} %)        "
                                                     for h, n in totals))
            print(f"time per run: {sum(took[args.launches]) / args.runs:.1f} s (launches={args.launches}), "
                  f"{sum(took['1']) / args.runs:.1f} s (launches=1)")


if __name__ == "__main__":
    main()
