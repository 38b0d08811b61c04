#!/usr/bin/env python3
"""Engine overhead against minimal hand-written loops, built with the same MPI.

Prints figures; it is a benchmark, not a test. Alternates engine and minimal
runs in one session (the machine drifts between launches), then reports the
median of each and their ratio:

    pingpong 8 B latency: engine / minimal   (target: at most 1.03)
    bw 1 MiB bandwidth:   engine / minimal   (target: at least 0.97)

Usage: python bench/overhead/run.py [--mpicc PATH] [--mpiexec PATH] [-k 7]
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


def launcher(mpiexec: str) -> list[str]:
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True)
    is_open_mpi = "Open MPI" in version.stdout + version.stderr
    return [mpiexec, "-n", "2"] + (["--allow-run-as-root"] if is_open_mpi else [])


def engine_figure(launch: list[str], engine: Path, bench: str, size: int) -> float:
    out = subprocess.run(launch + [str(engine), "--sizes", str(size), "--ci-target", "0.005",
                                   "--max-time", "2", bench],
                         capture_output=True, text=True, check=True).stdout
    point = next(json.loads(l) for l in out.splitlines() if '"type": "point"' in l)
    return point["time_us"]["median"] if bench == "pingpong" else point["bw_MBps"]["median"]


def minimal_figure(launch: list[str], minimal: Path, bench: str, size: int) -> float:
    out = subprocess.run(launch + [str(minimal), bench, str(size), "300"],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    prefix = Path(sys.prefix) / "bin"
    ap.add_argument("--mpicc", default=str(prefix / "mpicc") if (prefix / "mpicc").exists() else "mpicc")
    ap.add_argument("--mpiexec", default=str(prefix / "mpiexec") if (prefix / "mpiexec").exists() else "mpiexec")
    ap.add_argument("-k", "--alternations", type=int, default=7)
    args = ap.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    work = Path(tempfile.mkdtemp(prefix="mpiscope-overhead-"))
    try:
        engine, minimal = build(args.mpicc, work)
        launch = launcher(args.mpiexec)
        for bench, size, unit, better in (("pingpong", 8, "us", "lower"), ("bw", 1 << 20, "MB/s", "higher")):
            eng, mini = [], []
            for _ in range(args.alternations):
                eng.append(engine_figure(launch, engine, bench, size))
                mini.append(minimal_figure(launch, minimal, bench, size))
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
