"""The terminal summary of a run: per point, the launch-level estimate and its 95 % interval over
launches, how many launches, the share of variance between them, MB/s, and what to know about it
(levels the launches fell into, launches that did not converge, skips and time-outs)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mpiscope.results.launches import LaunchPoint, configuration_of, launch_of
from mpiscope.results.view import Estimate, LaunchRun, Results, results_of
from mpiscope.util.console import make_table
from mpiscope.report.numbers import num, pct
from mpiscope.analysis.cache import above_copy_rate, copy_reference
from mpiscope.report.copyrate import MARK, MARK_NOTE
from mpiscope.records import Point, RecordFile, Skip, Timeout
from mpiscope.report.modes import modes_text, run_levels_text
from mpiscope.util.units import human_size

SINGLE_LAUNCH_NOTE = ("one launch: each interval covers this launch only and says nothing about the next; "
                      "measure with several launches (--launches 3) for intervals that hold across launches")

SIMULATED_NOTE = ("simulated: a point repeats its figures, so one launch measures it (a second where its samples "
                  "differ), and only a drift from run to run learnt from runs whose figures differ widens its "
                  "interval (docs/simulation.md)")


def _cell(x: float | None, digits: int = 3) -> str:
    return num(x, digits, missing="-", grouping=False)


def _pct(x: float) -> str:
    return pct(x, missing="-")


def _label(rec: Point | Skip | Timeout | LaunchPoint, world: int | None) -> str:
    """The benchmark (and its variant, a grid's shape), and its rank count when it ran on fewer
    ranks than the job (--npmin)."""
    return (rec.benchmark + (f" {rec.variant}" if rec.variant else "")
            + (f" ({rec.ranks} ranks)" if world and rec.ranks != world else ""))


def _in(count: int, launches: int) -> str:
    """' in 2 of 3 launches' when the run has several launches, else ''."""
    return f" in {count} of {launches} launches" if launches > 1 else ""


def mbps(lp: LaunchPoint) -> float | None:
    """MB/s at the launch-level estimate, for points whose engine reports a bandwidth: a launch's
    own rate scaled by its time over the estimate."""
    first = lp.points[0] if lp.points else None
    if first is None or first.bw_MBps is None or not lp.median or not first.median:
        return None
    rate = getattr(first.bw_MBps, first.estimate)  # an imported point's rate is the tool's own figure
    return None if rate is None else rate * first.median / lp.median


def imported_note(p: Point) -> str:
    """Where an imported point came from and what its figure is: 'OSU osu_latency, its mean; no interval'."""
    src = p.imported
    if src is None:
        return ""
    what = "its median (P50)" if p.estimate == "median" else "its mean"
    return f"{src.tool.upper()} {src.tool_benchmark}, {what}; no interval (line {src.line})"


def imported_caption(points: Sequence[Point]) -> str:
    """The caption of a table whose points came from another tool (mpiscope import)."""
    tools = sorted({f"{p.imported.tool.upper()} {p.imported.tool_version}" for p in points if p.imported})
    if not tools:
        return ""
    means = any(p.estimate == "mean" for p in points if p.imported)
    return (f"imported from {', '.join(tools)}: "
            + ("figures are the tool's averages (means), not medians; " if means else "")
            + "the tool gives no confidence interval, so none is shown and no test can use one (docs/import.md)")


def note(lp: LaunchPoint, launches: int) -> str:
    """What the row's numbers do not say: levels, launches that stopped early, a single launch."""
    parts = [modes_text(lp.modes)] if lp.modes else []
    if lp.drift is not None and lp.drift.levels:
        parts.append("runs " + run_levels_text(lp.drift.levels))
    if lp.drift is not None and lp.drift.left_out:  # earlier runs not pooled into the drift, and why
        run_id, why = lp.drift.left_out[0]
        more = f" and {len(lp.drift.left_out) - 1} more" if len(lp.drift.left_out) > 1 else ""
        parts.append(f"drift not learnt from run {run_id}{more}: {why}")
    parts += [imported_note(p) for p in lp.points[:1] if p.imported is not None]
    stopped = [p for p in lp.points if p.stopped_early]
    if stopped:
        why = ", ".join(dict.fromkeys(p.stop_reason or "?" for p in stopped))
        parts.append(f"not converged{_in(len(stopped), lp.launches)}: {why}")
    if launches > 1 and lp.single_launch and not _simulated(lp):  # a simulation relaunches only what differs
        parts.append("1 launch only: the interval is that launch's own")
    if lp.disturbed:
        parts.append(f"{len(lp.disturbed)} disturbed launch(es) left out: {lp.disturbed[0]}")
    return "; ".join(p for p in parts if p)


def _simulated(lp: LaunchPoint) -> bool:
    return any(p.host_s is not None for p in lp.points)


def drift_caption(lps: Sequence[LaunchPoint]) -> str:
    """What the launch-level intervals cover: this run's launches, or also the drift from run to
    run learnt from earlier runs of the configuration (each point's drift says from how many)."""
    widened_ = [lp for lp in lps if lp.drift is not None and not lp.drift.prior]
    prior = [lp for lp in lps if lp.drift is not None and lp.drift.prior]
    text = ""
    if widened_:
        runs = sorted({lp.drift.runs for lp in widened_})
        span = f"{runs[0]}" if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
        text = (f"intervals include the drift from run to run, learnt from {span} runs of this configuration "
                f"(this one and earlier ones here) for {len(widened_)} of {len(lps)} points")
    if prior:
        text += ("; " if text else "intervals include ") + (
            f"{prior[0].drift.described} for {len(prior)} of {len(lps)} points (docs/statistics.md)")
    if text:
        return text
    return ("intervals cover this run's launches, which share the machine's state for seconds: the next run "
            "may sit outside them; from the third run of a configuration on, they include its drift from run "
            "to run (docs/statistics.md)")


def _above_copy(lp: LaunchPoint) -> bool:
    """The point's MB/s above the launch's own memcpy rate of the same bytes (analysis.cache)."""
    d = lp.points[0].details if lp.points else {}
    reference = copy_reference(d.get("buffers"), d.get("copy_MB_per_s"), d.get("memory_copy_MB_per_s"))
    return above_copy_rate(mbps(lp), d.get("streams"), reference)


def summary_table(recs: RecordFile, title: str, benchmarks: Sequence[str] = (),
                  estimates: Mapping[tuple, Estimate] | None = None) -> Table:
    """A row per point (and configuration: a study's series) over its launches, by benchmark in
    the order `benchmarks` names them (the plan's), else first measured, then rank count, variant
    and size (launches shuffle the order); a skip or time-out once per point, saying in how many
    launches. `estimates`: the run's launch-level points (`Results.points`), as the results
    layer derived them."""
    world = recs.context.world_size if recs.context else None
    simulated = bool(recs.context and recs.context.simulation)  # its limits count host seconds
    records = [r for r in recs if isinstance(r, (Point, Skip, Timeout))]
    launches = len({launch_of(r) for r in records}) or 1
    estimates = estimates or {}
    by_point = {k: e.point for k, e in estimates.items()}
    benches = {b: i for i, b in enumerate(dict.fromkeys([*benchmarks, *(r.benchmark for r in records)]))}
    configs: dict = {}
    rows: dict[tuple, list[str]] = {}
    missed: dict[tuple, set[int]] = defaultdict(set)  # the launches a point was skipped or hung in
    for r in records:
        kind = 0 if isinstance(r, Point) else 1 if isinstance(r, Timeout) else 2
        config = configuration_of(r)
        order = (benches[r.benchmark], r.ranks, r.variant or "", r.size, configs.setdefault(config, len(configs)),
                 kind)
        if kind:
            missed[order].add(launch_of(r))
        if order in rows:
            continue
        if kind == 0:
            lp = by_point.get((r.key, config))
            if lp is None:  # no launch measured a valid sample
                rows[order] = [_label(r, world), human_size(r.size), "-", "", "", "", "",
                               f"no valid sample: {r.stop_reason or '?'}"]
                continue
            flag = estimates[(r.key, config)].evidence  # an interval that informs nothing is named, never drawn
            rows[order] = [_label(lp, world), human_size(lp.size), _cell(lp.median),
                           f"[yellow]{escape(flag)}[/]" if flag else
                           f"{_cell(lp.ci_low)}–{_cell(lp.ci_high)}" if lp.ci_low is not None else "-",
                           str(lp.launches), _pct(lp.share_between),
                           _cell(mbps(lp), 4) + (MARK if _above_copy(lp) else ""), escape(note(lp, launches))]
        elif kind == 1:
            rows[order] = [_label(r, world), human_size(r.size), "hung" if r.hung else "stopped", "", "", "", "",
                           f"time-out after {r.limit_s} host s (simulated: --timeout S gives a point longer)"
                           if r.hung and simulated else f"time-out after {r.limit_s} s" if r.hung else
                           f"still progressing (a busy machine) when the launch's limit of {r.limit_s} s passed"]
        else:
            rows[order] = [_label(r, world), human_size(r.size), "skipped", "", "", "", "", escape(r.reason)]
    # one launch: the figure is that launch's median, and called so (an imported mean is no median)
    means = any(isinstance(r, Point) and r.estimate != "median" for r in records)
    table = make_table(title, ("benchmark", "size", "estimate µs" if launches > 1 or means else "median µs",
                               "95% CI µs",
                               "launches", "between",
                               "MB/s", "note"), left=("benchmark", "note"))
    for order in sorted(rows):
        cells = rows[order]
        if order[-1] == 1:
            cells[-1] += _in(len(missed[order]), launches) + ("" if simulated else ": deadlock?")
        table.add_row(*cells)
    imported = imported_caption([r for r in records if isinstance(r, Point)])
    table.caption = imported or (SIMULATED_NOTE if simulated else SINGLE_LAUNCH_NOTE if launches == 1 else
                                 drift_caption(list(by_point.values())))
    if any(_above_copy(lp) for lp in by_point.values()):
        table.caption = "\n".join(filter(None, (table.caption, MARK_NOTE)))
    table.caption_justify = "left"
    return table


def print_run(console: Console, run: LaunchRun, warn: Console | None = None, results: Results | None = None) -> None:
    """The table of one run of `results` (built here when not given) on `console`; the one
    warnings block (untrustworthy timings, disturbed launches, damaged files: report.warnings) on
    `warn`."""
    from mpiscope.report.placement import print_placement
    from mpiscope.report.warnings import print_warnings
    warn = warn or console
    results = results if results is not None else results_of([run])
    meta, recs = run.meta(), run.records()
    mpi, ctx = meta.mpi, recs.context
    ranks = ctx.world_size if ctx else (meta.parts[0].plan.ranks if meta.parts else "?")
    launches = len({launch_of(r) for r in recs if isinstance(r, (Point, Skip, Timeout))}) or 1
    title = (f"{mpi.vendor if mpi else '?'} {mpi.version if mpi else ''} ({mpi.name if mpi else '?'}), "
             f"{ranks} ranks on {len(ctx.hosts) if ctx and ctx.hosts else '?'} host(s), "
             f"{launches} launch{'es' if launches != 1 else ''}, run {meta.id} {escape(f'[{meta.status}]')}")
    if ctx and ctx.simulation:
        title = f"simulated on {ctx.simulation.get('platform') or 'a platform file'}: {title}"
    imported = meta.extra.get("imported") if isinstance(meta.extra.get("imported"), dict) else None
    if imported:  # another tool's output (mpiscope import): no MPI, hosts or launches of mpiscope's
        title = (f"imported from {', '.join(map(str, imported.get('tools') or ['?']))} "
                 f"({imported.get('mpi_label') or 'MPI not given'}), {ranks} ranks, run {meta.id} "
                 f"{escape(f'[{meta.status}]')}")
    console.print(summary_table(recs, title, [b for part in meta.parts for b in part.plan.benchmarks],
                                results.points(run.id)))
    print_placement(console, recs.points, len(ctx.hosts) if ctx else 0)
    print_warnings(warn, meta, recs, results.judged(run.id),
                   launch_points=[e.point for e in results.points(run.id).values()])


@dataclass(frozen=True)
class Summary:
    """The terminal reporter (`mpiscope run`, `show`): each run's table, then its warnings."""
    console: Console
    warn: Console | None = None

    def render(self, results: Results) -> None:
        for run in results.runs:
            print_run(self.console, run, self.warn, results)
