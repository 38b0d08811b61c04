"""`mpiscope runs`: the kept runs, one line each."""
from __future__ import annotations

import argparse

from mpiscope import paths


def cmd_runs(a: argparse.Namespace) -> int:
    from mpiscope.console import make_table, out, warn
    from mpiscope.errors import UsageError
    from mpiscope.store import left_out, list_runs, shown_status
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.runs_dir is not None and paths.is_link_loop(runs_dir):
        raise UsageError(f"--runs-dir {runs_dir} is a symbolic link that loops back to itself: remove the link, "
                         f"or give the directory the runs were kept in")
    if a.runs_dir is not None and not runs_dir.is_dir():
        raise UsageError(f"--runs-dir {runs_dir} is not a directory: give the directory the runs were kept in")
    table = make_table(f"runs in {runs_dir}", ("run", "started", "status", "mpi", "ranks", "benchmarks", "points"))
    stopped = []
    for run in list_runs(runs_dir):
        m = run.meta()
        ranks = sorted({p.plan.ranks for p in m.parts})
        benchmarks = list(dict.fromkeys(b for p in m.parts for b in p.plan.benchmarks))
        mpi = m.mpi.name if m.mpi else "?"
        imported = m.extra.get("imported")
        if isinstance(imported, dict):  # mpiscope import: the tool and the MPI as labelled
            mpi = f"imported: {', '.join(map(str, imported.get('tools') or []))} ({imported.get('mpi_label') or '?'})"
            ranks, benchmarks = list(imported.get("ranks") or []), list(imported.get("benchmarks") or [])
        status = shown_status(m, run.path)
        if status == "unreadable":
            warn(f"run {run.id}: {m.error}: listed as unreadable")
        if status == "stopped":
            stopped.append(run.id)
        table.add_row(run.id, m.started, status, mpi,
                      ",".join(map(str, ranks)) or "?", ",".join(benchmarks), str(m.points))
    out.print(table)
    for why in left_out(runs_dir):
        warn(f"left out {why}")
    if stopped:
        out.print(f"stopped: marked running, but the mpiscope measuring it is gone (killed, or the machine went "
                  f"down); `mpiscope run --resume {stopped[-1]}` finishes it", markup=False)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    sub.add_parser("runs", parents=[runs_dir], help="list kept runs").set_defaults(func=cmd_runs)
