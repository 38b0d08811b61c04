"""Intra-node against inter-node: the points of pairs grouped by where their communicating ranks
run (`records.Point.placement`, from the engine's `pairs[].same_host`), and a Hockney fit per
benchmark and placement, so a run over several hosts reports the two kinds apart."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from rich.console import Console
from rich.table import Table

from mpiscope.analysis.hockney import HockneyFit, fit_hockney
from mpiscope.util.console import make_table
from mpiscope.report.numbers import num
from mpiscope.records import INTER, INTRA, MIXED, Point, Record
from mpiscope.util.units import human_size

__all__ = ["INTER", "INTRA", "MIXED", "Group", "groups", "placement_table", "print_placement"]


@dataclass
class Group:
    """The points of one benchmark on one placement, and their fit."""
    benchmark: str
    placement: str
    points: list[Point]
    fit: HockneyFit | None
    why_no_fit: str = ""

    @property
    def sizes(self) -> list[int]:
        return sorted({p.size for p in self.points})


def groups(records: Iterable[Record]) -> list[Group]:
    """Points grouped by (benchmark, ranks taking part, placement), in measuring order, each
    with its own Hockney fit T(n) = alpha + n / bandwidth (when it has two sizes)."""
    by: dict[tuple[str, int, str], list[Point]] = {}
    for p in records:
        if isinstance(p, Point) and p.median is not None and p.placement is not None:
            # ranks taking part, not the job's size: pingpong in a 4-rank job is still a pair
            by.setdefault((p.benchmark, len(p.participants) or p.ranks, p.placement), []).append(p)
    rank_counts = Counter(bench for bench, _ in {(bench, ranks) for bench, ranks, _ in by})
    out = []
    for (bench, ranks, where), pts in by.items():
        try:
            fit, why = fit_hockney(pts), ""
        except ValueError as e:  # one size, or nothing to fit
            fit, why = None, str(e)
        label = bench + (f" ({ranks} ranks)" if rank_counts[bench] > 1 else "")  # --npmin, or runs pooled
        out.append(Group(label, where, pts, fit, why))
    return out


def placement_table(gs: list[Group]) -> Table:
    table = make_table("by placement: pairs on one host (intra-node) and across hosts (inter-node); "
                       "Hockney fit T(n) = alpha + n / bandwidth per group",
                       ("benchmark", "placement", "sizes", "median µs at smallest", "MB/s at largest",
                        "alpha µs", "fit MB/s"), left=("benchmark", "placement"))
    for g in gs:
        first = min(g.points, key=lambda p: p.size)
        last = max(g.points, key=lambda p: p.size)
        bw = last.bw_MBps.median if last.bw_MBps else None
        fit_a = num(g.fit.alpha_us) if g.fit else "-"
        fit_bw = num(g.fit.bandwidth_MBps) if g.fit and g.fit.beta_us_per_byte > 0 else "-"
        table.add_row(g.benchmark, g.placement,
                      f"{human_size(g.sizes[0])}–{human_size(g.sizes[-1])}" if len(g.sizes) > 1 else human_size(g.sizes[0]),
                      num(first.median), num(bw) if bw else "-", fit_a, fit_bw)
    return table


def print_placement(console: Console, records: Iterable[Record], hosts: int) -> None:
    """The per-placement table, for runs over more than one host (on one host every pair
    is intra-node and the main table says it all)."""
    if hosts <= 1:
        return
    gs = groups(records)
    if gs:
        console.print(placement_table(gs))
