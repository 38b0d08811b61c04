"""`mpiscope import FILE... [--format osu|imb]`: OSU Micro-Benchmarks 7.x and Intel MPI
Benchmarks 2021 text output as one run (mpiscope.importers, docs/import.md)."""
from __future__ import annotations

import argparse

from mpiscope.util import paths


def cmd_import(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    from mpiscope.importers import import_run
    from mpiscope.util.errors import UsageError
    if a.mpi_label is not None and not a.mpi_label.strip():
        raise UsageError("--mpi-label is empty: name the MPI library the files were measured with, or leave "
                         "--mpi-label out")
    done = import_run(a.files, a.format, a.mpi_label, a.ranks, paths.runs_dir(a.runs_dir))  # not read back: it may be big
    out.print(f"imported {done.points} points from {len(a.files)} file(s): "
              + ", ".join(t if t == b else f"{t} -> {b}" for t, b in done.names), markup=False, highlight=False)
    out.print(f"saved in {done.path}", markup=False, highlight=False)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.importers import FORMATS
    p = sub.add_parser("import", parents=[runs_dir],
                       help="OSU Micro-Benchmarks or IMB text output as a run (show, table, model, compare ...)")
    p.add_argument("files", nargs="+", metavar="FILE", help="the tool's output files, stored together as one run")
    p.add_argument("--format", choices=FORMATS, help="the tool (default: detected from each file's first lines)")
    p.add_argument("--mpi-label", metavar="TEXT", help="the MPI library the files were measured with, e.g. "
                                                       "'MPICH 5.0.2' (the files do not say)")
    p.add_argument("--ranks", type=int, metavar="N", help="ranks of the job (OSU collectives do not print it; "
                                                         "point-to-point files are 2, IMB says)")
    p.set_defaults(func=cmd_import)
