"""The terminal summary of a run: per benchmark and size, the engine's median, CI, bandwidth, samples."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mpiscope.console import make_table
from mpiscope.records import Point, RecordFile, Skip, Timeout
from mpiscope.store import RunMeta
from mpiscope.units import human_size


def _num(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def _label(rec: Point | Skip | Timeout, world: int | None) -> str:
    """The benchmark (and its variant, a grid's shape), and its rank count when it ran on fewer
    ranks than the job (--npmin)."""
    return (rec.benchmark + (f" {rec.variant}" if rec.variant else "")
            + (f" ({rec.ranks} ranks)" if world and rec.ranks != world else ""))


def summary_table(recs: RecordFile, title: str) -> Table:
    world = recs.context.world_size if recs.context else None
    table = make_table(title, ("benchmark", "size", "median µs", "95% CI µs", "MB/s", "samples", "converged"),
                       left=("benchmark", "converged"))
    for r in recs:  # in measuring order, skips where they happened
        if isinstance(r, Point):
            t = r.time_us
            conv = "yes" if r.converged else f"no: {r.stop_reason or '?'}"
            table.add_row(_label(r, world), human_size(r.size), _num(t.median),
                          f"{_num(t.ci_low)}–{_num(t.ci_high)}", _num(r.bw_MBps.median if r.bw_MBps else None, 4),
                          str(t.n), conv)
        elif isinstance(r, Timeout):
            table.add_row(_label(r, world), human_size(r.size), "hung", "", "", "",
                          f"time-out after {r.limit_s} s: deadlock?")
        elif isinstance(r, Skip):
            table.add_row(_label(r, world), human_size(r.size), "skipped", "", "", "", r.reason)
    return table


def print_run(console: Console, meta: RunMeta, recs: RecordFile, warn: Console | None = None) -> None:
    """The table on `console`; warnings (untrustworthy timings, damaged files) on `warn`."""
    from mpiscope.report.placement import print_placement
    warn = warn or console
    mpi, ctx = meta.mpi, recs.context
    ranks = ctx.world_size if ctx else (meta.parts[0].plan.ranks if meta.parts else "?")
    title = (f"{mpi.vendor if mpi else '?'} {mpi.version if mpi else ''} ({mpi.name if mpi else '?'}), "
             f"{ranks} ranks on {len(ctx.hosts) if ctx and ctx.hosts else '?'} host(s), "
             f"run {meta.id} {escape(f'[{meta.status}]')}")
    console.print(summary_table(recs, title))
    print_placement(console, recs.points, len(ctx.hosts) if ctx else 0)
    for w in [*meta.warnings, *recs.problems]:
        warn.print(f"[yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True)
