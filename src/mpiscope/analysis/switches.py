"""Protocol switches and packetisation steps in T(n), the Hockney regime on
each side, and mpptest-style adaptive refinement of the switch sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from .clock import Clock
from .hockney import HockneyFit, fit_hockney, format_hockney_table
from .measured import Measured, arrays, sigma
from .robust import robust_line, wls_line
from .segment import Segmentation, isolated_outliers, segment

STEP_SPACING_TOL = 0.15    # breaks of a staircase sit within 15 % of a period of the grid
MIN_STEP_BREAKS = 4        # three intervals at least make a period


@dataclass(frozen=True)
class Switch:
    size: float                    # best estimate of the switch size, bytes
    bracket: tuple[int, int]       # last measured size before, first after
    jump: float                    # relative jump of T at the switch (new/old - 1)
    slope_ratio: float             # beta after / beta before
    periodic: bool = False         # one step of a packetisation staircase

    @property
    def uncertainty(self) -> float:
        """Half the bracket, relative to the size: how well it is located."""
        return (self.bracket[1] - self.bracket[0]) / 2.0 / max(self.size, 1.0)


@dataclass(frozen=True)
class Steps:
    start: float                   # first step, bytes
    period: float                  # bytes per step
    count: int                     # steps seen
    height: float                  # mean rise per step, as a fraction of T


@dataclass(frozen=True)
class Regime:
    size_range: tuple[int, int]
    fit: HockneyFit
    steps: Steps | None = None


@dataclass(frozen=True)
class SwitchReport:
    switches: tuple[Switch, ...]   # protocol switches (not packetisation steps)
    regimes: tuple[Regime, ...]    # len(switches) + 1
    steps: tuple[Steps, ...]
    outliers: tuple[int, ...]      # sizes dropped as isolated spikes before segmenting
    segmentation: Segmentation
    repeat_spread: float | None = None   # median relative spread of repeated sizes
    ci_spread: float | None = None       # median relative CI width of the same points


def _break_at(x, y, s, left: tuple[int, int], right: tuple[int, int]) -> Switch:
    al, bl = wls_line(x[left[0]:left[1]], y[left[0]:left[1]], 1 / s[left[0]:left[1]] ** 2)
    ar, br = wls_line(x[right[0]:right[1]], y[right[0]:right[1]], 1 / s[right[0]:right[1]] ** 2)
    lo, hi = int(x[left[1] - 1]), int(x[right[0]])
    # A slope change without a jump: the lines cross inside the bracket and
    # the crossing is the better estimate; a jump: the bracket's middle.
    size = (lo + hi) / 2.0
    if bl != br:
        cross = (ar - al) / (bl - br)
        if lo < cross < hi:
            size = cross
    before = al + bl * hi
    jump = (ar + br * hi) / before - 1 if before > 0 else math.inf
    ratio = br / bl if bl > 0 else math.inf
    return Switch(size=size, bracket=(lo, hi), jump=jump, slope_ratio=ratio)


def _periodic_runs(breaks: list[Switch]) -> list[tuple[int, int]]:
    """Maximal runs [i, j) of breaks equally spaced within STEP_SPACING_TOL."""
    runs, i = [], 0
    while i < len(breaks):
        j = i + 1
        while j < len(breaks):
            pos = np.array([b.size for b in breaks[i:j + 1]])
            k = np.arange(len(pos))
            period, start = np.polyfit(k, pos, 1)
            if period <= 0 or np.max(np.abs(pos - start - period * k)) > STEP_SPACING_TOL * period:
                break
            j += 1
        if j - i >= MIN_STEP_BREAKS:
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def _mark_steps(breaks: list[Switch]) -> tuple[list[Switch], list[Steps]]:
    out, steps = list(breaks), []
    for i, j in _periodic_runs(breaks):
        jumps = [abs(b.jump) for b in breaks[i:j]]
        # The run's first break is a protocol switch if it jumps far more than
        # the steps that follow it (the exercise: 1000 bytes, then ~480-byte steps).
        if j - i - 1 >= MIN_STEP_BREAKS and jumps[0] > 2 * float(np.median(jumps[1:])):
            i += 1
        pos = np.array([b.size for b in breaks[i:j]])
        period, start = np.polyfit(np.arange(len(pos)), pos, 1)
        heights = [b.jump for b in breaks[i:j]]
        out[i:j] = [replace(b, periodic=True) for b in out[i:j]]
        steps.append(Steps(start=float(start), period=float(period), count=j - i,
                           height=float(np.mean(heights))))
    return out, steps


def _few_outliers(x, y, s, seg: Segmentation, limit: float = 4.0) -> np.ndarray | None:
    """Indices of a few points that alone make a break, if any.

    With sparse sizes (powers of two) a spike on a steep stretch escapes the
    Hampel filter, and a couple of slow first points (a cold start) do too;
    least squares then buys them a segment of their own. A break is that
    artefact when one robust line fits both neighbouring segments once a few
    points are given up (at most 10 % of them, two at least, and never the
    whole shorter segment), and fits the rest within the noise."""
    b = seg.bounds
    scale = s * math.sqrt(seg.noise)
    for k in range(len(b) - 1):
        lo, hi = b[k][0], b[k + 1][1]
        shorter = min(b[k][1] - b[k][0], b[k + 1][1] - b[k + 1][0])
        a, sl, rw = robust_line(x[lo:hi], y[lo:hi], scale[lo:hi])
        z = np.abs(y[lo:hi] - a - sl * x[lo:hi]) / scale[lo:hi]
        out = np.flatnonzero(rw == 0)
        if not 1 <= len(out) <= max(2, (hi - lo) // 10) or len(out) >= shorter:
            continue
        rest = np.delete(z, out)
        # phi comes from few points when sizes are sparse: trust the merged
        # fit's own spread when it is larger.
        spread = max(1.0, 1.4826 * float(np.median(rest)))
        if np.all(rest < limit * spread):
            return lo + out
    return None


def find_switches(points: Sequence[Measured], clock: Clock | None = None,
                  penalty: float = 2.0, min_size: int = 3, reps: int = 1000) -> SwitchReport:
    """Segment T(n) into linear regimes, name every switch, fit each regime.

    Switch sizes are bracketed by measured sizes: sample densely (or refine)
    for a precise location."""
    pts = sorted(points, key=lambda p: p.size)
    if len({p.size for p in pts}) < 2 * min_size:
        raise ValueError(f"switch detection needs at least {2 * min_size} different sizes, "
                         f"got {len({p.size for p in pts})}; measure a sweep such as "
                         f"--sizes 0,1:4M")
    x, y, s = arrays(pts)
    spikes = isolated_outliers(x, y, s)
    # Giving up points break by break must not erode a real short regime
    # two points at a time: a budget of 5 % of the points (2 at least).
    budget = max(2, len(x) // 20)
    while True:
        keep = ~spikes
        xk, yk, sk = x[keep], y[keep], s[keep]
        seg = segment(xk, yk, sk, min_size=min_size, penalty=penalty)
        few = _few_outliers(xk, yk, sk, seg)
        if few is None or len(few) > budget:
            break
        budget -= len(few)
        spikes[np.flatnonzero(keep)[few]] = True
    bounds = list(seg.bounds)
    raw = [_break_at(xk, yk, sk, bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]
    marked, steps = _mark_steps(raw)
    # Regimes run from switch to switch; the steps of a staircase stay inside one.
    cuts = [k + 1 for k, b in enumerate(marked) if not b.periodic]
    edges = [0, *cuts, len(bounds)]
    regimes = []
    for a, b in zip(edges[:-1], edges[1:]):
        lo, hi = xk[bounds[a][0]], xk[bounds[b - 1][1] - 1]
        inside = [p for p, k in zip(pts, keep) if k and lo <= p.size <= hi]
        fit = fit_hockney(inside, clock=clock, reps=reps)
        st = next((st for st in steps if lo <= st.start <= hi), None)
        regimes.append(Regime((int(lo), int(hi)), fit, st))
    switches = tuple(b for b in marked if not b.periodic)
    return SwitchReport(switches, tuple(regimes), tuple(steps),
                        tuple(int(v) for v in x[spikes]), seg, *_repeat_spread(pts))


def _repeat_spread(pts: Sequence[Measured]) -> tuple[float | None, float | None]:
    """How far sizes measured more than once (several launches, refinement
    rounds) disagree, next to what their CIs claim: the honest check of
    launch-to-launch noise, which no within-launch CI sees."""
    by: dict[int, list[Measured]] = {}
    for p in pts:
        by.setdefault(p.size, []).append(p)
    spread, ci = [], []
    for group in by.values():
        if len(group) > 1:
            m = [p.median for p in group]
            spread.append(max(m) / min(m) - 1 if min(m) > 0 else math.inf)
            ci.extend(2 * sigma(p) * 1.96 / p.median for p in group if p.median > 0)
    if not spread:
        return None, None
    return float(np.median(spread)), float(np.median(ci))


def sizes_to_refine(report: SwitchReport, measured: set[int], tolerance: float = 0.05,
                    per_gap: int = 3, remeasure_ends: bool = True) -> list[int]:
    """New sizes inside each switch bracket still wider than `tolerance` of the
    switch size: `per_gap` sizes evenly spaced (geometrically for wide
    brackets), so each round shrinks the bracket about (per_gap + 1)-fold.

    With `remeasure_ends` the bracket's two ends are measured again in the
    same batch: a new launch can sit at a slightly different level (placement,
    clock), and a batch that straddles the switch on its own keeps such an
    offset from looking like a break of its own."""
    new: set[int] = set()
    for sw in report.switches:
        lo, hi = sw.bracket
        if hi - lo <= max(tolerance * hi, 1):
            continue
        spaced = np.geomspace if lo > 0 and hi / lo > 4 else np.linspace  # wide brackets: geometrically
        cand = spaced(lo, hi, per_gap + 2)[1:-1]
        inner = {int(round(c)) for c in cand if lo < round(c) < hi} - measured
        if inner:
            new |= inner | ({lo, hi} if remeasure_ends else set())
    return sorted(new)


def refine(measure: Callable[[list[int]], list[Measured]], initial_points: Sequence[Measured],
           tolerance: float = 0.05, max_rounds: int = 10, per_gap: int = 3,
           clock: Clock | None = None, penalty: float = 2.0,
           remeasure_ends: bool = True) -> tuple[list[Measured], SwitchReport]:
    """mpptest-style refinement: segment, measure more sizes inside every
    switch bracket wider than `tolerance` x its size, repeat until each switch
    is located within `tolerance` (or no size is left to try, or max_rounds).

    `measure(sizes)` runs the benchmark at those sizes and returns their
    points (for the CLI: the engine with --sizes a,b,c). Returns all points
    (repeated sizes included) and the final report."""
    pts = list(initial_points)
    report = find_switches(pts, clock=clock, penalty=penalty)
    for _ in range(max_rounds):
        todo = sizes_to_refine(report, {p.size for p in pts}, tolerance, per_gap,
                               remeasure_ends)
        if not todo:
            break
        pts.extend(measure(todo))
        report = find_switches(pts, clock=clock, penalty=penalty)
    return sorted(pts, key=lambda p: p.size), report


def format_switches(report: SwitchReport, with_ci: bool = True) -> str:
    """Switches, staircases, then the exercise table with one column per regime."""
    out = []
    if not report.switches:
        out.append("No protocol switch: one regime.")
    for i, sw in enumerate(report.switches, start=1):
        jump = f"{sw.jump:+.1%}" if math.isfinite(sw.jump) else "n/a"
        ratio = f"x{sw.slope_ratio:.3g}" if math.isfinite(sw.slope_ratio) \
            and sw.slope_ratio > 0 else "n/a (a side has no positive slope)"
        out.append(f"switch {i} (regime {i} -> {i + 1}): at ~{sw.size:.0f} bytes (between measured sizes "
                   f"{sw.bracket[0]} and {sw.bracket[1]}, +/-{sw.uncertainty:.1%}); "
                   f"T jumps {jump}, per-byte cost {ratio}")
    for st in report.steps:
        out.append(f"packetisation: {st.count} steps every ~{st.period:.0f} bytes from "
                   f"~{st.start:.0f} bytes, each raising T by ~{st.height:.1%}")
    if report.outliers:
        out.append(f"isolated spikes left out: sizes {list(report.outliers)}")
    if report.repeat_spread is not None and report.ci_spread is not None \
            and report.repeat_spread > max(3 * report.ci_spread, 0.05):
        out.append(f"warning: sizes measured more than once differ by {report.repeat_spread:.0%} "
                   f"(median) while their CIs span {report.ci_spread:.1%}: launches disagree "
                   f"(load, placement, frequency); switches found here may be noise")
    fits = {f"regime {i} ({r.size_range[0]}..{r.size_range[1]} B)": r.fit
            for i, r in enumerate(report.regimes, start=1)}
    return "\n".join(out) + "\n\n" + format_hockney_table(fits, with_ci=with_ci)
