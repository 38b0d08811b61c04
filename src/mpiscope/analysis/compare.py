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

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy import special, stats

from mpiscope.records import Record

from .launches import Drift, LaunchPoint, aggregate_runs
from .measured import Measured, is_measured

Key = tuple[str, int, int, "str | None"]  # benchmark, size, ranks, variant (a grid shape)
# The tests, as the output names them; the last two are at the launch level.
MANN_WHITNEY, CI_Z = "mann-whitney", "ci z-test"
WELCH, ONE_VS_LAUNCHES = "welch (launches)", "t (1 vs launches)"
# A side imported from another tool (mpiscope import): its figure is the tool's (often a mean, not
# a median) with no interval and no samples, so no test applies; the change is shown, untested.
NO_TEST = "none (imported)"
# A drift from run to run whose share of the difference's variance is at least this caps the
# test's degrees of freedom at the drift's own (a smaller one barely moves the test: Welch's stand).
DRIFT_MATERIAL = 0.05


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
    verdict: str = "same"  # slower | faster | same
    variant: str | None = None
    base_launches: int = 1
    cand_launches: int = 1
    config: tuple = ()  # tag keys beyond the point's key (a study's series)
    drift_runs: int = 0  # the runs the run-to-run drift in the test was learnt from (0: none)

    @property
    def label(self) -> str:
        """The benchmark, with its variant (a grid shape) and its series when it has them."""
        text = f"{self.benchmark} {self.variant}" if self.variant else self.benchmark
        return text + "".join(f" {k}={v}" for k, v in self.config)

    @property
    def launch_level(self) -> bool:
        return self.test in (WELCH, ONE_VS_LAUNCHES)


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
        return max(t.ci_high - t.ci_low, 1e-12 * t.median) / (2 * 1.96)
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


def compare_points(base: Iterable[Record | Measured], cand: Iterable[Record | Measured], alpha: float = 0.05,
                   min_change: float = 0.05) -> list[PointChange]:
    """Every point measured in both runs; a verdict is slower/faster when the adjusted p < alpha and
    the median moved by at least `min_change` (launches differ by a few percent anyway)."""
    b_pts, c_pts = _points(base), _points(cand)
    out: list[PointChange] = []
    for key in [k for k in b_pts if k in c_pts]:
        b, c = b_pts[key], c_pts[key]
        test, p, effect = _one_launch_each(b, c)
        out.append(PointChange(key[0], key[1], key[2], b.median, c.median, c.median / b.median - 1,
                               test, p, effect, variant=key[3]))
    _judge(out, alpha, min_change)
    return out


def _judge(out: list[PointChange], alpha: float, min_change: float) -> None:
    """Adjust the p-values together (Benjamini-Hochberg), then give each point its verdict."""
    ps = np.array([pc.p for pc in out], float)
    ok = np.isfinite(ps)
    if ok.any():
        adj = np.full(len(ps), np.nan)
        adj[ok] = stats.false_discovery_control(ps[ok], method="bh")
        for pc, pa in zip(out, adj):
            pc.p_adj = float(pa)
    for pc in out:
        if pc.test == NO_TEST:
            pc.verdict = "untested"
        elif np.isfinite(pc.p_adj) and pc.p_adj < alpha and abs(pc.change) >= min_change:
            pc.verdict = "slower" if pc.change > 0 else "faster"


def regressions(changes: list[PointChange], fail_on: float) -> list[PointChange]:
    """Points significantly slower by more than `fail_on` (0.05 = 5 %)."""
    return [pc for pc in changes if pc.verdict == "slower" and pc.change > fail_on]


def summary(changes: list[PointChange]) -> str:
    slower = [pc for pc in changes if pc.verdict == "slower"]
    faster = [pc for pc in changes if pc.verdict == "faster"]
    untested = [pc for pc in changes if pc.verdict == "untested"]
    parts = [f"{len(changes)} points compared: {len(slower)} significantly slower, "
             f"{len(faster)} significantly faster, "
             f"{len(changes) - len(slower) - len(faster) - len(untested)} unchanged"]
    if untested:
        parts[0] += (f", {len(untested)} untested (a side imported from another tool: its figure is the "
                     f"tool's, with no interval or samples to test)")
    if slower:
        w = max(slower, key=lambda pc: pc.change)
        parts.append(f"worst: {w.label} {w.size} B {100 * w.change:+.1f}%")
    if faster:
        b = min(faster, key=lambda pc: pc.change)
        parts.append(f"best: {b.label} {b.size} B {100 * b.change:+.1f}%")
    tests = sorted({pc.test for pc in changes})
    if tests == [CI_Z]:
        parts.append("(no raw samples: medians' CIs compared; measure with --raw for Mann-Whitney U)")
    return "; ".join(parts)


def _welch(b: np.ndarray, c: np.ndarray, drift: Drift | None = None) -> tuple[float, float]:
    """Welch's t test on log launch medians (Welch-Satterthwaite degrees of freedom); Hedges' g
    as effect size. With a run-to-run `drift`, each side's mean also carries its run's effect:
    2 x its variance joins the difference's, with runs - 1 degrees of freedom. Written out:
    scipy's ttest_ind costs more than everything else here."""
    diff = c.mean() - b.mean()
    vb, vc = b.var(ddof=1) / len(b), c.var(ddof=1) / len(c)
    vr, dr = (2 * drift.var, drift.runs - 1) if drift is not None and drift.runs >= 2 else (0.0, 1)
    if vb + vc + vr > 0:
        df = (vb + vc + vr) ** 2 / (vb ** 2 / (len(b) - 1) + vc ** 2 / (len(c) - 1) + vr ** 2 / dr)
        if vr >= DRIFT_MATERIAL * (vb + vc + vr):  # a drift that matters is estimated from few runs:
            df = min(df, dr, len(b) + len(c) - 2)  # no more degrees of freedom than its own R - 1
        p = float(2 * special.stdtr(df, -abs(diff) / np.sqrt(vb + vc + vr)))
    else:
        p = 0.0 if diff else 1.0
    pooled = np.sqrt(((len(b) - 1) * b.var(ddof=1) + (len(c) - 1) * c.var(ddof=1)) / (len(b) + len(c) - 2))
    g = diff / pooled if pooled > 0 else (float("inf") * np.sign(diff) if diff else 0.0)
    g *= 1 - 3 / (4 * (len(b) + len(c)) - 9)  # Hedges' small-sample correction
    return p, float(g)


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
    if _imported(b) or _imported(c):
        test, p, effect = NO_TEST, float("nan"), float("nan")
    elif b.launches >= 2 and c.launches >= 2:
        test = WELCH
        p, effect = _welch(np.log(b.launch_medians), np.log(c.launch_medians), drift)
    elif b.launches >= 2 or c.launches >= 2:
        test = ONE_VS_LAUNCHES
        if c.launches >= 2:
            p, effect = _one_vs_launches(np.log(b.median), np.log(c.launch_medians))
        else:
            p, effect = _one_vs_launches(np.log(c.median), np.log(b.launch_medians))
            effect = -effect
    else:
        test, p, effect = _one_launch_each(b, c)
    return PointChange(b.benchmark, b.size, b.ranks, b.median, c.median, c.median / b.median - 1, test, p,
                       effect, variant=b.variant, base_launches=b.launches, cand_launches=c.launches,
                       config=b.config, drift_runs=drift.runs if drift is not None and test == WELCH else 0)


def compare_runs(base: Sequence[Iterable[Record]], cand: Sequence[Iterable[Record]], alpha: float = 0.05,
                 min_change: float = 0.05, drift: Mapping[tuple, Drift] | None = None) -> list[PointChange]:
    """The one path of `mpiscope compare`: each side is one or more runs of one configuration
    (their records); every launch of every run (its tag's `launch`) is one launch. Every point
    measured on both sides is compared with the test its launches allow (see the module); with
    one launch per side this is `compare_points`. `drift`: the run-to-run drift of each point
    (key, configuration), used when each side is one run of several launches (launches of one
    run share a state that the next run does not). Verdicts as in `compare_points`."""
    b_pts = {(lp.key, lp.config): lp for lp in aggregate_runs(base)}
    c_pts = {(lp.key, lp.config): lp for lp in aggregate_runs(cand)}
    one_run_each = len(base) == 1 and len(cand) == 1
    out = [_change(b_pts[key], c_pts[key], (drift or {}).get(key) if one_run_each else None)
           for key in b_pts if key in c_pts]
    _judge(out, alpha, min_change)
    return out


def compare_launches(base: list[Iterable[Record]], cand: list[Iterable[Record]],
                     alpha: float = 0.05, min_change: float = 0.05) -> list[PointChange]:
    """Several runs per side, each a launch (or several): `compare_runs`."""
    return compare_runs(base, cand, alpha, min_change)


def launches_line(changes: list[PointChange]) -> str:
    """Which test judged the points and on how many launches each side had (for the output)."""
    level = [pc for pc in changes if pc.launch_level]
    if not level:
        return ("one launch per side: each point's samples compared (they show that launch's sampling "
                "error only, not launch-to-launch variation)")

    def span(xs: list[int]) -> str:
        return str(min(xs)) if min(xs) == max(xs) else f"{min(xs)}-{max(xs)}"
    tests = " and ".join(sorted({"Welch's t test on the log launch medians" if pc.test == WELCH
                                 else "a t test of one launch against the other side's launches"
                                 for pc in level}))
    drifted = [pc for pc in level if pc.drift_runs]
    if drifted:
        tests += (f", with the drift from run to run learnt from {span([pc.drift_runs for pc in drifted])} runs "
                  f"({len(drifted)} of {len(level)} points)")
    return (f"launch level: {tests}; baseline {span([pc.base_launches for pc in level])} launches, "
            f"candidate {span([pc.cand_launches for pc in level])} per point"
            + (f" ({len(changes) - len(level)} points with one launch per side: samples compared)"
               if len(level) < len(changes) else ""))
