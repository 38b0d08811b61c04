"""The report's "Comparison" section: the first run (of a sweep, the first configuration) is the
baseline, each other run (configuration) is compared to it by `mpiscope compare`'s own path
(results.sides.compare_sides, with compare's defaults); this module only lays its verdicts out,
it derives no figure."""
from __future__ import annotations

from html import escape
from typing import Callable

from mpiscope.results.compare import PointChange, launches_line, summary
from mpiscope.results.policy import POLICY
from mpiscope.store.runs import Run
from mpiscope.util.units import human_size

VERDICTS = ("slower", "faster", "same", "inconclusive")


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
    (benchmark, variant, size); untested points (an imported side) are named in one line."""
    counts = table(list(VERDICTS), [[str(sum(pc.verdict == v for pc in changes)) for v in VERDICTS]], "verdicts")
    tested = [pc for pc in changes if pc.verdict != "untested"]
    untested = len(changes) - len(tested)
    note = (f'<p class="not-compared">{untested} point{"s" if untested != 1 else ""} not tested: a side was '
            f'imported from another tool (its mean, with no interval or samples to test).</p>' if untested else "")
    rows = [[escape(pc.label), human_size(pc.size), str(pc.ranks), f"{pc.base_us:.3g}", f"{pc.cand_us:.3g}",
             ratio_text(pc), f'<span class="verdict {pc.verdict}">{pc.verdict}</span>'
             + (f' <span class="muted">(about {pc.launches_needed} launches a side)</span>'
                if pc.verdict == "inconclusive" and pc.launches_needed else "")
             + (f' <span class="muted">(machine busy: {escape(pc.busy)})</span>' if pc.busy else
                f' <span class="muted">({escape(pc.state)})</span>' if pc.state else "")]
            for pc in tested]
    head = ["benchmark", "size", "ranks", "baseline µs", "candidate µs", "ratio (95% interval)", "verdict"]
    return counts + note + (table(head, rows, "data comparison") if rows else "")
