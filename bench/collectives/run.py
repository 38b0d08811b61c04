#!/usr/bin/env python3
"""mpiscope's allreduce figures against a minimal hand-written barrier+loop
measurement (IMB's method), built with the same MPI.

Prints figures; it is a benchmark, not a test. For 8 B and 1 MiB on 2 and 4
ranks it alternates engine and minimal runs (the machine drifts between
launches) and reports the medians and their ratios:

    engine window median / minimal   the engine's default: every call starts at
                                     the same moment, timed to the last rank's
                                     finish (no pipelining of calls)
    engine barrier median / minimal  a barrier before every call (OSU's way)
    engine t_avg / minimal           IMB's t_avg from the engine's window samples

Ratios near 1 mean the engine adds nothing; above 1 at small sizes is what
synchronised single calls cost compared with a back-to-back loop, whose calls
overlap each other.

Usage: python bench/collectives/run.py [--mpi NAME] [-k 3] [--ranks 2,4]
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


def engine_figures(lib, ranks: int, engine: Path, size: int, sync: str) -> dict:
    out = run(lib, ranks, [str(engine), "--sizes", str(size), "--ci-target", "0.01", "--max-time", "1",
                           "--sync", sync, "allreduce"])
    return next(json.loads(line) for line in out.splitlines() if '"type": "point"' in line)


def minimal_figure(lib, ranks: int, minimal: Path, size: int) -> float:
    return float(run(lib, ranks, [str(minimal), str(size), "30"]).split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", help="MPI library by its mpiscope name (default: the embedded MPICH)")
    ap.add_argument("-k", "--alternations", type=int, default=3)
    ap.add_argument("--ranks", default="2,4")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mpiscope-coll-"))
    try:
        lib, engine, minimal = setup(args.mpi, HERE / "minimal.c", work)
        for ranks in (int(r) for r in args.ranks.split(",")):
            for size in (8, 1 << 20):
                window, barrier, t_avg, mini, invalid = [], [], [], [], []
                for _ in range(args.alternations):
                    w = engine_figures(lib, ranks, engine, size, "window")
                    window.append(w["time_us"]["median"])
                    t_avg.append(w["t_avg_us"])
                    invalid.append(w["invalid"] / (w["invalid"] + w["time_us"]["n"]))
                    barrier.append(engine_figures(lib, ranks, engine, size, "barrier")["time_us"]["median"])
                    mini.append(minimal_figure(lib, ranks, minimal, size))
                m = statistics.median(mini)
                print(f"allreduce {size} B on {ranks} ranks: minimal loop {m:.4g} us")
                for label, xs in (("window median", window), ("barrier median", barrier), ("t_avg (IMB)", t_avg)):
                    e = statistics.median(xs)
                    print(f"  engine {label:15s} {e:10.4g} us  ratio {e / m:.3f}   runs: "
                          + " ".join(f"{x:.4g}" for x in xs))
                print(f"  minimal runs: {' '.join(f'{x:.4g}' for x in mini)}; "
                      f"invalid window samples: {statistics.median(invalid):.1%}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
