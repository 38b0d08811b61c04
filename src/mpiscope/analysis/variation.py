"""Within-launch against between-launch variation of repeated launches of one configuration.

Within a launch: each point's 95 % CI of the median (relative half-width).
Between launches: the spread of the launch medians (coefficient of variation,
range) and a one-way random-effects ANOVA on each launch's sample mean,
standard deviation and count, which splits the variance into a between-launch
and a within-launch share and tests whether launches differ (F test).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from mpiscope.errors import UsageError


def _config(df: pd.DataFrame) -> pd.Series:
    if "config" in df:
        return df["config"]
    if "sweep_config" in df:
        return df["sweep_config"].fillna(df["run_id"])
    return df["run_id"]


def anova(means: np.ndarray, sds: np.ndarray, ns: np.ndarray) -> dict:
    """One-way random-effects ANOVA from group summaries: F, p, and the share of the variance
    that lies between groups (the launches)."""
    k, total = len(means), ns.sum()
    if k < 2 or total - k < 1:
        return {"F": np.nan, "p": np.nan, "share_between": np.nan}
    grand = (ns * means).sum() / total
    msb = (ns * (means - grand) ** 2).sum() / (k - 1)
    msw = ((ns - 1) * sds ** 2).sum() / (total - k)
    n0 = (total - (ns ** 2).sum() / total) / (k - 1)  # effective group size for unequal counts
    var_between = max(0.0, (msb - msw) / n0)
    f = msb / msw if msw > 0 else np.inf
    return {"F": f, "p": float(stats.f.sf(f, k - 1, total - k)) if np.isfinite(f) else 0.0,
            "share_between": var_between / (var_between + msw) if var_between + msw > 0 else 0.0}


def variation(df: pd.DataFrame, benchmark: str | None = None) -> pd.DataFrame:
    """One row per configuration, benchmark and size with the launches' statistics."""
    if benchmark is not None:
        df = df[df["benchmark"] == benchmark]
    if df.empty:
        raise UsageError("no measured points to compare across launches")
    df = df.assign(config=_config(df))
    rows = []
    # a point is its benchmark, rank count (--npmin groups) and variant (grid shapes) at a size
    keys = [k for k in ("config", "benchmark", "ranks", "variant", "size") if k in df]
    for key, g in df.groupby(keys, sort=False, dropna=False):
        at = dict(zip(keys, key))
        config, size = at["config"], at["size"]
        bench = at["benchmark"] + (f" {at['variant']}" if isinstance(at.get("variant"), str) else "")
        bench += f" ({int(at['ranks'])} ranks)" if "ranks" in at and df["ranks"].nunique() > 1 else ""
        med = g["time_median_us"].to_numpy(float)
        half = (g["time_ci_high_us"] - g["time_ci_low_us"]).to_numpy(float) / 2
        row = {"config": config, "benchmark": bench, "size": int(size), "launches": len(g),
               "median_us": float(np.median(med)),
               "within_ci_rel": float(np.median(half / med)),
               "between_cv": float(np.std(med, ddof=1) / np.mean(med)) if len(g) > 1 else np.nan,
               "between_range_rel": float((med.max() - med.min()) / np.median(med)) if len(g) > 1 else np.nan}
        if {"time_mean_us", "time_stddev_us", "samples"} <= set(g.columns):
            row.update(anova(g["time_mean_us"].to_numpy(float), g["time_stddev_us"].to_numpy(float),
                             g["samples"].to_numpy(float)))
        rows.append(row)
    return pd.DataFrame(rows)
