"""`mpiscope bench list`: the engine's benchmark registry, by family, with what the chosen MPI
can run (the engine's build for it says; nothing is kept here)."""
from __future__ import annotations

import argparse


def cmd_list(a: argparse.Namespace) -> int:
    from mpiscope.console import make_table, out
    from mpiscope.plan import families
    from mpiscope.session import target
    t = target(a.mpi)
    groups = families(t.engine)
    version = f", MPI {t.lib.mpi_version}" if t.lib.mpi_version else ""
    ftable = make_table(f"families ({t.lib.name}{version})", ("family", "benchmarks", "available", "why not"))
    for family, rows in groups.items():
        ok = sum(b.available for b in rows)
        reasons = sorted({b.unavailable for b in rows if b.unavailable})
        ftable.add_row(family, str(len(rows)), "yes" if ok == len(rows) else f"{ok} of {len(rows)}" if ok else "no",
                       "; ".join(reasons))
    out.print(ftable)
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
