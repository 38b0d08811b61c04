"""`mpiscope run`: measure, print the summary and the model, keep the run and its report;
`--resume RUN` finishes a run that was cut short; `--submit slurm` measures in a batch job."""
from __future__ import annotations

import argparse
from dataclasses import replace

from mpiscope.util import paths
from mpiscope.commands.options import (add_launch_options, add_placement_options, add_submit_options, description,
                                       given_options, names, positive_float, split_args)
from mpiscope.util.errors import UsageError
from mpiscope.plan.engine import DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVES, DEFAULT_SIZES

def cmd_run(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err, out
    from mpiscope.execute.planner import measurement
    from mpiscope.execute.session import Session, conclude
    if a.vs:
        from mpiscope.commands.vs import refuse_alone
        refuse_alone(a)
    elif a.seed is not None:
        raise UsageError("--seed orders the launches of configurations measured side by side: add --vs, or leave "
                         "--seed out")
    if a.resume:
        return resume(a)
    if a.sbatch_args and not a.submit:
        raise UsageError("--sbatch-args goes with --submit slurm: add it, or leave --sbatch-args out")
    if a.dry_run and not a.submit:
        raise UsageError("--dry-run goes with --submit slurm: add it, or leave --dry-run out")
    d = again(a) if a.again else description(a)
    if a.vs:
        from mpiscope.commands.vs import side_by_side
        return side_by_side(a, d, [summary] if a.full else [])  # the comparison is the answer
    if a.submit and d.find_switches:
        raise UsageError("--find-switches chooses its next sizes from the run's results, which a batch job "
                         "cannot wait for: run it without --submit")
    m = measurement(d, room=not a.submit)  # a batch job's nodes are not known here: its room is not checked
    m.policy = replace(m.policy, history=a.history)
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.history not in ("auto", "none"):  # named runs: found now, not after measuring
        from mpiscope.store.runs import resolve
        for ref in a.history.split(","):
            resolve(ref.strip(), runs_dir)
    if a.submit:
        from mpiscope.execute.submit import submit
        submit([m], runs_dir, out, dry_run=a.dry_run, sbatch_args=list(split_args(a.sbatch_args, "--sbatch-args")))
        return 0
    from mpiscope.execute.refine import measure_run
    run, outcome = measure_run(Session(runs_dir, err, progress=not a.no_progress), m, d)
    show = [summary] + ([lambda r, _: model(r, a.clock_mhz)] if outcome.status == "ok" else [])
    if a.bench is None:  # the default run opens with its answers; the full table on --full or `show`
        show = [headline, *show] if a.full else [headline, warnings]
    return conclude(run, outcome, show=show, report=not a.no_report)


def refuse_options(a: argparse.Namespace, why: str, stored=None) -> None:
    """Options that --resume and --again take from the run itself: given with them, they would be
    silently ignored; those equal to the run's own description are harmless and pass."""
    from mpiscope.plan.describe import CLI, FIELDS, parse_field
    given = given_options(a)
    if stored is not None:
        given = {k: v for k, v in given.items() if parse_field(k, v, CLI) != getattr(stored, k)}
    flags = [FIELDS[name].flag.split("/")[-1] for name in given]
    flags += ["--clock-mhz"] if a.clock_mhz is not None else []
    flags += ["--submit"] if a.submit and a.resume else []  # a resume measures here, in the run's directory
    if flags:
        raise UsageError(f"{why}: leave out {', '.join(flags)}")


def again(a: argparse.Namespace):
    """`--again RUN`: the description RUN was measured from, for a new run of it."""
    from mpiscope.execute.planner import stored_description
    from mpiscope.store.runs import resolve
    d = stored_description(resolve(a.again, paths.runs_dir(a.runs_dir)))
    refuse_options(a, f"--again measures with the options of run {a.again}", d)
    return d


def headline(run, results) -> None:
    from mpiscope.util.console import out
    from mpiscope.plan.engine import DEFAULT_COLLECTIVES
    from mpiscope.report.headline import print_headline, run_headline
    from mpiscope.results.policy import POLICY
    from mpiscope.execute.planner import first_round, stored_description
    from mpiscope.plan.schedule import left_out_points
    target = (run.meta().extra.get("launch_policy") or {}).get("target", POLICY.launch_target)
    estimates = list(results.points(run.id).values())  # as show and the report give them
    try:
        asked = first_round(stored_description(run))
    except UsageError:  # a run that keeps no description: no count to hold its points to
        asked = 0
    print_headline(out, run_headline(list(run.records()), DEFAULT_COLLECTIVES, protocol_limits(run), target,
                                     estimates, asked, left_out_points(run.meta().extra)),
                   f"every point: mpiscope show {run.id} (or mpiscope run --full)")


def protocol_limits(run) -> dict[str, str]:
    """The protocol limits the run's library reports with the run's environment (its own tool:
    mpivars, ompi_info; for MPICH those of the device the run's context names), for the headline
    to name the setting behind a switch; {} when it cannot say."""
    from mpiscope.doctor.library import mpich_device
    from mpiscope.execute.probe import protocol_limits as ask
    meta = run.meta()
    if meta.mpi is None:
        return {}
    ctx = run.records().context
    return ask(meta.mpi, meta.parts[0].env if meta.parts else {},
               mpich_device(ctx.mpi_library_version) if ctx else None)


def warnings(run, results) -> None:
    from mpiscope.util.console import err
    from mpiscope.report.warnings import print_warnings
    print_warnings(err, run.meta(), run.records(), results.judged(run.id),
                   launch_points=[e.point for e in results.points(run.id).values()])


def summary(run, results) -> None:
    from mpiscope.util.console import err, out
    from mpiscope.report.summary import Summary
    Summary(out, err).render(results)


def model(run, clock_mhz: float | None) -> None:
    """After the table: the model of the run's pingpong (with --find-switches, of every round)."""
    from mpiscope.util.console import out, warn
    from mpiscope.report.model import print_model
    try:
        print_model(out, run.records(), clock_mhz=clock_mhz)
    except ValueError as e:
        warn(f"no model: {e}")


def resume(a: argparse.Namespace) -> int:
    """Finish an interrupted or failed run in its own directory; the run's options are its own."""
    from mpiscope.util.console import err, out
    from mpiscope.execute.session import Session, conclude
    from mpiscope.store.runs import resolve
    if a.again:
        raise UsageError("--resume finishes a run and --again starts a new one: give one of them")
    runs_dir = paths.runs_dir(a.runs_dir)
    run = resolve(a.resume, runs_dir)
    stored = run.meta().extra.get("description")
    from mpiscope.plan.describe import from_json
    refuse_options(a, "--resume measures with the run's own options",
                   from_json(stored, f"run {run.id}") if stored is not None else None)
    if run.meta().extra.get("interleave") and run.meta().sweep is None:  # one of `run --vs`'s runs
        from mpiscope.commands.vs import resume_side_by_side
        return resume_side_by_side(a, run, runs_dir, [summary] if a.full else [])
    from mpiscope.util.console import warn_problems
    from mpiscope.execute.session import own_run
    with own_run(run):  # another mpiscope measuring it: refused before anything is said or done
        warn_problems(run.id, run.records().problems)  # what was damaged, before it is measured again or kept
        outcome = Session(runs_dir, err, progress=not a.no_progress).resume(run)
    if outcome is None:
        out.print(f"run {run.id} is complete: nothing to resume")
        return 0
    return conclude(run, outcome, show=[summary], report=not a.no_report)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    r = sub.add_parser("run", parents=[runs_dir], help="measure, print a summary, keep the run")
    r.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    r.add_argument("-n", "--ranks", help="number of ranks (default: 2 for pair benchmarks, else cores)")
    r.add_argument("-b", "--bench", type=names, help=f"benchmarks, comma-separated (default: "
                   f"{','.join(DEFAULT_BENCHMARKS)} on 2 ranks, then {','.join(DEFAULT_COLLECTIVES)} on every core)")
    r.add_argument("--sizes", help=f"size expression (default {DEFAULT_SIZES})")
    r.add_argument("--units", help="unit of the numbers in --sizes (default bytes; "
                                                                "words are 8 bytes)")
    r.add_argument("--max-sizes", metavar="N", help="refuse --sizes that ask for more than N sizes (default "
                                                    "10000, at most the engine's 100000)")
    r.add_argument("--ci-target", metavar="F", help="stop a point when the 95%% CI is within +-F x median "
                                                    "(0.05 or 5%%)")
    r.add_argument("--max-time", help="time cap per point, seconds")
    r.add_argument("--timeout", metavar="S", help="a hard limit per point, seconds per phase: the point ends at it "
                                                  "even while it progresses (default: limits that follow progress)")
    r.add_argument("--reps", help="fixed number of samples per point")
    r.add_argument("--time-budget", help="whole run, seconds: caps the time per point (and, with auto "
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
    r.add_argument("--again", metavar="RUN", help="a new run with exactly the options RUN was measured with")
    r.add_argument("--no-report", action="store_true", help="do not write report.html into the run directory")
    r.add_argument("--full", action="store_true", help="the default run: print every point's row and the model "
                                                      "after the headline (else `mpiscope show RUN`)")
    add_placement_options(r)
    add_submit_options(r)
    r.add_argument("--clock-mhz", type=positive_float, help="core clock for the model's cycle figures (default: detected)")
    r.add_argument("--find-switches", action="store_true",
                   help="locate pingpong's protocol switches: measure more sizes around each (mpptest-style)")
    r.add_argument("--vs", action="append", default=[], metavar="FLAGS",
                   help="another configuration measured side by side with this one, their launches interleaved: "
                        "run flags added to this run's, one quoted string, e.g. --vs \"--env NAME=VALUE\" or "
                        "--vs=\"-n 4\" (repeatable); each is its own run, and the session ends with the comparison")
    r.add_argument("--seed", type=int, metavar="N", help="with --vs: seed of the order of the configurations' "
                                                         "launches within each block (default: drawn; kept in "
                                                         "each run.json)")
    r.set_defaults(func=cmd_run, run_parser=r)
