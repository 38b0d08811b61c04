"""Do `compare`'s verdicts and the intervals answer? (issue 28; figures, not a test)

Real pairs of runs on each MPI library, on a quiet machine and under a background load that this
bench starts and stops itself (a process busy half of every 100 ms on one core):

* same against same (consecutive runs of one setting): the share of points called slower or
  faster (target <= 5 %), and the share called inconclusive;
* a perturbed run against the first (MPICH: MPIR_CVAR_CH4_CMA_ENABLE=0; Open MPI:
  OMPI_MCA_btl_sm_eager_limit=256): of the points whose estimate moved by 50 % or more, the share
  called slower (faster, for a speed-up: target 100 %) and the share called same (target 0);
* the median relative half-width of the intervals per size class, quiet and loaded;
* the share of (point, launch) pairs found disturbed, quiet and loaded;
* coverage: run i's interval contains run i+1's estimate, from the first run of a fresh runs
  directory and from the third (target >= 80 % for both);
* all of it again with a runs directory that already holds earlier noisy runs (the loaded ones).

It uses only `mpiscope run` and the Python API's `table` and `compare`, so the same file runs on
the code before and after a change (PYTHONPATH=OLD/src python bench/evidence/run.py).

    python bench/evidence/run.py [--mpi embedded,openmpi] [--sizes 8,1K,64K,1M] [--launches auto|N]
        [--keep DIR]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpiscope import api

PERTURB = {"embedded": "MPIR_CVAR_CH4_CMA_ENABLE=0", "openmpi": "OMPI_MCA_btl_sm_eager_limit=256"}


def _busy_half(stop: "multiprocessing.synchronize.Event") -> None:
    """Busy 50 ms, idle 50 ms, until told to stop: half of one core."""
    while not stop.is_set():
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            pass
        time.sleep(0.05)


class Load:
    """A background load, started and stopped by this bench."""

    def __enter__(self) -> "Load":
        self.stop = multiprocessing.Event()
        self.proc = multiprocessing.Process(target=_busy_half, args=(self.stop,), daemon=True)
        self.proc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def measure(args: argparse.Namespace, mpi: str, runs_dir: Path, env: str | None = None) -> str:
    cmd = [sys.executable, "-m", "mpiscope", "run", "--mpi", mpi, "-n", "2", "-b", args.bench, "--sizes", args.sizes,
           "--launches", args.launches, "--no-report", "--no-progress", "--runs-dir", str(runs_dir)]
    if env:
        cmd += ["--env", env]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=600)
    found = re.search(r"saved in (\S+)", done.stdout)
    if done.returncode != 0 or not found:
        sys.exit(f"mpiscope run failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return found.group(1)


def points(run: str) -> dict[tuple, tuple[float, float, float]]:
    """Per (benchmark, size): (estimate, interval low, interval high), NaN where none is shown."""
    df = api.table(run)
    out = {}
    for _, r in df.iterrows():
        low, high = r.get("time_ci_low_us"), r.get("time_ci_high_us")
        out[(r["benchmark"], int(r["size"]))] = (float(r["time_median_us"]), float(low if low is not None else "nan"),
                                                 float(high if high is not None else "nan"))
    return out


def verdicts(base: str, cand: str) -> list[tuple[tuple, str, float]]:
    """Per point: its verdict, change, and whether a side was mostly disturbed (machine busy)."""
    return [((pc.benchmark, pc.size), pc.verdict, pc.change, bool(getattr(pc, "busy", "")))
            for pc in api.compare(base, cand).changes]


def size_class(size: int) -> str:
    return "<=1K" if size <= 1024 else "<=64K" if size <= 65536 else ">64K"


class Tally:
    def __init__(self) -> None:
        self.same = defaultdict(int)       # verdicts of same-against-same points
        self.moved = defaultdict(int)      # verdicts of perturbed points that moved >= 50 %
        self.cover = defaultdict(lambda: [0, 0])  # which pair -> [hits, pairs]
        self.half = defaultdict(list)      # (condition, size class) -> relative half-widths
        self.busy = defaultdict(int)       # (same | moved, verdict) -> points with a side "machine busy"
        self.disturbed = defaultdict(lambda: [0, 0])  # condition -> [disturbed, all] (point, launch) pairs

    def pair(self, label: str, a: str, b: str) -> None:
        pa, pb = points(a), points(b)
        for key, (m, lo, hi) in pa.items():
            if key in pb:
                self.cover[label][1] += 1
                self.cover[label][0] += bool(lo <= pb[key][0] <= hi)

    def launches(self, condition: str, run: str) -> None:
        df = api.table(run)
        self.disturbed[condition][0] += int(df["disturbed_launches"].sum())
        self.disturbed[condition][1] += int(df["launches"].sum())

    def widths(self, condition: str, run: str) -> None:
        for (_, size), (m, lo, hi) in points(run).items():
            self.half[(condition, size_class(size))].append((hi - lo) / 2 / m if np.isfinite(hi - lo) else np.inf)


def cell(args: argparse.Namespace, mpi: str, runs_dir: Path, condition: str, tally: Tally, fresh: bool) -> None:
    """Runs A1..A4 and a perturbed P in `runs_dir`; same-vs-same (A1,A2), (A3,A4); P against A1."""
    n = 4 if fresh else 2
    runs = [measure(args, mpi, runs_dir) for _ in range(n)]
    pert = measure(args, mpi, runs_dir, PERTURB[mpi])
    for r in runs:
        tally.widths(condition, r)
        tally.launches(condition, r)
    if fresh:
        tally.pair(f"{condition}: first run of a fresh directory", runs[0], runs[1])
        tally.pair(f"{condition}: third run", runs[2], runs[3])
    else:
        tally.pair(f"{condition}: with earlier noisy runs", runs[0], runs[1])
    for a, b in zip(runs[::2], runs[1::2]):
        for _, v, _, busy in verdicts(a, b):
            tally.same[v] += 1
            tally.busy[("same", v)] += busy
    for _, v, change, busy in verdicts(runs[0], pert):
        if abs(change) >= 0.5:  # the right verdict is slower for a slowdown, faster for a speed-up
            v = "right" if v == ("slower" if change > 0 else "faster") else v
            tally.moved[v] += 1
            tally.busy[("moved", v)] += busy
    print(f"  {mpi} {condition}{'' if fresh else ' (earlier noisy runs)'}: done", flush=True)


def share(d: dict[str, int], *keys: str) -> str:
    total = sum(d.values())
    hit = sum(d.get(k, 0) for k in keys)
    return f"{hit}/{total} ({100 * hit / total:.0f} %)" if total else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default="embedded,openmpi")
    ap.add_argument("--bench", default="pingpong,allreduce")
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--launches", default="auto", help="as mpiscope run (default auto, its default)")
    ap.add_argument("--keep", type=Path, help="keep the runs directories here (default: a temporary one)")
    args = ap.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    tally = Tally()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mpiscope-evidence-") as scratch:
        tmp = args.keep or scratch
        for mpi in args.mpi.split(","):
            quiet, loaded = Path(tmp) / f"{mpi}-quiet", Path(tmp) / f"{mpi}-loaded"
            cell(args, mpi, quiet, "quiet", tally, fresh=True)
            with Load():
                cell(args, mpi, loaded, "loaded", tally, fresh=True)
            cell(args, mpi, loaded, "quiet", tally, fresh=False)  # a directory holding earlier noisy runs
    print(f"\n{args.mpi}, -b {args.bench} --sizes {args.sizes} --launches {args.launches}, "
          f"{time.monotonic() - t0:.0f} s")
    print(f"same against same: called slower or faster {share(tally.same, 'slower', 'faster')}, "
          f"inconclusive {share(tally.same, 'inconclusive')}, same {share(tally.same, 'same')}")
    print(f"perturbed, moved >= 50 %: called slower/faster as moved {share(tally.moved, 'right')}, "
          f"same {share(tally.moved, 'same')}, inconclusive {share(tally.moved, 'inconclusive')}")
    print("  of which a side was 'machine busy': "
          + ", ".join(f"{what} {v} {n}" for (what, v), n in sorted(tally.busy.items()) if n))
    for label, (hits, pairs) in sorted(tally.cover.items()):
        print(f"coverage of the next run's estimate, {label}: {hits}/{pairs} "
              f"({100 * hits / pairs:.0f} %)" if pairs else f"coverage, {label}: -")
    for condition, (hit, total) in sorted(tally.disturbed.items()):
        print(f"disturbed (point, launch) pairs, {condition}: {hit}/{total} ({100 * hit / max(total, 1):.0f} %)")
    for (condition, cls), hw in sorted(tally.half.items()):
        print(f"median half-width {condition} {cls}: {100 * float(np.median(hw)):.1f} % ({len(hw)} points)")


if __name__ == "__main__":
    main()
