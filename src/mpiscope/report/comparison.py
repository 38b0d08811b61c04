"""The report's "Comparison" section: the first run (of a sweep, the first configuration) is the
baseline, each other run (configuration) is compared to it by `mpiscope compare`'s own path
(results.sides.compare_sides, with compare's defaults); this module only lays its verdicts out,
it derives no figure."""
from __future__ import annotations

from collections import Counter
from html import escape
from typing import Callable

from mpiscope.results.compare import CI_Z, ONE_VS_LAUNCHES, PAIRED, WELCH, PointChange
from mpiscope.results.policy import POLICY
from mpiscope.store.runs import Run
from mpiscope.util.units import human_size

VERDICTS = ("slower", "faster", "same", "inconclusive")
# A busy side whose every launch left out was the clock-sync bound's alone (`PointChange.clocks`):
# worded as the headline words such a point, not "machine busy" (an idle machine flags a 0 B
# barrier or a 4 B bcast so).
CLOCKS = "shorter than the clocks agree"


def busy_words(pc: PointChange) -> str:
    """What a busy point is called: `CLOCKS` where the clock bound was the only cause, else
    "machine busy"."""
    return CLOCKS if pc.clocks else "machine busy"


def ratio_text(pc: PointChange) -> str:
    """'1.52 (1.31–1.77)': the ratio candidate / baseline with its 95 % interval."""
    ratio = pc.cand_us / pc.base_us
    if pc.ratio_low == pc.ratio_low and pc.ratio_high == pc.ratio_high:  # not nan
        return f"{ratio:.3g} ({pc.ratio_low:.3g}–{pc.ratio_high:.3g})"
    return f"{ratio:.3g}"


def sides(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """What is compared: a sweep's runs grouped by configuration in plan order (its launches are
    one side), otherwise each run on its own; each with its label."""
    metas = [run.meta() for run in runs]
    if all(m.sweep is not None for m in metas):
        groups: dict[str, list[Run]] = {}
        labels: dict[str, str] = {}
        for run, m in zip(runs, metas):
            groups.setdefault(m.sweep.config, []).append(run)
            factors = ", ".join(f"{k}={v}" for k, v in m.factors.items())
            labels[m.sweep.config] = m.sweep.config + (f" ({factors})" if factors else "")
        return [(labels[c], rs) for c, rs in groups.items()]
    return [(run.id, [run]) for run in runs]


def section(runs: list[Run], table: Callable[[list[str], list[list[str]], str], str]) -> str:
    """The section's HTML, "" with fewer than two sides; `table` draws an HTML table (html._table)."""
    from mpiscope.results.sides import compare_sides
    compared = sides(runs)
    if len(compared) < 2:
        return ""
    base_label, base = compared[0]
    parts = [f'<p class="lede">Baseline: <b>{escape(base_label)}</b>. Each other '
             f'{"configuration" if len(base) > 1 or base[0].meta().sweep else "run"} is compared to it as '
             f'<code>mpiscope compare</code> does (margin ±{POLICY.margin * 100:g}&nbsp;%, '
             f'α = {POLICY.alpha:g} after Benjamini-Hochberg '
             f'adjustment): the ratio candidate / baseline of the time per message with its 95&nbsp;% '
             f'interval, and the verdict.</p>']
    for label, cand in compared[1:]:
        heading = f'<h3>{escape(label)} <span class="muted">against {escape(base_label)}</span></h3>'
        changes = compare_sides(base, cand, POLICY.alpha, POLICY.margin)
        if not changes:  # compare refuses these: other benchmarks, sizes or rank counts
            parts.append(heading + '<p class="not-compared">Not compared: no point (benchmark, size and rank '
                                   'count) in common with the baseline.</p>')
            continue
        parts.append(heading + _changes(changes, table) + f'<p class="summary">{escape(summary(changes))}</p>'
                     + f'<p class="muted">{escape(launches_line(changes))}</p>')
    return "".join(parts)


def _changes(changes: list[PointChange], table: Callable[[list[str], list[list[str]], str], str]) -> str:
    """The counts of the four verdicts, then one row per tested point in compare's order
    (benchmark, variant, size); untested points (an imported side) are named in one line. A busy
    point shorter than the clocks agree says so as the headline does."""
    counts = table(list(VERDICTS), [[str(sum(pc.verdict == v for pc in changes)) for v in VERDICTS]], "verdicts")
    tested = [pc for pc in changes if pc.verdict != "untested"]
    untested = len(changes) - len(tested)
    note = (f'<p class="not-compared">{untested} point{"s" if untested != 1 else ""} not tested: a side was '
            f'imported from another tool (its mean, with no interval or samples to test).</p>' if untested else "")
    rows = [[escape(pc.label), human_size(pc.size), str(pc.ranks), f"{pc.base_us:.3g}", f"{pc.cand_us:.3g}",
             ratio_text(pc), f'<span class="verdict {pc.verdict}">{pc.verdict}</span>'
             + (f' <span class="muted">(about {pc.launches_needed} launches a side)</span>'
                if pc.verdict == "inconclusive" and pc.launches_needed else "")
             + (f' <span class="muted">({busy_words(pc)}: {escape(pc.busy)})</span>' if pc.busy else
                f' <span class="muted">({escape(pc.state)})</span>' if pc.state else "")]
            for pc in tested]
    head = ["benchmark", "size", "ranks", "baseline µs", "candidate µs", "ratio (95% interval)", "verdict"]
    return counts + note + (table(head, rows, "data comparison") if rows else "")


# --- the comparison's words (compare's terminal output, the report, the API) ---

def summary(changes: list[PointChange]) -> str:
    """'N points compared: a slower, b faster, c same, d inconclusive (...)'; the worst and best.
    Busy points shorter than the clocks agree (`PointChange.clocks`) are counted apart, as the
    headline does."""
    count = {v: [pc for pc in changes if pc.verdict == v] for v in ("slower", "faster", "same", "inconclusive",
                                                                      "untested")}
    slower, faster, untested = count["slower"], count["faster"], count["untested"]
    parts = [f"{len(changes)} points compared: {len(slower)} slower, {len(faster)} faster, "
             f"{len(count['same'])} same (within the margin), {len(count['inconclusive'])} inconclusive"]
    if untested:
        parts[0] += (f", {len(untested)} untested (a side imported from another tool: its figure is the "
                     f"tool's, with no interval or samples to test)")
    state = [pc for pc in changes if pc.state]
    for text, n in Counter(pc.state for pc in state).items():  # first seen first
        parts.append(f"{n} inconclusive because {text}")
    busy = [pc for pc in changes if pc.busy and not pc.clocks]
    if busy:
        parts.append(f"{len(busy)} on a busy machine ({busy[0].busy}" + (", ..." if len(busy) > 1 else "")
                     + "): their verdicts rest on disturbed launches, and measured apart they get none")
    clock = [pc for pc in changes if pc.busy and pc.clocks]
    if clock:
        parts.append(f"{len(clock)} shorter than the ranks' clocks agree ({clock[0].busy}"
                     + (", ..." if len(clock) > 1 else "") + "): their verdicts rest on launches the clock "
                     "synchronisation's bound disturbed, and measured apart they get none")
    needed = [pc.launches_needed for pc in count["inconclusive"] if pc.launches_needed]
    if needed:
        parts.append(f"inconclusive points would need about {min(needed)}-{max(needed)} launches a side"
                     if min(needed) != max(needed) else
                     f"inconclusive points would need about {needed[0]} launches a side")
    if slower:
        w = max(slower, key=lambda pc: pc.change)
        parts.append(f"worst: {w.label} {w.size} B {100 * w.change:+.1f}%")
    if faster:
        b = min(faster, key=lambda pc: pc.change)
        parts.append(f"best: {b.label} {b.size} B {100 * b.change:+.1f}%")
    decided = [pc for pc in changes if pc.drift_decided]
    if decided:
        parts.append(f"the drift from run to run decided {len(decided)} verdict(s) "
                     f"({decided[0].drift.described if decided[0].drift else ''})")
    tests = sorted({pc.test for pc in changes})
    if tests == [CI_Z]:
        parts.append("(no raw samples: medians' CIs compared; measure with --raw for Mann-Whitney U)")
    return "; ".join(parts)


def launches_line(changes: list[PointChange]) -> str:
    """Which test judged the points and on how many launches each side had (for the output)."""
    level = [pc for pc in changes if pc.launch_level]
    line = _launches_line(changes, level)
    return f"{how_measured(changes)}: {line}" if any(pc.interleaved for pc in changes) else line


def how_measured(changes: list[PointChange]) -> str:
    """'interleaved (N blocks)' or 'measured apart': what a verdict across time rests on
    (docs/statistics.md, "What a verdict across time can and cannot prove")."""
    if not any(pc.interleaved for pc in changes):
        return "measured apart"
    blocks = [pc.blocks for pc in changes if pc.test == PAIRED]
    staged = next((pc for pc in changes if pc.stages is not None and pc.look_alpha is not None), None)
    stage = (f"; a second stage of {staged.stages[1]} blocks after the first {staged.stages[0]} for the points its "
             f"look left undecided, each look at p < {staged.look_alpha:.3g}") if staged is not None else ""
    if not blocks:
        return f"interleaved (too few launches to pair by block{stage})"
    return (f"interleaved ({min(blocks)} blocks{stage})" if min(blocks) == max(blocks) else
            f"interleaved ({min(blocks)}-{max(blocks)} blocks{stage})")


def _launches_line(changes: list[PointChange], level: list[PointChange]) -> str:
    if not level:
        return ("one launch per side: each point's samples compared (they show that launch's sampling "
                "error only, not launch-to-launch variation)")

    def span(xs: list[int]) -> str:
        return str(min(xs)) if min(xs) == max(xs) else f"{min(xs)}-{max(xs)}"
    named = {WELCH: "Welch's t test on the log launch medians", PAIRED: "a paired t test over blocks",
             ONE_VS_LAUNCHES: "a t test of one launch against the other side's launches"}
    tests = " and ".join(sorted({named[pc.test] for pc in level}))
    drifted = [pc for pc in level if pc.drift_runs]
    prior = [pc for pc in level if pc.drift is not None and pc.drift.prior]
    if drifted:
        tests += (f", with the drift from run to run learnt from {span([pc.drift_runs for pc in drifted])} runs "
                  f"({len(drifted)} of {len(level)} points)")
    return (f"launch level: {tests}; baseline {span([pc.base_launches for pc in level])} launches, "
            f"candidate {span([pc.cand_launches for pc in level])} per point"
            + (f" ({len(changes) - len(level)} points with one launch per side: samples compared)"
               if len(level) < len(changes) else "")
            + (f"; with {prior[0].drift.described} for {len(prior)} of {len(level)} points" if prior else ""))
