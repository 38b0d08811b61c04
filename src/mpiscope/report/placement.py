"""Intra-node against inter-node: each point-to-point record classified by where its
communicating pairs run (the engine's `pairs[].same_host`), and a Hockney fit per
benchmark and placement, so a run over several hosts reports the two kinds apart."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from rich.console import Console
from rich.table import Table

from mpiscope.analysis import HockneyFit, fit_hockney
from mpiscope.analysis.points import point_from_record
from mpiscope.sizes import human_size

INTRA, INTER, MIXED = "intra-node", "inter-node", "mixed"


def placement_of(point: Mapping) -> str | None:
    """intra-node when every pair shares a host, inter-node when none does, mixed otherwise
    (a ring over two hosts); None for records without pairs (collectives)."""
    pairs = point.get("pairs") or []
    if not pairs:
        return None
    same = {bool(p.get("same_host")) for p in pairs}
    return INTRA if same == {True} else INTER if same == {False} else MIXED


@dataclass
class Group:
    benchmark: str
    placement: str
    points: list[dict]
    fit: HockneyFit | None
    why_no_fit: str = ""

    @property
    def sizes(self) -> list[int]:
        return sorted({int(p["size"]) for p in self.points})


def groups(records: Iterable[Mapping]) -> list[Group]:
    """Point records grouped by (benchmark, ranks taking part, placement), in measuring order,
    each with its own Hockney fit T(n) = alpha + n / bandwidth (when it has two sizes)."""
    by: dict[tuple[str, int, str], list[dict]] = {}
    for r in records:
        if r.get("type") != "point" or not r.get("time_us"):
            continue
        where = placement_of(r)
        if where is not None:
            # ranks taking part, not the job's size: pingpong in a 4-rank job is still a pair
            taking = len(r.get("participants") or []) or int(r.get("ranks", 0))
            by.setdefault((str(r.get("benchmark", "?")), taking, where), []).append(dict(r))
    counts: dict[str, set[int]] = {}
    for bench, ranks, _ in by:
        counts.setdefault(bench, set()).add(ranks)
    out = []
    for (bench, ranks, where), pts in by.items():
        try:
            fit, why = fit_hockney([point_from_record(p) for p in pts]), ""
        except ValueError as e:  # one size, or nothing to fit
            fit, why = None, str(e)
        label = bench + (f" ({ranks} ranks)" if len(counts[bench]) > 1 else "")  # --npmin, or runs pooled
        out.append(Group(label, where, pts, fit, why))
    return out


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def placement_table(gs: list[Group]) -> Table:
    table = Table(title="by placement: pairs on one host (intra-node) and across hosts (inter-node); "
                        "Hockney fit T(n) = alpha + n / bandwidth per group", title_justify="left")
    for col, justify in (("benchmark", "left"), ("placement", "left"), ("sizes", "right"),
                         ("median µs at smallest", "right"), ("MB/s at largest", "right"),
                         ("alpha µs", "right"), ("fit MB/s", "right")):
        table.add_column(col, justify=justify)
    for g in gs:
        first = min(g.points, key=lambda p: p["size"])
        last = max(g.points, key=lambda p: p["size"])
        bw = (last.get("bw_MBps") or {}).get("median")
        fit_a = _num(g.fit.alpha_us) if g.fit else "-"
        fit_bw = _num(g.fit.bandwidth_MBps) if g.fit and g.fit.beta_us_per_byte > 0 else "-"
        table.add_row(g.benchmark, g.placement,
                      f"{human_size(g.sizes[0])}–{human_size(g.sizes[-1])}" if len(g.sizes) > 1 else human_size(g.sizes[0]),
                      _num(first["time_us"]["median"]), _num(bw) if bw else "-", fit_a, fit_bw)
    return table


def print_placement(console: Console, records: Iterable[Mapping], hosts: int) -> None:
    """The per-placement table, for runs over more than one host (on one host every pair
    is intra-node and the main table says it all)."""
    if hosts <= 1:
        return
    gs = groups(records)
    if gs:
        console.print(placement_table(gs))
