"""`mpiscope study grid`: HPL's communication step on every process-grid shape under
block and cyclic task ordering (the p690 report's comparison), best first."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

ORDERS = ("block", "cyclic")


@dataclass(frozen=True)
class GridRow:
    """One grid point: a shape under an ordering at a panel size."""
    size: int
    shape: str
    order: str
    step_us: float
    row_us: float | None
    column_us: float | None
    row_hosts: int
    column_hosts: int
    converged: bool


def grid_rows(records: list[dict]) -> list[GridRow]:
    """Every grid point of a run, from the engine's records."""
    rows = []
    for r in records:
        if r.get("type") != "point" or r.get("benchmark") != "grid" or "grid" not in r:
            continue
        phases = r.get("phases_us") or {}
        rows.append(GridRow(size=r["size"], shape=r["grid"]["shape"], order=r.get("order", "launch"),
                            step_us=r["time_us"]["median"], row_us=phases.get("row"),
                            column_us=phases.get("column"), row_hosts=r["grid"]["max_hosts_per_row"],
                            column_hosts=r["grid"]["max_hosts_per_column"], converged=r["converged"]))
    return rows


def ranked(rows: list[GridRow]) -> dict[int, list[GridRow]]:
    """Per panel size, every shape and ordering from the fastest step to the slowest."""
    by_size: dict[int, list[GridRow]] = {}
    for row in rows:
        by_size.setdefault(row.size, []).append(row)
    return {size: sorted(group, key=lambda g: g.step_us) for size, group in sorted(by_size.items())}


def print_comparison(console, rows: list[GridRow]) -> None:
    from rich.table import Table

    from mpiscope.sizes import human_size
    for size, group in ranked(rows).items():
        best = group[0].step_us
        table = Table(title=f"HPL step, {human_size(size)} panel: best first", title_justify="left")
        for col in ("grid", "order", "step µs", "× best", "row µs", "column µs", "hosts/row", "hosts/column",
                    "converged"):
            table.add_column(col, justify="left" if col in ("grid", "order", "converged") else "right")
        for g in group:
            table.add_row(g.shape, g.order, f"{g.step_us:.3g}", f"{g.step_us / best:.2f}",
                          "" if g.row_us is None else f"{g.row_us:.3g}",
                          "" if g.column_us is None else f"{g.column_us:.3g}",
                          str(g.row_hosts), str(g.column_hosts), "yes" if g.converged else "no")
        console.print(table)


def cmd_grid(a: argparse.Namespace) -> int:
    from dataclasses import replace

    from mpiscope import paths
    from mpiscope.cli import err, finish, out, parse_env, parse_launcher_args
    from mpiscope.errors import UsageError
    from mpiscope.execute import RunSpec, run_once
    from mpiscope.launch import local_cores
    from mpiscope.launch.placement import placement_from_args, placement_ranks
    from mpiscope.mpi import find
    from mpiscope.mpi.build import build_engine
    from mpiscope.plan import make_plan, order_options, registry

    if a.max_time is not None and not a.max_time > 0:
        raise UsageError(f"--max-time must be a positive number, got {a.max_time}")
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    placement = placement_from_args(a)
    ranks = placement_ranks(placement, a.ranks) or local_cores()
    reg = registry(engine)
    specs = []
    for order in ORDERS:
        plan = make_plan(["grid"], a.sizes, ranks, reg, max_time=a.max_time, engine_options=order_options(order))
        # on several hosts the launcher places the ranks that way too, where it can
        where = {**placement, "mapping": order} if placement.get("hosts") or placement.get("hostfile") else placement
        specs.append(RunSpec(lib, engine, plan, parse_env(a.env), parse_launcher_args(a.launcher_args), where,
                             factors={"study": "grid", "order": order}))
    runs_dir = paths.runs_dir(a.runs_dir)
    run, outcome = run_once(replace(specs[0], factors={"study": "grid"}), runs_dir, err,
                            progress=not a.no_progress, extra_meta={"study": "grid"}, then=specs[1:])
    rows = grid_rows(run.records().records)
    if rows:
        ctx = run.records().context or {}
        out.print(f"{lib.name}: {ranks} ranks on {len(ctx.get('hosts', []))} host(s); time per HPL step "
                  f"(panel broadcast along rows, then allreduce along columns), run {run.id}")
        print_comparison(out, rows)
    out.print(f"saved in {run.path}")
    return finish(outcome, run.path)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.launch.placement import add_placement_options
    p = sub.add_parser("grid", parents=[runs_dir],
                       help="every P x Q process grid under block and cyclic ordering (HPL's pattern)")
    p.add_argument("--mpi", help="MPI library by name (default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", type=int, help="number of ranks (default: the local cores)")
    p.add_argument("--sizes", default="64K,1M", help="panel sizes in bytes (default 64K,1M)")
    p.add_argument("--max-time", type=float, default=0.2, help="time cap per point and phase, seconds (0.2)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for the ranks")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_placement_options(p)
    p.set_defaults(func=cmd_grid)
