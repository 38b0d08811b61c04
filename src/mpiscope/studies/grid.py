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
    parts = [Group(("grid",), d.sizes, engine_options=tuple(order_options(order)), mapping=order) for order in ORDERS]
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
