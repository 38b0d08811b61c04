"""`mpiscope model RUN...`: the fitted models (Hockney regimes and switches,
LogGP, hardware limit) of stored runs, for the terminal or as JSON; and the
model after `mpiscope run`, with `--find-switches` refinement launches."""
from __future__ import annotations

import argparse
import json

from rich.console import Console

from mpiscope import paths
from mpiscope.errors import UsageError

# mpptest-style refinement: each switch located within 5 % of its size, at most
# this many extra launches.
TOLERANCE = 0.05
MAX_ROUNDS = 6
REFINEMENT = "refinement"     # run.json key: rounds, tolerance and how the refinement ended


def positive_mhz(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects the core clock in MHz, e.g. 2600, got '{text}'")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expects a positive clock in MHz, got '{text}'")
    return v


def cmd_model(a: argparse.Namespace) -> int:
    from mpiscope.cli import err, out
    from mpiscope.report.model import render, summarise, to_json
    from mpiscope.store import resolve
    runs_dir = paths.runs_dir(a.runs_dir)
    runs = [resolve(r, runs_dir) for r in a.run]
    records: list[dict] = []
    for run in runs:
        recs = run.records()
        for p in recs.problems:
            err.print(f"[yellow]warning:[/] run {run.id}: {p}")
        records += recs.records
    try:
        s = summarise(records, a.benchmark, a.clock_mhz)
    except ValueError as e:
        raise UsageError(f"cannot fit {a.benchmark} of {', '.join(r.id for r in runs)}: {e}") from e
    if s.empty:
        have = sorted({r.get("benchmark") for r in records if r.get("type") == "point"})
        raise UsageError(f"{', '.join(r.id for r in runs)} has no {a.benchmark} points to model "
                         f"(it has: {', '.join(have) or 'no points'}); measure a sweep with "
                         f"`mpiscope run -b {a.benchmark} --sizes 1:1M`")
    if a.json:
        print(json.dumps(to_json(s), indent=1))
    else:
        out.print(render(s), markup=False, highlight=False, soft_wrap=True)
    return 0


def model_after_run(spec, run, a: argparse.Namespace, out: Console, err: Console) -> None:
    """After `mpiscope run`'s table: the model, or with --find-switches the
    refinement launches and then the model of all of them together."""
    from mpiscope.report.model import print_model
    records = run.records().records
    if getattr(a, "find_switches", False):
        records = refine_run(spec, run, a, err)
    try:
        print_model(out, records, clock_mhz=a.clock_mhz)
    except ValueError as e:
        err.print(f"[yellow]warning:[/] no model: {e}")


def refine_run(spec, run, a: argparse.Namespace, err: Console) -> list[dict]:
    """mpptest's adaptive refinement as further launches into the same run:
    detect switches in the run's pingpong points, measure `per_gap` more sizes
    inside every bracket wider than TOLERANCE (and its two ends again, so a
    launch-to-launch offset cannot fake a break), repeat. The records of round
    k carry `"refinement_round": k`; run.json's "refinement" says how it ended.
    Returns every record of the run."""
    from dataclasses import replace

    from mpiscope.analysis.points import points_from_records
    from mpiscope.analysis.switches import find_switches, sizes_to_refine
    from mpiscope.execute import launch_into
    pts = points_from_records(run.records().records, "pingpong", ranks=2)
    if len({p.size for p in pts}) < 6:
        raise UsageError("--find-switches needs at least 6 pingpong sizes to start from: "
                         "e.g. --sizes 1:64K")
    status, rounds = f"not within {TOLERANCE:.0%} after {MAX_ROUNDS} launches", 0
    for round_no in range(1, MAX_ROUNDS + 2):
        report = find_switches(pts)
        todo = sizes_to_refine(report, {p.size for p in pts}, TOLERANCE)
        if not todo:
            status = "located"
            break
        if round_no > MAX_ROUNDS:
            break
        plan = replace(spec.plan, benchmarks=["pingpong"], sizes_expr=",".join(map(str, todo)),
                       sizes=list(todo))
        err.print(f"refinement round {round_no}: {len(todo)} sizes around "
                  f"{len(report.switches)} suspected switch(es): {', '.join(map(str, todo))}")
        outcome = launch_into(run, replace(spec, plan=plan), err, progress=not a.no_progress,
                              tag={"refinement_round": round_no})
        rounds = round_no
        if outcome.status != "ok":
            err.print(f"[yellow]warning:[/] refinement round {round_no} ended {outcome.status}: "
                      f"{outcome.error}; the switches are located as far as measured")
            status = f"stopped: round {round_no} {outcome.status}"
            break
        pts = points_from_records(run.records().records, "pingpong", ranks=2)
    run.update(**{REFINEMENT: {"rounds": rounds, "tolerance": TOLERANCE, "status": status}})
    if rounds:
        err.print(f"refinement: {rounds} more launch(es) into run {run.id}; switches {status}")
    return run.records().records


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    m = sub.add_parser("model", parents=[runs_dir],
                       help="fitted models of runs: latency, bandwidth, switches, LogGP")
    m.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', or a path; several "
                   "runs are fitted together (repeats, refinement launches)")
    m.add_argument("--benchmark", default="pingpong", help="benchmark to fit (default pingpong)")
    m.add_argument("--clock-mhz", type=positive_mhz, help="core clock for the cycle figures "
                   "(default: detected)")
    m.add_argument("--json", action="store_true", help="the models as JSON on stdout")
    m.set_defaults(func=cmd_model)
