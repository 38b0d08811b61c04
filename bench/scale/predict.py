"""`predict` against simulated collectives: fit alpha and beta from a simulated 2-rank pingpong,
and per algorithm from its own runs at few ranks (--fit-ranks, analysis/predict.fit_algorithm),
predict each collective algorithm's time at larger rank counts (analysis/predict.py), and
compare with SMPI running that very algorithm (`--cfg=smpi/<collective>:<name>`) on the same
platform. `python bench/scale/predict.py [--ranks 16,64,256] [--fit-ranks 4,8,16] [--sizes 8,1K,64K,1M]
[--platform cluster:nodes={n}] [--exact] [--collectives bcast,allreduce] [--algorithms alltoall:bruck]`
prints one row per (collective, algorithm, ranks, size) and the median |error| per algorithm of both fits. --exact sets SMPI's latency and bandwidth factors to 1,
so the network is exactly alpha + n beta per message and the error is the models' alone.
Computation takes no simulated time here (smpirun adapter default), so gamma is 0."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from mpiscope.analysis.hockney import fit_hockney
from mpiscope.records.measured import Synthetic
from mpiscope.analysis.predict import Params, fit_algorithm, predict
from mpiscope.analysis.validate import model_bytes
from mpiscope.launchers import Job, launcher_for
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine

# (collective, the model's algorithm name, SMPI's name for the same algorithm)
ALGORITHMS = [
    ("bcast", "binomial", "binomial_tree"), ("bcast", "scatter_rd_allgather", "scatter_rdb_allgather"),
    ("bcast", "scatter_ring_allgather", "scatter_LR_allgather"), ("reduce", "binomial", "binomial"),
    ("allreduce", "recursive_doubling", "rdb"), ("allreduce", "rabenseifner", "rab_rdb"),
    ("allreduce", "ring", "lr"), ("allgather", "recursive_doubling", "rdb"), ("allgather", "ring", "ring"),
    ("alltoall", "bruck", "bruck"), ("alltoall", "pairwise", "pair"), ("barrier", "dissemination", "ompi_bruck"),
]
EXACT = ["--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1"]


def simulate(lib, engine: Path, ranks: int, platform: str, args: list[str], cfg: list[str]) -> list[dict]:
    # the engine's watchdog counts host seconds: on a loaded host a 256-rank alltoall passed 600
    job = Job([str(engine), *args, "--timeout", "3000"], ranks, platform=platform.replace("{n}", str(ranks)),
              extra_args=cfg)
    launch = launcher_for(lib).command(job)
    done = subprocess.run(launch.argv, capture_output=True, text=True, env={**os.environ, **launch.env})
    if done.returncode != 0:  # the points written before are kept
        print(f"  {' '.join(args[:1])} at {ranks} ranks: smpirun failed ({done.returncode}): {done.stderr[-300:]}",
              file=sys.stderr)
    return [r for r in map(json.loads, filter(lambda s: s.startswith("{"), done.stdout.splitlines()))
            if r.get("type") == "point"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default="smpi")
    ap.add_argument("--ranks", default="16,64,256")
    ap.add_argument("--fit-ranks", default="4,8,16", help="the rank counts each algorithm's own fit is made at")
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--platform", default="cluster:nodes={n}")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--collectives", help="only these, comma-separated (default: every one below)")
    ap.add_argument("--algorithms", help="only these COLLECTIVE:MODEL pairs, comma-separated (bcast:binomial)")
    a = ap.parse_args()
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    cfg = EXACT if a.exact else []
    pp = simulate(lib, engine, 2, a.platform.replace("{n}", "2"), ["pingpong", "--sizes", "0:4M:*4"], cfg)
    fit = fit_hockney([Synthetic(size=p["size"], median=p["time_us"]["median"], ci_low=p["time_us"]["ci_low"],
                                 ci_high=p["time_us"]["ci_high"], n=p["time_us"]["n"]) for p in pp])
    params = Params.from_fit(fit)
    print(f"fit from a 2-rank pingpong on {a.platform}: alpha {fit.alpha_us:.3f} us, "
          f"{fit.bandwidth_MBps:.0f} MB/s" + (" (factors 1)" if a.exact else " (SMPI's default factors)"))
    rows = []
    chosen = set(a.collectives.split(",")) if a.collectives else {c for c, _, _ in ALGORITHMS}
    pairs = set(a.algorithms.split(",")) if a.algorithms else {f"{c}:{m}" for c, m, _ in ALGORITHMS}
    for coll, model, smpi in (row for row in ALGORITHMS if row[0] in chosen and f"{row[0]}:{row[1]}" in pairs):
        sizes = ["--sizes", a.sizes] if coll != "barrier" else []
        simulated = {p: simulate(lib, engine, p, a.platform, [coll, *sizes], [*cfg, f"--cfg=smpi/{coll}:{smpi}"])
                     for p in sorted({*map(int, a.fit_ranks.split(",")), *map(int, a.ranks.split(","))})}
        observed = [(p, model_bytes(coll, r["size"], p), r["time_us"]["median"])
                    for p in map(int, a.fit_ranks.split(",")) for r in simulated[p]]
        try:
            own = fit_algorithm(coll, model, observed)
        except ValueError as e:
            print(f"  {coll} {model}: {e}", file=sys.stderr)
            continue
        for p in map(int, a.ranks.split(",")):
            for r in simulated[p]:
                n = model_bytes(coll, r["size"], p)
                predicted, fitted = predict(coll, p, n, params).get(model), predict(coll, p, n, own).get(model)
                if predicted is None or fitted is None:
                    continue
                measured = r["time_us"]["median"]
                rows.append({"collective": coll, "algorithm": model, "ranks": p, "size": r["size"],
                             "simulated_us": measured, "pingpong_us": predicted, "fitted_us": fitted,
                             "error_pingpong": predicted / measured - 1, "error_fitted": fitted / measured - 1})
        print(f"  {coll} {model} ({smpi}) done; fitted at {a.fit_ranks} ranks: alpha {own.alpha_us:.3g} us, "
              f"{1 / own.beta_us_per_byte if own.beta_us_per_byte else float('inf'):.0f} MB/s", file=sys.stderr, flush=True)
        # each algorithm's rows as they come: a launch at thousands of ranks can outlast the session
        for row in (r for r in rows if (r["collective"], r["algorithm"]) == (coll, model)):
            print("  " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  file=sys.stderr, flush=True)
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 180, "display.max_rows", 500):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        for fit in ("pingpong", "fitted"):
            summary = (table.assign(abs_error=table[f"error_{fit}"].abs())
                       .groupby(["collective", "algorithm", "ranks"]).abs_error.median().unstack("ranks"))
            print("\nmedian |predicted / simulated - 1| over sizes, by ranks, alpha and beta "
                  + ("from the 2-rank pingpong:" if fit == "pingpong" else f"fitted per algorithm at {a.fit_ranks} ranks:"))
            print(summary.to_string(float_format=lambda v: f"{100 * v:.1f} %"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
