"""One point's verdict from the difference of two sides' log estimates (docs/statistics.md,
"Verdicts"): slower / faster (significant after adjustment, and beyond the margin), same
(equivalence shown, two one-sided tests: the 95 % interval of the ratio lies inside
[1/(1+margin), 1+margin], the margin symmetric on the log scale),
or inconclusive (neither), with the launches a side that would decide it at the observed
variance (power analysis). `decide` is the function `mpiscope tune` and `compare` call."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from mpiscope.results.location import t_quantile
from mpiscope.results.policy import POLICY, Policy

SLOWER, FASTER, SAME, INCONCLUSIVE = "slower", "faster", "same", "inconclusive"


@dataclass(frozen=True)
class Verdict:
    verdict: str          # slower | faster | same | inconclusive
    ratio: float          # candidate / baseline
    low: float            # the ratio's 95 % interval
    high: float
    # launches a side that would decide at the observed variance with POLICY.power (inconclusive
    # only; None when decided, or when no number of launches can: the drift from run to run, or a
    # change that sits on the margin)
    launches_needed: int | None = None


def interval(diff: float, se: float, df: float, policy: Policy = POLICY) -> tuple[float, float]:
    """The 95 % interval of the log ratio."""
    if not (np.isfinite(se) and se >= 0):
        return float("nan"), float("nan")
    t = t_quantile(df, 0.5 + policy.level / 2) if np.isfinite(df) else policy.z95
    return diff - t * se, diff + t * se


def launches_to_decide(diff: float, launch_var: float, drift_var: float, margin: float,
                       policy: Policy = POLICY) -> int | None:
    """The launches a side at which a test at the observed log difference `diff` decides with
    chance POLICY.power: the difference from 0 when the ratio lies beyond the margin (outside
    [1/(1+margin), 1+margin]), else its distance to the margin (equivalence); one launch's log
    variance `launch_var`, each side's run effect `drift_var`. None when no number does (the drift
    alone is too wide, or no distance)."""
    m = math.log1p(margin)
    distance = abs(diff) if abs(diff) >= m else m - abs(diff)
    if not (distance > 0 and np.isfinite(launch_var)):
        return None
    n, z = _quantile_sums(policy.level, policy.power)
    ok = np.nonzero(z * np.sqrt(2 * launch_var / n + 2 * drift_var) <= distance)[0]
    return int(n[ok[0]]) if len(ok) else None


@functools.lru_cache(maxsize=8)
def _quantile_sums(level: float, power: float) -> tuple[np.ndarray, np.ndarray]:
    """Launches a side 2..1000 and, for each, the two t quantiles a test of that size needs (its
    level's and its power's): they depend on the policy alone, and cost 2,000 t inversions."""
    n = np.arange(2, 1001)
    df = 2 * n - 2  # Welch's with equal sides and variances
    return n, t_quantile(df, 0.5 + level / 2) + t_quantile(df, power)


def decide(diff: float, se: float, df: float, p_adj: float, launch_var: float, drift_var: float = 0.0,
           margin: float = POLICY.margin, policy: Policy = POLICY) -> Verdict:
    """The verdict of one point: `diff` the candidate's log estimate less the baseline's, `se`
    its standard error (launches and drift), `df` its degrees of freedom, `p_adj` the adjusted
    p-value of the difference, `launch_var` one launch's log variance, `drift_var` each side's
    run effect already in `se`."""
    lo, hi = interval(diff, se, df, policy)
    ratio, m = math.exp(diff), math.log1p(margin)  # the margin is symmetric on the log scale
    if np.isfinite(lo) and -m < lo and hi < m:
        return Verdict(SAME, ratio, math.exp(lo), math.exp(hi))
    if np.isfinite(p_adj) and p_adj < policy.alpha and abs(diff) >= m:
        return Verdict(SLOWER if diff > 0 else FASTER, ratio, math.exp(lo), math.exp(hi))
    return Verdict(INCONCLUSIVE, ratio, math.exp(lo) if np.isfinite(lo) else lo,
                   math.exp(hi) if np.isfinite(hi) else hi,
                   launches_to_decide(diff, launch_var, drift_var, margin, policy))


def stands_across_states(verdict: str, diff: float, cover: float) -> bool:
    """Whether a verdict between two runs measured in different states of the machine still
    stands (docs/statistics.md, "The machine-state control"): only a slower or faster whose log
    change `diff` exceeds the change the machine's switch `cover` can explain (results.control's
    `Shift.cover`). A "same" does not: a move as large as the switch's can hide a change."""
    return verdict in (SLOWER, FASTER) and abs(diff) > cover


@functools.lru_cache(maxsize=32)
def two_look_alpha(alpha: float, first: int, total: int) -> float:
    """The level of each of two looks at one growing comparison, after `first` and after `total`
    blocks, such that the chance that either look calls a change that is not there stays `alpha`
    (Pocock's boundary: one critical value for both looks, the two statistics correlated by
    sqrt(first / total)). `run --vs` looks once to decide which points its second stage
    measures, and again at the end (docs/statistics.md, "Interleaving"): 0.0294 for 0.05 with
    two equal stages, `alpha` when the second stage adds nothing."""
    if not 0 < first < total:
        return alpha
    rho = math.sqrt(first / total)
    both = stats.multivariate_normal(mean=[0.0, 0.0], cov=[[1.0, rho], [rho, 1.0]])
    def excess(c: float) -> float:  # chance either |Z| passes c, less alpha
        return 1.0 - float(both.cdf([c, c], lower_limit=[-c, -c])) - alpha
    return float(2 * stats.norm.sf(optimize.brentq(excess, 0.5, 8.0)))
