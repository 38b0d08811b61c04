"""`mpiscope run`: measure, print the summary and the model, keep the run and its report;
`--resume RUN` finishes a run that was cut short; `--submit slurm` measures in a batch job."""
from __future__ import annotations

import argparse
import math

from mpiscope import paths
from mpiscope.commands.options import (add_launch_options, add_placement_options, add_submit_options, names,
                                       parse_env, positive_float, positive_int, split_args)
from mpiscope.errors import UsageError
from mpiscope.plan import DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVES, DEFAULT_SIZES


# What --resume takes from the run itself: given with it, they would be silently ignored.
MEASURING = ("mpi", "ranks", "bench", "ci_target", "max_time", "reps", "time_budget", "launches", "launch_target",
             "launcher_args",
             "engine_args", "env", "check", "raw", "order", "launcher", "hosts", "hostfile", "nodes",
             "ranks_per_node", "map_by", "bind_to", "platform", "submit", "find_switches", "clock_mhz")


def check_positive(a: argparse.Namespace) -> None:
    """Numbers that only make sense above 0 (the engine checks its own upper limits)."""
    for option, value in (("--ci-target", a.ci_target), ("--max-time", a.max_time),
                          ("--time-budget", a.time_budget)):
        if value is not None and not (value > 0 and not math.isnan(value)):
            raise UsageError(f"{option} must be a positive number, got {value}")


def measurement(a: argparse.Namespace):
    """The parts of `mpiscope run` (api.plan_run): the benchmarks asked for on their ranks; with no
    -b, the characterisation: pair benchmarks on two ranks, then the main collectives on every core."""
    from mpiscope.api import plan_run
    check_positive(a)
    return plan_run(a.bench, a.sizes, a.ranks, mpi=a.mpi, launches=a.launches, launch_target=a.launch_target,
                    ci_target=a.ci_target, max_time=a.max_time, reps=a.reps, time_budget=a.time_budget,
                    env=parse_env(a.env), launcher_args=split_args(a.launcher_args, "--launcher-args"),
                    engine_args=split_args(a.engine_args, "--engine-args"), check=a.check, raw=a.raw,
                    order=a.order, launcher=a.launcher, hosts=a.hosts, hostfile=a.hostfile, nodes=a.nodes,
                    ranks_per_node=a.ranks_per_node, map_by=a.map_by, bind_to=a.bind_to,
                    find_switches=a.find_switches, platform=a.platform,
                    # a batch job's nodes are not known here: its rank count is not checked
                    oversubscribe=a.oversubscribe or bool(getattr(a, "submit", None)))


def cmd_run(a: argparse.Namespace) -> int:
    from mpiscope.console import err, out
    from mpiscope.session import Session, conclude
    if a.resume:
        return resume(a)
    if a.sbatch_args and not a.submit:
        raise UsageError("--sbatch-args goes with --submit slurm: add it, or leave --sbatch-args out")
    if a.dry_run and not a.submit:
        raise UsageError("--dry-run goes with --submit slurm: add it, or leave --dry-run out")
    if a.submit and a.find_switches:
        raise UsageError("--find-switches chooses its next sizes from the run's results, which a batch job "
                         "cannot wait for: run it without --submit")
    m = measurement(a)
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.submit:
        from mpiscope.submit import submit
        submit([m], runs_dir, out, dry_run=a.dry_run, sbatch_args=list(split_args(a.sbatch_args, "--sbatch-args")))
        return 0
    session = Session(runs_dir, err, progress=not a.no_progress)
    run, outcome = session.run(m)
    if outcome.status == "ok" and a.find_switches:
        from mpiscope.refine import refine_run
        outcome = refine_run(session, m.target, run)
    show = [summary] + ([lambda r: model(r, a.clock_mhz)] if outcome.status == "ok" else [])
    return conclude(run, outcome, show=show, report=not a.no_report)


def summary(run) -> None:
    from mpiscope.console import err, out
    from mpiscope.report.summary import print_run
    print_run(out, run.meta(), run.records(), err)


def model(run, clock_mhz: float | None) -> None:
    """After the table: the model of the run's pingpong (with --find-switches, of every round)."""
    from mpiscope.console import out, warn
    from mpiscope.report.model import print_model
    try:
        print_model(out, run.records(), clock_mhz=clock_mhz)
    except ValueError as e:
        warn(f"no model: {e}")


def resume(a: argparse.Namespace) -> int:
    """Finish an interrupted or failed run in its own directory; the run's options are its own."""
    from mpiscope.console import err, out
    from mpiscope.session import Session, conclude
    from mpiscope.store import resolve
    given = [f"--{name.replace('_', '-')}" for name in MEASURING if getattr(a, name) not in (None, False, [], "")]
    given += ["--sizes"] if a.sizes != DEFAULT_SIZES else []
    given += ["--clock-mhz"] if a.clock_mhz is not None else []
    given += ["--find-switches"] if a.find_switches else []
    if given:  # silently ignoring them would let a user believe they were applied
        raise UsageError(f"--resume measures with the run's own options: leave out {', '.join(given)}")
    runs_dir = paths.runs_dir(a.runs_dir)
    run = resolve(a.resume, runs_dir)
    from mpiscope.console import warn_problems
    warn_problems(run.id, run.records().problems)  # what was damaged, before it is measured again or kept
    outcome = Session(runs_dir, err, progress=not a.no_progress).resume(run)
    if outcome is None:
        out.print(f"run {run.id} is complete: nothing to resume")
        return 0
    return conclude(run, outcome, show=[summary], report=not a.no_report)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    r = sub.add_parser("run", parents=[runs_dir], help="measure, print a summary, keep the run")
    r.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    r.add_argument("-n", "--ranks", type=int, help="number of ranks (default: 2 for pair benchmarks, else cores)")
    r.add_argument("-b", "--bench", type=names, help=f"benchmarks, comma-separated (default: "
                   f"{','.join(DEFAULT_BENCHMARKS)} on 2 ranks, then {','.join(DEFAULT_COLLECTIVES)} on every core)")
    r.add_argument("--sizes", default=DEFAULT_SIZES, help=f"size expression (default {DEFAULT_SIZES})")
    r.add_argument("--ci-target", type=float, help="stop a point when the 95%% CI is within +-F x median")
    r.add_argument("--max-time", type=float, help="time cap per point, seconds")
    r.add_argument("--reps", type=positive_int, help="fixed number of samples per point")
    r.add_argument("--time-budget", type=float, help="whole run, seconds: caps the time per point (and, with auto "
                                                    "launches, when to stop adding launches; default 25)")
    add_launch_options(r)
    r.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    r.add_argument("--engine-args", help="more engine options, one quoted string, e.g. \"--npmin 2 --datatype "
                                         "double\" (docs/engine.md; the engine checks them before the launch)")
    r.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for the ranks")
    r.add_argument("--check", action="store_true", help="verify received data before timing")
    r.add_argument("--raw", action="store_true", help="keep every sample in the records")
    r.add_argument("--order", help="renumber ranks: block (by host), cyclic (dealt across hosts), or a list "
                                   "of launch ranks in their new order, e.g. 0,2,1,3")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--resume", metavar="RUN", help="finish an interrupted or failed run (its own options apply)")
    r.add_argument("--no-report", action="store_true", help="do not write report.html into the run directory")
    add_placement_options(r)
    add_submit_options(r)
    r.add_argument("--clock-mhz", type=positive_float, help="core clock for the model's cycle figures (default: detected)")
    r.add_argument("--find-switches", action="store_true",
                   help="locate pingpong's protocol switches: measure more sizes around each (mpptest-style)")
    r.set_defaults(func=cmd_run)
