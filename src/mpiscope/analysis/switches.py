"""Protocol switches and packetisation steps in T(n), the Hockney regime on
each side, each switch confirmed in every launch, and mpptest-style adaptive
refinement of the switch sizes."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from mpiscope.records import Point

from .burst import is_burst
from .clock import Clock
from .hockney import HockneyFit, Issue, fit_hockney, implausible
from mpiscope.results.launches import Z95, launch_of
from mpiscope.results.location import robust_interval
from mpiscope.results.policy import POLICY
from mpiscope.records.measured import Measured

from .policy import ANALYSIS
from .measured import arrays, launch_level, sigma
from .robust import robust_line, wls_line
from .segment import Segmentation, isolated_outliers, segment

# The segmentation reads a point of POLICY.robust_min_launches launches or more without its wild
# launches (`_segmentation_input`, `results.location.wild`): one or two launches in another mode
# (Open MPI's fast launches) then neither pull the level down nor widen the interval,
# where with them the geometric mean and its t-interval do both and the point counts for nothing.


@dataclass(frozen=True)
class Switch:
    size: float                    # best estimate of the switch size, bytes
    bracket: tuple[int, int]       # last measured size before, first after
    jump: float                    # relative jump of T at the switch (new/old - 1)
    slope_ratio: float             # beta after / beta before
    periodic: bool = False         # one step of a packetisation staircase
    confirmed_by: int | None = None  # launches that showed it (None: one launch, not checked)
    burst: bool = False            # the burst of a rate limiter, not a protocol switch (analysis.burst)

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
    flag: Issue | None = None      # why the fit is not a model (a negative latency, ...)


@dataclass(frozen=True)
class Unconfirmed:
    """A break of the launch-level points that not every launch showed: not a switch."""
    switch: Switch
    not_shown_by: tuple[int, ...]  # the launches (tag "launch") whose own points have no such break
    checked: int                   # launches that measured enough sizes around it


@dataclass(frozen=True)
class SwitchReport:
    switches: tuple[Switch, ...]   # protocol switches (not packetisation steps)
    regimes: tuple[Regime, ...]    # len(switches) + 1
    steps: tuple[Steps, ...]
    outliers: tuple[int, ...]      # sizes dropped as isolated spikes before segmenting
    segmentation: Segmentation
    repeat_spread: float | None = None   # median relative spread of repeated sizes
    ci_spread: float | None = None       # median relative CI width of the same points
    launches: int = 1                    # launches behind the points
    unconfirmed: tuple[Unconfirmed, ...] = ()  # breaks dropped: not shown by every launch

    @property
    def launches_disagree(self) -> bool:
        """Launches of one size differ by far more than their own intervals span."""
        return self.repeat_spread is not None and self.ci_spread is not None and \
            self.repeat_spread > max(ANALYSIS.disagree_ratio * self.ci_spread, ANALYSIS.disagree_floor)


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
    """Maximal runs [i, j) of breaks equally spaced within ANALYSIS.step_spacing_tol."""
    runs, i = [], 0
    while i < len(breaks):
        j = i + 1
        while j < len(breaks):
            pos = np.array([b.size for b in breaks[i:j + 1]])
            k = np.arange(len(pos))
            period, start = np.polyfit(k, pos, 1)
            if period <= 0 or np.max(np.abs(pos - start - period * k)) > ANALYSIS.step_spacing_tol * period:
                break
            j += 1
        if j - i >= ANALYSIS.min_step_breaks:
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def _mark_steps(breaks: list[Switch]) -> tuple[list[Switch], list[Steps]]:
    out, steps = list(breaks), []
    for i, j in _periodic_runs(breaks):
        jumps = [abs(b.jump) for b in breaks[i:j]]
        # The run's first break is a protocol switch if it jumps far more than the steps after it.
        if j - i - 1 >= ANALYSIS.min_step_breaks and jumps[0] > ANALYSIS.step_switch_jump * float(np.median(jumps[1:])):
            i += 1
        pos = np.array([b.size for b in breaks[i:j]])
        period, start = np.polyfit(np.arange(len(pos)), pos, 1)
        heights = [b.jump for b in breaks[i:j]]
        out[i:j] = [replace(b, periodic=True) for b in out[i:j]]
        steps.append(Steps(start=float(start), period=float(period), count=j - i,
                           height=float(np.mean(heights))))
    return out, steps


def _few_outliers(x, y, s, seg: Segmentation, limit: float = ANALYSIS.break_fit_sd) -> np.ndarray | None:
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
        if not 1 <= len(out) <= max(2, int(ANALYSIS.break_give_up * (hi - lo))) or len(out) >= shorter:
            continue
        rest = np.delete(z, out)
        # phi comes from few points when sizes are sparse: trust the merged
        # fit's own spread when it is larger.
        spread = max(1.0, POLICY.mad_sigma * float(np.median(rest)))
        if np.all(rest < limit * spread):
            return lo + out
    return None


def find_switches(points: Sequence[Measured], clock: Clock | None = None,
                  penalty: float = ANALYSIS.penalty, min_size: int = ANALYSIS.min_segment_sizes,
                  reps: int = ANALYSIS.switch_reps,
                  max_bandwidth_MiBps: float | None = None) -> SwitchReport:
    """Segment T(n) into linear regimes, name every switch, fit each regime.

    Points of several launches are fitted at the launch level (one `LaunchPoint` per size, see
    `measured.launch_level`), and a break is a switch only when every launch that measured
    enough sizes around it shows it in its own points (`_shows`); the others are listed as
    `unconfirmed`. A regime whose fit is impossible (`hockney.implausible`, with
    `max_bandwidth_MiBps` as the ceiling) carries a flag. Switch sizes are bracketed by measured
    sizes: sample densely (or refine) for a precise location."""
    pts = sorted(launch_level(points), key=lambda p: p.size)
    if len({p.size for p in pts}) < 2 * min_size:
        raise ValueError(f"switch detection needs at least {2 * min_size} different sizes, "
                         f"got {len({p.size for p in pts})}; measure a sweep such as "
                         f"--sizes 0,1:4M")
    x, y, s = _segmentation_input(pts)
    # A size every launch puts between its neighbours is part of a step, never a spike.
    agreed = _steps_in_every_launch(x, _launches(pts, set()))
    spikes = isolated_outliers(x, y, s) & ~agreed
    # Giving up points break by break must not erode a real short regime two points at a time.
    budget = max(2, int(ANALYSIS.spike_budget * len(x)))
    while True:
        keep = ~spikes
        xk, yk, sk = x[keep], y[keep], s[keep]
        seg = segment(xk, yk, sk, min_size=min_size, penalty=penalty)
        few = _few_outliers(xk, yk, sk, seg)
        if few is None or len(few) > budget or np.any(agreed[np.flatnonzero(keep)[few]]):
            break
        budget -= len(few)
        spikes[np.flatnonzero(keep)[few]] = True
    bounds = list(seg.bounds)
    raw = [_break_at(xk, yk, sk, bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]
    marked, steps = _mark_steps(raw)
    launches = _launches(pts, {int(v) for v in x[spikes]})
    level = {int(a): float(b) for a, b in zip(xk, yk)}
    slopes = [wls_line(xk[i:j], yk[i:j], 1 / sk[i:j] ** 2)[1] for i, j in bounds]
    unconfirmed, dropped = _confirm(marked, launches, level, xk, bounds, slopes)
    # Regimes run from switch to switch; the steps of a staircase stay inside one.
    cuts = [k + 1 for k, b in enumerate(marked) if not b.periodic and k not in dropped]
    edges = [0, *cuts, len(bounds)]
    regimes = []
    for a, b in zip(edges[:-1], edges[1:]):
        lo, hi = xk[bounds[a][0]], xk[bounds[b - 1][1] - 1]
        inside = [p for p, k in zip(pts, keep) if k and lo <= p.size <= hi]
        fit = fit_hockney(inside, clock=clock, reps=reps)
        st = next((st for st in steps if lo <= st.start <= hi), None)
        regimes.append(Regime((int(lo), int(hi)), fit, st, implausible(fit, max_bandwidth_MiBps)))
    switches = tuple(b for k, b in enumerate(marked) if not b.periodic and k not in dropped)
    # a rate limiter's burst: samples above it faster than the regime after it allows
    switches = tuple(replace(sw, burst=is_burst(sw.bracket, pts, regimes[j + 1].fit.beta_us_per_byte))
                     for j, sw in enumerate(switches))
    unconfirmed = sorted(unconfirmed, key=lambda u: u.switch.bracket)
    return SwitchReport(switches, tuple(regimes), tuple(steps),
                        tuple(int(v) for v in x[spikes]), seg, *_repeat_spread(pts),
                        launches=max(len(launches), 1), unconfirmed=tuple(unconfirmed))


def _segmentation_input(pts: Sequence[Measured]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sizes, levels, sigmas) the segmentation reads: `arrays`, except for a point of
    POLICY.robust_min_launches launches or more with a minority of wild launch medians
    (`results.location.wild`: another mode, not the tail of one),
    read as the geometric mean and t-interval of the others (`location.robust_interval`, floored by
    `measured.sigma`). The point's own estimate and interval, all launches, stay what the fits
    and the reports use."""
    x, y, s = arrays(pts)
    for i, p in enumerate(pts):
        med = np.asarray(getattr(p, "launch_medians", ()), float)
        med = med[med > 0]
        if len(med) < POLICY.robust_min_launches:
            continue
        within = getattr(p, "within_var", float("nan"))
        # the results layer's estimate without wild launches
        centre, half, left_out = robust_interval(np.log(med), within if np.isfinite(within) else 0.0)
        if not left_out:
            continue
        y[i] = math.exp(centre)
        s[i] = max(y[i] * half / Z95, ANALYSIS.rel_sigma_floor * y[i], ANALYSIS.abs_sigma_floor_us)
    return x, y, s


def _launches(pts: Sequence[Measured], spikes: set[int]) -> dict[int, dict[int, float]]:
    """Each launch's own medians by size behind launch-level points, the launch-level spikes left
    out."""
    out: dict[int, dict[int, float]] = {}
    for p in pts:
        for r in getattr(p, "points", ()):
            if isinstance(r, Point) and r.size not in spikes and r.median:
                out.setdefault(launch_of(r), {})[r.size] = float(r.median)
    return out


def _steps_in_every_launch(x: np.ndarray, launches: dict[int, dict[int, float]]) -> np.ndarray:
    """Sizes that every launch which measured them and both neighbouring sizes puts between its
    two neighbours (at least two launches): part of a step the launches agree on, never a spike
    (a spike lies beyond both neighbours)."""
    sizes = np.unique(x).astype(int)
    agreed = set()
    for i in range(1, len(sizes) - 1):
        a, m, b = sizes[i - 1], sizes[i], sizes[i + 1]
        seen = [(own[a], own[m], own[b]) for own in launches.values() if a in own and m in own and b in own]
        if len(seen) >= 2 and all(min(u, w) <= v <= max(u, w) for u, v, w in seen):
            agreed.add(int(m))
    return np.array([int(v) in agreed for v in x], dtype=bool)


def _confirm(marked: list[Switch], launches: dict[int, dict[int, float]], level: dict[int, float],
             x: np.ndarray, bounds: list[tuple[int, int]], slopes: list[float]
             ) -> tuple[list[Unconfirmed], set[int]]:
    """Judge every break that is no staircase step in every launch (`_shows`, `_placed`): each
    break kept gets `confirmed_by` (and, if launches place it one size off, a bracket covering
    them: `_covering`) in `marked`. Returns the breaks refused and their indices.

    A side that holds fewer than ANALYSIS.confirm_min_side of a launch's sizes may be widened into the
    next regime out only across a break that is not a switch (`_sides`): first no side is
    widened, and a break that launches can judge this way is kept or refused; then, repeatedly,
    sides are widened across the breaks refused and the breaks still undecided, until nothing
    changes. A side reaching across a switch would judge two switches at once (a launch of powers
    of two judging a bend at 6144..8192 B from 512..4096 B, across the eager-to-rendezvous jump at
    4096 B). With several launches a break that no launch can judge in the end is no switch:
    nothing says the launches agree on it."""
    if len(launches) <= 1:
        return [], set()
    candidates = [k for k, b in enumerate(marked) if not b.periodic]
    steps = {k for k, b in enumerate(marked) if b.periodic}
    state: dict[int, bool] = {}               # k -> shown by every launch that can judge it
    verdicts: dict[int, tuple[tuple[int, ...], int, list[tuple[int, int]]]] = {}
    for round_no in range(2 * len(candidates) + 2):
        open_ = steps if round_no == 0 else steps | {k for k in candidates if not state.get(k, False)}
        changed = False
        for k in candidates:
            if state.get(k) is False:
                continue
            sides = {n: _sides(x, bounds, k, own, slopes, open_) for n, own in launches.items()}
            shown = {n: _shows(marked[k], own, level, *sides[n]) for n, own in launches.items()}
            checked = [n for n, v in shown.items() if v is not None]
            if not checked:
                continue
            placed = {n: _placed(marked[k], launches[n], level, *sides[n]) for n in checked if not shown[n]}
            missing = tuple(n for n in checked if not shown[n] and placed[n] is None)
            verdicts[k] = (missing, len(checked), [p for p in placed.values() if p is not None])
            if state.get(k) != (not missing):
                state[k], changed = not missing, True
        if round_no > 0 and not changed:
            break
    unconfirmed, dropped = [], set()
    for k in candidates:
        missing, checked, places = verdicts.get(k, ((), 0, []))
        if state.get(k):
            marked[k] = replace(_covering(marked[k], places, checked), confirmed_by=checked)
        else:
            unconfirmed.append(Unconfirmed(marked[k], missing, checked))
            dropped.add(k)
    return unconfirmed, dropped


def _covering(sw: Switch, places: list[tuple[int, int]], judged: int) -> Switch:
    """`sw` placed where its launches place it: the launches that showed it at its bracket there
    (at its size), the others one size off (`_placed`, at the middle of their two sizes); the size
    is the median of those places and the bracket covers them all. A place holding the whole
    bracket is the bracket's."""
    # a launch whose own two sizes hold the whole bracket (a main launch of powers of two beside a
    # refined bracket) places it no elsewhere
    places = [(a, b) for a, b in places if not (a <= sw.bracket[0] and sw.bracket[1] <= b)]
    if not places:
        return sw
    mids = [sw.size] * (judged - len(places)) + [(a + b) / 2.0 for a, b in places]
    lo = min(sw.bracket[0], *(a for a, _ in places))
    hi = max(sw.bracket[1], *(b for _, b in places))
    return replace(sw, size=float(np.median(mids)), bracket=(lo, hi))


def _sides(x: np.ndarray, bounds: list[tuple[int, int]], k: int, own: dict[int, float],
           slopes: list[float], open_: set[int] = frozenset()
           ) -> tuple[tuple[int, int], tuple[int, int], tuple[float, float]]:
    """The size ranges a launch judges break k on, and the per-byte cost of each: the two regimes
    either side of it; where the launch measured fewer than ANALYSIS.confirm_min_side sizes in one, that
    regime and the next one out, with the outer regime's cost (a launch of powers of two beside
    a short regime of refinement sizes), but only across a break in `open_` (dropped, or a step of
    a staircase): a side reaching across a switch would judge two switches at once."""
    def span(a: int, b: int) -> tuple[int, int]:
        return int(x[bounds[a][0]]), int(x[bounds[b][1] - 1])
    (left, sl), (right, sr) = (span(k, k), slopes[k]), (span(k + 1, k + 1), slopes[k + 1])
    if k > 0 and k - 1 in open_ and sum(left[0] <= s <= left[1] for s in own) < ANALYSIS.confirm_min_side:
        left, sl = span(k - 1, k), slopes[k - 1]
    if k + 2 < len(bounds) and k + 1 in open_ \
            and sum(right[0] <= s <= right[1] for s in own) < ANALYSIS.confirm_min_side:
        right, sr = span(k + 1, k + 2), slopes[k + 2]
    return left, right, (sl, sr)


def _theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The line of the median pairwise slope and the median intercept: with three points one
    spike moves it less than least squares, with two it is the line through them."""
    i, j = np.triu_indices(len(x), 1)
    b = float(np.median((y[j] - y[i]) / (x[j] - x[i])))
    return float(np.median(y - b * x)), b


@dataclass(frozen=True)
class _Seen:
    """What points at a few sizes either side of a bracket show: log(T right / T left) at the
    bracket's upper end, and the per-byte costs left and right."""
    jump: float
    slopes: tuple[float, float]


def _carried(x: np.ndarray, y: np.ndarray, hi: int, slope: float) -> tuple[float, float]:
    """One side's T at `hi` and its per-byte cost: the median of its points carried to `hi`
    along its Theil-Sen slope (one spike among three or four points decides nothing), or, with
    two points, along the launch-level regime's `slope` (two sizes a few bytes apart have no
    slope worth the name, and one of two points would decide it)."""
    b = _theil_sen(x, y)[1]
    return float(np.median(y + (b if len(x) > 2 else slope) * (hi - x))), b


def _local(xl: np.ndarray, yl: np.ndarray, xr: np.ndarray, yr: np.ndarray, hi: int,
           slopes: tuple[float, float]) -> _Seen | None:
    """The break a few points either side of it show: log(T right / T left) at `hi` (relative,
    so an offset of the whole launch cancels) and the two per-byte costs (`_carried`)."""
    (left, bl), (right, br) = _carried(xl, yl, hi, slopes[0]), _carried(xr, yr, hi, slopes[1])
    if not (left > 0 and right > 0):
        return None
    return _Seen(math.log(right / left), (bl, br))


def _clear(seen: _Seen, hi: int, t: float) -> tuple[bool, bool]:
    """Whether launch-level points show a break clearly by its jump, and by its per-byte cost
    (a ratio of ANALYSIS.direction_ratio whose difference moves T (`t` at `hi`) by ANALYSIS.direction_jump over
    `hi` bytes: the slopes of a flat stretch of tiny messages are noise)."""
    bl, br = seen.slopes
    by_jump = abs(seen.jump) >= math.log1p(ANALYSIS.direction_jump)
    by_slope = bl > 0 and br > 0 and abs(math.log(br / bl)) >= math.log(ANALYSIS.direction_ratio) \
        and abs(br - bl) * hi >= ANALYSIS.direction_jump * t
    return by_jump, by_slope


def _near(sw: Switch, own: dict[int, float], level: dict[int, float], left: tuple[int, int],
          right: tuple[int, int]) -> tuple[list[int], list[int]]:
    """A launch's sizes on each side of `sw` it may judge it from: inside the side's size range
    (`_sides`), not a launch-level spike, less than ANALYSIS.judge_span-fold from the bracket; none on a
    side whose nearest size is further than ANALYSIS.judge_reach-fold."""
    lo, hi = sw.bracket
    xl = [s for s in sorted(own) if s in level and left[0] <= s <= left[1] and s * ANALYSIS.judge_span > lo]
    xr = [s for s in sorted(own) if s in level and right[0] <= s <= right[1] and s < ANALYSIS.judge_span * hi]
    reach = ANALYSIS.judge_reach
    return ([] if not xl or xl[-1] * reach < lo else xl), ([] if not xr or xr[0] > reach * hi else xr)


def _shows(sw: Switch, own: dict[int, float], level: dict[int, float],
           left: tuple[int, int], right: tuple[int, int], slopes: tuple[float, float]) -> bool | None:
    """Does one launch (its medians by size, `own`) show the launch-level break `sw` between the
    regimes over `left` and `right` (size ranges; `_sides`)? None when it cannot judge: fewer than
    ANALYSIS.confirm_min_side of its sizes on a side, or the launch-level points at its sizes show no
    clear break. Shown: ANALYSIS.show_share of the launch-level jump, or of the launch-level change of
    the per-byte cost, the same way."""
    hi = sw.bracket[1]
    xl, xr = _near(sw, own, level, left, right)
    xl, xr = xl[-ANALYSIS.confirm_near:], xr[:ANALYSIS.confirm_near]
    if len(xl) < ANALYSIS.confirm_min_side or len(xr) < ANALYSIS.confirm_min_side:
        return None
    XL, XR = np.array(xl, float), np.array(xr, float)
    LL, LR = np.array([level[s] for s in xl]), np.array([level[s] for s in xr])
    ref = _local(XL, LL, XR, LR, hi, slopes)
    if ref is None:
        return None
    by_jump, by_slope = _clear(ref, hi, math.sqrt(LL[-1] * LR[0]))
    if not (by_jump or by_slope):
        return None
    alone = _local(XL, np.array([own[s] for s in xl]), XR, np.array([own[s] for s in xr]), hi, slopes)
    if by_jump and alone is not None and alone.jump * ref.jump > 0 \
            and abs(alone.jump) >= ANALYSIS.show_share * abs(ref.jump):
        return True
    if alone is None:
        return False
    # A launch in another mode (Open MPI's fast launches) shows the same switch another way: a
    # jump of its own far larger than the launch-level break, whatever its sign.
    if abs(alone.jump) >= max(ANALYSIS.other_mode * abs(ref.jump), math.log(ANALYSIS.other_mode_jump)):
        return True
    # Or it changes mode at the bracket: its own jump of other_mode_jump-fold, either way, and its
    # offset from the launch-level points other_mode_jump-fold larger on one side than on the
    # other (a fast launch up to the eager limit and not beyond). Judged against its own mode,
    # such a launch needs no more than a clear jump the same way as the launch-level break
    # (direction_ratio-fold): a launch slow below the limit only jumps by far less than the
    # others (the Open MPI runs of docs/models.md, step 6).
    off = [float(np.median(np.log([own[s] / level[s] for s in side]))) for side in (xl, xr)]
    if abs(off[1] - off[0]) >= math.log(ANALYSIS.other_mode_jump) and (
            abs(alone.jump) >= math.log(ANALYSIS.other_mode_jump)
            or (alone.jump * ref.jump > 0 and abs(alone.jump) >= math.log(ANALYSIS.direction_ratio))):
        return True
    bl, br = alone.slopes
    r = math.log(ref.slopes[1] / ref.slopes[0]) if by_slope else 0.0
    return by_slope and bl > 0 and br > 0 and math.log(br / bl) * r > 0 \
        and abs(math.log(br / bl)) >= ANALYSIS.show_share * abs(r)


def _placed(sw: Switch, own: dict[int, float], level: dict[int, float],
            left: tuple[int, int], right: tuple[int, int], slopes: tuple[float, float]
            ) -> tuple[int, int] | None:
    """Where a launch that does not show `sw` at its bracket (`_shows` False) places the same
    break one of its own measured sizes to either side: its two sizes around the place, or None.
    Only for a launch-level jump of ANALYSIS.placed_jump-fold or more; the launch's jump there must have
    ANALYSIS.show_share of it, the same way, judged as in `_shows` (sides of ANALYSIS.confirm_min_side sizes at
    least, T carried to the place), and the place within ANALYSIS.judge_reach of the bracket."""
    hi = sw.bracket[1]
    al, ar = _near(sw, own, level, left, right)
    xl, xr = al[-ANALYSIS.confirm_near:], ar[:ANALYSIS.confirm_near]
    if len(xl) < ANALYSIS.confirm_min_side or len(xr) < ANALYSIS.confirm_min_side:
        return None
    ref = _local(np.array(xl, float), np.array([level[s] for s in xl]),
                 np.array(xr, float), np.array([level[s] for s in xr]), hi, slopes)
    if ref is None or abs(ref.jump) < math.log(ANALYSIS.placed_jump):
        return None
    for pl, pr in ((al + ar[:1], ar[1:]), (al[:-1], al[-1:] + ar)):   # one size later, earlier
        pl, pr = pl[-ANALYSIS.confirm_near:], pr[:ANALYSIS.confirm_near]
        if len(pl) < ANALYSIS.confirm_min_side or len(pr) < ANALYSIS.confirm_min_side:
            continue
        seen = _local(np.array(pl, float), np.array([own[s] for s in pl]),
                      np.array(pr, float), np.array([own[s] for s in pr]), pr[0], slopes)
        if seen is not None and seen.jump * ref.jump > 0 and abs(seen.jump) >= ANALYSIS.show_share * abs(ref.jump):
            # the place: of the launch's sizes around the shifted split, the two consecutive ones
            # its T jumps most between, the same way (a side of two points carried to the split
            # shows a jump one size early)
            near = [pl[-1], *pr[:2]]
            steps = [math.log(own[b] / own[a]) * math.copysign(1.0, ref.jump) for a, b in zip(near, near[1:])]
            i = int(np.argmax(steps))
            # a place as far from the bracket as a launch may judge from at all says nothing
            if near[i] * ANALYSIS.judge_reach >= sw.bracket[0] and near[i + 1] <= ANALYSIS.judge_reach * hi:
                return near[i], near[i + 1]
    return None


def _repeat_spread(pts: Sequence[Measured]) -> tuple[float | None, float | None]:
    """How far the launches of one size disagree (a launch-level point's launch medians, or
    sizes measured more than once before launches were tagged), next to what their own CIs
    claim: the honest check of launch-to-launch noise, which no within-launch CI sees."""
    groups: list[list[Measured]] = [list(p.points) for p in pts if len(getattr(p, "points", ())) > 1]
    by: dict[int, list[Measured]] = {}
    for p in pts:
        if len(getattr(p, "points", ())) <= 1:   # one launch's measurement
            by.setdefault(p.size, []).append(p)
    groups += [g for g in by.values() if len(g) > 1]
    spread, ci = [], []
    for group in groups:
        m = [p.median for p in group]
        spread.append(max(m) / min(m) - 1 if min(m) > 0 else math.inf)
        ci.extend(2 * sigma(p) * Z95 / p.median for p in group if p.median > 0)
    if not spread:
        return None, None
    return float(np.median(spread)), float(np.median(ci))


def sizes_to_refine(report: SwitchReport, measured: set[int], tolerance: float = ANALYSIS.refine_tolerance,
                    per_gap: int = ANALYSIS.refine_per_gap, remeasure_ends: bool = True) -> list[int]:
    """New sizes inside each switch bracket still wider than `tolerance` of the
    switch size: `per_gap` sizes evenly spaced (geometrically for wide
    brackets), so each round shrinks the bracket about (per_gap + 1)-fold, and
    one size in the middle of each neighbouring gap: with sparse sizes a size
    that several launches measured at different levels weighs little, and the
    launch-level break can sit one gap off the real one.

    With `remeasure_ends` the bracket's two ends are measured again in the
    same batch: a new launch can sit at a slightly different level (placement,
    clock), and a batch that straddles the switch on its own keeps such an
    offset from looking like a break of its own."""
    new: set[int] = set()
    sizes = sorted(measured)
    for sw in report.switches:
        lo, hi = sw.bracket
        if sw.burst or hi - lo <= max(tolerance * hi, 1):  # a burst moves with the pace: no place to find
            continue
        spaced = np.geomspace if lo > 0 and hi / lo > ANALYSIS.refine_geometric else np.linspace
        cand = spaced(lo, hi, per_gap + 2)[1:-1]
        inner = {int(round(c)) for c in cand if lo < round(c) < hi} - measured
        before, after = [v for v in sizes if v < lo], [v for v in sizes if v > hi]
        beside = {(before[-1] + lo) // 2 if before else lo, (hi + after[0]) // 2 if after else hi} - measured
        if inner:
            new |= inner | beside | ({lo, hi} if remeasure_ends else set())
    return sorted(new)


def refine(measure: Callable[[list[int]], list[Measured]], initial_points: Sequence[Measured],
           tolerance: float = ANALYSIS.refine_tolerance, max_rounds: int = ANALYSIS.refine_max_rounds,
           per_gap: int = ANALYSIS.refine_per_gap, clock: Clock | None = None, penalty: float = ANALYSIS.penalty,
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
