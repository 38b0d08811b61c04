"""`mpiscope compare BASELINE CANDIDATE [--fail-on 5%]`: what got significantly slower or faster,
at the launch level when the runs hold several launches (results.compare)."""
from __future__ import annotations

import argparse

from mpiscope.results.policy import POLICY
from mpiscope.util import paths


def percent(text: str, option: str) -> float:
    from mpiscope.util.errors import UsageError
    try:
        if not text.endswith("%"):
            raise ValueError
        value = float(text[:-1]) / 100
        if not value >= 0:
            raise ValueError
        return value
    except ValueError:
        raise UsageError(f"{option} expects a percentage such as 5%, got '{text}'") from None


def verdict_options(a: argparse.Namespace) -> tuple[float | None, float]:
    """--fail-on (None: not given) and the margin of "same" and of slower/faster: --min-change,
    else the --fail-on value, else the policy's; --alpha checked."""
    from mpiscope.util.errors import UsageError
    fail_on = percent(a.fail_on, "--fail-on") if a.fail_on is not None else None
    margin = percent(a.min_change, "--min-change") if a.min_change is not None else \
        fail_on if fail_on is not None else POLICY.margin
    if not 0 < a.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {a.alpha}")
    return fail_on, margin



def _verdict(pc) -> str:
    """The verdict, and for an inconclusive one what would decide it: launches a side, or runs
    (the drift from run to run is wider than launches can narrow); * where the drift decided it.
    A busy point whose only cause was the clock bound is named as the headline names it: shorter
    than the clocks agree, not a busy machine."""
    from mpiscope.report.comparison import busy_words
    text = pc.verdict
    if pc.state:  # the sides' controls differ as much as the point (results.control), or a side was busy
        return f"inconclusive: {busy_words(pc)}" if pc.busy else "inconclusive: machine state differs"
    if pc.verdict == "inconclusive":
        text += f" ~{pc.launches_needed}L" if pc.launches_needed else \
            " R" if pc.drift is not None and not pc.busy else ""
    busy = (" clocks" if pc.clocks else " busy") if pc.busy else ""
    return text + ("*" if pc.drift_decided else "") + busy


def cmd_compare(a: argparse.Namespace) -> int:
    from rich.table import Table

    from mpiscope.api import compare, compare_side
    from rich.markup import escape

    from mpiscope.util.console import err, out, warn_problems
    from mpiscope.report.comparison import ratio_text

    fail_on, margin = verdict_options(a)
    runs_dir = paths.runs_dir(a.runs_dir)
    b_runs, c_runs = compare_side(a.baseline, runs_dir), compare_side(a.candidate, runs_dir)
    for run in b_runs + c_runs:
        warn_problems(run.id, run.records().problems)
    c = compare(b_runs, c_runs, a.alpha, margin, a.benchmark, runs_dir=runs_dir, history=a.history)
    changes, base, cand = c.changes, c.baseline_name, c.candidate_name
    figure = {"baseline": c.baseline_figure, "candidate": c.candidate_figure}
    ranks = sorted({pc.ranks for pc in changes})
    intervals = any(pc.ratio_low == pc.ratio_low for pc in changes)  # some ratio has an interval (not nan)
    one = ranks[0] if len(ranks) == 1 else None  # one rank count: said in the title, no column
    table = Table(title=f"{cand} against baseline {base}" + (f", {one} ranks" if one else "")
                  + f" (margin ±{100 * margin:g}%)"
                  # an imported side's figure (a tool's mean), said once where no column can cut it
                  + "".join(f"; {side} us{fig}" for side, fig in figure.items() if fig), title_justify="left")
    for col in ("benchmark", "size", *(() if one else ("ranks",)), f"baseline us{figure['baseline']}",
                f"candidate us{figure['candidate']}", "ratio (95% interval)", "test", "p (adj.)", "verdict"):
        table.add_column(col, justify="left" if col in ("benchmark", "test", "verdict") else "right",
                         no_wrap=col == "test", min_width=16 if col.startswith("ratio") and intervals else None)
    style = {"slower": "red", "faster": "green", "same": "", "inconclusive": "yellow", "untested": "yellow"}
    for pc in changes:
        verdict = escape(_verdict(pc))
        table.add_row(pc.label, str(pc.size), *(() if one else (str(pc.ranks),)), f"{pc.base_us:.3g}",
                      f"{pc.cand_us:.3g}",
                      ratio_text(pc), pc.test, f"{pc.p_adj:.2g}" if pc.verdict != "untested" else "-",
                      f"[{style[pc.verdict]}]{verdict}[/]" if style[pc.verdict] else verdict)
    out.print(table)
    out.print(c.summary, highlight=False)
    from mpiscope.results.history import one_platform, platform_label
    if one_platform(c.baseline, "baseline") != one_platform(c.candidate, "candidate"):
        sides = [platform_label(runs[0]) or "measured" for runs in (c.baseline, c.candidate)]
        out.print(f"simulated on different platforms or --cfg options: baseline {sides[0]}, candidate {sides[1]}",
                  highlight=False, soft_wrap=True)
    if any(pc.busy and not pc.clocks for pc in changes):
        out.print("busy: most launches of a side were disturbed (machine busy: the cause is in the summary); "
                  "a verdict on it rests on disturbed launches (measured apart it gets none): measure again when the "
                  "machine is quiet",
                  highlight=False)
    if any(pc.busy and pc.clocks for pc in changes):
        out.print("clocks: most launches of a side were shorter than the ranks' clocks agree (the clock-sync "
                  "error the only cause: it is in the summary), on an idle machine too; a verdict on it rests on "
                  "those launches (measured apart it gets none)", highlight=False)
    if any((pc.verdict == "inconclusive" and not pc.state) or pc.drift_decided for pc in changes):
        out.print("inconclusive ~NL: about N launches a side would decide it; R: the drift from run to run "
                  "is wider than launches can narrow: compare several runs a side (RUN1,RUN2); *: the drift "
                  "decided the verdict (--history)", highlight=False)
    from mpiscope.results.compare import BUSY_APART, CLOCK_APART
    for state in dict.fromkeys(pc.state for pc in changes if pc.state):
        out.print(f"inconclusive: {state}" + ("" if state in (BUSY_APART, CLOCK_APART) else
                  f"; a change within {POLICY.control_max_cover:g}x, the most a switch of state was seen to "
                  "move a point, is no verdict (measure both sides in one session: run --vs)"), highlight=False)
    if any(pc.launch_level for pc in changes) or len(b_runs) + len(c_runs) > 2:
        out.print(c.launches, highlight=False)  # which test, on how many launches; interleaved or not
    if not any(pc.interleaved for pc in changes):
        out.print("measured apart: the machine's state may differ between the sides (docs/statistics.md)",
                  highlight=False)
    status = 0
    if fail_on is not None:
        bad = c.regressions(fail_on)
        if bad:
            err.print(f"mpiscope: {len(bad)} point(s) significantly slower by more than {a.fail_on}: "
                      + ", ".join(f"{pc.label} {pc.size} B {100 * pc.change:+.1f}%" for pc in bad[:8]),
                      highlight=False, soft_wrap=True)
            status = 1
    if a.strict:
        unsure = [pc for pc in changes if pc.verdict == "inconclusive"]
        if unsure:
            err.print(f"mpiscope: {len(unsure)} point(s) inconclusive (--strict): "
                      + ", ".join(f"{pc.label} {pc.size} B" for pc in unsure[:8])
                      + "; measure more launches a side (--launches N)", highlight=False, soft_wrap=True)
            status = 1
    return status


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("compare", parents=[runs_dir],
                       help="per point: slower, faster, same (shown within a margin) or inconclusive, with the "
                            "ratio's interval; --fail-on for CI")
    p.add_argument("baseline", help="a run (id, prefix, 'latest', path); runs of one configuration as "
                                    "RUN1,RUN2,... or a sweep directory: every launch is one observation")
    p.add_argument("candidate", help="the same for the candidate")
    p.add_argument("--fail-on", metavar="PCT", help="exit 1 when a point is significantly slower by more "
                                                    "than PCT, e.g. 5%%")
    p.add_argument("--strict", action="store_true", help="also exit 1 when a point is inconclusive")
    p.add_argument("--min-change", metavar="PCT",
                   help="the margin: 'same' needs the ratio's interval within ±PCT, slower/faster a change of "
                        f"at least PCT (default the --fail-on value, else {POLICY.margin * 100:g}%%)")
    p.add_argument("--history", default="auto", metavar="none|auto|RUNS",
                   help="the drift from run to run in a comparison of one run a side: auto (kept in the runs), "
                        "none (a stated prior only), or RUN1,RUN2,... to learn it from (default auto)")
    p.add_argument("--alpha", type=float, default=POLICY.alpha,
                   help=f"significance level after adjustment (default {POLICY.alpha:g})")
    p.add_argument("--benchmark", help="only this benchmark")
    p.set_defaults(func=cmd_compare)
