"""Figures for the disturbed-launch rule (results/disturbance.py; docs/statistics.md, *Disturbed
launches*): the engine's pingpong on two ranks bound to cores 0 and 1, as measured (whatever else
the machine runs) and with LOAD busy processes this bench pins to core 0 itself. Per size it
prints the worst rank's involuntary context switches per event, the median, p90 and whether the
rule calls the point disturbed; at the end the share disturbed per condition. Not a test: figures.

    .venv/bin/python bench/disturbance/run.py [--mpi NAME] [--load 2] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mpiscope.launchers import Job, launcher_for, local_cores
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine
from mpiscope.records import parse_record
from mpiscope.results.disturbance import counters, disturbed

SIZES = "8,1K,64K,1M"


def measure(lib, engine: Path) -> list[dict]:
    job = Job([str(engine), "--sizes", SIZES, "--max-time", "0.5", "pingpong"], 2, binding="core")
    launch = launcher_for(lib).command(job, local_cores())
    done = subprocess.run(launch.argv, capture_output=True, text=True, env={**os.environ, **launch.env}, timeout=600)
    return [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]


def busy(load: int) -> list[subprocess.Popen]:
    taskset = shutil.which("taskset")
    if taskset is None:
        sys.exit("bench/disturbance: needs taskset (util-linux)")
    return [subprocess.Popen([taskset, "-c", "0", "sh", "-c", "while :; do :; done"]) for _ in range(load)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi")
    ap.add_argument("--load", type=int, default=2, help="busy processes pinned to core 0")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    shares = {}
    print(f"{'condition':10} {'size':>8} {'switches/event':>15} {'median us':>10} {'p90 us':>10}  disturbed")
    for condition, load in (("as is", 0), (f"load {a.load}", a.load)):
        flagged = total = 0
        for _ in range(a.repeats):
            procs = busy(load) if load else []
            try:
                recs = measure(lib, engine)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            ctx = parse_record(recs[0])
            for rec in (r for r in recs if r["type"] == "point"):
                p = parse_record(rec)
                c = counters(p, ctx)
                cause = disturbed(p, ctx)
                flagged, total = flagged + bool(cause), total + 1
                rate = (c.involuntary_switches or 0) / max(c.events, 1)
                print(f"{condition:10} {p.size:>8} {rate:>15.3f} {p.time_us.median:>10.4g} {p.time_us.p90:>10.4g}  "
                      f"{'yes' if cause else 'no'}; run queue {c.run_queue:g}")
        shares[condition] = (flagged, total)
    for condition, (flagged, total) in shares.items():
        print(f"{condition}: {flagged} of {total} points disturbed ({flagged / total:.0%})")


if __name__ == "__main__":
    main()
