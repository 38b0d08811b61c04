"""Optimal piecewise-linear segmentation of T(n) by dynamic programming, with
the number of segments chosen by a BIC-type penalised criterion."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpiscope.results.policy import POLICY

from .policy import ANALYSIS

PARAMS_PER_SEGMENT = 3          # intercept, slope, and the break's position


@dataclass(frozen=True)
class Segmentation:
    bounds: tuple[tuple[int, int], ...]    # [start, end) indices into the points
    noise: float                           # phi: residual variance in units of sigma^2
    criterion: tuple[float, ...]           # criterion per number of segments (1..)
    rss: tuple[float, ...]                 # weighted RSS per number of segments


def isolated_outliers(x: np.ndarray, y: np.ndarray, sigma: np.ndarray,
                      threshold: float = ANALYSIS.spike_sd) -> np.ndarray:
    """Hampel filter on log T over a symmetric window of up to 2 sizes each side.

    A point far from the median of its window is a spike, not a regime: a true
    switch moves all later points, so the running median follows it and the
    points on both sides stay unflagged. The window is symmetric so that a
    steep monotone trend has the point itself as its median; the first and
    last sizes have no symmetric window and are never flagged (the robust
    regime fit still down-weights them). "Far" is in units of each point's
    sigma times the noise level from second differences: the spread of the
    Hampel residuals themselves is no scale, since on any monotone stretch
    they are exactly zero."""
    n = len(y)
    w = ANALYSIS.spike_window
    if n < 2 * w + 1 or np.any(y <= 0):
        return np.zeros(n, dtype=bool)
    ly = np.log(y)
    half = [min(w, i, n - 1 - i) for i in range(n)]
    r = np.array([ly[i] - np.median(ly[i - h:i + h + 1]) for i, h in enumerate(half)])
    rel = math.sqrt(noise_level(x, y, sigma)) * sigma / y
    return (np.abs(r) > threshold * rel) & (np.array(half) > 0)


def noise_level(x: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> float:
    """Residual variance relative to the points' own sigma^2, from second
    differences (each median against the line through its two neighbours).

    Independent of any segmentation: jumps touch only a few triples and the
    MAD ignores them. Never below 1, i.e. never less noise than the CIs say;
    above 1 when medians scatter (or curve) more than their CIs."""
    e = []
    for i in range(1, len(x) - 1):
        x0, x1, x2 = x[i - 1], x[i], x[i + 1]
        if x2 == x0:
            continue
        lam = (x1 - x0) / (x2 - x0)
        pred = y[i - 1] + lam * (y[i + 1] - y[i - 1])
        var = sigma[i] ** 2 + (lam * sigma[i + 1]) ** 2 + ((1 - lam) * sigma[i - 1]) ** 2
        e.append((y[i] - pred) / math.sqrt(var))
    if len(e) < 3:
        return 1.0
    return max((POLICY.mad_sigma * float(np.median(np.abs(e)))) ** 2, 1.0)


def segment_costs(x: np.ndarray, y: np.ndarray, sigma: np.ndarray,
                  min_size: int) -> np.ndarray:
    """C[i, j] = weighted RSS of the best line through points i..j-1; inf
    where the segment is too short, has a single size, or would split a
    repeated size."""
    n = len(x)
    w = 1.0 / sigma ** 2
    C = np.full((n + 1, n + 1), np.inf)
    cut_ok = np.ones(n + 1, dtype=bool)
    cut_ok[1:n] = x[1:] > x[:-1]
    for i in range(n - min_size + 1):
        if not cut_ok[i]:
            continue
        # Sizes rescaled from this segment's start keep the sums well
        # conditioned over six decades of message size.
        span = max(x[-1] - x[i], 1.0)
        xs, ys, ws = (x[i:] - x[i]) / span, y[i:], w[i:]
        S, Sx, Sxx = np.cumsum(ws), np.cumsum(ws * xs), np.cumsum(ws * xs * xs)
        Sy, Sxy, Syy = np.cumsum(ws * ys), np.cumsum(ws * xs * ys), np.cumsum(ws * ys * ys)
        vxx = Sxx - Sx * Sx / S
        vxy = Sxy - Sx * Sy / S
        vyy = Syy - Sy * Sy / S
        with np.errstate(divide="ignore", invalid="ignore"):
            rss = np.where(vxx > 1e-300, vyy - vxy * vxy / vxx, vyy)
        rss = np.maximum(rss, 0.0)
        j = np.arange(i + 1, n + 1)
        # A line needs two different sizes, however often one was measured.
        valid = (j - i >= min_size) & cut_ok[j] & (x[j - 1] > x[i])
        C[i, j[valid]] = rss[valid]
    return C


def segment(x: np.ndarray, y: np.ndarray, sigma: np.ndarray, min_size: int = ANALYSIS.min_segment_sizes,
            penalty: float = ANALYSIS.penalty, max_segments: int = ANALYSIS.max_segments) -> Segmentation:
    """Best segmentation for every number of segments K (dynamic programming,
    exact), then K minimising RSS_K / phi + penalty * (3K - 1) * ln(n).

    That is BIC with the noise variance phi estimated once from the data, so a
    clean line (with or without noise) stays one segment, and a break must
    explain more than chance would over all the places it could go."""
    n = len(x)
    phi = noise_level(x, y, sigma)
    if n < 2 * min_size:
        rss1 = float(segment_costs(x, y, sigma, min(min_size, n))[0, n]) if n >= 2 else 0.0
        return Segmentation(((0, n),), phi, (0.0,), (rss1,))
    C = segment_costs(x, y, sigma, min_size)
    kmax = min(max_segments, n // min_size)
    F = np.full((kmax + 1, n + 1), np.inf)
    arg = np.zeros((kmax + 1, n + 1), dtype=int)
    F[1] = C[0]
    for k in range(2, kmax + 1):
        for j in range(k * min_size, n + 1):
            tot = F[k - 1, :j] + C[:j, j]
            i = int(np.argmin(tot))
            F[k, j], arg[k, j] = tot[i], i
    rss = [float(F[k, n]) for k in range(1, kmax + 1)]
    crit = [r / phi + penalty * (PARAMS_PER_SEGMENT * k - 1) * math.log(n)
            for k, r in enumerate(rss, start=1)]
    best = int(np.argmin(crit)) + 1
    ends, j = [n], n
    for k in range(best, 1, -1):
        j = int(arg[k, j])
        ends.append(j)
    ends = sorted(ends)
    starts = [0] + ends[:-1]
    return Segmentation(tuple(zip(starts, ends)), phi, tuple(crit), tuple(rss))
