#!/usr/bin/env python3
"""Engine overhead against minimal hand-written loops, built with the same MPI.

Prints figures; it is a benchmark, not a test. Alternates engine and minimal
runs in one session (the machine drifts between launches), then reports the
median of each and their ratio:

    pingpong 8 B latency: engine / minimal   (target: at most 1.03)
    bw 1 MiB bandwidth:   engine / minimal   (target: at least 0.97)
    put 8 B latency (put_latency, flush, --rma-batch 1000 as the minimal loop's batches):
                          engine / minimal   (target: at most 1.03)
    put 1 MiB bandwidth (put_bw, 64 puts per flush): engine / minimal   (target: at least 0.97)

Usage: python bench/overhead/run.py [--mpi NAME] [-k 7] [--only pingpong,bw,put,putbw]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from common import run, setup  # noqa: E402  (bench/common.py, beside this folder)


# the minimal program's mode -> the engine's row and its options
ENGINE_ROW = {"pingpong": ["pingpong"], "bw": ["bw"], "put": ["--rma-sync", "flush", "--rma-batch", "1000", "put_latency"],
              # the minimal loop puts from one buffer to one place: an in-cache rate (docs/benchmarks-rma.md)
              "putbw": ["--rma-sync", "flush", "--rma-ops", "64", "--rma-buffers", "single", "put_bw"]}
LATENCY = {"pingpong", "put"}


def engine_figure(lib, engine: Path, bench: str, size: int) -> float:
    out = run(lib, 2, [str(engine), "--sizes", str(size), "--ci-target", "0.005", "--max-time", "2",
                       *ENGINE_ROW[bench]])
    point = next(json.loads(line) for line in out.splitlines() if '"type": "point"' in line)
    return point["time_us"]["median"] if bench in LATENCY else point["bw_MBps"]["median"]


def minimal_figure(lib, minimal: Path, bench: str, size: int) -> float:
    return float(run(lib, 2, [str(minimal), bench, str(size), "300"]).split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", help="MPI library by its mpiscope name (default: the embedded MPICH)")
    ap.add_argument("-k", "--alternations", type=int, default=7)
    ap.add_argument("--only", default="pingpong,bw,put,putbw", help="comma-separated: pingpong,bw,put,putbw")
    args = ap.parse_args()
    only = args.only.split(",")
    work = Path(tempfile.mkdtemp(prefix="mpiscope-overhead-"))
    try:
        lib, engine, minimal = setup(args.mpi, HERE / "minimal.c", work)
        for bench, size, unit, better in (("pingpong", 8, "us", "lower"), ("bw", 1 << 20, "MB/s", "higher"),
                                          ("put", 8, "us", "lower"), ("putbw", 1 << 20, "MB/s", "higher")):
            if bench not in only:
                continue
            eng, mini = [], []
            for _ in range(args.alternations):
                eng.append(engine_figure(lib, engine, bench, size))
                mini.append(minimal_figure(lib, minimal, bench, size))
            e, m = statistics.median(eng), statistics.median(mini)
            print(f"{bench} {size} B: engine {e:.4g} {unit}, minimal {m:.4g} {unit}, "
                  f"ratio {e / m:.3f} ({better} is better; {args.alternations} alternations)")
            print(f"  engine runs:  {' '.join(f'{x:.4g}' for x in eng)}")
            print(f"  minimal runs: {' '.join(f'{x:.4g}' for x in mini)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
