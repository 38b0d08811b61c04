"""Whether a bandwidth figure is faster than this host could copy its bytes: the engine records
each bandwidth point's working set (`working_set_bytes`, one stream's distinct source and
destination bytes per event), the streams the figure adds up (`streams`), its buffer layout
(`buffers`), the launch's own memcpy rate for that working set (`copy_MB_per_s`) and for one four
times the last-level cache (`memory_copy_MB_per_s`, out of cache). A figure above its reference by
more than `ANALYSIS.copy_margin` is a cache rate, or data that did not move, not a transfer rate
(docs/benchmarks.md, "Working set and copy rate"); report/copyrate.py shows the mark."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .policy import ANALYSIS


def _known(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v > 0


def copy_reference(buffers: str | None, copy_MB_per_s: float | None,
                   memory_copy_MB_per_s: float | None = None) -> float | None:
    """The copy rate one stream of a figure cannot beat. With a place per operation (the default
    layout) a shared-memory transfer is itself one copy of the working set: its own copy rate.
    With one place for every operation of an event (`single`) the working set stays in the cache
    at any size, and so does a copy of it: the out-of-cache rate. None when not recorded."""
    if buffers == "single" and _known(memory_copy_MB_per_s):
        return float(memory_copy_MB_per_s)
    return float(copy_MB_per_s) if _known(copy_MB_per_s) else None


def above_copy_rate(bw_MBps: float | None, streams: float | None, reference_MBps: float | None,
                    margin: float = ANALYSIS.copy_margin) -> bool:
    """True when one stream's share of the figure exceeds `margin` x the reference copy rate
    (`copy_reference`); False when it does not or when anything is missing (a point without a
    recorded copy rate cannot be judged)."""
    if not _known(bw_MBps) or not _known(reference_MBps):
        return False
    n = float(streams) if _known(streams) else 1.0
    return float(bw_MBps) / max(n, 1.0) > margin * float(reference_MBps)


def copy_rate_flags(df: pd.DataFrame, bw: str = "bw_median_MBps") -> pd.Series:
    """One flag per row of a tidy or launch-level frame (all False without the engine's fields)."""
    if df.empty or bw not in df or "copy_MB_per_s" not in df:
        return pd.Series(False, index=df.index, dtype=bool)
    column = lambda name, default: df[name] if name in df else pd.Series(default, index=df.index)
    references = [copy_reference(b, c, m) for b, c, m in
                  zip(column("buffers", None), df["copy_MB_per_s"], column("memory_copy_MB_per_s", None))]
    return pd.Series([above_copy_rate(b, s, r) for b, s, r in zip(df[bw], column("streams", 1), references)],
                     index=df.index, dtype=bool)
