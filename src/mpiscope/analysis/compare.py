"""Regression comparison of two runs (or two sets of launches), point by point: change of the
median, a significance test and an effect size, with the p-values of all points adjusted together
(Benjamini-Hochberg).

With raw samples in both runs (`--raw`) the test is Mann-Whitney U on the samples and the effect
size Cliff's delta; otherwise a z test on the medians whose standard errors come from the
recorded 95 % confidence intervals, with the standardised difference as effect size. With
several launches per side, the launch medians are compared (Welch's t test on their logs).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
from scipy import stats

from mpiscope.records import Record

from .measured import Measured, is_measured

Key = tuple[str, int, int, "str | None"]  # benchmark, size, ranks, variant (a grid shape)


@dataclass
class PointChange:
    benchmark: str
    size: int
    ranks: int
    base_us: float
    cand_us: float
    change: float  # cand / base - 1: positive is slower
    test: str  # "mann-whitney" | "ci z-test" | "welch (launches)"
    p: float
    effect: float  # Cliff's delta (raw), z (summaries) or Hedges' g (launches); positive = slower
    p_adj: float = float("nan")
    verdict: str = "same"  # slower | faster | same
    variant: str | None = None

    @property
    def label(self) -> str:
        """The benchmark, with its variant (a grid shape) when it has one."""
        return f"{self.benchmark} {self.variant}" if self.variant else self.benchmark


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


def compare_points(base: Iterable[Record | Measured], cand: Iterable[Record | Measured], alpha: float = 0.05,
                   min_change: float = 0.05) -> list[PointChange]:
    """Every point measured in both runs; a verdict is slower/faster when the adjusted p < alpha and
    the median moved by at least `min_change` (launches differ by a few percent anyway)."""
    b_pts, c_pts = _points(base), _points(cand)
    out: list[PointChange] = []
    for key in [k for k in b_pts if k in c_pts]:
        b, c = b_pts[key], c_pts[key]
        if b.samples and c.samples:
            test = "mann-whitney"
            p, effect = _mann_whitney(np.asarray(b.samples, float), np.asarray(c.samples, float))
        else:
            test = "ci z-test"
            p, effect = _ci_z(b, c)
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
        if np.isfinite(pc.p_adj) and pc.p_adj < alpha and abs(pc.change) >= min_change:
            pc.verdict = "slower" if pc.change > 0 else "faster"


def regressions(changes: list[PointChange], fail_on: float) -> list[PointChange]:
    """Points significantly slower by more than `fail_on` (0.05 = 5 %)."""
    return [pc for pc in changes if pc.verdict == "slower" and pc.change > fail_on]


def summary(changes: list[PointChange]) -> str:
    slower = [pc for pc in changes if pc.verdict == "slower"]
    faster = [pc for pc in changes if pc.verdict == "faster"]
    parts = [f"{len(changes)} points compared: {len(slower)} significantly slower, "
             f"{len(faster)} significantly faster, {len(changes) - len(slower) - len(faster)} unchanged"]
    if slower:
        w = max(slower, key=lambda pc: pc.change)
        parts.append(f"worst: {w.label} {w.size} B {100 * w.change:+.1f}%")
    if faster:
        b = min(faster, key=lambda pc: pc.change)
        parts.append(f"best: {b.label} {b.size} B {100 * b.change:+.1f}%")
    tests = sorted({pc.test for pc in changes})
    if tests == ["ci z-test"]:
        parts.append("(no raw samples: medians' CIs compared; measure with --raw for Mann-Whitney U)")
    return "; ".join(parts)


def compare_launches(base: list[Iterable[Record | Measured]], cand: list[Iterable[Record | Measured]],
                     alpha: float = 0.05, min_change: float = 0.05) -> list[PointChange]:
    """Several launches per side: the launch medians are the observations, so the test carries the
    between-launch variation that one launch's samples cannot show. Welch's t test on the log
    medians; the change is the ratio of their geometric means, the effect size Hedges' g."""
    b_sets = [_points(recs) for recs in base]
    c_sets = [_points(recs) for recs in cand]
    keys = [k for k in b_sets[0] if all(k in s for s in b_sets + c_sets)]
    out: list[PointChange] = []
    for key in keys:
        b = np.log([s[key].median for s in b_sets])
        c = np.log([s[key].median for s in c_sets])
        res = stats.ttest_ind(c, b, equal_var=False)
        pooled = np.sqrt(((len(b) - 1) * b.var(ddof=1) + (len(c) - 1) * c.var(ddof=1)) / (len(b) + len(c) - 2))
        g = (c.mean() - b.mean()) / pooled if pooled > 0 else float("inf") * np.sign(c.mean() - b.mean())
        g *= 1 - 3 / (4 * (len(b) + len(c)) - 9)  # Hedges' small-sample correction
        out.append(PointChange(key[0], key[1], key[2], float(np.exp(b.mean())), float(np.exp(c.mean())),
                               float(np.exp(c.mean() - b.mean()) - 1), "welch (launches)",
                               float(res.pvalue) if np.isfinite(res.pvalue) else float("nan"), float(g),
                               variant=key[3]))
    _judge(out, alpha, min_change)
    return out
