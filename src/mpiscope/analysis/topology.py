"""The network's shape from the pair map: the hierarchy of groups of ranks that share a link
level (a node, a switch, a group of switches), found by clustering the pairs' times.

Pairs behind the same switch are faster than pairs that cross more links; the distinct levels
of the one-pair latency matrix, separated by gaps, are the link levels, and at each level the
groups are the complete-linkage clusters whose every pair is at most that level's time apart.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

# Two times belong to different link levels when the larger is at least this much the smaller:
# one more link (a hop through a switch) adds a link latency to a route of two or more.
LEVEL_GAP = 1.2


@dataclass(frozen=True)
class Level:
    time_us: float                      # the median pair time of pairs first grouped at this level
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


def infer_topology(us: np.ndarray, gap: float = LEVEL_GAP) -> Topology:
    """The hierarchy of groups from a rank x rank matrix of pair times (µs, NaN on the diagonal)."""
    d = symmetric(us)
    if np.isnan(d).any():
        raise ValueError("the pair map has pairs without a time: measure every pair")
    values = np.sort(squareform(d, checks=False))
    # level boundaries: where the next larger pair time jumps by the gap factor
    cuts = [i + 1 for i in range(len(values) - 1) if values[i + 1] > gap * max(values[i], 1e-12)]
    bounds = np.split(values, cuts)
    tree = linkage(squareform(d, checks=False), method="complete")
    levels: list[Level] = []
    for chunk in bounds:
        labels = fcluster(tree, t=float(chunk[-1]), criterion="distance")
        groups = tuple(sorted(tuple(int(r) for r in np.flatnonzero(labels == k)) for k in np.unique(labels)))
        if levels and groups == levels[-1].groups:
            continue  # no new merge: the gap split one level's noise
        levels.append(Level(float(np.median(chunk)), groups))
    return Topology(tuple(levels))


def describe(t: Topology, shown: int = 8) -> list[str]:
    """One line a level: its time, how many groups of how many ranks, the first groups."""
    lines = []
    for i, lv in enumerate(t.levels, 1):
        size_text = "/".join(map(str, sorted({len(g) for g in lv.groups})))
        listed = " ".join(_ranks(g) for g in lv.groups[:shown]) + (" ..." if len(lv.groups) > shown else "")
        lines.append(f"level {i}: {len(lv.groups)} group(s) of {size_text} rank(s), pairs {lv.time_us:.3g} µs: "
                     f"{listed}")
    return lines


def _ranks(group: tuple[int, ...]) -> str:
    """{0-3} for a run of ranks, {0,4,8} otherwise."""
    if len(group) > 2 and group[-1] - group[0] == len(group) - 1:
        return f"{{{group[0]}-{group[-1]}}}"
    return "{" + ",".join(map(str, group)) + "}"
