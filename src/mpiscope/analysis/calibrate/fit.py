"""The fit: per placement class, the pingpong's regimes (analysis.switches) as SMPI's piecewise
`smpi/lat-factor` and `smpi/bw-factor` over one route latency and bandwidth.

SMPI prices a message of s bytes over a route as latency x lat_factor(s) + s / (bandwidth x
bw_factor(s)), and a factor entry `T:f` holds for sizes above T (SimGrid's FactorSet: at or below
the first entry the factor is 1). So the route latency is the first regime's latency (its factor
1, which size 0 gets), the route bandwidth the last regime's (the figure flows share at scale,
factor 1 there), and each regime's factors are its own figures over those two."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.optimize import nnls

from mpiscope.analysis.hockney import HockneyFit, fit_hockney
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.analysis.switches import find_switches
from mpiscope.records.measured import Measured

# held-out sizes and flat regimes (values and evidence: analysis.policy, "the twin")
HOLD_EVERY = ANALYSIS.twin_hold_every
HOLD_MIN = ANALYSIS.twin_hold_min
FLAT_SHARE = ANALYSIS.twin_flat_share


@dataclass(frozen=True)
class Figure:
    """A fitted parameter and its 95 % interval (NaN where the fit gives none)."""
    value: float
    low: float = math.nan
    high: float = math.nan

    def scaled(self, k: float) -> "Figure":
        return Figure(self.value * k, self.low * k, self.high * k)

    def over(self, k: float) -> "Figure":
        """1 / (this x k): a bandwidth from a per-byte cost, its interval turned round."""
        inv = lambda v: 1 / (v * k) if v > 0 else math.inf  # noqa: E731
        return Figure(inv(self.value), inv(self.high), inv(self.low))


@dataclass(frozen=True)
class Regime:
    above: int              # the factor holds for sizes above this (SMPI's entry), bytes
    sizes: tuple[int, int]  # the first and last size measured in the regime
    latency_us: Figure
    bandwidth_Bps: Figure
    lat_factor: Figure
    bw_factor: Figure


@dataclass(frozen=True)
class LinkClass:
    """One placement class (inter-node, intra-node): its route figures and its regimes."""
    placement: str
    latency_us: Figure      # route latency: the first regime's
    bandwidth_Bps: Figure   # route bandwidth: the last regime's
    regimes: tuple[Regime, ...]
    switches: tuple[tuple[int, int], ...]  # each switch's bracket (last size before, first after)
    fitted: tuple[int, ...]
    held_out: tuple[int, ...]

    def factors(self, which: str) -> str:
        """The SMPI factor string, `smpi/lat-factor` (which="lat") or `smpi/bw-factor` ("bw")."""
        return ";".join(f"{r.above}:{getattr(r, which + '_factor').value:.6g}" for r in self.regimes)

    @property
    def eager_bytes(self) -> int | None:
        """The largest message sent eagerly: up to the switch whose latency rises most (a
        rendezvous adds a round trip), None without one."""
        rises = [(b.latency_us.value - a.latency_us.value, b.above) for a, b in zip(self.regimes, self.regimes[1:])]
        up = [r for r in rises if r[0] > 0]
        return max(up)[1] if up else None


def _relative_fit(points: Sequence[Measured]) -> tuple[float, float]:
    """alpha (us) and beta (us/byte), both at least 0, minimising the relative error: a regime
    whose Hockney fit identifies no latency or per-byte cost (a negative figure, an interval
    reaching 0: noisy points whose weights leave the large sizes out) still prices its sizes."""
    t = np.array([p.median for p in points], dtype=float)
    n = np.array([p.size for p in points], dtype=float)
    (a, b), _ = nnls(np.column_stack([1 / t, n / t]), np.ones_like(t))
    return float(a), float(b)


def _regime_figures(points: Sequence[Measured]) -> tuple[Figure, Figure]:
    """Latency (us) and bandwidth (B/s) of one regime, with intervals where the fit is a model."""
    fit: HockneyFit | None = None
    if len({p.size for p in points}) >= 2:
        fit = fit_hockney(points)
    if fit is not None and fit.valid:  # latency and per-byte cost both identifiable
        return (Figure(fit.alpha_us, *fit.alpha_ci),
                Figure(fit.beta_us_per_byte, *fit.beta_ci).over(1e-6))
    if fit is not None and fit.per_byte_issue is None and fit.beta_us_per_byte > 0:
        # the rate is identified, the latency not (sizes far above n_1/2): the rate stays, the
        # latency is what the points leave over it
        rest = [float(p.median) - fit.beta_us_per_byte * p.size for p in points]
        return Figure(max(float(np.median(rest)), 0.0)), Figure(fit.beta_us_per_byte, *fit.beta_ci).over(1e-6)
    if len({p.size for p in points}) >= 2:
        a, b = _relative_fit(points)
    else:  # one size: all latency, unless it is large enough for the bytes to dominate
        a, b = float(points[0].median), 0.0
    return Figure(a), Figure(b).over(1e-6) if b > 0 else Figure(math.inf)


def held_out(sizes: Sequence[int]) -> list[int]:
    """The sizes of one regime left out of its fit, for the validation to price."""
    if len(sizes) < HOLD_MIN:
        return []
    inner = sorted(sizes)[2:-2]
    return inner[::HOLD_EVERY]


def fit_class(placement: str, points: Sequence[Measured]) -> LinkClass:
    """The twin's figures of one placement class from its launch-level pingpong points."""
    pts = sorted((p for p in points if p.median and p.median > 0), key=lambda p: p.size)
    sizes = sorted({p.size for p in pts})
    if len(sizes) < 2:
        raise ValueError(f"{placement} pingpong has {len(sizes)} size(s): calibration needs a sweep "
                         f"such as --sizes 0:4M")
    bounds: list[tuple[int, int]]
    brackets: tuple[tuple[int, int], ...] = ()
    estimates: list[float] = []
    if len(sizes) >= ANALYSIS.min_sizes_for_switches:
        report = find_switches(pts)
        bounds = [r.size_range for r in report.regimes]
        brackets = tuple(sw.bracket for sw in report.switches)
        estimates = [sw.size for sw in report.switches]
    else:
        bounds = [(sizes[0], sizes[-1])]
    regimes_pts = [[p for p in pts if lo <= p.size <= hi] for lo, hi in bounds]
    hold = {s for rp in regimes_pts for s in held_out(sorted({p.size for p in rp}))}
    figures = [_regime_figures([p for p in rp if p.size not in hold]) for rp in regimes_pts]
    lat0 = figures[0][0].value if figures[0][0].value > 0 else float(pts[0].median)
    bw_last = figures[-1][1].value
    if not math.isfinite(bw_last):
        bw_last = next((f[1].value for f in reversed(figures) if math.isfinite(f[1].value)), math.inf)
    if not math.isfinite(bw_last):
        raise ValueError(f"{placement} pingpong shows no bandwidth (its time does not grow with the "
                         f"size): measure larger sizes, up to 4M")
    regimes = []
    for k, ((lo, hi), (lat, bw)) in enumerate(zip(bounds, figures)):
        above = 0 if k == 0 else _above(estimates[k - 1], bounds[k - 1][1], lo)
        bwf = bw.scaled(1 / bw_last) if math.isfinite(bw.value) else Figure(_flat(lat.value, hi, bw_last))
        regimes.append(Regime(above, (int(lo), int(hi)), lat, bw, lat.scaled(1 / lat0), bwf))
    return LinkClass(placement, Figure(lat0, figures[0][0].low, figures[0][0].high),
                     next(f[1] for f in reversed(figures) if math.isfinite(f[1].value)), tuple(regimes),
                     brackets, tuple(s for s in sizes if s not in hold), tuple(sorted(hold)))


def _flat(latency_us: float, largest: int, bandwidth_Bps: float) -> float:
    """The bandwidth factor of a regime whose time does not grow with the size: its bytes cost
    at most FLAT_SHARE of its latency at its largest size."""
    return max(1.0, largest / (FLAT_SHARE * latency_us * 1e-6 * bandwidth_Bps))


def _above(estimate: float, last_before: int, first_after: int) -> int:
    """SMPI's entry for a switch: the estimate, within the bracket of measured sizes (the entry
    holds above it, so at most the first size after minus one)."""
    return int(min(max(math.floor(estimate), last_before), first_after - 1))
