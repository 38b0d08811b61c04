"""The Hockney table: one column per configuration or regime (analysis/hockney.py's fits), and
the words for why a figure is not identifiable or a fit is no model (`hockney.Issue`)."""
from __future__ import annotations

from typing import Callable, Mapping

from mpiscope.analysis.hockney import MIB, HockneyFit, Interval, Issue


NOT_IDENTIFIABLE = "not identifiable"


def issue_text(issue: Issue | None) -> str | None:
    """'negative latency -1.2 us [-1.5, -0.9]' and the like; None for no issue."""
    if issue is None:
        return None
    v, (lo, hi) = issue.value, issue.interval
    if issue.kind == "negative_latency":
        return f"negative latency {v:.3g} us [{lo:.3g}, {hi:.3g}]"
    if issue.kind == "latency_reaches_0":
        return (f"latency {v:.3g} us, interval [{lo:.3g}, {hi:.3g}] reaches 0: sizes from "
                f"{int(issue.bound)} B do not determine it")
    if issue.kind == "negative_per_byte":
        return f"negative per-byte cost {v:.3g} us/byte [{lo:.3g}, {hi:.3g}]: T falls with the size"
    if issue.kind == "per_byte_reaches_0":
        return f"per-byte cost {v:.3g} us/byte, interval [{lo:.3g}, {hi:.3g}] reaches 0: the bandwidth is unbounded"
    if issue.kind == "above_ceiling":
        return f"throughput {v:.4g} MiB/s, above the physical ceiling of {issue.bound:.4g} MiB/s"
    raise ValueError(f"no words for the issue {issue.kind!r}")


def ci_text(fit: HockneyFit) -> str:
    """How the fit's intervals were found, e.g. 'bootstrap over points (2000 resamples), 95%'."""
    if fit.ci_method == "bootstrap":
        return f"bootstrap over points ({fit.ci_reps} resamples), {fit.ci_level:.0%}"
    return f"WLS covariance, normal, {fit.ci_level:.0%}"


def why(fit: HockneyFit) -> str:
    """Why the fit is not valid ("" when it is): each parameter's reason."""
    return "; ".join(issue_text(i) or "" for i in fit.issues)


def _fmt(v: float | None, ci: Interval | None, with_ci: bool, issue: str | None = None) -> str:
    if issue:
        return NOT_IDENTIFIABLE
    if v is None:
        return "n/a"
    s = f"{v:.4g}"
    if with_ci and ci is not None:
        s += f" [{ci[0]:.4g}, {ci[1]:.4g}]"
    return s


def format_hockney_table(fits: Mapping[str, HockneyFit], with_ci: bool = True, simulated: bool = False) -> str:
    """The summary table, one column per configuration or regime:
    Latency Ts (us), alpha (cycles), Throughput (MB/s), Tc (us/byte),
    beta (cycles/byte); then n_1/2 and the fitted size range. Brackets are
    the confidence intervals; a figure that is not identifiable says so, with
    the reason in a note below."""
    mb = MIB / 1e6
    cells: list[tuple[str, Callable[[HockneyFit], str]]] = [
        ("Latency Ts (us)", lambda f: _fmt(f.alpha_us, f.alpha_ci, with_ci, f.latency_issue)),
        ("alpha (cycles)", lambda f: _fmt(f.alpha_cycles, f.cycles_ci("alpha"), with_ci, f.latency_issue)),
        ("Throughput (MB/s)", lambda f: _fmt(f.bandwidth_MBps, (f.bandwidth_ci[0] * mb, f.bandwidth_ci[1] * mb),
                                             with_ci, f.per_byte_issue)),
        ("Tc (us/byte)", lambda f: _fmt(f.beta_us_per_byte, f.beta_ci, with_ci, f.per_byte_issue)),
        ("beta (cycles/byte)", lambda f: _fmt(f.beta_cycles_per_byte, f.cycles_ci("beta"), with_ci,
                                              f.per_byte_issue)),
        ("n_1/2 (bytes)", lambda f: _fmt(f.n_half, f.n_half_ci, with_ci, why(f))),
        ("fitted sizes (bytes)", lambda f: f"{f.size_range[0]}..{f.size_range[1]} ({f.n_points} pts)"),
    ]
    if simulated:  # simulated times are the platform's: this host's clock has no cycles in them
        cells = [c for c in cells if "cycles" not in c[0]]
    rows = [["Summary", *fits.keys()], *([name, *map(cell, fits.values())] for name, cell in cells)]
    widths = [max(map(len, col)) for col in zip(*rows)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [line(rows[0]), line(["-" * w for w in widths]), *map(line, rows[1:])]
    clocks = {f.clock for f in fits.values()}
    notes = ["simulated: times are the platform's, so no cycles of this host's clock"] if simulated else \
        [f"clock: {c.mhz:.1f} MHz ({c.source})" for c in clocks if c is not None] \
        or ["clock: unknown (cycles not shown; pass the core clock in MHz)"]
    notes += [f"{k}: {NOT_IDENTIFIABLE}: {why(f)}" for k, f in fits.items() if not f.valid]
    notes.append("MB/s = 10^6 bytes per second, as the engine's bandwidths and OSU's")
    outl = {k: f.outliers for k, f in fits.items() if f.outliers}
    if outl:
        notes.append("outliers left out: " + "; ".join(f"{k}: {list(v)}" for k, v in outl.items()))
    methods = {ci_text(f) for f in fits.values()}
    notes.append("intervals: " + "; ".join(sorted(methods)))
    return "\n".join(out + [""] + notes)
