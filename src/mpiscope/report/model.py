"""The models of one or more runs for the terminal and as JSON: pingpong's Hockney
regimes and protocol switches, LogGP, and the hardware ceiling when measured."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from rich.console import Console

from mpiscope.analysis.clock import Clock, cpus_of_context, detect_clock
from mpiscope.analysis.hockney import MIB, HockneyFit, Issue, bandwidth_only, fit_hockney, implausible
from mpiscope.analysis.hw import Hardware, hardware_from_records
from mpiscope.analysis.loggp import LogGP, loggp_from_records
from mpiscope.analysis.measured import select
from mpiscope.records.measured import Measured, is_measured
from mpiscope.analysis.model import first_context
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.analysis.switches import SwitchReport, find_switches
from mpiscope.records import Record
from mpiscope.report.hardware import format_hardware, format_loggp
from mpiscope.report.hockney import ci_text, format_hockney_table, issue_text
from mpiscope.report.switches import format_switches



@dataclass
class ModelSummary:
    benchmark: str
    sizes: int = 0
    clock: Clock | None = None
    report: SwitchReport | None = None      # switches and regimes (>= 6 sizes)
    single: HockneyFit | None = None        # one line (2 to 5 sizes)
    single_flag: Issue | None = None          # why that line is no model (`hockney.implausible`)
    loggp: LogGP | None = None
    hardware: Hardware | None = None
    notes: list[str] = field(default_factory=list)
    # a simulated run: the sizes where SMPI's settings change a message's cost (its switches are
    # these, not a real MPI's protocols); None for a measured run
    breakpoints: dict[int, str] | None = None

    @property
    def empty(self) -> bool:
        return self.report is None and self.single is None and self.loggp is None \
            and self.hardware is None


def variants_of(records: Iterable[Record | Measured], benchmark: str) -> list[str]:
    """The variants (RMA synchronisation modes, grid shapes) the benchmark's points carry."""
    return sorted({v for r in records if is_measured(r) and r.benchmark == benchmark
                   and (v := getattr(r, "variant", None)) is not None})


def model_summary(records: Iterable[Record | Measured], benchmark: str = "pingpong",
                  clock_mhz: float | None = None, variant: str | None = None) -> ModelSummary:
    """Every model the records allow. Records of several runs may be concatenated
    (a refinement chain, repeated launches): each point is fitted once over its launches
    (`select`); the clock comes from the first run's context. A regime whose fit is impossible
    (a negative latency, a throughput above `memcpy_ceiling` x the run's fastest memcpy) is
    flagged."""
    recs = list(records)
    ctx = first_context(recs)
    # imported figures (mpiscope import) come from a machine the files do not describe: no clock
    # but the one given, never this host's
    imported = any(getattr(r, "imported", None) is not None for r in recs)
    known = clock_mhz is not None or (ctx is not None and bool(ctx.cpu_mhz))
    clock = detect_clock(clock_mhz, ctx, cpus_of_context(ctx)) if known or not imported else None
    s = ModelSummary(benchmark, clock=clock)
    if ctx is not None and ctx.simulation:  # simulated times hold no cycles of this host's clock
        from mpiscope.launchers.smpirun import breakpoints
        s.clock, s.breakpoints = None, breakpoints(tuple(ctx.simulation.get("cfg") or ()))
    s.hardware = hardware_from_records(recs)
    ceiling = ANALYSIS.memcpy_ceiling * max(s.hardware.memcpy_MBps.values()) * 1e6 / MIB \
        if s.hardware is not None and s.hardware.memcpy_MBps else None
    have = variants_of(recs, benchmark)
    if variant is None and len(have) > 1:
        # one line through several synchronisation modes would be no model of any
        raise ValueError(f"its {benchmark} points come in {len(have)} variants ({', '.join(have)}): "
                         f"fit one with --variant, e.g. --variant {have[0]}")
    if variant is not None and variant not in have:
        raise ValueError(f"it has no {benchmark} points of variant {variant!r} "
                         f"(it has: {', '.join(have) or 'none'})")
    if variant is not None:
        s.benchmark = f"{benchmark} {variant}"
    pts = select(recs, benchmark=benchmark, ranks=2 if benchmark == "pingpong" else None, variant=variant)
    s.sizes = len({p.size for p in pts})
    if s.sizes >= ANALYSIS.min_sizes_for_switches:
        s.report = find_switches(pts, clock=s.clock, max_bandwidth_MiBps=ceiling)
    elif s.sizes >= 2:
        s.single = fit_hockney(pts, clock=s.clock)
        s.single_flag = implausible(s.single, ceiling)
        s.notes.append(f"only {s.sizes} sizes: one line fitted, no switch search "
                       f"(needs {ANALYSIS.min_sizes_for_switches}; e.g. --sizes 1:1M)")
    s.loggp = loggp_from_records(recs)
    return s


def render(s: ModelSummary) -> str:
    parts = []
    if s.report is not None:
        parts.append(f"Model of {s.benchmark} ({s.sizes} sizes): T(n) = Ts + n Tc per regime\n"
                     + format_switches(s.report, breakpoints=s.breakpoints))
    elif s.single is not None and bandwidth_only(s.single, s.single_flag):
        parts.append(f"Model of {s.benchmark} ({s.sizes} sizes): not a model to predict with "
                     f"({issue_text(s.single_flag)}): the latency is not identifiable from large messages alone\n"
                     + format_hockney_table({"all sizes": s.single}, simulated=s.breakpoints is not None))
    elif s.single is not None and s.single_flag:
        parts.append(f"Model of {s.benchmark} ({s.sizes} sizes): not a model ({issue_text(s.single_flag)}): "
                     f"too few sizes or noise")
    elif s.single is not None:
        parts.append(f"Model of {s.benchmark} ({s.sizes} sizes): T(n) = Ts + n Tc\n"
                     + format_hockney_table({"all sizes": s.single}, simulated=s.breakpoints is not None))
    if s.loggp is not None:
        parts.append(format_loggp(s.loggp))
    if s.hardware is not None:
        parts.append(format_hardware(s.hardware))
    parts += s.notes
    return "\n\n".join(parts)


def print_model(console: Console, records: Iterable[Record | Measured], benchmark: str = "pingpong",
                clock_mhz: float | None = None) -> bool:
    """Print the models after a run's table; False (nothing printed) when the run
    has nothing to model."""
    s = model_summary(records, benchmark, clock_mhz)
    if s.empty:
        return False
    console.print()
    console.print(render(s), markup=False, highlight=False, soft_wrap=True)
    return True


def _json_value(v: Any) -> Any:
    """JSON has no infinity: an unbounded bandwidth or n_1/2 becomes null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (tuple, list)):
        return [_json_value(x) for x in v]
    return v


def fit_json(f: HockneyFit) -> dict:
    """A regime's figures; one that is not identifiable (`HockneyFit.latency_issue`,
    `per_byte_issue`) is null, with the reason under `not_identifiable`. Bandwidths in MB/s
    (10^6 B/s, as the engine's) and, labelled, MiB/s."""
    lat, per_byte = f.latency_issue is None, f.per_byte_issue is None
    mb = MIB / 1e6
    figures = {
        "size_range": list(f.size_range), "points": f.n_points,
        "alpha_us": f.alpha_us, "alpha_ci": f.alpha_ci, "alpha_cycles": f.alpha_cycles,
        "alpha_cycles_ci": f.cycles_ci("alpha"),
        "beta_us_per_byte": f.beta_us_per_byte, "beta_ci": f.beta_ci,
        "beta_cycles_per_byte": f.beta_cycles_per_byte, "beta_cycles_ci": f.cycles_ci("beta"),
        "bandwidth_MBps": f.bandwidth_MBps, "bandwidth_MBps_ci": tuple(v * mb for v in f.bandwidth_ci),
        "bandwidth_MiBps": f.bandwidth_MiBps, "bandwidth_ci": f.bandwidth_ci,
        "n_half_bytes": f.n_half, "n_half_ci": f.n_half_ci}
    hidden = ({k for k in figures if k.startswith("alpha")} if not lat else set()) | \
        ({k for k in figures if k.startswith(("beta", "bandwidth"))} if not per_byte else set()) | \
        ({"n_half_bytes", "n_half_ci"} if not f.valid else set())
    return {**{k: None if k in hidden else _json_value(v) for k, v in figures.items()},
            "valid": f.valid,
            "not_identifiable": {"latency": issue_text(f.latency_issue), "per_byte": issue_text(f.per_byte_issue)},
            "outliers": list(f.outliers), "ci_method": ci_text(f)}


def to_json(s: ModelSummary) -> dict:
    out: dict[str, Any] = {"benchmark": s.benchmark, "sizes": s.sizes,
                           "clock": None if s.clock is None else
                           {"mhz": s.clock.mhz, "source": s.clock.source}}
    if s.breakpoints is not None:  # a simulated run: its switches are where these SMPI settings change
        out["smpi_breakpoints"] = [{"size": size, "settings": keys} for size, keys in s.breakpoints.items()]
    if s.report is not None:
        r = s.report
        out["switches"] = [{"size": sw.size, "bracket": list(sw.bracket),
                            "uncertainty": sw.uncertainty, "jump": _json_value(sw.jump),
                            "slope_ratio": _json_value(sw.slope_ratio), "confirmed_by": sw.confirmed_by,
                            "burst": sw.burst}
                           for sw in r.switches]
        out["unconfirmed"] = [{"size": u.switch.size, "bracket": list(u.switch.bracket),
                               "not_shown_by": list(u.not_shown_by), "checked": u.checked}
                              for u in r.unconfirmed]
        out["launches"] = r.launches
        out["regimes"] = [{**fit_json(g.fit), "flag": issue_text(g.flag),
                           "steps": None if g.steps is None else vars(g.steps)} for g in r.regimes]
        out["steps"] = [vars(st) for st in r.steps]
        out["spikes"] = list(r.outliers)
    elif s.single is not None:
        out["switches"], out["regimes"] = None, [{**fit_json(s.single), "flag": issue_text(s.single_flag)}]
    out["loggp"] = None if s.loggp is None else {k: _json_value(v) for k, v in vars(s.loggp).items()}
    out["hardware"] = None if s.hardware is None else s.hardware.to_json()
    out["notes"] = s.notes
    return out
