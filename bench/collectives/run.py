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

Usage: python bench/collectives/run.py [--mpicc PATH] [--mpiexec PATH] [-k 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINE_SRC = HERE.parent.parent / "engine"


def build(mpicc: str, out: Path) -> tuple[Path, Path]:
    subprocess.run(["make", "-s", "-C", str(ENGINE_SRC), f"MPICC={mpicc}", f"BUILD={out}"], check=True)
    minimal = out / "minimal"
    subprocess.run([mpicc, "-O2", "-o", str(minimal), str(HERE / "minimal.c")], check=True)
    return out / "mpiscope-engine", minimal


def launcher(mpiexec: str, ranks: int) -> list[str]:
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True)
    is_open_mpi = "Open MPI" in version.stdout + version.stderr
    extra = ["--allow-run-as-root"] + (["--oversubscribe"] if ranks > 2 else []) if is_open_mpi else []
    return [mpiexec, "-n", str(ranks), *extra]


def engine_figures(launch: list[str], engine: Path, size: int, sync: str) -> dict:
    out = subprocess.run(launch + [str(engine), "--sizes", str(size), "--ci-target", "0.01", "--max-time", "1",
                                   "--sync", sync, "allreduce"],
                         capture_output=True, text=True, check=True).stdout
    return next(json.loads(l) for l in out.splitlines() if '"type": "point"' in l)


def minimal_figure(launch: list[str], minimal: Path, size: int) -> float:
    out = subprocess.run(launch + [str(minimal), str(size), "30"], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    prefix = Path(sys.prefix) / "bin"
    ap.add_argument("--mpicc", default=str(prefix / "mpicc") if (prefix / "mpicc").exists() else "mpicc")
    ap.add_argument("--mpiexec", default=str(prefix / "mpiexec") if (prefix / "mpiexec").exists() else "mpiexec")
    ap.add_argument("-k", "--alternations", type=int, default=3)
    ap.add_argument("--ranks", default="2,4")
    args = ap.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    work = Path(tempfile.mkdtemp(prefix="mpiscope-coll-"))
    try:
        engine, minimal = build(args.mpicc, work)
        for ranks in (int(r) for r in args.ranks.split(",")):
            launch = launcher(args.mpiexec, ranks)
            for size in (8, 1 << 20):
                window, barrier, t_avg, mini, invalid = [], [], [], [], []
                for _ in range(args.alternations):
                    w = engine_figures(launch, engine, size, "window")
                    window.append(w["time_us"]["median"])
                    t_avg.append(w["t_avg_us"])
                    invalid.append(w["invalid"] / (w["invalid"] + w["time_us"]["n"]))
                    barrier.append(engine_figures(launch, engine, size, "barrier")["time_us"]["median"])
                    mini.append(minimal_figure(launch, minimal, size))
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
