"""Whether a bandwidth figure is faster than this host could copy its working set: the engine
records each bandwidth point's working set (`working_set_bytes`, one stream's distinct source and
destination bytes per event), the streams the figure adds up (`streams`) and the launch's own
memcpy rate for that working set (`copy_MB_per_s`); a figure above it is a cache rate, or data
that did not move, not a transfer rate (docs/benchmarks.md, "Working set and copy rate")."""
from __future__ import annotations

import math

import pandas as pd

MARK = "‡"
MARK_NOTE = (f"{MARK} faster than this run's own memcpy of the same working set: the figure is a cache "
             "rate or data that did not move, not a transfer rate (working_set_bytes, copy_MB_per_s)")


def above_copy_rate(bw_MBps: float | None, streams: float | None, copy_MB_per_s: float | None) -> bool:
    """True when one stream's share of the figure exceeds the copy rate; False when it does not or
    when anything is missing (a point without a recorded copy rate cannot be judged)."""
    values = (bw_MBps, copy_MB_per_s)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values) or not copy_MB_per_s:
        return False
    n = streams if streams is not None and not (isinstance(streams, float) and math.isnan(streams)) else 1
    return float(bw_MBps) / max(float(n), 1.0) > float(copy_MB_per_s)


def copy_rate_flags(df: pd.DataFrame, bw: str = "bw_median_MBps") -> pd.Series:
    """One flag per row of a tidy or launch-level frame (all False without the engine's fields)."""
    if df.empty or bw not in df or "copy_MB_per_s" not in df:
        return pd.Series(False, index=df.index, dtype=bool)
    streams = df["streams"] if "streams" in df else pd.Series(1, index=df.index)
    return pd.Series([above_copy_rate(b, s, c) for b, s, c in zip(df[bw], streams, df["copy_MB_per_s"])],
                     index=df.index, dtype=bool)
