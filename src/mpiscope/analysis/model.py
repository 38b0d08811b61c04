"""One call for `mpiscope model RUN`: a run's records in, its regimes and switches out
(report/switches.py shows them)."""
from __future__ import annotations

from typing import Iterable

from mpiscope.records import Context, Record

from .clock import cpus_of_context, detect_clock
from mpiscope.records.measured import Measured

from .measured import select
from .switches import SwitchReport, find_switches


def first_context(records: Iterable[Record | Measured]) -> Context | None:
    """The first launch's context: the clock of concatenated runs is the first run's."""
    return next((r for r in records if isinstance(r, Context)), None)


def model_records(records: Iterable[Record | Measured], benchmark: str = "pingpong",
                  clock_mhz: float | None = None, ranks: int | None = None) -> SwitchReport:
    """Segment and fit one benchmark of a run. The clock is, in order: the
    override, the context's `cpu_mhz`, this machine's (for the cores the
    ranks were bound to)."""
    recs = list(records)
    ctx = first_context(recs)
    clock = detect_clock(clock_mhz, ctx, cpus_of_context(ctx))
    pts = select(recs, benchmark=benchmark, ranks=ranks)
    if len({p.size for p in pts}) < 2:
        raise ValueError(f"the run has fewer than 2 sizes of {benchmark!r}; "
                         f"measure a size sweep, e.g. --sizes 0,1:4M")
    return find_switches(pts, clock=clock)

