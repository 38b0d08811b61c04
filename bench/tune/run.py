#!/usr/bin/env python3
"""What `mpiscope tune` chooses and gains, and what its race saves (issue 29; figures, not a test).

For each MPI: `mpiscope tune` (racing) and `mpiscope tune --exhaustive` (every algorithm at every
size in every round) on the same collectives, sizes and ranks; prints per collective, rank count
and size band the algorithm written, the side-by-side gain of the file over the default (default
time / tuned time, its 95 % interval and verdict), and the wall time and point-launches of the
race against the exhaustive sweep (both pack every collective into each launch; the one-launch-
per-algorithm-and-collective count of earlier tunes is printed beside them). Start a background
load first to see a noisy machine.

    python bench/tune/run.py [--mpi embedded,openmpi] [--collectives allreduce,bcast] [-n 2]
                             [--sizes 8,1K,64K,1M] [--rounds 4] [--no-exhaustive] [--pairs 3]
                             [--namespace-hosts 2 --ranks-per-node 1]

--namespace-hosts N makes N network-namespace hosts (tests/fixtures/netns.py; root, iproute2)
and runs every tune inside the first, over TCP between them, with what each library needs to
reach them (the ssh stand-in, the interface).

With --pairs N the race and the exhaustive sweep run N times each, alternated (race first, then
exhaustive first, ...), so that a machine drifting over the bench weighs on both alike; the
summary gives each pair's race/exhaustive wall time and the median.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpiscope.report.tune import written
from mpiscope.util.units import human_size

ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def across(cluster, mpi: str) -> list[str]:
    """What `mpi` needs to reach namespace hosts and use TCP between them (tests/cluster's options)."""
    if mpi == "openmpi":
        return ["--bind-to", "none", f"--launcher-args=--prtemca plm_ssh_agent {cluster.agent} --prtemca "
                f"oob_tcp_if_include {cluster.iface} --mca btl_tcp_if_include {cluster.iface} --mca "
                f"mpi_yield_when_idle 1"]
    return [f"--launcher-args=-launcher ssh -launcher-exec {cluster.agent} -iface {cluster.iface}",
            "--env=UCX_TLS=self,tcp", f"--env=UCX_NET_DEVICES={cluster.iface}"]


def tune(mpi: str, args: argparse.Namespace, runs_dir: Path, exhaustive: bool) -> tuple[dict | None, float, str]:
    cmd = [sys.executable, "-m", "mpiscope", "tune", *args.collectives.split(","), "--mpi", mpi, "-n", args.ranks,
           "--sizes", args.sizes, "--rounds", str(args.rounds), "--verify-launches", str(args.verify_launches),
           "--verify-max-launches", str(args.verify_max_launches),
           "--max-time", str(args.max_time), "--live-launches", str(args.live_launches), "--no-progress",
           "--runs-dir", str(runs_dir), *[f"--env={e}" for e in args.env]]
    cmd += ["--exhaustive"] * exhaustive + ["--oversubscribe"] * args.oversubscribe
    cmd += ["--ranks-per-node", str(args.ranks_per_node)] * bool(args.ranks_per_node)
    t0 = time.monotonic()
    env = {**ROOT, "COLUMNS": "200"}
    if args.cluster is not None:  # inside the first namespace host, as a user on a login node
        cmd += ["--hosts", ",".join(args.cluster.hosts), *across(args.cluster, mpi)]
        done = args.cluster.run(cmd, env=env, timeout=7200)
    else:
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    took = time.monotonic() - t0
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("tune: /")), None)
    if line is None or not (Path(line.split()[1]) / "tune.json").is_file():
        return None, took, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads((Path(line.split()[1]) / "tune.json").read_text()), took, done.stderr.strip()


def gain(v: dict | None) -> str:
    if not v:
        return "-"
    lo, hi = 1 / v["high"], 1 / v["low"]
    return f"{1 / v['ratio']:.3f} [{lo:.3f}, {hi:.3f}] {v['verdict']}"


def show(mpi: str, res: dict, took: float) -> None:
    print(f"\n== {mpi}: {res['library']}  file {res['file']} ({res['format']})")
    for coll, served in res.get("layers", {}).items():
        print(f"  {coll}: served by {served['component']} ({served['layer']}): {served['why']}")
    for row in res.get("liveness", []):
        print(f"  {row['collective']} {row['ranks']} {row['knob']}: {'live' if row['live'] else 'NOT live'}: "
              f"{row['evidence']}")
    print(f"  liveness check {res.get('liveness_seconds', 0):.0f} s")
    verify = {(v["collective"], v["ranks"], v["size"]): v for v in res.get("verify", [])}
    print(f"{'collective':>14} {'ranks':>5} {'size':>8}  {'fastest in race':<26} {'race: leader/default':<34} "
          f"{'written':<26} side-by-side gain over default")
    for d in res["decisions"]:
        v = verify.get((d["collective"], d["ranks"], d["size"]))
        r = d.get("race_ratio")
        race = f"{r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}] {r['verdict']}" if r else "-"
        print(f"{d['collective']:>14} {d['ranks']:>5} {human_size(d['size']):>8}  {d['leader']:<26} {race:<34} "
              f"{written(d):<26} {gain(v)}")
    for what, why in res.get("failed", {}).items():
        print(f"  did not run: {what}: {why}")
    if res.get("evidence"):
        print(f"  {res['evidence']}")
    c = res["cost"]
    if not c:
        print(f"  no race (no live knob); whole tune {took:.0f} s")
        return
    print(f"  race: {c['point_launches']} of {c['exhaustive_point_launches']} point-launches "
          f"({100 * c['share']:.0f} %) in {c['launches']} launches (exhaustive {c['exhaustive_launches']}, one per "
          f"algorithm and collective {c['unpacked_launches']}); race {c['seconds']:.0f} s, whole tune {took:.0f} s")


def pair(mpi: str, args: argparse.Namespace, tmp: Path, exhaustive_first: bool) -> float | None:
    """One race and one exhaustive sweep (in the order asked); the race's wall time over the
    sweep's, None when either did not race."""
    runs = {}
    for exhaustive in ([True, False] if exhaustive_first else [False, True]):
        if exhaustive and args.no_exhaustive:
            continue
        res, took, err = tune(mpi, args, tmp / ("exhaustive" if exhaustive else "race"), exhaustive)
        if res is None:
            print(f"\n== {mpi}: {'exhaustive sweep' if exhaustive else 'tune'} failed: {err}")
            return None
        runs[exhaustive] = (res, took)
    res, took = runs[False]
    show(mpi, res, took)
    if args.no_exhaustive:
        return None
    ex, _ = runs[True]
    same = sum(a["chosen"] == b["chosen"] for a, b in zip(res["decisions"], ex["decisions"]))
    ec, rc = ex["cost"], res["cost"]
    if not ec or not rc:
        print("  no race to weigh (no live knob)")
        return None
    print(f"  exhaustive sweep{' (run first)' if exhaustive_first else ''}: {ec['point_launches']} point-launches "
          f"in {ec['launches']} launches, {ec['seconds']:.0f} s (racing: {rc['launches']} launches, "
          f"{rc['seconds']:.0f} s, {100 * rc['seconds'] / ec['seconds']:.0f} % of the exhaustive time; with the "
          f"liveness check {rc['seconds'] + res['liveness_seconds']:.0f} s against "
          f"{ec['seconds'] + ex['liveness_seconds']:.0f} s); same choice at {same} of {len(res['decisions'])} points")
    ex_verify = {(v["collective"], v["ranks"], v["size"]): v for v in ex.get("verify", [])}
    for a, b in zip(res["decisions"], ex["decisions"]):
        if a["chosen"] != b["chosen"]:
            key = (b["collective"], b["ranks"], b["size"])
            print(f"    {a['collective']} {a['ranks']} {human_size(a['size'])}: race {a['chosen']}, "
                  f"exhaustive {written(b)} (its side-by-side gain {gain(ex_verify.get(key))})")
    return rc["seconds"] / ec["seconds"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mpi", default="embedded,openmpi")
    p.add_argument("--collectives", default="allreduce,bcast,allgather,alltoall,barrier")
    p.add_argument("-n", "--ranks", default="2")
    p.add_argument("--sizes", default="8,1K,64K,1M")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--verify-launches", type=int, default=6)
    p.add_argument("--verify-max-launches", type=int, default=12)
    p.add_argument("--max-time", type=float, default=0.1)
    p.add_argument("--oversubscribe", action="store_true")
    p.add_argument("--live-launches", type=int, default=3, help="the liveness check's launches a side (0: none)")
    p.add_argument("--env", action="append", default=[], help="KEY=VALUE for every launch (a layer forced)")
    p.add_argument("--no-exhaustive", action="store_true", help="only the race (half the time)")
    p.add_argument("--pairs", type=int, default=1, help="race and exhaustive sweep N times each, alternated")
    p.add_argument("--namespace-hosts", type=int, default=0, metavar="N",
                   help="tune across N network-namespace hosts (TCP between them)")
    p.add_argument("--ranks-per-node", type=int, help="tune's --ranks-per-node")
    args = p.parse_args()
    args.cluster = None
    if args.namespace_hosts:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
        from shaping import netns_module  # the bench that loads the fixture
        with netns_module().netns_cluster(args.namespace_hosts) as args.cluster:
            return bench(args)
    return bench(args)


def bench(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="mpiscope-bench-tune-") as tmp:
        for mpi in args.mpi.split(","):
            ratios = []
            for k in range(args.pairs):
                ratio = pair(mpi, args, Path(tmp) / f"{mpi}-{k}", exhaustive_first=k % 2 == 1)
                if ratio is not None:
                    ratios.append(ratio)
            if len(ratios) > 1:
                print(f"\n== {mpi}: race / exhaustive wall time over {len(ratios)} alternated pairs: "
                      f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
