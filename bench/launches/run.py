"""Do the intervals hold across runs? (issue 16; figures, not a test)

Runs `mpiscope run` back to back, alternating launch-level runs (the default, auto launches)
with single-launch runs (`--launches 1`), and prints per point the share of consecutive runs in
which run i's 95 % interval contains run i+1's estimate, beside the interval's mean half-width
(an interval wide enough to contain everything is no answer). For a correct 95 % interval the
share is about 83 % (two independent estimates of equal precision); far above it, the interval
is wider than it needs to be.

    python bench/launches/run.py [--mpi embedded,openmpi] [--runs 10] [--bench pingpong,allreduce]
                                 [--sizes 8,1K,64K,1M] [--launches auto] [-n 2]
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

from mpiscope.analysis.launches import LaunchPoint, aggregate
from mpiscope.store import Run
from mpiscope.units import human_size


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


def coverage(series: list[dict[tuple, LaunchPoint]]) -> dict[tuple, tuple[int, int, float, float]]:
    """Per point: (hits, pairs, mean relative half-width, mean launches) over consecutive runs."""
    out = {}
    for key in series[0]:
        pts = [s[key] for s in series if key in s]
        pairs = list(zip(pts, pts[1:]))
        hits = sum(a.ci_low is not None and a.ci_low <= b.median <= a.ci_high for a, b in pairs)
        width = sum(p.half_width_rel for p in pts) / len(pts)
        out[key] = (hits, len(pairs), width, sum(p.launches for p in pts) / len(pts))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mpi", default="embedded,openmpi")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--bench", default="pingpong,allreduce")
    p.add_argument("--sizes", default="8,1K,64K,1M")
    p.add_argument("--launches", default="auto", help="the launch-level runs' --launches (default auto)")
    p.add_argument("-n", "--ranks", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpiscope-launches-") as tmp:
        for mpi in args.mpi.split(","):
            levels: dict[str, list[dict[tuple, LaunchPoint]]] = defaultdict(list)
            took: dict[str, list[float]] = defaultdict(list)
            for i in range(args.runs):  # alternating, so both see the same drift of the machine
                for mode in (args.launches, "1"):
                    run, seconds = measure(mpi, args, mode, Path(tmp) / mpi)
                    levels[mode].append({lp.key: lp for lp in aggregate(run.records())})
                    took[mode].append(seconds)
            multi, single = coverage(levels[args.launches]), coverage(levels["1"])
            print(f"\n{mpi}: {args.runs} runs each, alternating; run i's 95 % interval contains run i+1's "
                  f"estimate (target ~83 %, at least 80 %)")
            print(f"{'benchmark':<10} {'size':>7}  {'launches=' + args.launches:>22} {'half-width':>10} "
                  f"{'launches':>8}  {'launches=1':>14} {'half-width':>10}")
            total = [0, 0, 0, 0]
            for key in sorted(multi, key=lambda k: (k[0], k[1])):
                h, n, w, ln = multi[key]
                h1, n1, w1, _ = single.get(key, (0, 0, float("nan"), 1))
                total = [total[0] + h, total[1] + n, total[2] + h1, total[3] + n1]
                print(f"{key[0]:<10} {human_size(key[1]):>7}  {h:>3}/{n:<3} ({100 * h / max(n, 1):3.0f} %)"
                      f"{'':>8} {100 * w:>9.1f}% {ln:>8.1f}  {h1:>3}/{n1:<3} ({100 * h1 / max(n1, 1):3.0f} %)"
                      f" {100 * w1:>9.1f}%")
            print(f"{'all':<10} {'':>7}  {total[0]:>3}/{total[1]:<3} ({100 * total[0] / max(total[1], 1):3.0f} %)"
                  f"{'':>29}{total[2]:>3}/{total[3]:<3} ({100 * total[2] / max(total[3], 1):3.0f} %)")
            print(f"time per run: {sum(took[args.launches]) / args.runs:.1f} s (launches={args.launches}), "
                  f"{sum(took['1']) / args.runs:.1f} s (launches=1)")


if __name__ == "__main__":
    main()
