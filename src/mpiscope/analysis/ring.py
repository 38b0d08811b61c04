"""The ring case study's numbers: its points with the study's factors (algorithm, load, nblock,
series) as columns, which algorithm leads at each size, and where each series deadlocked. Points
come from the tidy table; time-outs, which the table has no row for, from the typed records."""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pandas as pd

from mpiscope.records import Point, Record, Timeout

from .policy import ANALYSIS

ALGORITHM_NAMES = {
    1: "Send, Recv",
    2: "Sendrecv_replace",
    3: "Sendrecv, double buffer",
    4: "Isend/Irecv, Waitall",
    5: "Isend/Irecv, Testall",
}
FACTORS = ["series", "algorithm", "load", "nblock", "nblock_series"]
_FIGURES = ["benchmark", "size", "time_median_us", "time_ci_low_us", "time_ci_high_us", "bw_median_MBps",
            "bytes_per_op"]


def env_columns(df: pd.DataFrame) -> list[str]:
    """The tuning variables a study swept (columns env_NAME with more than one value)."""
    return sorted(c for c in df.columns if c.startswith("env_") and df[c].nunique(dropna=True) > 1)


def points(df: pd.DataFrame) -> pd.DataFrame:
    """The ringcs rows of the tidy table with the study's factors as columns: from the points'
    tags where the study set them, else from run.json factors, else derived from the benchmark
    name and the engine options. `nblock_series` marks algorithm 5's MPI_Testall series."""
    d = df[df["benchmark"].astype(str).str.startswith("ringcs")].copy() if "benchmark" in df else pd.DataFrame()
    if d.empty:
        return pd.DataFrame(columns=[*FACTORS, *_FIGURES])

    def factor(name: str, derived: pd.Series) -> pd.Series:
        for col in (f"factor_{name}", name):  # the record's own tag wins
            if col in d:
                derived = d[col].where(d[col].notna(), derived)
        return derived

    d["algorithm"] = pd.to_numeric(factor("algorithm", d["benchmark"].str.removeprefix("ringcs"))).astype(int)
    balanced = (d["opt_ncompute_a"] == d["opt_ncompute_b"] if {"opt_ncompute_a", "opt_ncompute_b"} <= set(d.columns)
                else pd.Series(True, index=d.index))
    d["load"] = factor("load", pd.Series(np.where(balanced, "balanced", "imbalanced"), index=d.index))
    tagged = pd.to_numeric(factor("nblock", pd.Series(np.nan, index=d.index)), errors="coerce")
    d["nblock_series"] = tagged.notna()
    d["nblock"] = tagged.fillna(pd.to_numeric(d["opt_nblock"], errors="coerce")) if "opt_nblock" in d else tagged
    d["series"] = factor("series", d["benchmark"])
    return d.reindex(columns=list(dict.fromkeys([*d.columns, *_FIGURES])))  # missing figures as NaN


def leaders(df: pd.DataFrame) -> pd.DataFrame:
    """Per load (and tuning level) and size of the size sweeps: the algorithm with the highest
    bandwidth, the runner-up and how far ahead the leader is."""
    d = points(df)
    sweep = d[~d["nblock_series"] & (d["size"] > 0) & d["bw_median_MBps"].notna()]
    keys = ["load", *env_columns(d), "size"]
    if sweep.empty:
        return pd.DataFrame(columns=[*keys, "algorithm", "bw_MBps", "runner_up", "ratio"])
    rows = []
    for key, part in sweep.groupby(keys, sort=True):
        ranked = part.sort_values("bw_median_MBps", ascending=False)
        top = ranked.iloc[0]
        second = ranked.iloc[1] if len(ranked) > 1 else None
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                     "algorithm": int(top["algorithm"]), "bw_MBps": float(top["bw_median_MBps"]),
                     "runner_up": None if second is None else int(second["algorithm"]),
                     "ratio": None if second is None else float(top["bw_median_MBps"] / second["bw_median_MBps"])})
    return pd.DataFrame(rows)


def deadlock_table(records: Iterable[Record]) -> pd.DataFrame:
    """Per size sweep: where it deadlocked, or the largest size it completed. A deadlock from
    missing buffering persists at larger sizes, so only a time-out above every measured size
    counts; earlier ones (a busy machine) are listed as `slow`. An MPI-compliant algorithm
    (all but 1) cannot deadlock: its `deadlock` is a slow point (report/deadlocks.py says so)."""
    rows: dict[str, dict] = {}
    for r in records:
        if not isinstance(r, (Point, Timeout)) or r.tag.get("series") is None or r.tag.get("nblock") is not None:
            continue
        series = r.tag["series"]
        row = rows.setdefault(series, {"series": series, "algorithm": int(r.tag.get("algorithm", 0)),
                                       "load": r.tag.get("load"), "largest_ok": 0, "timeouts": [], "slowed": [],
                                       **{k: v for k, v in r.tag.items() if k.startswith("env_")}})
        if isinstance(r, Point):
            row["largest_ok"] = max(row["largest_ok"], r.size)
        else:  # a time-out stopped while it still progressed is slow, never a deadlock
            row["timeouts" if r.hung else "slowed"].append(r.size)
    for row in rows.values():
        above = [t for t in row["timeouts"] if t > row["largest_ok"]]
        row["deadlock"] = min(above) if above else None
        row["slow"] = sorted([t for t in row["timeouts"] if t < row["largest_ok"]] + row.pop("slowed"))
        del row["timeouts"]
    return pd.DataFrame(list(rows.values()))


def nearest_sizes(measured: Iterable[int], targets: Iterable[int]) -> dict[int, int]:
    """For each target size, the measured size nearest to it on a log scale (within 1.5x)."""
    sizes = [s for s in measured if s > 0]
    out = {}
    for t in targets:
        best = min(sizes, key=lambda s: abs(math.log(s / t)), default=None)
        if best is not None and 1 / ANALYSIS.nearest_size_ratio <= best / t <= ANALYSIS.nearest_size_ratio:
            out[t] = best
    return out
