"""How well the collective models predict measured collectives: typed point
records of collective benchmarks against predictions from alpha, beta, gamma."""
from __future__ import annotations

from typing import Iterable

import pandas as pd

from mpiscope.records import Context, Record

from mpiscope.records.measured import Measured, is_measured
from .predict import ALGORITHMS, Params, ParamsFor, mpich_default, predict

# The engine's `size` follows IMB (engine/src/kernels/coll.c): the block of
# one rank (allgather, gather), one rank's share (scatter), the block for one
# peer (alltoall); the models' n is the total, so n = size x p. For bcast,
# reduce, allreduce and reduce_scatter the size is the whole vector: n = size.
PER_RANK_BLOCK = {"allgather", "gather", "scatter", "alltoall"}
# The v-variants move the same amounts while timed: same model.
MODEL_OF = {"allgatherv": "allgather", "alltoallv": "alltoall", "gatherv": "gather",
            "scatterv": "scatter", "reduce_scatter_block": "reduce_scatter"}


def model_bytes(collective: str, size: int, p: int) -> float:
    return float(size * p) if collective in PER_RANK_BLOCK else float(size)


def validate(records: Iterable[Record | Measured], params: Params | ParamsFor,
             ranks: Iterable[int] | None = (2, 3, 4)) -> pd.DataFrame:
    """One row per measured collective point (benchmark known to the models,
    rank count in `ranks`): measured median, the fastest model's prediction and
    the classic-MPICH-default algorithm's, and their relative errors
    (predicted / measured - 1). Records of several runs may be concatenated;
    each run's context record marks its points `oversubscribed` when it says
    so (more ranks than cores: the times measure the scheduler, not MPI)."""
    want = set(ranks) if ranks is not None else None
    rows = []
    oversubscribed = False
    for r in records:
        if isinstance(r, Context):       # applies to the points after it
            oversubscribed = r.oversubscribed
            continue
        if not is_measured(r):
            continue
        coll = MODEL_OF.get(r.benchmark, r.benchmark)
        if coll not in ALGORITHMS or (want is not None and r.ranks not in want):
            continue
        if r.median is None or r.median <= 0 or r.n == 0:
            continue        # no valid sample (every start late under window sync): nothing to compare
        p, size, measured = r.ranks, r.size, r.median
        n = model_bytes(coll, size, p)
        pred = predict(coll, p, n, params)
        win, dflt = next(iter(pred)), mpich_default(coll, p, n)
        d_us = pred.get(dflt, pred[win])
        rows.append({"collective": coll, "benchmark": r.benchmark, "p": p, "size": size, "n": n,
                     "measured_us": measured, "best": win, "best_us": pred[win], "err_best": pred[win] / measured - 1,
                     "default": dflt, "default_us": d_us, "err_default": d_us / measured - 1,
                     "oversubscribed": oversubscribed})
    return pd.DataFrame(rows)


def validation_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Median and worst absolute relative error per collective and rank count."""
    if table.empty:
        return table
    g = table.assign(abs_best=table.err_best.abs(), abs_default=table.err_default.abs())
    return (g.groupby(["collective", "p"])
             .agg(points=("size", "size"),
                  median_err_best=("abs_best", "median"), max_err_best=("abs_best", "max"),
                  median_err_default=("abs_default", "median"),
                  max_err_default=("abs_default", "max"))
             .reset_index())
