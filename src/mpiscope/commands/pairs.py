"""`mpiscope pairs RUN`: the pairs benchmark's rank x rank maps as tables, and the
slowest pairs by name (ranks and hosts)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mpiscope.commands.options import one_size, positive_int

if TYPE_CHECKING:
    import numpy as np

    from mpiscope.records import Point

MODES = {"one_pair": "one pair at a time", "rings": "all pairs at once (shifted rings)"}


def matrix(point: Point, mode: str, key: str = "matrix_us") -> np.ndarray:
    """A mode's matrix with NaN where the engine wrote null (the diagonal)."""
    import numpy as np
    rows = point.details["pair_map"][mode][key]
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def slowest(us: np.ndarray, top: int, symmetric: bool = False) -> list[tuple[int, int, float, float]]:
    """The `top` slowest (from, to) pairs: time per message and its ratio to the median pair.
    A symmetric map names each pair once."""
    import numpy as np
    off = ~np.isnan(us)
    if symmetric:
        off &= np.triu(np.ones(us.shape, dtype=bool), 1)
    if not off.any():
        return []
    median = float(np.median(us[off]))
    order = np.argsort(np.where(off, us, -np.inf), axis=None)[::-1][:min(top, int(off.sum()))]
    return [(int(a), int(b), float(us[a, b]), float(us[a, b]) / median if median > 0 else np.inf)
            for a, b in (np.unravel_index(i, us.shape) for i in order)]


def print_point(console, point: Point, hosts: list[str], top: int) -> None:
    import numpy as np
    from mpiscope.util.console import make_table
    from mpiscope.util.units import human_size
    for mode, label in MODES.items():
        us = matrix(point, mode)
        n = us.shape[0]
        table = make_table(f"pairs, {human_size(point.size)}, {label}: µs per message, row rank -> column rank",
                           ["from \\ to", *map(str, range(n))], left=())
        for a in range(n):
            table.add_row(f"{a}", *("·" if np.isnan(us[a, b]) else f"{us[a, b]:.3g}" for b in range(n)))
        console.print(table)
        mbps = matrix(point, mode, "matrix_MBps")
        for a, b, t, ratio in slowest(us, top, symmetric=mode == "one_pair"):
            arrow = "<->" if mode == "one_pair" else "->"
            where = f" ({hosts[a]} {arrow} {hosts[b]})" if hosts and len(set(hosts)) > 1 else ""
            bw = "" if np.isnan(mbps[a, b]) else f", {mbps[a, b]:.4g} MB/s"
            console.print(f"  slow: {a} {arrow} {b}{where}: {t:.3g} µs{bw}, {ratio:.2f}x the median pair",
                          highlight=False)
        if mode == "one_pair":
            print_slow_ranks(console, us, hosts)


def print_slow_ranks(console, us: np.ndarray, hosts: list[str]) -> None:
    """Ranks every one of whose pairs is slow: their link or node, not a pair's route (the rule
    of `mpiscope doctor`'s host check, doctor/hosts.py)."""
    import numpy as np

    from mpiscope.analysis.topology import symmetric
    from mpiscope.doctor.hosts import SLOW_RATIO, slow_hosts
    both = symmetric(us)
    n = both.shape[0]
    times = {(str(a), str(b)): float(both[a, b]) for a in range(n) for b in range(a + 1, n)
             if not np.isnan(both[a, b])}
    for rank, ratio in slow_hosts(times):
        where = f" ({hosts[int(rank)]})" if hosts and len(set(hosts)) > 1 else ""
        console.print(f"  slow rank: {rank}{where}: every pair with it is at least {ratio:.2f}x the median pair "
                      f"without it (more than {SLOW_RATIO:g}x): its link or node", highlight=False)


def print_topology(console, points: list[Point]) -> None:
    """The groups of ranks the one-pair maps put together (analysis/topology.py): latency from
    the smallest size, bandwidth from the largest when the run measured more than one."""
    from mpiscope.analysis.topology import infer_topology
    from mpiscope.report.topology import topology_lines
    from mpiscope.util.units import human_size
    small, large = min(points, key=lambda p: p.size), max(points, key=lambda p: p.size)
    mbps = matrix(large, "one_pair", "matrix_MBps") if large.size > small.size else None
    try:
        topology = infer_topology(matrix(small, "one_pair"), mbps)
    except ValueError as e:
        console.print(f"  topology: not inferred ({e})", highlight=False)
        return
    measured = "latency" if mbps is None else f"latency at {human_size(small.size)} and bandwidth at " \
                                              f"{human_size(large.size)}"
    console.print(f"inferred topology from the {measured} (groups of ranks that share a link level, "
                  "innermost first):", highlight=False)
    for line in topology_lines(topology):
        console.print(f"    {line}", highlight=False)


def cmd_pairs(a: argparse.Namespace) -> int:
    from mpiscope.util import paths
    from mpiscope.util.console import out, warn_problems
    from mpiscope.util.errors import UsageError
    from mpiscope.store.runs import resolve

    if a.top < 1:
        raise UsageError(f"--top must be at least 1, got {a.top}")
    size = one_size(a.size, "--size") if a.size is not None else None
    run = resolve(a.run, paths.runs_dir(a.runs_dir))
    recs = run.records()
    warn_problems(run.id, recs.problems)
    points = [p for p in recs.points if p.benchmark == "pairs" and isinstance(p.details.get("pair_map"), dict)]
    if not points:
        raise UsageError(f"run {run.id} has no pairs points: measure them with "
                         "`mpiscope run -b pairs -n N --sizes 8,1M`")
    hosts = [r.host for r in sorted(recs.context.ranks, key=lambda r: r.rank)] if recs.context else []
    out.print(f"run {run.id}: {points[0].ranks} ranks on {len(set(hosts)) or '?'} host(s), "
              f"order {points[0].order}", highlight=False)
    for point in points:
        if size is None or point.size == size:
            print_point(out, point, hosts, a.top)
    print_topology(out, points)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("pairs", parents=[runs_dir],
                       help="the pairs benchmark's rank x rank maps and the slowest pairs")
    p.add_argument("run", help="run id, unique prefix, 'latest', or a path")
    p.add_argument("--size", help="only this size (64K, 1M, or bytes)")
    p.add_argument("--top", type=positive_int, default=3, help="slowest pairs named per map (3)")
    p.set_defaults(func=cmd_pairs)
