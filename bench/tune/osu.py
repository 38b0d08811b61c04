#!/usr/bin/env python3
"""tune's ranking against an independent reference (issue 46; figures, not a test): OSU's
osu_allreduce / osu_bcast, run with each setting a tune raced forced by its own variables, in
rounds, the settings in a new random order each round (alternated, so that a machine drifting
over the bench weighs on all alike); prints per size each setting's OSU latency (the median over
rounds of OSU's average), its ratio to the library's default with the 95 % interval and verdict
of tune's one comparison (`analysis.tune.judge`, an OSU run being one launch), and beside it
tune's own time and ratio from the tune's tune.json: whether the reference agrees with the
ranking tune acted on.

    python bench/tune/osu.py --build OSU_SRC --osu ~/osu-mpich [--mpi embedded]
    python bench/tune/osu.py --osu ~/osu-mpich --tune mpiscope-runs/tune-... [--rounds 9]
                             [--setting default --setting ring] [--sizes 8,65536]

--build compiles osu_allreduce and osu_bcast from an OSU 7.x checkout (c/util's osu_util*.c and
c/mpi/collective/blocking; no configure, no automake) with the library's mpicc into --osu.
Each setting is forced as the tune forced it: its variables (the algorithm's CVAR or MCA
parameter, a layer's choice), over the tune's own --env and the layers' steady state
(`mpi.layers.steady_env`). --setting defaults to every setting the tune measured at the
collective's sizes (a name may hold commas: tree:k=2,tree_type=kary). One node only: the reference runs with the library's own launcher.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

from mpiscope.analysis.tune import MARGIN, judge
from mpiscope.execute.session import target
from mpiscope.mpi.collectives import DEFAULT, discover, mpivars, vendor_of
from mpiscope.mpi.layers import steady_env

ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
PROGRAMS = ("allreduce", "bcast")
UTIL = ("", "_mpi", "_papi", "_graph", "_validation")  # c/util/osu_util*.c: what a collective program links


def build(src: Path, out: Path, mpicc: Path) -> None:
    """osu_allreduce and osu_bcast from an OSU 7.x checkout, with the library's mpicc."""
    out.mkdir(parents=True, exist_ok=True)
    util = src / "c" / "util"
    for coll in PROGRAMS:
        argv = [str(mpicc), "-O2", "-I", str(util), *[str(util / f"osu_util{part}.c") for part in UTIL],
                str(src / "c" / "mpi" / "collective" / "blocking" / f"osu_{coll}.c"), "-o", str(out / f"osu_{coll}"),
                "-lm"]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"building osu_{coll} failed:\n{done.stderr[-3000:]}")
        print(f"built {out / f'osu_{coll}'}")


def osu(program: Path, launcher: list[str], env: dict[str, str], size: int, iterations: int) -> float:
    """One OSU run at one size (OSU measures every power of two between -m's bounds): its average
    latency (us)."""
    argv = [*launcher, str(program), "-m", f"{size}:{size}", "-i", str(iterations), "-x", str(max(iterations // 10, 10))]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **ROOT, **env}, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    for line in done.stdout.splitlines():
        m = re.match(r"^\s*(\d+)\s+([\d.]+)", line)
        if m and int(m.group(1)) == size:
            return float(m.group(2))
    raise RuntimeError(f"{' '.join(argv)} printed no line for {size} B: {done.stdout[-300:]}")


def settings_of(result: dict, coll: str, ranks: int, wanted: list[str] | None) -> list[str]:
    names = wanted or sorted({a for d in result["decisions"] if d["collective"] == coll and d["ranks"] == ranks
                              for a in d["times"]})
    return [DEFAULT] + [n for n in names if n != DEFAULT]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--osu", type=Path, required=True, help="the directory of osu_allreduce and osu_bcast")
    p.add_argument("--build", type=Path, metavar="OSU_SRC", help="build them first from this OSU 7.x checkout")
    p.add_argument("--mpi", default=None, help="the library (default: the tune's, else the embedded MPICH)")
    p.add_argument("--tune", type=Path, help="a finished tune's directory (its tune.json and state.json)")
    p.add_argument("--collective", default="allreduce", choices=PROGRAMS)
    p.add_argument("-n", "--ranks", type=int, default=2)
    p.add_argument("--setting", action="append", default=[], metavar="NAME",
                   help="a setting to force, as tune names it (repeat; default: every one the tune measured)")
    p.add_argument("--sizes", default=None, help="sizes in bytes, comma-separated (default: the tune's)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="set for every run")
    a = p.parse_args()
    result, state = {}, {}
    if a.tune:
        result = json.loads((a.tune / "tune.json").read_text())
        state = json.loads((a.tune / "state.json").read_text())
    description = state.get("description", {})
    lib = target(a.mpi or description.get("mpi")).lib
    if a.build:
        build(a.build, a.osu, lib.mpicc)
    vendor = vendor_of(lib)
    names = settings_of(result, a.collective, a.ranks, a.setting or None) if result or a.setting else [DEFAULT]
    found = {x.name: x for x in discover(lib, (a.collective,), a.ranks)[a.collective].algorithms}
    unknown = [n for n in names if n != DEFAULT and n not in found]
    if unknown:
        sys.exit(f"{a.collective}: {', '.join(unknown)} not among the library's algorithms here "
                 f"(a layer's choice across nodes is not run by this one-node bench)")
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else sorted(
        {d["size"] for d in result.get("decisions", []) if d["collective"] == a.collective and d["ranks"] == a.ranks})
    if not sizes:
        sys.exit("no sizes: give --sizes or a --tune that measured this collective at these ranks")
    base = {**steady_env(vendor, mpivars(lib) if vendor == "mpich" else ""), **description.get("env", {}),
            **dict(e.split("=", 1) for e in a.env)}
    launcher = [str(lib.mpicc.parent / ("mpirun" if vendor == "openmpi" else "mpiexec")), "-n", str(a.ranks)]
    launcher += ["--oversubscribe", "--bind-to", "none"] * (vendor == "openmpi")
    program = a.osu / f"osu_{a.collective}"
    times: dict[str, dict[int, list[float]]] = {n: {s: [] for s in sizes} for n in names}
    load = []
    for r in range(a.rounds):
        order = random.sample(names, len(names))
        load.append(os.getloadavg()[0])
        for name in order:
            env = {**base, **(found[name].env if name != DEFAULT else {})}
            for size in sizes:
                times[name][size].append(osu(program, launcher, env, size, a.iterations))
        print(f"round {r + 1}/{a.rounds}: {', '.join(order)}", file=sys.stderr)
    print(f"{lib.vendor} {lib.version}, {a.collective}, {a.ranks} ranks, {a.rounds} rounds alternated, load "
          f"{min(load):.1f}-{max(load):.1f}")
    print(f"{'size':>8}  {'setting':<34} {'OSU us':>9} {'OSU / default [95 %]':>30}   {'tune us':>9} {'tune / default':>14}")
    decisions = {d["size"]: d for d in result.get("decisions", []) if d["collective"] == a.collective
                 and d["ranks"] == a.ranks}
    for size in sizes:
        d = decisions.get(size, {})
        for name in sorted(names, key=lambda n: statistics.median(times[n][size]) if times[n][size] else 1e99):
            got = times[name][size]
            if not got:
                continue
            ratio = "-"
            if name != DEFAULT:
                r = judge(times[DEFAULT][size], got, MARGIN)
                ratio = f"{r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}] {r.verdict}"
            tuned = d.get("times", {}).get(name)
            base_t = d.get("times", {}).get(DEFAULT)
            mark = " <- written" if d.get("chosen") == name else (" <- race leader" if d.get("leader") == name else "")
            print(f"{size:>8}  {name:<34} {statistics.median(got):>9.2f} {ratio:>30}   "
                  f"{'-' if tuned is None else f'{tuned:.2f}':>9} "
                  f"{'-' if tuned is None or not base_t else f'{tuned / base_t:.2f}':>14}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
