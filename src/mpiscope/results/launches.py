"""Launch-level numbers: a point measured in several launches, summarised with an interval that
holds across launches; its modes; how many launches and samples it needs (docs/statistics.md).

One launch's samples say how precisely that launch measured its point; they say nothing about
the next launch, whose median may sit elsewhere (placement, page layout, a daemon, the clock).
The launch is therefore the unit of evidence: each launch contributes one estimate (its median),
and the point's estimate and 95 % interval come from the launch medians (a random-effects model
on the log scale: launch medians are log-normal around the point's typical time, each with its
own sampling error). The variance of one launch's estimate splits into a within-launch part (its
own sampling error, from its interval) and a between-launch part (the rest).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence

import numpy as np
from scipy import special

from mpiscope.records import Point
from mpiscope.results.location import interval_rows, t_quantile
from mpiscope.results.points import LAUNCH_TAGS, Drift, configuration_of, disturbed_of, drifts_kept, launch_of
from mpiscope.results.policy import POLICY

__all__ = ["LAUNCH_TAGS", "Drift", "configuration_of", "drifts_kept", "launch_of"]  # defined with the records

# Names of the policy's constants as this module's code reads them (values and evidence:
# `mpiscope.results.policy`).
Z95 = POLICY.z95
MIN_LAUNCHES = POLICY.min_launches
CI_TARGET_MIN, CI_TARGET_MAX = POLICY.ci_target_min, POLICY.ci_target_max


@dataclass(frozen=True)
class Mode:
    """One level that launches fell into: its typical time (µs) and the share of launches."""
    median: float
    share: float
    launches: int


@dataclass(frozen=True)
class LaunchPoint:
    """A point over its launches, read by the analysis as one measurement (`Measured`): `median`
    is the launch-level estimate, `ci_low`/`ci_high` its 95 % interval, `n` the launches."""
    benchmark: str
    size: int
    ranks: int
    variant: str | None
    median: float
    ci_low: float | None
    ci_high: float | None
    launch_medians: tuple[float, ...]
    within_var: float = float("nan")   # variance of one launch's log estimate from its own sampling
    between_var: float = float("nan")  # variance of the launch effect, log scale
    modes: tuple[Mode, ...] = ()
    config: tuple[tuple[str, Hashable], ...] = ()
    drift: Drift | None = None  # the run-to-run drift the interval includes (`with_drift`)
    own_ci: tuple[float, float] | None = None  # with a drift: the interval over the launches alone
    # the estimate of the launches whose machine-state control switched, where the interval was
    # widened to cover it (`with_other_state`): what another run in that state may read; and the
    # interval before (this run's state alone)
    other_state: float | None = None
    state_ci: tuple[float, float] | None = None
    # measured in one state of the machine only (results.states): a state this run did not meet
    # that earlier runs on the machine did, or the point left out where the run's state switched;
    # its description; the interval holds for that one state
    unmet_state: str = ""
    points: tuple[Point, ...] = field(default=(), repr=False)  # the launches' own records
    samples: tuple[float, ...] = field(default=(), repr=False)
    disturbed: tuple[str, ...] = ()  # the causes of the launches left out as disturbed
    busy: str = ""  # most launches disturbed: the commonest cause, and no usable interval

    @property
    def n(self) -> int:
        return len(self.launch_medians)

    @property
    def launches(self) -> int:
        return len(self.launch_medians)

    @property
    def single_launch(self) -> bool:
        """One launch only: the interval is that launch's own and says nothing of the next."""
        return self.launches == 1

    @property
    def launch_ci(self) -> tuple[float | None, float | None]:
        """The 95 % interval over this run's launches alone: what more launches narrow, without
        the drift from run to run that `ci_low`/`ci_high` include (what another run may see)."""
        return self.own_ci if self.own_ci is not None else (self.ci_low, self.ci_high)

    @property
    def launch_half_width_rel(self) -> float:
        """The half-width of `launch_ci` relative to the estimate (what the launch target applies to)."""
        low, high = self.launch_ci
        return (high - low) / 2 / self.median if low is not None and high is not None and self.median else float("nan")

    @property
    def share_between(self) -> float:
        """The share of one launch's variance that lies between launches (nan with one launch)."""
        total = self.within_var + self.between_var
        return self.between_var / total if total > 0 else float("nan")

    @property
    def launch_var(self) -> float:
        """The variance of one launch's log estimate, within + between (nan with one launch):
        what the interval and the planning use."""
        if self.launches < 2:
            return float("nan")
        var = float(np.var(np.log(self.launch_medians), ddof=1))
        return max(var, self.within_var) if np.isfinite(self.within_var) else var

    @property
    def half_width_rel(self) -> float:
        """The interval's half-width relative to the estimate."""
        if self.ci_low is None or self.ci_high is None or not self.median:
            return float("nan")
        return (self.ci_high - self.ci_low) / 2 / self.median

    @property
    def key(self) -> tuple[str, int, int, str | None]:
        return (self.benchmark, self.size, self.ranks, self.variant)

    @property
    def tag(self) -> Mapping[str, Any]:
        return dict(self.config)


_TIME_US, _MEDIAN, _CI_LOW, _CI_HIGH = map(attrgetter, ("time_us", "median", "ci_low", "ci_high"))


def _log_se(points: Sequence[Point]) -> np.ndarray:
    """Each launch's standard error of log(median) from its own 95 % interval (nan where it has
    none), for all launches at once."""
    stats = list(map(_TIME_US, points))  # attributes read in C: a point of 10,000 launches
    median = np.array([m or 0.0 for m in map(_MEDIAN, stats)])  # None and 0 have no error; a nan median keeps it
    low = np.array(list(map(_CI_LOW, stats)), float)      # None is nan: no interval
    high = np.array(list(map(_CI_HIGH, stats)), float)
    has = (median != 0) & (low > 0) & (high >= low)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(has, np.log(high / low) / (2 * Z95), np.nan)


def _within(se: np.ndarray) -> np.ndarray:
    """Each row's mean squared log-SE (`_log_se`, points x launches) over the launches that have
    an interval (nan when none has); a row with a launch without one alone, over the others."""
    out = (se ** 2).mean(axis=1)
    has = np.isfinite(se)
    for r in np.flatnonzero(~has.all(axis=1)):
        mine = se[r][has[r]]
        out[r] = np.mean(mine ** 2) if len(mine) else np.nan
    return out


def simulated_tolerance_us(median: float) -> float:
    """How far apart two figures of a simulated point may be and still be one figure: SimGrid's
    rounding, or a part per million of the point (POLICY.simulated_*)."""
    return max(POLICY.simulated_agree * abs(median), POLICY.simulated_tick_us)


def launch_summary(points: list[Point], level: float = POLICY.level,
                   disturbed: Callable[[Point], str] = disturbed_of) -> LaunchPoint:
    """One point from its launches' records (one record per launch, all of one key). Launches
    without a positive median are left out; none left is a ValueError. Disturbed launches (a
    cause from `disturbed`) are kept in `disturbed` and left out of the estimate, unless more than
    POLICY.busy_share of the launches are: then all count and `busy` names the cause.

    Estimate: the geometric mean of the launch medians without wild launches
    (`location.robust_interval`). Interval: Student's t with L-1 degrees of freedom over the log
    launch medians kept (exact when they are normal, whatever the split of their variance into
    within and between). One launch: its own interval."""
    # a point's estimate: its median, or an imported point's own figure (Point.estimate)
    kept = [(p, m) for p in points for m in [p.median] if m is not None and m > 0]  # each median read once
    return _summary(kept, level, disturbed)


def _summary(kept: list[tuple[Point, float]], level: float, disturbed: Callable[[Point], str]) -> LaunchPoint:
    """`launch_summary` of the launches with a positive estimate, each beside it."""
    return _summaries([kept], level, disturbed)[0]


Kept = tuple[list[Point], list[float], tuple[str, ...], str]  # the launches counted, their estimates, causes, busy


def _left_in(kept: list[tuple[Point, float]], disturbed: Callable[[Point], str]) -> Kept:
    """The launches a point's estimate counts: without the disturbed ones, unless most are."""
    if not kept:
        raise ValueError("no launch has a positive median")
    causes = list(map(disturbed, [p for p, _ in kept]))
    bad = tuple(c for c in causes if c)
    busy = ""
    if bad and len(bad) > POLICY.busy_share * len(kept):
        # the commonest cause; on a tie the first launch's (most_common keeps first-seen order)
        busy = Counter(bad).most_common(1)[0][0]
    elif bad:
        kept = [k for k, c in zip(kept, causes) if not c]
    return [p for p, _ in kept], [m for _, m in kept], bad, busy


def _summaries(groups: Sequence[list[tuple[Point, float]]], level: float, disturbed: Callable[[Point], str]
               ) -> list[LaunchPoint]:
    """`_summary` of many points: the arithmetic of the points counting the same number of
    launches done together, each numpy call once for all of them (a run's hundred points, not a
    hundred calls each: on arrays of three launches the calls, not the sums, cost)."""
    ready = [_left_in(kept, disturbed) for kept in groups]
    by_count: dict[int, list[int]] = defaultdict(list)
    for i, (points, *_) in enumerate(ready):
        by_count[len(points)].append(i)
    out: list[LaunchPoint] = [None] * len(ready)  # type: ignore[list-item]  # every one set below
    for count, idx in by_count.items():
        for i, lp in zip(idx, _same_count([ready[i] for i in idx], count, level)):
            out[i] = lp
    return out


def _same_count(points: list[Kept], launches: int, level: float) -> list[LaunchPoint]:
    """The LaunchPoints of points that each count `launches` launches (`_summaries`)."""
    med = np.array([m for _, ms, _, _ in points for m in ms], float).reshape(len(points), launches)
    within = _within(_log_se([p for ps, _, _, _ in points for p in ps]).reshape(len(points), launches)).tolist()
    if launches == 1:
        return [LaunchPoint(first.benchmark, first.size, first.ranks, first.variant, float(m[0]),
                            first.time_us.ci_low, first.time_us.ci_high, (float(m[0]),), within_var=w,
                            config=configuration_of(first), points=tuple(ps), samples=first.samples_us,
                            disturbed=bad, busy=busy)
                for (ps, m, bad, busy), w in zip(points, within) for first in ps[:1]]
    logs = np.log(med)
    var = logs.var(axis=1, ddof=1).tolist()
    # identical medians (a coarse timer) would give a zero-width interval: their own error instead
    centre, half, _ = interval_rows(logs, np.array(within), level)
    estimate, low, high = np.exp(centre).tolist(), np.exp(centre - half).tolist(), np.exp(centre + half).tolist()
    out = []
    for r, (ps, ms, bad, busy) in enumerate(points):
        first, w, medians = ps[0], within[r], tuple(map(float, ms))
        if getattr(first, "host_s", None) is not None and np.ptp(med[r]) <= simulated_tolerance_us(medians[0]):
            # a simulated launch repeated to the last digit: the next says nothing new, so the
            # interval is one launch's own (Student's t on 1 degree of freedom would widen it 6 x)
            out.append(LaunchPoint(first.benchmark, first.size, first.ranks, first.variant, medians[0],
                                   first.time_us.ci_low, first.time_us.ci_high, medians, within_var=w,
                                   between_var=0.0, config=configuration_of(first), points=tuple(ps), disturbed=bad,
                                   busy=busy))
            continue
        between = max(0.0, var[r] - w) if math.isfinite(w) else math.nan
        out.append(LaunchPoint(first.benchmark, first.size, first.ranks, first.variant, estimate[r], low[r], high[r],
                               medians, within_var=w, between_var=between, modes=find_modes(medians, w),
                               config=configuration_of(first), points=tuple(ps), disturbed=bad, busy=busy))
    return out


# --- runs: drift beyond the launches ---------------------------------------------------------

def log_se(lp: LaunchPoint, level: float = POLICY.level) -> float:
    """The standard error of log(estimate) over the launches, read off the launch-level interval
    (nan with one launch or no interval)."""
    if lp.launches < 2 or not lp.ci_low or not lp.ci_high or lp.ci_low <= 0:
        return float("nan")
    return math.log(lp.ci_high / lp.ci_low) / 2 / t_quantile(lp.launches - 1, 0.5 + level / 2)


def drift_between_runs(runs: Sequence[LaunchPoint]) -> Drift | None:
    """The run-to-run drift of one point from its launch-level estimates in several runs of one
    configuration: the variance of their log estimates less the mean of their own squared
    standard errors (method of moments, at least 0). None with fewer than POLICY.drift_min_runs runs of
    two or more launches. Its `levels`: the levels the runs fell into, by the criteria of the
    launches' modes (`find_modes`, runs in place of launches)."""
    lps = [lp for lp in runs if lp.launches >= 2 and np.isfinite(log_se(lp))]
    if len(lps) < POLICY.drift_min_runs:
        return None
    y = np.log([lp.median for lp in lps])
    se2 = np.array([log_se(lp) for lp in lps]) ** 2
    levels = find_modes([lp.median for lp in lps], float(se2.mean()))
    return Drift(max(0.0, float(y.var(ddof=1) - se2.mean())), len(lps),
                 tuple((m.median, m.share, m.launches) for m in levels))


PRIOR_DRIFT = Drift(POLICY.prior_drift_sd ** 2, 0, prior=True)


def with_drift(lp: LaunchPoint, drift: Drift | None, level: float = POLICY.level) -> LaunchPoint:
    """`lp` with an interval that holds from run to run: the run's estimate, its standard error
    over launches combined with the run-to-run drift, t quantile at Satterthwaite's degrees of
    freedom (launches - 1 for the first part, runs - 1 for a learnt drift, none lost for the
    prior, which is stated, not estimated), and never narrower than the launches' own interval
    (the two parts' degrees of freedom add up, so a small drift could otherwise narrow it).
    Unchanged with one launch or no drift."""
    se = log_se(lp, level)
    if drift is None or not np.isfinite(se) or (drift.runs < 2 and not drift.prior):
        return lp
    a, b = se ** 2, drift.var
    total = a + b
    drift_term = 0.0 if drift.prior else b ** 2 / (drift.runs - 1)
    spread = a ** 2 / (lp.launches - 1) + drift_term
    # launches that agree to the last digit under the stated prior drift: no degree of freedom is lost
    dof = (total ** 2 / spread if spread > 0 else np.inf) if total > 0 else lp.launches - 1
    centre = np.log(lp.median)
    half = max(t_quantile(dof, 0.5 + level / 2) * np.sqrt(total), np.log(lp.ci_high) - centre,
               centre - np.log(lp.ci_low))
    return replace(lp, ci_low=float(np.exp(centre - half)), ci_high=float(np.exp(centre + half)), drift=drift,
                   own_ci=lp.launch_ci)


def with_other_state(lp: LaunchPoint, switched: Sequence[bool]) -> LaunchPoint:
    """`lp`, whose interval already holds from run to run (`with_drift`), widened to also cover the
    other state of the machine this run met: the median of the launches whose machine-state control
    switched (`switched`, one flag per launch of `lp.points`; results.control), with the interval's
    own reach either side of it. The drift is learnt from runs of one state and the launches of a
    run mostly share one, so a next run in the other state fell outside 17 of 39 such intervals
    here; that state's own launches predicted it (docs/statistics.md, "The machine-state control").
    Unchanged without a drift, when no launch or every launch switched, or when the interval
    already holds that reach; a point the switch did not move widens by its own small shift."""
    flags = np.asarray(switched, bool)
    if lp.drift is None or len(flags) != lp.launches or not flags.any() or flags.all() or not lp.ci_low:
        return lp
    centre, other = np.log(lp.median), float(np.median(np.log(np.asarray(lp.launch_medians)[flags])))
    # a next run in that state reads its estimate give or take what a run in this one does: the
    # union of the two (covering only the estimate itself left 9 of 56 next runs outside)
    low = min(lp.ci_low, float(np.exp(other - (centre - np.log(lp.ci_low)))))
    high = max(lp.ci_high, float(np.exp(other + (np.log(lp.ci_high) - centre))))
    if (low, high) == (lp.ci_low, lp.ci_high):
        return lp
    return replace(lp, ci_low=low, ci_high=high, other_state=float(np.exp(other)), state_ci=(lp.ci_low, lp.ci_high))


# --- modes -------------------------------------------------------------------------------

def _ss(x: np.ndarray) -> float:
    return float(((x - x.mean()) ** 2).sum())


def _best_split(x: np.ndarray, parts: int) -> list[np.ndarray]:
    """The split of sorted `x` into `parts` (2 or 3) runs of at least POLICY.mode_min_launches each with
    the least within-level sum of squares ([] when none is allowed), by prefix sums; of equal
    splits the first in (first cut, second cut) order, as an exhaustive search finds it."""
    m, L = POLICY.mode_min_launches, len(x)
    if L < parts * m:
        return []
    c = x - x.mean()
    s1, s2 = np.concatenate([[0.0], np.cumsum(c)]), np.concatenate([[0.0], np.cumsum(c ** 2)])

    def ss(a, b):
        return s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / (b - a)
    if parts == 2:
        i = np.arange(m, L - m + 1)
        return np.split(x, [int(i[np.argmin(ss(0, i) + ss(i, L))])])
    cuts = np.arange(L + 1)
    head, tail = ss(0, np.maximum(cuts, 1)), ss(np.minimum(cuts, L - 1), L)
    first = np.arange(m, L - 2 * m + 1)
    second, total = _second_cuts(first, L - m, lambda i, j: head[i] + ss(i, j) + tail[j])
    k = int(np.argmin(total))
    return np.split(x, [int(first[k]), int(second[k])])


def _second_cuts(first: np.ndarray, last: int, cost: Callable[[np.ndarray, np.ndarray], np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """For each first cut i (ascending), the first second cut j in [i + m, last] of least
    `cost(i, j)`, and that cost. Sums of squares over sorted values obey the quadrangle
    inequality, so the best second cut never moves left as the first moves right: each first cut
    in the middle of a range bounds the second cuts of the first cuts on either side (divide and
    conquer, one level at a time, each level one pass over about L pairs): L log L pairs, not
    the L^2 / 2 of trying them all (a point of 10,000 launches)."""
    m = POLICY.mode_min_launches
    n = len(first)
    best, cost_of = np.zeros(n, dtype=np.int64), np.zeros(n)
    # ranges of first cuts still to place [lo, hi) and the second cuts they may take [jlo, jhi]
    lo, hi = np.array([0]), np.array([n])
    jlo, jhi = np.array([first[0] + m]), np.array([last])
    while len(lo):
        mid = (lo + hi) // 2
        i = first[mid]
        start, stop = np.maximum(jlo, i + m), jhi
        lengths = stop - start + 1
        seg = np.repeat(np.arange(len(mid)), lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        j = start[seg] + np.arange(len(seg)) - offsets[seg]
        total = cost(i[seg], j)
        least = np.minimum.reduceat(total, offsets)
        hits = np.flatnonzero(total == least[seg])
        at = hits[np.unique(seg[hits], return_index=True)[1]]  # each range's first least pair
        cut = best[mid] = j[at]
        cost_of[mid] = total[at]
        left, right = lo < mid, mid + 1 < hi
        lo, hi = np.concatenate([lo[left], mid[right] + 1]), np.concatenate([mid[left], hi[right]])
        jlo, jhi = np.concatenate([jlo[left], cut[right]]), np.concatenate([cut[left], jhi[right]])
    return best, cost_of


def _levels_hold(x: np.ndarray, levels: list[np.ndarray], within_var: float) -> bool:
    """Whether `levels` (a split of sorted `x`) are distinct levels by the criteria above."""
    if not levels:
        return False
    table = POLICY.mode_max_r2 if len(levels) == 2 else POLICY.mode_max_r3
    total = _ss(x)
    if total <= 0 or sum(_ss(lv) for lv in levels) / total > table.get(len(x), table[max(table)]):
        return False
    gap_se = np.sqrt(2 * within_var) if np.isfinite(within_var) else 0.0
    return all(hi.mean() - lo.mean() >= np.log(POLICY.mode_min_ratio)
               and hi[0] - lo[-1] > POLICY.mode_min_gap_se * gap_se
               for lo, hi in zip(levels, levels[1:]))


def find_modes(medians: Sequence[float], within_var: float = 0.0) -> tuple[Mode, ...]:
    """The levels that launch medians fall into, fastest first, or () when they form one level.
    Two levels are tried first, and a level that holds two levels by the same criteria is split
    again; when no two-level split holds, three levels at once (three equal levels defeat any
    split into two). At most POLICY.mode_max_levels. `within_var`: the launches' own log-scale sampling
    variance."""
    positive = [m for m in medians if m > 0]
    if len(positive) < 2 * POLICY.mode_min_launches:  # no split into two levels is allowed, nor three
        return ()
    x = np.sort(np.log(np.asarray(positive, float)))
    levels = _best_split(x, 2)
    if _levels_hold(x, levels, within_var):
        for j, lv in enumerate(levels):
            sub = _best_split(lv, 2)
            if len(levels) < POLICY.mode_max_levels and _levels_hold(lv, sub, within_var):
                levels[j:j + 1] = sub
                break
    else:
        levels = _best_split(x, 3)
        if not _levels_hold(x, levels, within_var):
            return ()
    return tuple(Mode(float(np.exp(lv.mean())), len(lv) / len(x), len(lv)) for lv in levels)


# --- heterogeneity and planning ----------------------------------------------------------

def heterogeneity_p(lp: LaunchPoint) -> float:
    """p-value of Cochran's Q: do the launches differ by more than their own sampling error says?
    nan with one launch, or when a launch has no interval."""
    se = _log_se(lp.points)
    if lp.launches < 2 or len(se) != lp.launches or not (np.isfinite(se).all() and (se > 0).all()):
        return float("nan")
    y, w = np.log(lp.launch_medians), 1 / se ** 2
    q = float((w * (y - (w * y).sum() / w.sum()) ** 2).sum())
    return float(special.chdtrc(lp.launches - 1, q))


def launches_needed(lp: LaunchPoint, target_rel: float, level: float = POLICY.level, max_launches: int = 1000) -> int:
    """The launches `lp` needs for its interval's half-width to reach `target_rel` x estimate, at
    its current variance of one launch (within + between, log scale) and with the t quantile of
    that many launches; at least `lp.launches`, at most `max_launches`. With one launch the
    between-launch variance is unknown: at least MIN_LAUNCHES."""
    if not target_rel > 0:
        raise ValueError(f"target_rel must be positive, got {target_rel}")
    var = lp.within_var if lp.single_launch else lp.launch_var
    least = max(lp.launches, MIN_LAUNCHES) if lp.single_launch else lp.launches
    if not np.isfinite(var) or var <= 1e-18:
        return least
    n = np.arange(max(least, 2), max(max_launches, least) + 1)
    half = t_quantile(n - 1, 0.5 + level / 2) * np.sqrt(var / n)
    ok = np.nonzero(half <= np.log1p(target_rel))[0]
    return int(n[ok[0]]) if len(ok) else int(n[-1])


def drift_dominates(lp: LaunchPoint, drift: Drift | None) -> bool:
    """Whether more launches of this run would narrow `lp`'s interval by little: its variance
    over launches is already at most POLICY.drift_dominates of the drift from run to run, which no
    launch of this run can reduce (the half-width would shrink by under 15 %)."""
    se = log_se(lp)
    return drift is not None and drift.var > 0 and np.isfinite(se) and se ** 2 <= POLICY.drift_dominates * drift.var


def samples_per_launch(lp: LaunchPoint, launch_overhead_s: float, points_per_launch: int = 1) -> float:
    """Kalibera & Jones' optimal number of samples per launch for `lp`,
    n1* = sqrt(c2 S1^2 / (c1 S2^2)): c1 the cost of a sample (its median time), c2 the cost of a
    launch for this point (its warm-up plus its share of the launch overhead), S1^2 the per-sample
    log variance (within_var x samples), S2^2 the between-launch variance. inf when the launches
    do not differ beyond their sampling error; nan when it cannot be judged."""
    samples = np.median([p.time_us.n for p in lp.points]) if lp.points else 0
    if lp.launches < 2 or not samples or not np.isfinite(lp.within_var) or lp.within_var <= 0:
        return float("nan")
    c1 = lp.median
    warmup_us = np.median([p.warmup for p in lp.points]) * lp.median
    c2 = warmup_us + max(launch_overhead_s, 0.0) * 1e6 / max(points_per_launch, 1)
    s1 = lp.within_var * samples
    if lp.between_var <= 0:
        return float("inf")
    return float(np.sqrt(c2 * s1 / (c1 * lp.between_var)))


def engine_ci_target(lps: list[LaunchPoint], launch_overhead_s: float) -> float | None:
    """The engine's per-launch stopping target (--ci-target F, the median's 95 % CI within +-F)
    that reaches a launch-level target in the least total time: per point, the relative
    half-width its launch reaches with Kalibera & Jones' n1* samples; the median over the points,
    within [CI_TARGET_MIN, CI_TARGET_MAX]. None when no point has two launches with intervals."""
    targets = []
    for lp in lps:
        n1 = samples_per_launch(lp, launch_overhead_s, len(lps))
        if np.isnan(n1):
            continue
        samples = np.median([p.time_us.n for p in lp.points])
        targets.append(float(np.expm1(Z95 * np.sqrt(lp.within_var * samples / max(n1, 1.0)))))
    if not targets:
        return None
    return float(np.clip(np.median(targets), CI_TARGET_MIN, CI_TARGET_MAX))


# --- grouping records into launch points --------------------------------------------------

def by_launch(records: Iterable[Any]) -> dict[int, list[Point]]:
    """The measured points of each launch."""
    out: dict[int, list[Point]] = defaultdict(list)
    for r in records:
        if isinstance(r, Point) and r.median:
            out[launch_of(r)].append(r)
    return dict(sorted(out.items()))


def _aggregate(launched: Iterable[tuple[Hashable, Any]],
               disturbed: Callable[[Point], str] = disturbed_of) -> list[LaunchPoint]:
    groups: dict[tuple, dict[Hashable, tuple[Point, float]]] = {}
    # (a tag's id, rank order) -> the tag (kept, so its id stays its own) and its configuration:
    # the points of a launch share one tag
    configs: dict[tuple[int, Any], tuple[Any, tuple]] = {}
    for launch, r in launched:
        # the estimate (Point.median, read without its two properties: 300,000 points)
        if isinstance(r, Point) and (m := getattr(r.time_us, r.estimate)) is not None and m > 0:
            mine = (id(r.tag), r.order)
            config = configs.get(mine)
            if config is None:
                config = configs[mine] = (r.tag, configuration_of(r))
            groups.setdefault(((r.benchmark, r.size, r.ranks, r.variant), config[1]), {})[launch] = (r, m)
    return _summaries([[g[k] for k in sorted(g)] for g in groups.values()], POLICY.level, disturbed)


def _launched(records: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """(launch_of(r), r) of each record, the launch worked out once per tag: the points of a
    launch share one tag object (records.model), kept beside its launch so its id stays its own."""
    seen: dict[int, tuple[Any, int]] = {}
    for r in records:
        tag = getattr(r, "tag", None)
        hit = seen.get(id(tag))
        if hit is None or hit[0] is not tag:
            hit = seen[id(tag)] = (tag, launch_of(r))
        yield hit[1], r


def aggregate(records: Iterable[Any], disturbed: Callable[[Point], str] = disturbed_of) -> list[LaunchPoint]:
    """Every measured point of `records` over its launches, in the order first measured. Within a
    launch a point measured twice (a relaunch) counts once: its last record. `disturbed`: why a
    launch's record is left out of its estimate (default: the disturbance rule)."""
    return _aggregate(_launched(records), disturbed)


def aggregate_runs(runs: Sequence[Iterable[Any]], disturbed: Callable[[Point], str] = disturbed_of
                   ) -> list[LaunchPoint]:
    """The same over several runs of one configuration (a sweep's launches, RUN1,RUN2,...): every
    launch of every run is one launch."""
    return _aggregate((((i, launch), r) for i, recs in enumerate(runs) for launch, r in _launched(recs)),
                      disturbed)


def aggregate_by(records: Iterable[Any], name_of: Callable[[Any], Hashable | None]) -> dict[Hashable, list[LaunchPoint]]:
    """The points of `records` over their launches, per `name_of(record)` (None: left out), where
    a launch is a part of its run (tag `part`) and what tells configurations apart is not a tag
    value of its own: what a tune's launch forced for the point's collective."""
    by: dict[Hashable, list[tuple[Hashable, Any]]] = {}
    for r in records:
        name = name_of(r)
        if name is not None:
            by.setdefault(name, []).append((getattr(r, "tag", {}).get("part", 0), r))
    return {name: _aggregate(sorted(launched, key=lambda lr: lr[0])) for name, launched in by.items()}
