"""The terminal summary of a run: per benchmark and size, the engine's median, CI, bandwidth, samples."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from mpiscope.sizes import human_size
from mpiscope.store import Records


def _num(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def _label(rec: dict, world: int | None) -> str:
    """The benchmark, and its rank count when it ran on fewer ranks than the job (--npmin)."""
    ranks = rec.get("ranks")
    shape = (rec.get("grid") or {}).get("shape") if isinstance(rec.get("grid"), dict) else None
    return (rec.get("benchmark", "?") + (f" {shape}" if shape else "")
            + (f" ({ranks} ranks)" if ranks and world and ranks != world else ""))


def summary_table(recs: Records, title: str) -> Table:
    world = (recs.context or {}).get("world_size")
    table = Table(title=title, title_justify="left")
    for col, justify in (("benchmark", "left"), ("size", "right"), ("median µs", "right"),
                         ("95% CI µs", "right"), ("MB/s", "right"), ("samples", "right"),
                         ("converged", "left")):
        table.add_column(col, justify=justify)
    for r in recs.records:  # in measuring order, skips where they happened
        if r.get("type") == "point":
            t = r.get("time_us") or {}
            bw = (r.get("bw_MBps") or {}).get("median")
            conv = "yes" if r.get("converged") else f"no: {r.get('stop_reason', '?')}"
            table.add_row(_label(r, world), human_size(r.get("size", 0)), _num(t.get("median")),
                          f"{_num(t.get('ci_low'))}–{_num(t.get('ci_high'))}", _num(bw, 4),
                          str(t.get("n", "-")), conv)
        elif r.get("type") == "timeout":
            table.add_row(_label(r, world), human_size(r.get("size", 0)), "hung", "", "", "",
                          f"time-out after {r.get('limit_s')} s: deadlock?")
        elif r.get("type") == "skip":
            table.add_row(_label(r, world), human_size(r.get("size", 0)), "skipped", "", "", "",
                          str(r.get("reason", "")))
    return table


def print_run(console: Console, meta: dict, recs: Records, warn: Console | None = None) -> None:
    """The table on `console`; warnings (untrustworthy timings, damaged files) on `warn`."""
    warn = warn or console
    mpi = meta.get("mpi", {})
    ctx = recs.context or {}
    title = (f"{mpi.get('vendor', '?')} {mpi.get('version', '')} ({mpi.get('name', '?')}), "
             f"{ctx.get('world_size', meta.get('plan', {}).get('ranks', '?'))} ranks on "
             f"{len(ctx.get('hosts', [])) or '?'} host(s), run {meta.get('id')} [{meta.get('status')}]")
    console.print(summary_table(recs, title))
    from mpiscope.report.placement import print_placement
    print_placement(console, recs.records, len(ctx.get("hosts") or []))
    for w in meta.get("warnings") or []:
        warn.print(f"[yellow]warning:[/] {w}")
    for p in recs.problems:
        warn.print(f"[yellow]warning:[/] {p}")
