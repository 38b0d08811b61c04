"""Hockney model T(n) = alpha + beta * n for one regime: robust fit, confidence
intervals, derived bandwidth and n_1/2, and cycle figures (report/hockney.py shows them)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .clock import Clock
from mpiscope.records.measured import Measured

from .measured import arrays
from .policy import ANALYSIS
from mpiscope.results.policy import POLICY
from .robust import line_covariance, robust_line

Interval = tuple[float, float]
MIB = 1024.0 * 1024.0


@dataclass(frozen=True)
class Issue:
    """Why a figure of a fit is not identifiable, or why the fit cannot price a transfer, as the
    figures behind it (report/hockney.py's `issue_text` words it). `kind` is one of
    negative_latency, latency_reaches_0, negative_per_byte, per_byte_reaches_0, above_ceiling."""
    kind: str
    value: float       # the estimate: latency (us), per-byte cost (us/byte) or throughput (MiB/s)
    interval: Interval
    bound: float = 0.0  # the smallest size fitted (latency_reaches_0), the ceiling in MiB/s (above_ceiling)


@dataclass(frozen=True)
class HockneyFit:
    alpha_us: float
    alpha_ci: Interval
    beta_us_per_byte: float
    beta_ci: Interval
    bandwidth_MiBps: float              # 1/beta, MiB/s (2^20 bytes per second)
    bandwidth_ci: Interval
    n_half: float                       # bytes: alpha/beta, where half of 1/beta is reached
    n_half_ci: Interval
    size_range: tuple[int, int]
    n_points: int
    outliers: tuple[int, ...]           # sizes the robust fit gave zero weight
    ci_method: str                      # "bootstrap" over points, else "covariance" (WLS, normal)
    ci_level: float
    ci_reps: int = 0                    # the bootstrap's resamples
    clock: Clock | None = None

    @property
    def bandwidth_MBps(self) -> float:
        return self.bandwidth_MiBps * MIB / 1e6

    @property
    def alpha_cycles(self) -> float | None:
        return None if self.clock is None else self.clock.cycles(self.alpha_us)

    @property
    def beta_cycles_per_byte(self) -> float | None:
        return None if self.clock is None else self.clock.cycles(self.beta_us_per_byte)

    def cycles_ci(self, which: str) -> Interval | None:
        if self.clock is None:
            return None
        lo, hi = self.alpha_ci if which == "alpha" else self.beta_ci
        return self.clock.cycles(lo), self.clock.cycles(hi)

    def predict(self, n: float | np.ndarray) -> float | np.ndarray:
        return self.alpha_us + self.beta_us_per_byte * np.asarray(n, dtype=float)

    # Identifiability (docs/models.md): a parameter whose estimate or interval reaches 0 or below
    # is not determined by the data. Its figure and the figures derived from it (bandwidth 1/beta,
    # n_1/2 = alpha/beta) are shown as "not identifiable" with the reason, never as a number.
    @property
    def latency_issue(self) -> Issue | None:
        """Why the latency Ts is not identifiable, or None when it is."""
        a, (lo, hi) = self.alpha_us, self.alpha_ci
        if a > 0 and lo > 0:
            return None
        if hi < 0:
            return Issue("negative_latency", a, self.alpha_ci)
        return Issue("latency_reaches_0", a, self.alpha_ci, self.size_range[0])

    @property
    def per_byte_issue(self) -> Issue | None:
        """Why the per-byte cost Tc (and so the bandwidth) is not identifiable, or None."""
        b, (lo, hi) = self.beta_us_per_byte, self.beta_ci
        if b > 0 and lo > 0 and math.isfinite(self.bandwidth_ci[1]):
            return None
        return Issue("negative_per_byte" if hi < 0 else "per_byte_reaches_0", b, self.beta_ci)

    @property
    def issues(self) -> tuple[Issue, ...]:
        """Why the fit is not valid (empty when it is): each parameter's issue."""
        return tuple(i for i in (self.latency_issue, self.per_byte_issue) if i)

    @property
    def valid(self) -> bool:
        """Every parameter identifiable: the fit is a model of latency and bandwidth."""
        return not self.issues


def _derived(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bandwidth (MiB/s) and n_1/2 for arrays of (alpha, beta); a non-positive
    beta means no measurable per-byte cost: bandwidth unbounded."""
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(b > 0, 1e6 / (b * MIB), np.inf)
        nh = np.where(b > 0, a / b, np.inf)
    return bw, nh


def _pct(v: np.ndarray, level: float) -> Interval:
    # "nearest" never interpolates, so an unbounded (inf) bandwidth in some
    # resamples gives an inf bound rather than nan.
    lo, hi = np.percentile(v, [50 * (1 - level), 50 * (1 + level)], method="nearest")
    return float(lo), float(hi)


def _bootstrap(x, y, sigma, rw, reps: int, level: float, seed: int):
    """Case-resampling bootstrap, vectorised: each replicate is the weighted
    line fit with the points' multinomial counts as extra weights. The robust
    weights are held at their full-data values, so outliers stay out of every
    replicate instead of being resampled back in."""
    rng = np.random.default_rng(seed)
    n = len(x)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=reps).astype(float)
    w = counts * (rw / sigma ** 2)[None, :]
    sw = w.sum(1)
    xm = (w * x).sum(1) / sw
    ym = (w * y).sum(1) / sw
    sxx = (w * (x - xm[:, None]) ** 2).sum(1)
    ok = sxx > 0
    b = (w * (x - xm[:, None]) * (y - ym[:, None])).sum(1)[ok] / sxx[ok]
    a = ym[ok] - b * xm[ok]
    bw, nh = _derived(a, b)
    return _pct(a, level), _pct(b, level), _pct(bw, level), _pct(nh, level)


def _delta(a: float, b: float, cov: np.ndarray, level: float):
    """Normal-theory CIs from the WLS covariance (few points)."""
    from scipy.stats import norm
    z = float(norm.ppf(0.5 + level / 2))
    sa, sb = math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])
    a_ci, b_ci = (a - z * sa, a + z * sa), (b - z * sb, b + z * sb)
    bw_ci, _ = _derived(np.full(2, a), np.array([b_ci[1], b_ci[0]]))  # the larger beta, the lower bandwidth
    # n_1/2 = a/b: first-order error propagation with the a-b covariance.
    if b > 0:
        g = np.array([1 / b, -a / b ** 2])
        s_nh = math.sqrt(max(float(g @ cov @ g), 0.0))
        nh_ci = (a / b - z * s_nh, a / b + z * s_nh)
    else:
        nh_ci = (math.inf, math.inf)
    return a_ci, b_ci, (float(bw_ci[0]), float(bw_ci[1])), nh_ci


def fit_hockney(points: Sequence[Measured], clock: Clock | None = None, level: float = POLICY.level,
                reps: int = ANALYSIS.bootstrap_reps, seed: int = 0) -> HockneyFit:
    """Fit T(n) = alpha + beta n to the medians of `points` (one regime).

    Weights are 1/sigma^2 with sigma from each median's CI (floored at 0.5 %
    of the median), so the fit is effectively in relative terms: 1-byte and
    4-MiB points both count. Tukey-bisquare IRLS removes outliers. CIs come
    from a bootstrap over points (>= 8 points) or the WLS covariance."""
    if len(points) < 2:
        raise ValueError("a Hockney fit needs at least 2 points")
    x, y, sigma = arrays(points)
    if len(np.unique(x)) < 2:
        raise ValueError("a Hockney fit needs at least 2 different sizes")
    a, b, rw = robust_line(x, y, sigma)
    bw, nh = _derived(np.array([a]), np.array([b]))
    if len(np.unique(x[rw > 0])) >= ANALYSIS.bootstrap_min_points:
        a_ci, b_ci, bw_ci, nh_ci = _bootstrap(x, y, sigma, rw, reps, level, seed)
        method, resamples = "bootstrap", reps
    else:
        cov = line_covariance(x, y, sigma, rw, a, b)
        a_ci, b_ci, bw_ci, nh_ci = _delta(a, b, cov, level)
        method, resamples = "covariance", 0
    return HockneyFit(
        alpha_us=a, alpha_ci=a_ci, beta_us_per_byte=b, beta_ci=b_ci,
        bandwidth_MiBps=float(bw[0]), bandwidth_ci=bw_ci,
        n_half=float(nh[0]), n_half_ci=nh_ci,
        size_range=(int(x.min()), int(x.max())), n_points=len(points),
        outliers=tuple(int(v) for v in x[rw == 0]), ci_method=method, ci_level=level,
        ci_reps=resamples, clock=clock)


def implausible(fit: HockneyFit, max_bandwidth_MiBps: float | None = None) -> Issue | None:
    """Why `fit` cannot price a transfer (predict refuses it), or None: a latency below 0 with its
    whole interval (and more than `negative_latency_share` of the regime's shortest time), a
    negative per-byte cost (T falling with the size), or a throughput whose interval lies above
    `max_bandwidth_MiBps` (the caller's physical ceiling, e.g. 10x the fastest memcpy). A figure
    that is merely not identifiable (an interval reaching 0: the latency of large messages only,
    the per-byte cost of a flat small-message regime) leaves the line usable for its own sizes;
    it is shown as "not identifiable", never as a number (`latency_issue`, `per_byte_issue`)."""
    a, a_hi = fit.alpha_us, fit.alpha_ci[1]
    shortest = float(fit.predict(fit.size_range[0]))
    if a < 0 and a_hi < 0 and -a > ANALYSIS.negative_latency_share * abs(shortest):
        return fit.latency_issue
    if fit.beta_us_per_byte < 0:  # even inside its interval: priced beyond its sizes the line would go below 0
        return Issue("negative_per_byte", fit.beta_us_per_byte, fit.beta_ci)
    if max_bandwidth_MiBps is not None and fit.bandwidth_ci[0] > max_bandwidth_MiBps:
        return Issue("above_ceiling", fit.bandwidth_MiBps, fit.bandwidth_ci, max_bandwidth_MiBps)
    return None


def bandwidth_only(fit: HockneyFit, flag: Issue | None) -> bool:
    """A regime that is no model (`flag`) only because of its latency: large messages alone do
    not determine an intercept, but its per-byte cost and bandwidth still hold and are shown."""
    return flag is not None and flag == fit.latency_issue and fit.per_byte_issue is None
