"""Host seconds and peak memory of the default collectives simulated by SMPI at growing rank
counts: `python bench/scale/run.py [--ranks 64,256,1024,4096] [--sizes 4:1M] [--platform KIND:...]
[--collectives alltoall] [--timeout S] [--records DIR] [--engine-args="--stop-identical 0"]
[--cfg network/crosstraffic:0 ...]`.

Each rank count is one smpirun of the engine (built with smpicc, launched by mpiscope's smpirun
adapter) on a cluster of as many nodes; peak memory is the launch's maximum resident set
(the proportional set size of the launch's processes, sampled every 0.2 s: the resident set
counts a shared payload page once per mapping, and under SMPI every rank maps the same pages);
CPU seconds are the host's work, which a loaded machine does not
inflate as it does wall seconds. Prints one line a rank count, and the growth between them."""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from mpiscope.launchers import Job, launcher_for
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine
from mpiscope.plan.engine import DEFAULT_COLLECTIVE_SIZES, DEFAULT_COLLECTIVES


def tree_pss_kib(pid: int) -> int:
    """The proportional set size of a process and its descendants (0 once they are gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            total += int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += map(int, (task / "children").read_text().split())
        except (OSError, StopIteration, ValueError):
            continue
    return total


def one(lib, engine: Path, ranks: int, sizes: str, platform: str, timeout: float, collectives: list[str],
        extra: list[str], keep: Path | None, cfg: list[str]) -> dict:
    # the engine's watchdog counts host seconds (600 a point at least under SMPI): on a loaded
    # host a 1024-rank alltoall passed that, so a point may take as long as the whole launch
    job = Job([str(engine), *collectives, "--sizes", sizes, "--timeout", str(timeout), *extra], ranks,
              platform=platform.replace("{n}", str(ranks)), extra_args=[f"--cfg={c}" for c in cfg])
    launch = launcher_for(lib).command(job)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = usage.ru_utime + usage.ru_stime
    t0 = time.monotonic()
    proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **launch.env}, start_new_session=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_pss_kib(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # smpirun is a script: its smpimain too
        stdout, stderr = proc.communicate()
    sampler.join()
    host_s = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = usage.ru_utime + usage.ru_stime - cpu0
    if keep:  # each launch's records, to compare the points of two engines or options
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{ranks}.jsonl").write_text(stdout)
    records = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    points = [r for r in records if r.get("type") == "point"]
    return {"ranks": ranks, "status": proc.returncode, "points": len(points), "host_s": host_s, "cpu_s": cpu_s,
            "peak_MiB": peak[0] / 1024 if peak[0] else float("nan"),
            "simulated_s": sum(p["elapsed_s"] for p in points),
            "skips": sum(r.get("type") == "skip" for r in records), "stderr": stderr[-300:],
            "by_benchmark": {b: sum(p["host_s"] for p in points if p["benchmark"] == b) for b in collectives}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="smpi")
    ap.add_argument("--ranks", default="64,256,1024,4096")
    ap.add_argument("--sizes", default=DEFAULT_COLLECTIVE_SIZES)
    ap.add_argument("--platform", default="cluster:nodes={n}")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--collectives", default=",".join(DEFAULT_COLLECTIVES), help="comma-separated (the defaults)")
    ap.add_argument("--engine-args", default="", help="more engine flags, e.g. '--stop-identical 0'")
    ap.add_argument("--records", type=Path, help="write each launch's records to DIR/RANKS.jsonl")
    ap.add_argument("--cfg", action="append", default=[], help="a SimGrid option KEY:VALUE (repeatable)")
    a = ap.parse_args()
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    collectives = a.collectives.split(",")
    print(f"{lib.vendor} {lib.version}: {', '.join(collectives)} at sizes {a.sizes} on {a.platform}")
    print(f"{'ranks':>6} {'points':>6} {'skips':>5} {'host s':>9} {'CPU s':>9} {'peak MiB':>9} {'simulated s':>11}  status")
    rows = []
    for n in (int(x) for x in a.ranks.split(",")):
        r = one(lib, engine, n, a.sizes, a.platform, a.timeout, collectives, a.engine_args.split(), a.records,
                a.cfg)
        rows.append(r)
        print(f"{n:>6} {r['points']:>6} {r['skips']:>5} {r['host_s']:>9.1f} {r['cpu_s']:>9.1f} {r['peak_MiB']:>9.0f} "
              f"{r['simulated_s']:>11.4f}  {r['status']}" + (f"  {r['stderr'].strip()}" if r["status"] else ""),
              flush=True)
        print("       host s of the points: " + ", ".join(f"{b} {s:.1f}" for b, s in r["by_benchmark"].items()),
              flush=True)
    for a_, b in zip(rows, rows[1:]):
        k = math.log(b["ranks"] / a_["ranks"])
        print(f"{a_['ranks']} -> {b['ranks']} ranks: CPU time grows as ranks^{math.log(b['cpu_s'] / a_['cpu_s']) / k:.2f}"
              + (f", peak memory as ranks^{math.log(b['peak_MiB'] / a_['peak_MiB']) / k:.2f}"
                 if a_["peak_MiB"] > 0 and b["peak_MiB"] > 0 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
