"""Synthetic ping-pong points with known parameters, noise and outliers; the same as typed records."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from mpiscope.analysis.measured import Synthetic
from mpiscope.records import Point, Stats


def make_points(T: Callable[[np.ndarray], np.ndarray], sizes: Sequence[int],
                noise: float = 0.01, seed: int = 0, outliers: Sequence[int] = (),
                outlier_factor: float = 1.6, ci_factor: float = 1.0) -> list[Synthetic]:
    """Medians = T(n) x (1 + noise x N(0,1)); the 95 % CI claims the same noise
    times `ci_factor` (below 1: CIs narrower than the real scatter, as real
    engine output often is). Indices in `outliers` are multiplied by
    `outlier_factor` (a disturbed point, CI and all)."""
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes)
    t = T(sizes.astype(float)) * (1 + noise * rng.standard_normal(len(sizes)))
    out = []
    for i, (n, m) in enumerate(zip(sizes, t)):
        if i in outliers:
            m *= outlier_factor
        half = 1.96 * noise * ci_factor * m
        out.append(Synthetic(int(n), float(m), float(m - half), float(m + half), 200))
    return out


def geometric_sizes(lo: int, hi: int, ratio: float) -> list[int]:
    v = np.unique(np.round(np.geomspace(lo, hi, int(np.log(hi / lo) / np.log(ratio)) + 1)))
    return [int(s) for s in v]


def typed(p: Synthetic, benchmark: str | None = None, ranks: int = 2, n: int | None = None) -> Point:
    """A synthetic measurement as the record the reader would give for it."""
    return Point(benchmark=benchmark or p.benchmark, size=p.size, ranks=ranks,
                 time_us=Stats(n=p.n if n is None else n, median=p.median, ci_low=p.ci_low, ci_high=p.ci_high),
                 samples_us=p.samples)
