"""`mpiscope study grid`: HPL's communication step on every process-grid shape under
block and cyclic task ordering (the p690 report's comparison), best first."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

ORDERS = ("block", "cyclic")


def print_comparison(console, ranking: pd.DataFrame) -> None:
    """One table per panel size, best first (analysis.grid.ranking)."""
    import pandas as pd

    from mpiscope.util.console import make_table
    from mpiscope.util.units import human_size

    def us(x: float) -> str:
        return "" if pd.isna(x) else f"{x:.3g}"

    def count(x: float) -> str:
        return "" if pd.isna(x) else str(int(x))

    def yes(x) -> str:
        return "yes" if pd.notna(x) and bool(x) else "no"

    for size, group in ranking.groupby("size", sort=True):
        table = make_table(f"HPL step, {human_size(int(size))} panel: best first",
                           ("grid", "order", "step µs", "× best", "row µs", "column µs", "hosts/row",
                            "hosts/column", "converged"), left=("grid", "order", "converged"))
        for g in group.itertuples():
            table.add_row(g.shape, g.order, us(g.step_us), f"{g.x_best:.2f}", us(g.row_us), us(g.column_us),
                          count(g.row_hosts), count(g.column_hosts), yes(g.converged))
        console.print(table)


def measurement(d):
    """Both task orderings as two parts of one run (`planner.measurement` of the description
    `d`); on several hosts the launcher places the ranks that way too, where it can."""
    from mpiscope.plan.engine import order_options
    from mpiscope.execute.planner import Group
    from mpiscope.execute.planner import measurement as plan
    from mpiscope.execute.session import target
    # a simulated rank stays on the node its hostfile line names: the engine's order alone moves it
    simulated = target(d.mpi).lib.vendor == "SMPI"
    parts = [Group(("grid",), d.sizes, engine_options=tuple(order_options(order)), mapping=None if simulated else order)
             for order in ORDERS]
    return plan(d, parts, factors={"study": "grid"}, extra={"study": "grid"})


def show_results(run, results) -> None:
    """What `mpiscope study grid` prints after measuring: every shape and order, best first."""
    from mpiscope.analysis.grid import ranking
    from mpiscope.util.console import out
    table = ranking(results.frame)
    if not table.empty:
        ctx = run.records().context
        mpi = run.meta().mpi
        out.print(f"{mpi.name if mpi else '?'}: {ctx.world_size if ctx else '?'} ranks on "
                  f"{len(ctx.hosts) if ctx else '?'} host(s); time per HPL step "
                  f"(panel broadcast along rows, then allreduce along columns), run {run.id}")
        print_comparison(out, table)


def beside(ref: str, runs_dir):
    """A presenter of the grid ranking of `ref` (a grid study, measured at small scale) beside the
    run's own, best first, position by position; a UsageError now when `ref` has no grid points."""
    from mpiscope.analysis.grid import ranking
    from mpiscope.results.view import results_of
    from mpiscope.store.runs import resolve
    from mpiscope.util.errors import UsageError
    other = resolve(ref, runs_dir)
    measured = ranking(results_of([other]).frame)
    if measured.empty:
        raise UsageError(f"--beside {ref}: run {other.id} has no grid study points: give a run of "
                         f"`mpiscope study grid`")
    ctx = other.records().context
    label = f"run {other.id}, {ctx.world_size if ctx else '?'} ranks on {len(ctx.hosts) if ctx else '?'} host(s)"

    def show(run, results) -> None:
        from mpiscope.util.console import out
        print_beside(out, ranking(results.frame), measured, label)
    return show


def print_beside(console, ranking: pd.DataFrame, measured: pd.DataFrame, label: str) -> None:
    """Per panel size either ranking has, the two best first, side by side."""
    from itertools import zip_longest

    from mpiscope.util.console import make_table
    from mpiscope.util.units import human_size
    for size in sorted(set(ranking["size"]) | set(measured["size"])):
        table = make_table(f"HPL step, {human_size(int(size))} panel: this run beside {label}",
                           ("", "grid", "order", "× best", "measured grid", "measured order", "measured × best"),
                           left=("grid", "order", "measured grid", "measured order"))
        mine, theirs = ranking[ranking["size"] == size], measured[measured["size"] == size]
        for k, (a, b) in enumerate(zip_longest(mine.itertuples(), theirs.itertuples()), start=1):
            cells = [(g.shape, g.order, f"{g.x_best:.2f}") if g is not None else ("", "", "") for g in (a, b)]
            table.add_row(str(k), *cells[0], *cells[1])
        console.print(table)
