"""`mpiscope compare BASELINE CANDIDATE [--fail-on 5%]`: what got significantly slower or faster,
at the launch level when the runs hold several launches (analysis.compare)."""
from __future__ import annotations

import argparse

from mpiscope import paths


def percent(text: str, option: str) -> float:
    from mpiscope.errors import UsageError
    try:
        if not text.endswith("%"):
            raise ValueError
        value = float(text[:-1]) / 100
        if not value >= 0:
            raise ValueError
        return value
    except ValueError:
        raise UsageError(f"{option} expects a percentage such as 5%, got '{text}'") from None


def side(ref: str, runs_dir):
    """One side of the comparison: a run, comma-separated runs (launches of one configuration), or a
    sweep directory of one configuration."""
    from pathlib import Path

    from mpiscope.errors import UsageError
    from mpiscope.store import SweepDir, is_sweep_dir, resolve
    if is_sweep_dir(Path(ref)):
        sd = SweepDir(Path(ref))
        if len(sd.plan().configurations) != 1:
            raise UsageError(f"{ref} is a sweep of {len(sd.plan().configurations)} configurations: compare "
                             f"single runs, or runs of one configuration as RUN1,RUN2,...")
        runs = [run for _, run in sd.runs()]
        if not runs:
            raise UsageError(f"the sweep in {ref} has no finished run: run or resume it first")
        return runs
    runs = [resolve(r, runs_dir) for r in ref.split(",") if r.strip()]
    if not runs:
        raise UsageError(f"'{ref}' names no run: give a run id, 'latest', a run's path, or RUN1,RUN2,...")
    return runs


def _name(runs) -> str:
    return runs[0].id if len(runs) == 1 else f"{len(runs)} runs ({runs[0].id}, ...)"


def cmd_compare(a: argparse.Namespace) -> int:
    from rich.table import Table

    from mpiscope.analysis.compare import compare_runs, launches_line, regressions, summary
    from mpiscope.console import err, out, warn_problems
    from mpiscope.errors import UsageError
    from mpiscope.records.launches import drifts_kept

    fail_on = percent(a.fail_on, "--fail-on") if a.fail_on is not None else None
    min_change = percent(a.min_change, "--min-change")
    if not 0 < a.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {a.alpha}")
    runs_dir = paths.runs_dir(a.runs_dir)
    b_runs, c_runs = side(a.baseline, runs_dir), side(a.candidate, runs_dir)
    records = {}
    for run in b_runs + c_runs:
        recs = run.records()
        warn_problems(run.id, recs.problems)
        records[run.path] = recs.points
    # the launch is the unit: every launch of every run on a side is one observation of a point
    # with one run a side, the drift from run to run that either keeps (the one learnt from more runs)
    drift = {}
    for run in (b_runs[0], c_runs[0]):
        for key, d in drifts_kept(run.meta().extra).items():
            if key not in drift or d.runs > drift[key].runs:
                drift[key] = d
    changes = compare_runs([records[r.path] for r in b_runs], [records[r.path] for r in c_runs],
                           a.alpha, min_change, drift)
    base = _name(b_runs)
    cand = _name(c_runs)
    if a.benchmark:
        changes = [pc for pc in changes if pc.benchmark == a.benchmark]
    if not changes:
        raise UsageError(f"{base} and {cand} have no benchmark and size in common"
                         + (f" for '{a.benchmark}'" if a.benchmark else "")
                         + ": compare runs of the same benchmarks and sizes")
    table = Table(title=f"{cand} against baseline {base}", title_justify="left")
    for col in ("benchmark", "size", "ranks", "baseline us", "candidate us", "change", "test", "p (adj.)",
                "effect", "verdict"):
        table.add_column(col, justify="left" if col in ("benchmark", "test", "verdict") else "right",
                         no_wrap=col == "test")
    style = {"slower": "red", "faster": "green", "same": ""}
    for pc in changes:
        effect = {"mann-whitney": f"δ={pc.effect:+.2f}", "ci z-test": f"z={pc.effect:+.1f}"}.get(
            pc.test, f"g={pc.effect:+.1f}")
        table.add_row(pc.label, str(pc.size), str(pc.ranks), f"{pc.base_us:.3g}", f"{pc.cand_us:.3g}",
                      f"{100 * pc.change:+.1f}%", pc.test, f"{pc.p_adj:.2g}", effect,
                      f"[{style[pc.verdict]}]{pc.verdict}[/]" if style[pc.verdict] else pc.verdict)
    out.print(table)
    out.print(summary(changes), highlight=False)
    if any(pc.launch_level for pc in changes) or len(b_runs) + len(c_runs) > 2:
        out.print(launches_line(changes), highlight=False)  # which test, on how many launches
    if fail_on is not None:
        bad = regressions(changes, fail_on)
        if bad:
            err.print(f"mpiscope: {len(bad)} point(s) significantly slower by more than {a.fail_on}: "
                      + ", ".join(f"{pc.label} {pc.size} B {100 * pc.change:+.1f}%" for pc in bad[:8]),
                      highlight=False, soft_wrap=True)
            return 1
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("compare", parents=[runs_dir],
                       help="per point: change of the median, significance, effect size; --fail-on for CI")
    p.add_argument("baseline", help="a run (id, prefix, 'latest', path); runs of one configuration as "
                                    "RUN1,RUN2,... or a sweep directory: every launch is one observation")
    p.add_argument("candidate", help="the same for the candidate")
    p.add_argument("--fail-on", metavar="PCT", help="exit 1 when a point is significantly slower by more "
                                                    "than PCT, e.g. 5%%")
    p.add_argument("--min-change", default="5%", metavar="PCT",
                   help="smaller changes count as unchanged even when significant (default 5%%)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level after adjustment (default 0.05)")
    p.add_argument("--benchmark", help="only this benchmark")
    p.set_defaults(func=cmd_compare)
