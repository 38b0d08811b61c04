"""Protocol switches, unconfirmed breaks, staircases and regimes (analysis/switches.py) as text,
above the Hockney table of the regimes that are models."""
from __future__ import annotations

import math
from typing import Mapping

from mpiscope.analysis.hockney import bandwidth_only
from mpiscope.analysis.switches import SwitchReport
from mpiscope.report.hockney import format_hockney_table, issue_text


def _breakpoint(bracket: tuple[int, int], breakpoints: Mapping[int, str]) -> str:
    """What SMPI changes between two measured sizes (`launchers.smpirun.breakpoints`)."""
    inside = [f"{keys} at {size} bytes" for size, keys in breakpoints.items() if bracket[0] < size <= bracket[1]]
    return ("; SMPI's " + ", ".join(inside) if inside else
            "; no SMPI breakpoint lies between them: a change of the collective's algorithm or of the route")


def format_switches(report: SwitchReport, with_ci: bool = True, breakpoints: Mapping[int, str] | None = None) -> str:
    """Switches, breaks not every launch showed, staircases, then the Hockney table with one
    column per regime; a regime that is no model (`Regime.flag`) gets a line instead, and keeps
    its column when only its latency is not identifiable (`hockney.bandwidth_only`). A simulated
    run's (`breakpoints`: the sizes where SMPI's settings change its cost) are SMPI's factor
    breakpoints, not protocol switches, and its table has no host cycles."""
    out = []
    simulated = breakpoints is not None
    if not report.switches:
        out.append("No SMPI factor breakpoint: one regime." if simulated else "No protocol switch: one regime.")
    for i, sw in enumerate(report.switches, start=1):
        jump = f"{sw.jump:+.1%}" if math.isfinite(sw.jump) else "n/a"
        ratio = f"x{sw.slope_ratio:.3g}" if math.isfinite(sw.slope_ratio) \
            and sw.slope_ratio > 0 else "n/a (a side has no positive slope)"
        seen = "" if sw.confirmed_by is None else \
            f"; seen in each of the {sw.confirmed_by} launches that measured around it" if sw.confirmed_by \
            else "; no single launch measured enough sizes around it to check"
        what = "SMPI factor breakpoint" if simulated else \
            "burst of a rate limiter (not a protocol switch)" if sw.burst else "switch"
        burst = _breakpoint(sw.bracket, breakpoints) if breakpoints is not None else \
            "; the samples above it split into fast and slow, as a token bucket's do (docs/models.md)" \
            if sw.burst else ""
        out.append(f"{what} {i} (regime {i} -> {i + 1}): at ~{sw.size:.0f} bytes (between measured sizes "
                   f"{sw.bracket[0]} and {sw.bracket[1]}, +/-{sw.uncertainty:.1%}); "
                   f"T jumps {jump}, per-byte cost {ratio}{seen}{burst}")
    for u in report.unconfirmed:
        launches = ", ".join(map(str, u.not_shown_by))
        if not u.checked:
            out.append(f"not a {'breakpoint' if simulated else 'switch'}: the break at ~{u.switch.size:.0f} bytes (between {u.switch.bracket[0]} "
                       f"and {u.switch.bracket[1]}) is not confirmed: no launch measured enough sizes near it")
            continue
        out.append(f"not a {'breakpoint' if simulated else 'switch'}: the break at ~{u.switch.size:.0f} bytes (between {u.switch.bracket[0]} "
                   f"and {u.switch.bracket[1]}) is not confirmed by launch {launches} "
                   f"({len(u.not_shown_by)} of {u.checked} checked)")
    for st in report.steps:
        out.append(f"packetisation: {st.count} steps every ~{st.period:.0f} bytes from "
                   f"~{st.start:.0f} bytes, each raising T by ~{st.height:.1%}")
    if report.outliers:
        out.append(f"isolated spikes left out: sizes {list(report.outliers)}")
    if report.launches_disagree:
        consequence = "intervals are launch-level and every switch was checked in each launch" \
            if report.launches > 1 else "switches found here may be noise"
        out.append(f"warning: launches of one size differ by {report.repeat_spread:.0%} "
                   f"(median) while their own CIs span {report.ci_spread:.1%}: launches disagree "
                   f"(load, placement, frequency); {consequence}")
    fits = {}
    for i, r in enumerate(report.regimes, start=1):
        name = f"regime {i} ({r.size_range[0]}..{r.size_range[1]} B)"
        if bandwidth_only(r.fit, r.flag):
            out.append(f"{name}: not a model to predict with ({issue_text(r.flag)}): the latency is not identifiable "
                       f"from large messages alone; its per-byte cost and bandwidth are in the table")
            fits[name] = r.fit
        elif r.flag:
            out.append(f"{name}: not a model ({issue_text(r.flag)}): too few sizes or noise "
                       f"({r.fit.n_points} points)")
        else:
            fits[name] = r.fit
    return "\n".join(out) + ("\n\n" + format_hockney_table(fits, with_ci=with_ci, simulated=simulated) if fits else "")
