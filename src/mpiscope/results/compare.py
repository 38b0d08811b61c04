"""Regression comparison of two runs (or two sets of runs), point by point: change of the
median, a significance test and an effect size, with the p-values of all points adjusted together
(Benjamini-Hochberg).

The launch is the unit of evidence (docs/statistics.md): when a point has several launches on
both sides (one run's launches, several runs, a sweep's launches), the launch medians are the
observations, compared by Welch's t test on their logs; with one launch on one side, that launch
is judged against the other side's launches (a t test of one new observation, which assumes
both sides vary alike between launches). With one launch on each side, the samples are compared:
Mann-Whitney U on the raw samples (`--raw`) with Cliff's delta, otherwise a z test on the medians
whose standard errors come from the recorded 95 % confidence intervals; those tests see one
launch's sampling error only, so `min_change` stands guard against launch-to-launch variation.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy import special, stats

from mpiscope.records import Record

from mpiscope.results.launches import Drift, LaunchPoint, aggregate_runs
from mpiscope.records.measured import Measured, is_measured
from mpiscope.results.location import robust_location
from mpiscope.results.points import launch_of
from mpiscope.results.policy import POLICY
from mpiscope.results.control import Shift
from mpiscope.results.disturbance import CLOCK_ERROR_SHARE
from mpiscope.results.evidence import clock_bound
from mpiscope.results.verdict import INCONCLUSIVE, Verdict, decide, stands_across_states

Key = tuple[str, int, int, "str | None"]  # benchmark, size, ranks, variant (a grid shape)
# The tests, as the output names them; the last two are at the launch level.
MANN_WHITNEY, CI_Z = "mann-whitney", "ci z-test"
WELCH, ONE_VS_LAUNCHES = "welch (launches)", "t (1 vs launches)"
# Two runs of one interleaved session (execute/interleave.py): the log ratio of their launches in
# each block, whose blocks are the observations (a paired t test over blocks).
PAIRED = "paired t (blocks)"
# A side imported from another tool (mpiscope import): its figure is the tool's (often a mean, not
# a median) with no interval and no samples, so no test applies; the change is shown, untested.
NO_TEST = "none (imported)"


@dataclass
class PointChange:
    benchmark: str
    size: int
    ranks: int
    base_us: float
    cand_us: float
    change: float  # cand / base - 1: positive is slower
    test: str  # MANN_WHITNEY | CI_Z | WELCH | ONE_VS_LAUNCHES
    p: float
    effect: float  # Cliff's delta (raw), z (summaries) or Hedges' g (launches); positive = slower
    p_adj: float = float("nan")
    verdict: str = INCONCLUSIVE  # slower | faster | same | inconclusive | untested
    variant: str | None = None
    base_launches: int = 1
    cand_launches: int = 1
    config: tuple = ()  # tag keys beyond the point's key (a study's series)
    drift_runs: int = 0  # the runs the run-to-run drift in the test was learnt from (0: none)
    ratio_low: float = float("nan")   # the 95 % interval of cand / base
    ratio_high: float = float("nan")
    launches_needed: int | None = None  # inconclusive: launches a side that would decide it
    drift: Drift | None = None  # the drift from run to run in the test (learnt, or the prior)
    drift_decided: bool = False  # without the drift the verdict would differ
    # the test's log difference, its standard error (drift included), degrees of freedom, one
    # launch's log variance: what the verdict is decided from
    diff: float = float("nan")
    se: float = float("nan")
    df: float = float("inf")
    launch_var: float = float("nan")
    # most launches of a side were disturbed ("machine busy"): 'baseline: CAUSE' / 'candidate: CAUSE'.
    # Interleaved, the test still judges it (both sides met the same machine, block by block);
    # measured apart, a busy side is another state of the machine and no verdict stands
    # (`BUSY_APART`; docs/statistics.md, "A busy side measured apart").
    busy: str = ""
    # every busy side's launches left out were the clock-sync bound's alone (`evidence.clock_bound`):
    # shorter than the ranks' clocks agree, which an idle machine's 0 B barrier reaches too, not busy
    clocks: bool = False
    # the two sides' machine-state controls differ and the change is within their move: why the
    # verdict is inconclusive ("the machine's state differs (control: ... x2.9 ...)")
    state: str = ""
    interleaved: bool = False  # both sides one interleaved session's runs (else measured apart)
    blocks: int = 0  # the blocks a paired test rests on
    # a `run --vs` session that looked once before a second stage: (blocks before the look, blocks
    # after) and the level of each look (results.verdict.two_look_alpha) the verdict was made at
    stages: tuple[int, int] | None = None
    look_alpha: float | None = None

    @property
    def label(self) -> str:
        """The benchmark, with its variant (a grid shape) and its series when it has them."""
        text = f"{self.benchmark} {self.variant}" if self.variant else self.benchmark
        return text + "".join(f" {k}={v}" for k, v in self.config)

    @property
    def launch_level(self) -> bool:
        return self.test in (WELCH, ONE_VS_LAUNCHES, PAIRED)


DECIDED = ("slower", "faster", "same")
BUSY_APART = ("the machine was busy on a side measured apart (another state of the machine): "
              "measure the two interleaved (run --vs) or when the machine is quiet")
# ...and where that side was only shorter than the ranks' clocks agree (`PointChange.clocks`)
CLOCK_APART = (f"a side measured apart was shorter than the ranks' clocks agree (clock-sync error beyond "
               f"{CLOCK_ERROR_SHARE:g} x one event in most launches, an idle machine's too): measure the two "
               f"interleaved (run --vs)")


def _busy(b: LaunchPoint, c: LaunchPoint) -> tuple[str, bool]:
    """A compared point's `busy` text ('baseline: CAUSE; candidate: CAUSE') and `clocks`."""
    sides = [(side, lp) for side, lp in (("baseline", b), ("candidate", c)) if lp.busy]
    return "; ".join(f"{side}: {lp.busy}" for side, lp in sides), bool(sides) and all(clock_bound(lp) for _, lp in sides)


def _points(records: Iterable[Record | Measured]) -> dict[Key, Measured]:
    """The points with a median, by benchmark, size, ranks and variant (the last of repeats)."""
    return {(r.benchmark, r.size, r.ranks, getattr(r, "variant", None)): r
            for r in records if is_measured(r) and r.median}


def _mann_whitney(base: np.ndarray, cand: np.ndarray) -> tuple[float, float]:
    res = stats.mannwhitneyu(cand, base, alternative="two-sided")
    delta = 2 * res.statistic / (len(cand) * len(base)) - 1  # Cliff's delta from U
    return float(res.pvalue), float(delta)


def _ci_z(b: Measured, c: Measured) -> tuple[float, float]:
    """z test on the medians; the standard error of each is its 95 % CI width / (2 x 1.96)."""
    def se(t: Measured) -> float:
        if t.ci_low is None or t.ci_high is None:
            return float("nan")
        return max(t.ci_high - t.ci_low, 1e-12 * t.median) / (2 * POLICY.z95)
    s = np.hypot(se(b), se(c))
    if not np.isfinite(s):
        return float("nan"), float("nan")
    z = (c.median - b.median) / s
    return float(2 * stats.norm.sf(abs(z))), float(z)


def _imported(m: object) -> bool:
    """A point (or a point over launches) read from another tool's output."""
    return getattr(m, "imported", None) is not None or any(
        getattr(p, "imported", None) is not None for p in getattr(m, "points", ()))


def _one_launch_each(b: Measured, c: Measured) -> tuple[str, float, float]:
    """One launch a side: its samples (Mann-Whitney U), else its medians' CIs (a z test)."""
    if _imported(b) or _imported(c):
        return NO_TEST, float("nan"), float("nan")
    if b.samples and c.samples:
        return (MANN_WHITNEY, *_mann_whitney(np.asarray(b.samples, float), np.asarray(c.samples, float)))
    return (CI_Z, *_ci_z(b, c))


def compare_points(base: Iterable[Record | Measured], cand: Iterable[Record | Measured],
                   alpha: float = POLICY.alpha, min_change: float = POLICY.margin) -> list[PointChange]:
    """Every point measured in both runs; a verdict is slower/faster when the adjusted p < alpha and
    the median moved by at least `min_change` (launches differ by a few percent anyway)."""
    b_pts, c_pts = _points(base), _points(cand)
    out: list[PointChange] = []
    for key in [k for k in b_pts if k in c_pts]:
        b, c = b_pts[key], c_pts[key]
        test, p, effect = _one_launch_each(b, c)
        out.append(PointChange(key[0], key[1], key[2], b.median, c.median, c.median / b.median - 1,
                               test, p, effect, variant=key[3], diff=float(np.log(c.median / b.median)),
                               se=_one_launch_se(b, c)))
    _judge(out, alpha, min_change)
    return out


def _one_launch_se(b: Measured, c: Measured) -> float:
    """The log difference's standard error from one launch a side's own 95 % intervals."""
    def se(t: Measured) -> float:
        if t.ci_low is None or t.ci_high is None or not t.ci_low > 0:
            return float("nan")
        return float(np.log(t.ci_high / t.ci_low) / (2 * POLICY.z95))
    return float(np.hypot(se(b), se(c)))


def _judge(out: list[PointChange], alpha: float, min_change: float) -> None:
    """Adjust the p-values together (Benjamini-Hochberg), then give each point its verdict
    (`results.verdict.decide`, margin `min_change`) and note where the drift decided it."""
    ps = np.array([pc.p for pc in out], float)
    ok = np.isfinite(ps)
    if ok.any():
        adj = np.full(len(ps), np.nan)
        adj[ok] = stats.false_discovery_control(ps[ok], method="bh")
        for pc, pa in zip(out, adj):
            pc.p_adj = float(pa)
    policy = replace(POLICY, alpha=alpha)
    for pc in out:
        if pc.test == NO_TEST:
            pc.verdict = "untested"
            continue
        drift_var = pc.drift.var if pc.drift is not None else 0.0
        v = decide(pc.diff, pc.se, pc.df, pc.p_adj, pc.launch_var, drift_var, min_change, policy)
        pc.verdict, pc.ratio_low, pc.ratio_high, pc.launches_needed = v.verdict, v.low, v.high, v.launches_needed
        if pc.busy and pc.verdict == INCONCLUSIVE:  # more launches on a busy machine decide nothing
            pc.launches_needed = None
        if pc.launches_needed is None and pc.verdict == INCONCLUSIVE and not pc.launch_level:
            pc.launches_needed = POLICY.min_launches  # one launch a side: launches show the variance
        if drift_var > 0:
            se0 = float(np.sqrt(max(pc.se ** 2 - 2 * drift_var, 0.0)))
            p0 = float(2 * special.stdtr(pc.df, -abs(pc.diff) / se0)) if se0 > 0 else float(pc.diff == 0)
            # the p-value without the drift, adjusted by the same factor as the one with it
            scale = pc.p_adj / pc.p if pc.p > 0 and np.isfinite(pc.p_adj) else 1.0
            pc.drift_decided = decide(pc.diff, se0, pc.df, min(1.0, p0 * scale), pc.launch_var, 0.0,
                                      min_change, policy).verdict != pc.verdict


def regressions(changes: list[PointChange], fail_on: float) -> list[PointChange]:
    """Points significantly slower by more than `fail_on` (0.05 = 5 %)."""
    return [pc for pc in changes if pc.verdict == "slower" and pc.change > fail_on]


def _welch(b: np.ndarray, c: np.ndarray, drift: Drift | None = None
           ) -> tuple[float, float, float, float, float, float]:
    """Welch's t test on log launch medians (Welch-Satterthwaite degrees of freedom), each side
    by its robust centre and variance (`location.robust_location`: the mean and sample variance
    of the launches that are not wild); Hedges' g as effect size. With a run-to-run `drift`, each side's mean also
    carries its run's effect: 2 x its variance joins the difference's, with runs - 1 degrees of
    freedom (none lost for the stated prior). Returns (p, g, diff, se, df, one launch's variance).
    Written out: scipy's ttest_ind costs more than everything else here."""
    (mb, sb, wb), (mc, sc, wc) = robust_location(b), robust_location(c)
    b, c = b[:len(b) - wb], c[:len(c) - wc]  # only the counts matter below
    diff = mc - mb
    vb, vc = sb / len(b), sc / len(c)
    vr, dr = (2 * drift.var, drift.runs - 1) if drift is not None and (drift.runs >= 2 or drift.prior) else (0.0, 1)
    drift_df = 0.0 if drift is not None and drift.prior else vr ** 2 / dr
    df = float("inf")
    if vb + vc + vr > 0:
        df = (vb + vc + vr) ** 2 / (vb ** 2 / (len(b) - 1) + vc ** 2 / (len(c) - 1) + drift_df) \
            if vb + vc + drift_df > 0 else float("inf")
        # a learnt drift that matters is estimated from few runs:
        if vr >= POLICY.drift_material * (vb + vc + vr) and drift is not None and not drift.prior:
            df = min(df, dr, len(b) + len(c) - 2)  # no more degrees of freedom than its own R - 1
        p = float(2 * special.stdtr(df, -abs(diff) / np.sqrt(vb + vc + vr)))
    else:
        p = 0.0 if diff else 1.0
    pooled2 = ((len(b) - 1) * sb + (len(c) - 1) * sc) / (len(b) + len(c) - 2)
    pooled = np.sqrt(pooled2)
    g = diff / pooled if pooled > 0 else (float("inf") * np.sign(diff) if diff else 0.0)
    g *= 1 - 3 / (4 * (len(b) + len(c)) - 9)  # Hedges' small-sample correction
    return p, float(g), float(diff), float(np.sqrt(vb + vc + vr)), float(df), float(pooled2)


def _one_vs_launches(one: float, many: np.ndarray) -> tuple[float, float]:
    """One launch's log median against several: t = (mean - one) / (s sqrt(1 + 1/L)), L-1 degrees
    of freedom (a prediction interval for one more launch); positive when `many` is slower."""
    s = many.std(ddof=1)
    diff = many.mean() - one
    if not s > 0:
        return (0.0 if diff else 1.0), (float("inf") * np.sign(diff) if diff else 0.0)
    t = diff / (s * np.sqrt(1 + 1 / len(many)))
    return float(2 * special.stdtr(len(many) - 1, -abs(t))), float(diff / s)


def _change(b: LaunchPoint, c: LaunchPoint, drift: Drift | None = None) -> PointChange:
    """One point of both sides, by the test its launches allow; `drift`: the run-to-run drift when
    each side is one run."""
    diff, se, df, var = float(np.log(c.median / b.median)), float("nan"), float("inf"), float("nan")
    used = None
    if _imported(b) or _imported(c):
        test, p, effect = NO_TEST, float("nan"), float("nan")
    elif b.launches >= 2 and c.launches >= 2:
        test, used = WELCH, drift
        p, effect, diff, se, df, var = _welch(np.log(b.launch_medians), np.log(c.launch_medians), drift)
    elif b.launches >= 2 or c.launches >= 2:
        test = ONE_VS_LAUNCHES
        many = np.log(c.launch_medians if c.launches >= 2 else b.launch_medians)
        var, df = float(many.var(ddof=1)), len(many) - 1
        se = float(np.sqrt(var * (1 + 1 / len(many))))
        if c.launches >= 2:
            p, effect = _one_vs_launches(np.log(b.median), many)
            diff = float(many.mean() - np.log(b.median))
        else:
            p, effect = _one_vs_launches(np.log(c.median), many)
            effect, diff = -effect, float(np.log(c.median) - many.mean())
    else:
        test, p, effect = _one_launch_each(b, c)
        se = _one_launch_se(b, c)
    busy, clocks = _busy(b, c)
    return PointChange(b.benchmark, b.size, b.ranks, b.median, c.median, c.median / b.median - 1, test, p,
                       effect, variant=b.variant, base_launches=b.launches, cand_launches=c.launches,
                       config=b.config, drift_runs=used.runs if used is not None else 0, drift=used,
                       diff=diff, se=se, df=df, launch_var=var, busy=busy, clocks=clocks)


def _paired(b: LaunchPoint, c: LaunchPoint, blocks: tuple[Mapping[int, int], Mapping[int, int]]
            ) -> PointChange | None:
    """Two sides measured interleaved: the candidate's log launch median less the baseline's in
    each block where both have one, tested over the blocks (their robust mean and variance,
    `location.robust_location`: a wild block is left out). A slow change of the machine falls on
    both launches of a block alike and cancels in the difference, so no drift from run to run
    joins the test. None with fewer than POLICY.min_launches blocks paired."""
    def by_block(lp: LaunchPoint, block: Mapping[int, int]) -> dict[int, float]:
        return {block[launch_of(p)]: float(np.log(m)) for p, m in zip(lp.points, lp.launch_medians)
                if launch_of(p) in block}
    bb, cb = by_block(b, blocks[0]), by_block(c, blocks[1])
    common = sorted(set(bb) & set(cb))
    if len(common) < max(POLICY.min_launches, 3):
        return None
    d = np.array([cb[k] - bb[k] for k in common])
    diff, var, wild = robust_location(d)
    n = len(d) - wild
    se, df = float(np.sqrt(var / n)), n - 1
    p = float(2 * special.stdtr(df, -abs(diff) / se)) if se > 0 else (0.0 if diff else 1.0)
    busy, clocks = _busy(b, c)
    return PointChange(b.benchmark, b.size, b.ranks, b.median, c.median, c.median / b.median - 1, PAIRED, p,
                       diff / np.sqrt(var) if var > 0 else 0.0, variant=b.variant, base_launches=b.launches,
                       cand_launches=c.launches, config=b.config, diff=diff, se=se, df=df,
                       launch_var=var / 2, busy=busy, clocks=clocks, interleaved=True, blocks=n)


def compare_launches_of_point(base: Sequence[float], cand: Sequence[float], margin: float = POLICY.margin,
                              drift: Drift | None = None, alpha: float = POLICY.alpha) -> Verdict:
    """One point, two sets of launch medians (µs; at least two a side): its verdict, the ratio
    cand / base with its 95 % interval, and for an inconclusive one the launches a side that
    would decide it. `drift`: each side's run effect when each side is one run (None: the
    launches were interleaved in one session, as `mpiscope tune` measures them). No adjustment
    for other points: the caller tests one."""
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("compare_launches_of_point needs at least two launches a side")
    p, _, diff, se, df, var = _welch(np.log(np.asarray(base, float)), np.log(np.asarray(cand, float)), drift)
    return decide(diff, se, df, p, var, drift.var if drift is not None else 0.0, margin,
                  replace(POLICY, alpha=alpha))


def sort_key(pc: PointChange) -> tuple:
    """Rows by benchmark, variant, size (then ranks and series): the one order of every table."""
    return (pc.benchmark, pc.variant or "", pc.size, pc.ranks, str(pc.config))


def compare_runs(base: Sequence[Iterable[Record]], cand: Sequence[Iterable[Record]], alpha: float = POLICY.alpha,
                 min_change: float = POLICY.margin, drift: Mapping[tuple, Drift] | None = None,
                 fallback: Drift | None = None, shift: Shift | None = None,
                 blocks: tuple[Mapping[int, int], Mapping[int, int]] | None = None) -> list[PointChange]:
    """The one path of `mpiscope compare`: each side is one or more runs of one configuration
    (their records); every launch of every run (its tag's `launch`) is one launch. Every point
    measured on both sides is compared with the test its launches allow (see the module); with
    one launch per side this is `compare_points`. `drift`: the run-to-run drift of each point
    (key, configuration), used when each side is one run of several launches (launches of one
    run share a state that the next run does not); `fallback`: the drift of points with none
    (the API passes the stated prior); `shift`: the sides' machine-state controls
    (results.control.control_shift): when they differ, a verdict that cannot stand across the
    states (`verdict.stands_across_states`) is inconclusive with the reason; `blocks`: each
    side's block of each launch when the sides are two runs of one interleaved session
    (`_paired`; no drift and no control shift apply: both sides saw the same states). Verdicts as
    in `compare_points`."""
    b_pts = {(lp.key, lp.config): lp for lp in aggregate_runs(base)}
    c_pts = {(lp.key, lp.config): lp for lp in aggregate_runs(cand)}
    one_run_each = len(base) == 1 and len(cand) == 1
    if blocks is not None:  # interleaved: paired by block where the launches allow, never a drift
        out = [_paired(b_pts[key], c_pts[key], blocks) or replace(_change(b_pts[key], c_pts[key]), interleaved=True)
               for key in b_pts if key in c_pts]
    else:
        out = [_change(b_pts[key], c_pts[key], ((drift or {}).get(key) or fallback) if one_run_each else None)
               for key in b_pts if key in c_pts]
    _judge(out, alpha, min_change)
    if blocks is None:
        for pc in out:
            if pc.busy and pc.verdict in DECIDED:
                pc.state = CLOCK_APART if pc.clocks else BUSY_APART
                pc.verdict, pc.launches_needed, pc.drift_decided = INCONCLUSIVE, None, False
    if shift is not None and shift.shifted and blocks is None:
        for pc in out:
            if pc.verdict != "untested" and not stands_across_states(pc.verdict, pc.diff, shift.cover()):
                pc.verdict, pc.state, pc.launches_needed, pc.drift_decided = INCONCLUSIVE, shift.text, None, False
    return sorted(out, key=sort_key)
