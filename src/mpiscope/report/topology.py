"""A topology inferred from the one-pair maps (analysis/topology.py), as lines for the terminal."""
from __future__ import annotations

from mpiscope.analysis.topology import Topology


def topology_lines(t: Topology, shown: int = 8) -> list[str]:
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
