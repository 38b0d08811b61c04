"""Change points along a series of runs (docs/history.md): where a point's level moved, by how
much, since which run, and what changed with it.

Each run contributes its launch-level estimate y (log) with its standard error se over its
launches. Runs whose launches were mostly disturbed ("machine busy") and runs whose
machine-state control moved against the others' (results.control) are kept apart: shown, never
segmented. The rest are segmented by binary segmentation (ruptures) of a weighted least-squares
cost, each run weighted by 1 / (se^2 + tau^2), tau^2 the series' own run-to-run variance learnt
robustly from successive differences: a wide run counts for less, and a level that wanders from
run to run as much as it always does is no change. A candidate stands only when the results
layer's verdict (results.verdict.decide) between the runs of the segments on either side, each
run one observation, is slower or faster beyond the margin after Benjamini-Hochberg over every
candidate of the history, and when the two sides' controls do not differ as much as the change
(results.verdict.stands_across_states). The newest run alone, against the segment before it,
is the one change a single run may start ("newest run"): what a nightly job fails on."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Iterable, Sequence

import numpy as np
import ruptures
from ruptures.base import BaseCost
from scipy import special, stats

from mpiscope.results.control import RunControl, Shift, control_shift
from mpiscope.results.location import robust_location
from mpiscope.results.policy import POLICY
from mpiscope.records.run import RunView
from mpiscope.results.series import (Obs, RunSummary, Series, SeriesKey, line_up, persistent_differences,
                                     steady_facts, summarize, time_order)
from mpiscope.results.verdict import FASTER, SLOWER, Verdict, decide, stands_across_states

# the detector's parameters (values and evidence: results.policy, "history", and docs/history.md)
PENALTY_PER_LOG_RUN = POLICY.history_penalty
MIN_SEGMENT = POLICY.history_min_segment
MIN_RUNS = POLICY.history_min_runs
MIN_DRIFT_RUNS = POLICY.history_drift_runs
MAD_SIGMA = POLICY.mad_sigma


class WeightedL2(BaseCost):
    """ruptures' cost of a segment: the weighted sum of squares about its weighted mean, from
    prefix sums (the signal's columns: y, weight)."""
    model = "weighted_l2"
    min_size = MIN_SEGMENT

    def fit(self, signal: np.ndarray) -> "WeightedL2":
        self.signal = signal  # ruptures reads its length
        y, w = signal[:, 0], signal[:, 1]
        zero = np.zeros(1)
        self.w = np.concatenate([zero, np.cumsum(w)])
        self.s = np.concatenate([zero, np.cumsum(w * y)])
        self.q = np.concatenate([zero, np.cumsum(w * y * y)])
        return self

    def error(self, start: int, end: int) -> float:
        w = self.w[end] - self.w[start]
        s = self.s[end] - self.s[start]
        return float(self.q[end] - self.q[start] - s * s / w) if w > 0 else 0.0

    def errors(self, start: np.ndarray | int, end: np.ndarray | int) -> np.ndarray:
        """`error` of many segments at once, the same arithmetic in the same order."""
        w = self.w[end] - self.w[start]
        s = self.s[end] - self.s[start]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(w > 0, self.q[end] - self.q[start] - s * s / w, 0.0)


class Binseg(ruptures.Binseg):
    """ruptures' binary segmentation, its split of a segment found for every position at once
    from the cost's prefix sums: ruptures' own loop calls the cost once per position in Python,
    which dominated a history of thousands of runs. Same gains, same choice (the largest gain,
    the later position on a tie)."""

    @lru_cache(maxsize=None)
    def single_bkp(self, start: int, end: int) -> tuple[int | None, float]:
        first, last = start + self.min_size, end - self.min_size
        if first > last:
            return None, 0
        bkps = np.arange(first, last + 1)
        cost = self.cost
        gains = cost.errors(start, end) - cost.errors(start, bkps) - cost.errors(bkps, end)
        best = len(gains) - 1 - int(np.argmax(gains[::-1]))
        return int(bkps[best]), float(gains[best])


@dataclass(frozen=True)
class Change:
    """A change point: the first run of the new level, the verdict between the two sides (ratio
    after / before with its 95 % interval) and what changed in the runs' contexts with it."""
    at: int                  # index in the series of the first run after
    run: str
    date: str
    verdict: Verdict
    before: int              # clean runs on either side
    after: int
    changed: tuple[str, ...] = ()
    varying: int = 0         # facts that differ between the two runs but vary within a side
    newest: bool = False     # the newest run alone against the level before it
    p: float = math.nan      # unadjusted; the verdict is decided on the adjusted one
    measured_from: str = ""  # the first clean run after, when `run` is a run kept apart where the facts changed

    @property
    def slower(self) -> bool:
        return self.verdict.verdict == SLOWER


@dataclass(frozen=True)
class Segment:
    """Runs [start, end) of a series (indices) and their level: the weighted geometric mean, µs."""
    start: int
    end: int
    level: float


@dataclass
class History:
    """One series with what the history found: each run's flag ("" clean, else why it is kept
    apart), the segments' levels, the change points, and the candidates the machine's state explains."""
    series: Series
    flags: list[str]
    segments: list[Segment] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    state_notes: list[str] = field(default_factory=list)
    drift_sd: float = math.nan

    @property
    def obs(self) -> list[Obs]:
        return self.series.obs


def drift_variance(y: np.ndarray, se: np.ndarray) -> float:
    """tau^2, the run-to-run variance beyond each run's own: half the robust variance of successive
    differences (a step moves one difference only) less the runs' typical own variance; the
    policy's prior with too few runs."""
    if len(y) < MIN_DRIFT_RUNS:
        return POLICY.prior_drift_sd ** 2
    d = np.diff(y)
    var = (MAD_SIGMA * float(np.median(np.abs(d)))) ** 2 / 2
    own = float(np.nanmedian(se ** 2)) if np.isfinite(se).any() else 0.0
    return max(var - own, 0.0)


def weights(se: np.ndarray, tau2: float) -> np.ndarray:
    """1 / (se^2 + tau^2); a run without an interval takes the series' typical se."""
    typical = float(np.nanmedian(se)) if np.isfinite(se).any() else 0.0
    s = np.where(np.isfinite(se), se, typical)
    return 1.0 / np.maximum(s ** 2 + tau2, 1e-12)


def breakpoints(y: np.ndarray, w: np.ndarray) -> list[int]:
    """Where ruptures' binary segmentation splits the weighted series (indices of the first
    run of each later segment)."""
    if len(y) < max(MIN_RUNS, 2 * MIN_SEGMENT):
        return []
    algo = Binseg(custom_cost=WeightedL2(), min_size=MIN_SEGMENT, jump=1)
    found = algo.fit(np.column_stack([y, w])).predict(pen=PENALTY_PER_LOG_RUN * math.log(len(y)))
    return [b for b in found if b < len(y)]


def _test(before: np.ndarray, after: np.ndarray, after_se: float = math.nan) -> tuple[float, float, float, float, float]:
    """(diff, se, df, p, one run's variance) of the log estimates after against before, each run
    one observation: Welch's test on their robust locations (`location.robust_location`: a wild run
    is left out from 5 runs on); one run after: that run against the runs before, as a prediction
    (t with the runs before's degrees of freedom), its own error included."""
    mb, vb, wb = robust_location(before)
    nb = len(before) - wb
    if len(after) == 1:
        var = max(vb, after_se ** 2 if math.isfinite(after_se) else 0.0)
        diff, se, df = float(after[0] - mb), math.sqrt(vb / nb + var), float(nb - 1)
    else:
        ma, va, wa = robust_location(after)
        na = len(after) - wa
        diff = ma - mb
        se2 = vb / nb + va / na
        se = math.sqrt(se2)
        spread = (vb / nb) ** 2 / (nb - 1) + (va / na) ** 2 / (na - 1)
        df = se2 ** 2 / spread if spread > 0 else float("inf")
        var = ((nb - 1) * vb + (na - 1) * va) / (nb + na - 2)
    p = float(2 * special.stdtr(df, -abs(diff) / se)) if se > 0 else (0.0 if diff else 1.0)
    return diff, se, df, p, var


def _pool(controls: Sequence[RunControl | None]) -> RunControl | None:
    found = {k: c for rc in controls if rc is not None for k, c in rc.launches.items()}
    return RunControl(found) if found else None


def state_flags(runs: Sequence[RunSummary]) -> dict[str, str]:
    """The runs whose machine-state control moved against the pooled control of all `runs`, each
    with the reason: another state of the machine, not a change of the configuration."""
    pooled = _pool([r.control for r in runs])
    out = {}
    for r in runs:
        shift = control_shift(pooled, r.control)
        if shift is not None and shift.shifted:
            out[r.id] = "state shifted: " + shift.text
    return out


@dataclass
class _Candidate:
    history: History
    at: int          # index into the series
    lo: int          # clean positions [lo, k) before and [k, hi) after
    k: int
    hi: int
    diff: float = 0.0
    se: float = 0.0
    df: float = 0.0
    p: float = 1.0
    var: float = 0.0
    newest: bool = False


def analyse(series: Sequence[Series], margin: float = POLICY.margin, alpha: float = POLICY.alpha,
            state: dict[str, str] | None = None) -> list[History]:
    """Every series' flags, segments and change points (module docstring). `state`: runs kept
    apart for their machine-state control (`state_flags`)."""
    state = state or {}
    histories: list[History] = []
    candidates: list[_Candidate] = []
    for s in series:
        flags = [f"disturbed: {o.busy}" if o.busy else state.get(r.id, "") for r, o in zip(s.runs, s.obs)]
        h = History(s, flags)
        histories.append(h)
        clean = [i for i, f in enumerate(flags) if not f]
        if len(clean) < MIN_RUNS:
            h.segments = _segments(h, clean, [])
            continue
        obs = s.obs
        y = np.log([obs[i].median for i in clean])
        se = np.array([obs[i].se for i in clean])
        tau2 = drift_variance(y, se)
        h.drift_sd = math.sqrt(tau2)
        cuts = breakpoints(y, weights(se, tau2))
        bounds = [0, *cuts, len(clean)]
        for lo, k, hi in zip(bounds, bounds[1:], bounds[2:]):
            candidates.append(_candidate(h, clean, y, se, lo, k, hi))
        # the newest run alone against the level before it (a cut just before it leaves too few runs)
        last = max(b for b in bounds[:-1] if len(clean) - 1 - b >= MIN_SEGMENT or b == 0)
        if len(clean) - 1 - last >= MIN_SEGMENT and clean[-1] == len(s.runs) - 1:
            candidates.append(_candidate(h, clean, y, se, last, len(clean) - 1, len(clean), newest=True))
    _decide(candidates, margin, alpha)
    for h in histories:
        clean = [i for i, f in enumerate(h.flags) if not f]
        h.changes.sort(key=lambda c: c.at)
        h.segments = _segments(h, clean, [c.at for c in h.changes if not c.newest])
    return histories


def _candidate(h: History, clean: list[int], y: np.ndarray, se: np.ndarray, lo: int, k: int, hi: int,
               newest: bool = False) -> _Candidate:
    c = _Candidate(h, clean[k], lo, k, hi, newest=newest)
    c.diff, c.se, c.df, c.p, c.var = _test(y[lo:k], y[k:hi], float(se[k]) if hi - k == 1 else math.nan)
    return c


def _decide(candidates: list[_Candidate], margin: float, alpha: float) -> None:
    """Benjamini-Hochberg over every candidate, then each one's verdict; a slower or faster one
    whose sides were measured in other states of the machine stands only beyond the control's move."""
    if not candidates:
        return
    p_adj = stats.false_discovery_control([c.p for c in candidates], method="bh")
    policy = replace(POLICY, alpha=alpha)
    shifts: dict[tuple, Shift | None] = {}  # the points of a run share its control: one test per split
    changed: dict[tuple, tuple[list[str], int, int]] = {}  # and their facts: one comparison per split
    for c, pa in zip(candidates, p_adj):
        v = decide(c.diff, c.se, c.df, float(pa), c.var, 0.0, margin, policy)
        if v.verdict not in (SLOWER, FASTER):
            continue
        s = c.history.series
        clean = [i for i, f in enumerate(c.history.flags) if not f]
        before, after = clean[c.lo:c.k], clean[c.k:c.hi]
        sides = (tuple(s.runs[i].id for i in before), tuple(s.runs[i].id for i in after))
        if sides not in shifts:
            shifts[sides] = control_shift(_pool([s.runs[i].control for i in before]),
                                          _pool([s.runs[i].control for i in after]))
        shift = shifts[sides]
        run = s.runs[c.at]
        if shift is not None and shift.shifted and not stands_across_states(v.verdict, c.diff, shift.cover()):
            c.history.state_notes.append(f"run {run.id}: {v.ratio:.3g}x, but {shift.text}: not a change")
            continue
        # the same runs (the same summaries, kept apart the same way between): the same facts
        key = tuple(tuple(id(s.runs[i]) for i in side) for side in (before, after, range(before[-1] + 1, c.at))
                    ) + tuple(s.obs[i].configuration for i in range(before[0], after[-1] + 1))
        if key not in changed:
            facts = ([s.facts(i) for i in before], [s.facts(i) for i in after])
            steady, _ = steady_facts(*facts)
            changed[key] = (*persistent_differences(*facts), _facts_changed_at(s, before[-1], c.at, steady))
        named, varying, at = changed[key]
        first = s.runs[at]
        c.history.changes.append(Change(at, first.id, first.date, v, len(before), len(after), tuple(named), varying,
                                        newest=c.newest, p=c.p, measured_from=run.id if at != c.at else ""))


def _facts_changed_at(s: Series, last: int, first: int, steady: list[str]) -> int:
    """Where what changed steadily between the clean runs `last` and `first` was first recorded:
    a run kept apart between them (its figures unusable, its context still what it ran with)
    when from it on every run between holds the new facts; else `first`."""
    if not steady:
        return first
    new = s.facts(first)
    at = first
    for i in range(first - 1, last, -1):
        f = s.facts(i)
        if any(f.get(n) != new.get(n) for n in steady):
            break
        at = i
    return at


def _segments(h: History, clean: list[int], starts: list[int]) -> list[Segment]:
    """The levels between change points: each the weighted geometric mean of its clean runs."""
    if not clean:
        return []
    obs = h.obs
    tau2 = h.drift_sd ** 2 if math.isfinite(h.drift_sd) else POLICY.prior_drift_sd ** 2
    edges = [0, *sorted(starts), len(obs)]
    out = []
    for a, b in zip(edges, edges[1:]):
        mine = [i for i in clean if a <= i < b]
        if not mine:
            continue
        y = np.log([obs[i].median for i in mine])
        w = weights(np.array([obs[i].se for i in mine]), tau2)
        out.append(Segment(a, b, float(np.exp(np.sum(w * y) / np.sum(w)))))
    return out


def newest_changes(histories: Sequence[History], newest_run: str) -> list[tuple[History, Change]]:
    """The changes the newest run starts (what `--fail-on` looks at)."""
    return [(h, c) for h in histories for c in h.changes if (c.measured_from or c.run) == newest_run]


def state_flags_by_platform(runs: Sequence[RunSummary]) -> dict[str, str]:
    """`state_flags` within each platform (a control is compared only with the same hosts')."""
    out: dict[str, str] = {}
    for plat in {p for r in runs for p in r.platforms}:
        out.update(state_flags([r for r in runs if plat in r.platforms]))
    return out


def history_of(runs: Iterable[RunView], margin: float = POLICY.margin, alpha: float = POLICY.alpha,
               keep: Callable[[SeriesKey], bool] = lambda key: True,
               read: Callable[[RunView], RunSummary] = summarize) -> tuple[list[History], list[RunSummary]]:
    """The history of `runs` (each read once by `read` and let go: only its summary is kept), the
    series `keep` selects, oldest run first."""
    summaries = []
    for run in runs:
        s = read(run)
        s.points = {k: v for k, v in s.points.items() if keep(k)}
        summaries.append(s)
    summaries = time_order(summaries)
    return analyse(line_up(summaries), margin, alpha, state_flags_by_platform(summaries)), summaries
