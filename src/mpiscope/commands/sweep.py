"""`mpiscope sweep SPEC`: run every configuration of an experiment spec, resumably."""
from __future__ import annotations

import argparse
from pathlib import Path

from mpiscope.util import paths


def cmd_sweep(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err, out
    from mpiscope.plan.spec import expand, load_spec
    from mpiscope.execute.sweep import create_sweep_dir, dry_run_lines, open_for_resume, plan_sweep, run_sweep

    from mpiscope.plan.describe import CLI, parse_field
    from mpiscope.execute.sweep import launches_words
    spec = load_spec(Path(a.spec))
    if a.launches is not None:
        spec.launches = parse_field("launches", a.launches, CLI)
    configs = expand(spec, a.max_configs)
    planned = plan_sweep(spec, configs, room=not a.submit, oversubscribe=a.oversubscribe)
    launches = launches_words(planned[0][1]) if planned else "no launches"
    if a.sbatch_args and not a.submit:
        from mpiscope.util.errors import UsageError
        raise UsageError("--sbatch-args goes with --submit slurm: add it, or leave --sbatch-args out")
    if a.dry_run and not a.submit:
        for line in dry_run_lines(planned):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        out.print(f"{len(configs)} configuration(s), {launches} each; nothing was run")
        return 0
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.submit:
        from mpiscope.commands.options import split_args
        from mpiscope.execute.submit import submit_sweep
        return submit_sweep(spec, configs, planned, runs_dir, Path(a.spec), out, resume=a.resume, dry_run=a.dry_run,
                            sbatch_args=list(split_args(a.sbatch_args, "--sbatch-args")))
    if a.resume:
        sd = open_for_resume(runs_dir, spec, configs)
    else:
        sd = create_sweep_dir(runs_dir, spec, configs, spec.launches, Path(a.spec))
    from mpiscope.execute.interleave import new_session
    seed = a.seed if a.seed is not None else new_session()[1]
    err.print(f"sweep '{spec.name}': {len(configs)} configuration(s) side by side (seed {seed}), {launches} each, "
              f"in {sd.path}")
    result = run_sweep(planned, sd, runs_dir, err, progress=not a.no_progress, seed=seed)
    _report(sd, result)
    if not a.no_report:
        from mpiscope.execute.session import write_report_quietly
        write_report_quietly([run for _, run in sd.runs()], sd.path / "report.html")
    if result.interrupted:
        err.print(f"mpiscope: interrupted; every configuration's run keeps what it measured: `mpiscope sweep "
                  f"{a.spec} --resume` finishes them")
        return 130
    return 1 if result.failed else 0


def _report(sd, result) -> None:
    from rich.markup import escape

    from mpiscope.util.console import err, out
    from mpiscope.report.table import sweep_status_table
    out.print(sweep_status_table(sd))
    if result.skipped:
        out.print(f"{result.skipped} configuration(s) were already finished and were skipped")
    for f in result.failed:
        err.print(f"[yellow]failed:[/] {escape(f)}", highlight=False)
    from mpiscope.plan.schedule import launch_count
    if any(launch_count(run.records()) > 1 for _, run in sd.runs()):  # several launches: how they varied
        from mpiscope.analysis.variation import variation
        from mpiscope.report.variation import summary_table
        from mpiscope.report.table import sweep_frame, with_config
        out.print(summary_table(variation(with_config(sweep_frame(sd)))))
    out.print(f"sweep saved in {sd.path}; `mpiscope table {sd.path}` shows the results side by side")


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sweep", parents=[runs_dir], help="run every configuration of an experiment spec (TOML)")
    p.add_argument("spec", help="experiment spec, a TOML file (docs/experiments.md)")
    p.add_argument("--resume", action="store_true", help="continue the latest sweep of this spec, skipping "
                                                         "finished configurations")
    p.add_argument("--dry-run", action="store_true", help="print the launch commands, run nothing")
    p.add_argument("--launches", metavar="N|auto", help="launches of each configuration's run, each in its own "
                                                        "shuffled order (overrides the spec; default: auto, as "
                                                        "`mpiscope run`)")
    from mpiscope.commands.options import positive_int
    from mpiscope.plan.spec import MAX_CONFIGURATIONS
    p.add_argument("--max-configs", type=positive_int, default=MAX_CONFIGURATIONS, metavar="N",
                   help=f"refuse a spec of more than N configurations (default {MAX_CONFIGURATIONS:,})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--seed", type=int, metavar="N", help="seed of the order of the configurations' launches "
                                                         "within each block (default: drawn; kept in each "
                                                         "run.json)")
    p.add_argument("--oversubscribe", action="store_true", help="launch even far more ranks than the cores and "
                                                                "hosts (refused otherwise; also oversubscribe = true "
                                                                "in [measure])")
    p.add_argument("--no-report", action="store_true", help="do not write report.html into the sweep directory")
    from mpiscope.commands.options import add_submit_options
    add_submit_options(p, dry_run=False)  # --dry-run above: with --submit it prints the scripts
    p.set_defaults(func=cmd_sweep)
