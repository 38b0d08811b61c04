"""Within-launch against between-launch variation of repeated launches of one configuration,
from the launch-level statistics of `results.launches` (docs/statistics.md).

Per configuration and point: the launch-level estimate and its 95 % interval; within a launch,
each launch's own 95 % CI of the median (relative half-width, median over the launches); between
launches, the spread of the launch medians (coefficient of variation, range); the split of one
launch's variance into a within- and a between-launch share (log scale); Cochran's Q test of
whether launches differ by more than their own sampling error; and the levels (modes) the
launches fell into.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from mpiscope.util.errors import UsageError

from mpiscope.results.frame import pooled
from mpiscope.results.launches import LaunchPoint, heterogeneity_p


def _config(df: pd.DataFrame) -> pd.Series:
    if "config" in df:
        return df["config"]
    if "sweep_config" in df:
        return df["sweep_config"].fillna(df["run_id"])
    return df["run_id"]


def _row(config, lp: LaunchPoint, several_ranks: bool) -> dict:
    med = np.asarray(lp.launch_medians, float)
    own = [(p.time_us.ci_high - p.time_us.ci_low) / 2 / p.time_us.median for p in lp.points
           if p.time_us.ci_low is not None and p.time_us.ci_high is not None]
    bench = lp.benchmark + (f" {lp.variant}" if lp.variant else "")
    bench += "".join(f" {k}={v}" for k, v in lp.config)
    bench += f" ({lp.ranks} ranks)" if several_ranks else ""
    several = lp.launches > 1
    return {"config": config, "benchmark": bench, "size": lp.size, "launches": lp.launches,
            "median_us": lp.median, "ci_low_us": lp.ci_low, "ci_high_us": lp.ci_high,
            # the statistic median_us holds: mpiscope's median, or an imported tool's mean (docs/import.md)
            "estimate": "/".join(sorted({pt.estimate for pt in lp.points})) or "median",
            "within_ci_rel": float(np.median(own)) if own else np.nan,
            "between_cv": float(np.std(med, ddof=1) / np.mean(med)) if several else np.nan,
            "between_range_rel": float((med.max() - med.min()) / np.median(med)) if several else np.nan,
            "share_between": lp.share_between, "p": heterogeneity_p(lp),
            "levels": max(1, len(lp.modes)), "modes": tuple(lp.modes)}  # results.launches.Mode values


def variation(df: pd.DataFrame, benchmark: str | None = None) -> pd.DataFrame:
    """One row per configuration and point (benchmark, ranks, variant, size) with its launches'
    statistics. Every launch of every run of a configuration is one launch."""
    if benchmark is not None:
        df = df[df["benchmark"] == benchmark]
    if df.empty or "point" not in df:
        raise UsageError("no measured points to compare across launches")
    df = df.assign(config=_config(df))
    several_ranks = "ranks" in df and df["ranks"].nunique() > 1
    rows = []
    for config, g in df.groupby("config", sort=False):
        rows += [_row(config, lp, several_ranks) for lp in pooled(g)]
    if not rows:
        raise UsageError("no measured points to compare across launches")
    return pd.DataFrame(rows)
