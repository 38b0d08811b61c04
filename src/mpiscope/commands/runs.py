"""`mpiscope runs`: the kept runs, one line each."""
from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from mpiscope.util import paths

if TYPE_CHECKING:
    from mpiscope.store.runs import RunMeta


def cmd_runs(a: argparse.Namespace) -> int:
    from mpiscope.util.console import make_table, out, warn
    from mpiscope.util.errors import UsageError
    from mpiscope.store.runs import left_out, list_runs, shown_status
    runs_dir = paths.runs_dir(a.runs_dir)
    # a directory given (the option, or the variable in its place) must be one: an empty table would say it holds none
    given = f"--runs-dir {runs_dir}" if a.runs_dir is not None else \
        f"MPISCOPE_RUNS={runs_dir}" if os.environ.get("MPISCOPE_RUNS") else None
    if given and paths.is_link_loop(runs_dir):
        raise UsageError(f"{given} is a symbolic link that loops back to itself: remove the link, "
                         f"or give the directory the runs were kept in")
    if given and not runs_dir.is_dir():
        raise UsageError(f"{given} is not a directory: give the directory the runs were kept in")
    table = make_table(f"runs in {runs_dir}", ("run", "started", "status", "mpi", "ranks", "benchmarks", "points",
                                                "differs"))
    stopped = []
    runs = list_runs(runs_dir)
    # an id cut short cannot be given back to show, compare or --resume: the other columns wrap
    metas = [run.meta() for run in runs]
    differs = differing_settings(metas)
    started = [m.started.replace("T", " ")[:16] for m in metas]
    for col, texts in ((0, [run.id for run in runs]), (1, started)):
        table.columns[col].no_wrap = True
        table.columns[col].min_width = max(map(len, texts), default=3)
    table.columns[7].overflow = table.columns[5].overflow = "fold"
    for run, m, when, what in zip(runs, metas, started, differs):
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
        table.add_row(run.id, when, status, mpi,
                      ",".join(map(str, ranks)) or "?", ", ".join(benchmarks), str(m.points), what)
    out.print(table)
    for why in left_out(runs_dir):
        warn(f"left out {why}")
    if stopped:
        out.print(f"stopped: marked running, but the mpiscope measuring it is gone (killed, or the machine went "
                  f"down); `mpiscope run --resume {stopped[-1]}` finishes it", markup=False)
    return 0


def settings(meta: "RunMeta") -> dict[str, str]:
    """What a run was measured under besides its MPI and benchmarks: the ranks' environment,
    launcher arguments, placement and the factors of its sweep."""
    found: dict[str, str] = {}
    for part in meta.parts:
        found.update(part.env)
        if part.launcher_args:
            found["launcher args"] = " ".join(part.launcher_args)
        for name, value in vars(part.placement).items():
            if value is not None:
                found[name] = ",".join(value) if isinstance(value, tuple) else str(value)
    found.update({k: str(v) for k, v in meta.factors.items()})
    return found


def differing_settings(metas: "list[RunMeta]") -> list[str]:
    """Per run, the settings whose value is not the same in every listed run (`K=V`, or `K unset`),
    so a perturbed run stands out among runs of one setting."""
    each = [settings(m) for m in metas]
    keys = sorted({k for s in each for k in s})
    varying = [k for k in keys if len({s.get(k) for s in each}) > 1]
    return [" ".join(f"{k}={s[k]}" if k in s else f"{k} unset" for k in varying) for s in each]


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    sub.add_parser("runs", parents=[runs_dir], help="list kept runs").set_defaults(func=cmd_runs)
