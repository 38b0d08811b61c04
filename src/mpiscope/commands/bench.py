"""`mpiscope bench list`: the engine's benchmark registry."""
from __future__ import annotations

import argparse


def cmd_list(a: argparse.Namespace) -> int:
    from mpiscope.console import make_table, out
    from mpiscope.plan import registry
    from mpiscope.session import target
    table = make_table("benchmarks", ("name", "family", "min ranks", "what it measures"))
    for b in registry(target(a.mpi).engine):
        table.add_row(b.name, b.family, str(b.min_ranks), b.summary)
    out.print(table)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    b = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench_command", required=True,
                                                                  metavar="ACTION")
    bl = b.add_parser("list", help="the engine's benchmark registry")
    bl.add_argument("--mpi")
    bl.set_defaults(func=cmd_list)
