"""`mpiscope predict`: collective algorithm times at any rank count and size from
alpha, beta and gamma (given, or fitted from a stored run), which algorithm
wins where, where contention on a platform's shared link makes those figures unreliable
(`--platform`), the same figures simulated on that platform beside them (`--simulate`), and
`--validate RUN...`: the models' error on measured collectives."""
from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Callable

from mpiscope.util import paths
from mpiscope.util.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.records import Record

Expand = Callable[[str], list[int]]  # a size expression as the engine expands it, in bytes

# predict's inputs as the CLI names them in messages (api.PREDICT_NAMES names the keywords)
FLAGS = {"alpha": "--alpha", "beta": "--beta", "gamma": "--gamma", "given": "--alpha US --beta US_PER_BYTE",
         "source": "--from a run of `mpiscope run -b pingpong`"}
DEFAULT_RANKS = "2,4,...,1024"
DEFAULT_SIZES = "8,1K,64K,1M"


def default_expand(expr: str) -> list[int]:
    """The default MPI's engine expands the expression (built once, on first use)."""
    from mpiscope.plan.engine import expand_sizes
    from mpiscope.execute.session import target
    return expand_sizes(target(None).engine, expr)


def parse_ranks(text: str, expand: Expand = default_expand) -> list[int]:
    """-n: rank counts in the engine's size grammar ('2:1024', '2,3,4'), or the documented
    progression '2,4,...,1024', which `expand` (the engine) reads as the same grammar."""
    from mpiscope.plan.engine import expand_counts
    try:
        return expand_counts(text, expand)
    except UsageError as e:
        raise UsageError(f"-n {e}") from None


def _records(refs: list[str], runs_dir) -> list[Record]:
    from mpiscope.util.console import records_of
    from mpiscope.store.runs import resolve
    return records_of(resolve(r, runs_dir) for r in refs)


def params_from_args(a: argparse.Namespace, fallback: list[Record] | None = None):
    """Params, or the per-size regime parameters of a run; and a line saying where they came from."""
    from mpiscope.api import prediction_parameters
    runs_dir = paths.runs_dir(a.runs_dir)
    if (a.alpha is None) != (a.beta is None):
        raise UsageError("give both --alpha (us) and --beta (us per byte), or --from RUN")
    if a.alpha is not None and a.from_run:
        raise UsageError("give either --from RUN or --alpha/--beta, not both")
    records = _records([a.from_run], runs_dir) if a.from_run else (fallback or [])
    return prediction_parameters(records, a.alpha, a.beta, a.gamma,
                                 f"run {a.from_run}" if a.from_run else "the validated runs", FLAGS)


def cmd_predict(a: argparse.Namespace) -> int:
    from mpiscope.util.console import out
    if a.validate:
        return _validate(a)
    from mpiscope.analysis.predict import ALGORITHMS, contention, prediction_table
    from mpiscope.report.predictions import format_winners
    colls = a.collective or [c for c in ALGORITHMS if c != "barrier"]
    for c in colls:
        if c not in ALGORITHMS:
            raise UsageError(f"unknown collective '{c}': known are {', '.join(ALGORITHMS)}")
    if not a.from_run and a.alpha is None:
        raise UsageError("predict needs alpha and beta: --from RUN (a pingpong sweep) or "
                         "--alpha US --beta US_PER_BYTE")
    if a.simulate and not a.platform:
        raise UsageError("--simulate runs the engine on a simulated platform: give --platform DESC or FILE.xml "
                         "(e.g. --platform cluster:bb-bw=10GBps, or the twin `mpiscope calibrate` wrote)")
    params, source = params_from_args(a)
    if a.simulate:
        return _simulate(a, colls, params, source)
    ps, ns = parse_ranks(a.ranks), default_expand(a.sizes)  # the engine only when the rest is right
    tables = [prediction_table(c, ps, ns, params) for c in colls]
    link = _shared_link(a.platform)
    if link is not None:
        tables = [t.assign(contention=[contention(c, int(r.p), float(r.n), float(r.best_us), link, r.best)
                                       for r in t.itertuples()]) for c, t in zip(colls, tables)]
    if a.format == "json":
        print(json.dumps({"parameters": source, "predictions": [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for t in tables for row in t.to_dict(orient="records")]}, indent=1, default=str))
        return 0
    if a.format == "csv":
        import pandas as pd
        print(pd.concat(tables).to_csv(index=False), end="")
        return 0
    out.print(f"parameters: {source}", markup=False, soft_wrap=True)
    for c, t in zip(colls, tables):
        out.print()
        out.print(format_winners(t), markup=False, highlight=False, soft_wrap=True)
        algs = [x for x in ALGORITHMS[c] if x in t.columns]
        if len(algs) > 1:
            out.print(_every_algorithm(t, algs), markup=False, highlight=False, soft_wrap=True)
        if link is not None:
            out.print(contention_lines(c, t, link, a.platform), markup=False, highlight=False, soft_wrap=True)
    if link is None:
        out.print(_no_check(a.platform), markup=False, highlight=False, soft_wrap=True)
    return 0


def _shared_link(platform: str | None):
    from mpiscope.analysis.predict import shared_link
    return shared_link(platform) if platform else None


def _no_check(platform: str | None) -> str:
    if platform:
        return (f"note: {platform} has no shared link mpiscope can read (a dragonfly, or a file without a "
                f"backbone): the closed form's figures assume none binds")
    return ("note: the closed form assumes no shared link binds (no contention); give --platform DESC or "
            "FILE.xml to check where a shared link makes it unreliable")


def contention_lines(collective: str, t, link, platform: str) -> str:
    """Where the messages and bytes of the closed form's algorithm that cross the shared link take
    CONTENTION_SHARE of its time or more (analysis.predict.link_bytes): the figure there is a
    floor, not a prediction."""
    from mpiscope.analysis.predict import CONTENTION_SHARE
    from mpiscope.util.units import human_size
    bad = t[t["contention"] >= CONTENTION_SHARE]
    if bad.empty:
        return (f"contention check ({platform}): {link.name} ({link.bytes_per_s / 1e9:.4g} GB/s) carries "
                f"{collective}'s bytes in under {CONTENTION_SHARE:.0%} of the predicted time everywhere")
    cells = ", ".join(f"p={int(r.p)} n={human_size(int(r.n))} ({r.contention:.2g}x)" for r in bad.itertuples())
    return (f"warning: {collective}: contention makes the closed form unreliable on {platform}: the messages "
            f"and bytes of its algorithm that cross {link.name} ({link.bytes_per_s / 1e9:.4g} GB/s) take this "
            f"share of the predicted time or more (1x: the prediction is impossible): {cells}; add --simulate "
            f"for the simulated figures beside these")


def _simulate(a: argparse.Namespace, colls: list[str], params, source: str) -> int:
    """Every rank count simulated on the platform (one run each, through the measurement
    session), the closed form and its contention check beside each point."""
    from mpiscope.execute.simcheck import check_memory
    from mpiscope.execute.simulate import simulate
    from mpiscope.report.predictions import format_simulated
    from mpiscope.util.console import out, warn
    ps = parse_ranks(a.ranks)
    if min(ps) < 2:
        raise UsageError(f"-n {a.ranks}: a simulated collective needs 2 ranks or more")
    check_memory(max(ps))  # before the first simulation, not after the small ones
    estimate = _check_host_time(a, ps, len(colls) * len(default_expand(a.sizes)))
    link = _shared_link(a.platform)
    text = a.format == "text"
    if text:
        out.print(f"parameters: {source}", markup=False, soft_wrap=True)
        out.print(f"simulating {len(ps)} rank count(s) up to {max(ps)}: about {_duration(estimate)} of host time",
                  markup=False, highlight=False)
    sims = []
    for p in ps:
        sim = simulate(a.platform, p, colls, a.sizes, paths.runs_dir(a.runs_dir), progress=text)
        if sim.stopped:
            warn(f"the simulation at {p} ranks stopped part-way ({sim.stopped}): its {len(sim.frame)} points are "
                 f"compared")
        if text:
            out.print(f"simulated {p} ranks in {sim.host_s:.3g} s of host time: run {sim.run.id}", markup=False)
        sims.append(sim)
    table = against_simulation(sims, params, link)
    table = table.sort_values(["collective", "p", "size"], key=lambda c: c.map(colls.index) if c.name == "collective"
                              else c, kind="stable", ignore_index=True)  # as asked
    if a.format == "csv":
        print(table.to_csv(index=False), end="")
    elif a.format == "json":
        print(json.dumps({"parameters": source, "platform": a.platform, "simulated": json.loads(
            table.to_json(orient="records"))}, indent=1))
    else:
        out.print(format_simulated(table, a.platform, link), markup=False, highlight=False, soft_wrap=True)
    return 0


def _check_host_time(a: argparse.Namespace, ranks: list[int], points: int) -> float:
    """The host time the simulations are expected to take (execute.simulate.HOST_COST); beyond
    --max-host-time (default HOST_COST.limit_s) a UsageError naming it."""
    from mpiscope.execute.simulate import HOST_COST
    est = HOST_COST.estimate_s(ranks, points)
    limit = HOST_COST.limit_s if a.max_host_time is None else a.max_host_time
    if est > limit:
        raise UsageError(f"--simulate at {','.join(map(str, ranks))} ranks, {points} collective/size pairs each, "
                         f"would take about {_duration(est)} of host time (limit {_duration(limit)}): give "
                         f"--max-host-time {math.ceil(est / 60) * 60:.0f} to run it, or fewer rank counts (-n), "
                         f"sizes or collectives")
    return est


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def against_simulation(sims, params, link) -> "pd.DataFrame":
    """The closed form of every simulated point (analysis.validate: sizes as the engine's, n as the
    models'), its error against the simulation, its contention share on `link` (NaN without one),
    and the host time and run of its rank count."""
    import pandas as pd

    from mpiscope.analysis.predict import contention
    from mpiscope.analysis.validate import validate
    t = validate([pt for s in sims for pt in s.frame["point"]], params, ranks=None)
    if t.empty:
        raise UsageError("the simulations measured no collective the closed form models")
    by = {s.ranks: s for s in sims}
    t = t.assign(contention=[contention(r.collective, int(r.p), float(r.n), float(r.best_us), link, r.best)
                             if link is not None else float("nan") for r in t.itertuples()],
                 host_s=[by[p].host_s for p in t.p], run=[by[p].run.id for p in t.p])
    cols = ["collective", "benchmark", "p", "size", "n", "best", "best_us", "measured_us", "err_best", "contention",
            "host_s", "run"]
    return pd.DataFrame(t[cols]).rename(columns={"best": "closed_form", "best_us": "closed_form_us",
                                                 "measured_us": "simulated_us", "err_best": "error"})


def _every_algorithm(t, algs: list[str]) -> str:
    """Every algorithm's time per (p, n), the winner starred."""
    head = ["p", "n (bytes)", *algs, "MPICH classic"]
    rows = []
    for d in t.to_dict(orient="records"):
        cells = [f"{d[x]:.4g}{'*' if x == d['best'] else ''}" if x in d and d[x] == d[x] else "-" for x in algs]
        rows.append([str(d["p"]), str(int(d["n"])), *cells, d["mpich_default"]])
    from mpiscope.report.predictions import aligned
    return "every algorithm (us; * the fastest):\n" + aligned([head, *rows], set())


def _launch_level(refs: list[str], runs_dir) -> list:
    """Each run's context, then its points at the launch level (results layer): a point measured
    in several launches is one estimate, as every other reader shows it."""
    from mpiscope.results.view import results_of
    from mpiscope.store.runs import resolve
    out: list = []
    for ref in refs:
        run = resolve(ref, runs_dir)
        ctx = run.records().context
        frame = results_of([run]).frame
        out += [*([ctx] if ctx is not None else []), *(frame["point"] if "point" in frame else [])]
    return out


def _validate(a: argparse.Namespace) -> int:
    from mpiscope.analysis.validate import validate
    from mpiscope.report.predictions import format_validation
    from mpiscope.util.console import out
    runs_dir = paths.runs_dir(a.runs_dir)
    records = _records(a.validate, runs_dir)
    params, source = params_from_args(a, fallback=records)
    table = validate(_launch_level(a.validate, runs_dir), params, ranks=None)
    if table.empty:
        raise UsageError("the runs have no collective points to validate against: measure them, e.g. "
                         "`mpiscope run -n 4 -b allreduce,bcast,allgather` (any rank count, real or simulated)")
    if a.format == "csv":
        print(table.to_csv(index=False), end="")
        return 0
    if a.format == "json":
        print(table.to_json(orient="records", indent=1))
        return 0
    out.print(f"parameters: {source}", markup=False, soft_wrap=True)
    out.print("error = predicted / measured - 1, per collective and rank count", markup=False)
    out.print(format_validation(table), markup=False, highlight=False, soft_wrap=True)
    return 0


def _nonneg(text: str) -> float:
    from mpiscope.commands.options import nonneg_float
    return nonneg_float(text)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.execute.simulate import HOST_COST
    p = sub.add_parser("predict", parents=[runs_dir],
                       help="collective algorithm times from alpha, beta, gamma; --validate against runs")
    p.add_argument("--from", dest="from_run", metavar="RUN",
                   help="take alpha and beta from RUN's pingpong regimes (gamma from its reduce_local)")
    p.add_argument("--alpha", type=_nonneg, metavar="US", help="latency per message, us")
    p.add_argument("--beta", type=_nonneg, metavar="US_PER_BYTE", help="time per byte, us")
    p.add_argument("--gamma", type=_nonneg, metavar="US_PER_BYTE",
                   help="reduction time per byte, us (default: the run's reduce_local, else 0)")
    p.add_argument("-n", "--ranks", default=DEFAULT_RANKS, help=f"rank counts (default {DEFAULT_RANKS})")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"message sizes (default {DEFAULT_SIZES})")
    p.add_argument("--collective", type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                   help="collectives, comma-separated (default: all)")
    p.add_argument("--validate", nargs="+", metavar="RUN",
                   help="compare the models with the collectives measured in RUN... (any rank count, real or "
                        "simulated)")
    p.add_argument("--platform", metavar="DESC|FILE.xml",
                   help="check the closed form's assumption on this platform (a simulated platform's description "
                        "or file): where the messages and bytes its algorithm puts on the narrowest shared link "
                        "make it unreliable")
    p.add_argument("--simulate", action="store_true",
                   help="also run the collectives on --platform at each rank count (SimGrid, one run each) and "
                        "print the simulated figure beside the closed form's")
    p.add_argument("--max-host-time", type=_nonneg, metavar="S",
                   help=f"--simulate: the host time the simulations may take, in seconds (default "
                        f"{HOST_COST.limit_s:.0f}; the estimate is printed before they start)")
    p.add_argument("--format", choices=["text", "csv", "json"], default="text")
    p.set_defaults(func=cmd_predict)
