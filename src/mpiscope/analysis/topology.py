"""The network's shape from the pair map: the hierarchy of groups of ranks that share a link
level (a node, a switch, a group of switches), found by clustering the pairs' latency and
bandwidth together.

A pair's distance is how much slower it is than the fastest pair, in latency (the one-pair
time of the smallest message) times in inverse bandwidth (of the largest): one more link on
the route adds a link latency, a narrower or shared link lowers the bandwidth, and either
moves the pair to a farther level. The distinct levels of the distances, separated by gaps,
are the link levels. At each level the groups join ranks within the level's distance that
also share most of their neighbours there: in a dragonfly a pair across two groups whose
routers hold the global link is as close as two routers of one group, but the two share few
of their neighbours, so the groups stay the dragonfly's groups.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import squareform

from .policy import ANALYSIS



@dataclass(frozen=True)
class Level:
    time_us: float                      # the median one-pair time of pairs first grouped at this level
    groups: tuple[tuple[int, ...], ...]  # ranks, each group sorted, groups by their first rank


@dataclass(frozen=True)
class Topology:
    levels: tuple[Level, ...]           # innermost first; the last is one group of every rank

    @property
    def group_sizes(self) -> list[list[int]]:
        return [sorted({len(g) for g in lv.groups}) for lv in self.levels]


def symmetric(us: np.ndarray) -> np.ndarray:
    """Each pair's time as the mean of both directions, the diagonal 0; NaN where neither is known."""
    m = np.asarray(us, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise ValueError("a pair map is a square matrix of at least 2 ranks")
    both = np.where(np.isnan(m), m.T, np.where(np.isnan(m.T), m, (m + m.T) / 2))
    np.fill_diagonal(both, 0.0)
    return both


def distances(us: np.ndarray, mbps: np.ndarray | None = None) -> np.ndarray:
    """Each pair's latency over the fastest pair's, times its inverse bandwidth over the
    widest pair's when a bandwidth map is given; 1 is the closest pair, the diagonal 0."""
    lat = symmetric(us)
    d = lat / _least(lat)
    if mbps is not None:
        inverse = symmetric(np.where(np.asarray(mbps, dtype=float) > 0, 1.0 / np.asarray(mbps, dtype=float), np.nan))
        if inverse.shape != lat.shape:
            raise ValueError("the latency and bandwidth maps have different rank counts")
        d = d * inverse / _least(inverse)
    np.fill_diagonal(d, 0.0)
    return d


def _least(m: np.ndarray) -> float:
    off = squareform(m, checks=False)
    if np.isnan(off).any():
        raise ValueError("the pair map has pairs without a time: measure every pair")
    least = float(off.min())
    if least <= 0:
        raise ValueError("the pair map has a pair of time 0")
    return least


def infer_topology(us: np.ndarray, mbps: np.ndarray | None = None, gap: float = ANALYSIS.level_gap) -> Topology:
    """The hierarchy of groups from a rank x rank map of one-pair times (µs, NaN on the
    diagonal) and, when given, the map of the same pairs' bandwidths at a large size (MB/s)."""
    d = distances(us, mbps)
    lat = symmetric(us)
    pairs = squareform(d, checks=False)
    order = np.argsort(pairs, kind="stable")
    values = pairs[order]
    # level boundaries: where the next larger distance jumps by the gap factor
    cuts = [i + 1 for i in range(len(values) - 1) if values[i + 1] > gap * values[i]]
    labels = np.arange(d.shape[0])
    levels: list[Level] = []
    for chunk, members in zip(np.split(values, cuts), np.split(order, cuts)):
        labels = _groups(d <= chunk[-1], labels)
        groups = tuple(sorted(tuple(int(r) for r in np.flatnonzero(labels == k)) for k in np.unique(labels)))
        if levels and groups == levels[-1].groups:
            continue  # no new merge: the gap split one level's noise
        times = squareform(lat, checks=False)[members]
        levels.append(Level(float(np.median(times)), groups))
    return Topology(tuple(levels))


def _groups(close: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Group labels at one level: ranks joined when close and sharing more than `group_shared` of
    their close ranks (each counts itself), merged with the inner level's groups so that
    the hierarchy nests."""
    near = close | np.eye(close.shape[0], dtype=bool)
    counts = near.astype(float)
    common = counts @ counts.T
    union = counts.sum(1)[:, None] + counts.sum(1)[None, :] - common
    joined = near & (common > ANALYSIS.group_shared * union)
    same_inner = inner[:, None] == inner[None, :]
    _, labels = connected_components(csr_matrix(joined | same_inner), directed=False)
    return labels
