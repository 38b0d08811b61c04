"""`mpiscope bench list`: the engine's benchmark registry, by family, with what the chosen MPI
can run (the engine's build for it says; nothing is kept here)."""
from __future__ import annotations

import argparse


def cmd_list(a: argparse.Namespace) -> int:
    from mpiscope.util.console import make_table, out
    from mpiscope.plan.engine import availability, families
    from mpiscope.execute.session import target
    t = target(a.mpi)
    version = f", MPI {t.lib.mpi_version}" if t.lib.mpi_version else ""
    ftable = make_table(f"families ({t.lib.name}{version})", ("family", "benchmarks", "available", "why not"))
    for f in availability(t.engine):
        ok = "yes" if f.available == f.benchmarks else f"{f.available} of {f.benchmarks}" if f.available else "no"
        ftable.add_row(f.family, str(f.benchmarks), ok, "; ".join(f.reasons))
    out.print(ftable)
    groups = families(t.engine)
    table = make_table("benchmarks", ("name", "family", "min ranks", "available", "what it measures"))
    for rows in groups.values():
        for b in rows:
            table.add_row(b.name, b.family, str(b.min_ranks), "yes" if b.available else "no", b.summary)
    out.print(table)
    out.print("`mpiscope run -b FAMILY` runs a whole family; unavailable benchmarks are recorded as skips")
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    b = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench_command", required=True,
                                                                  metavar="ACTION")
    bl = b.add_parser("list", help="the engine's benchmarks by family, with their availability for --mpi")
    bl.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    bl.set_defaults(func=cmd_list)
