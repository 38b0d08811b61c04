"""Robust weighted straight-line fitting shared by the Hockney fit and the
collective-parameter fits: Tukey-bisquare IRLS started from a weighted L1 fit."""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from mpiscope.results.policy import POLICY

from .policy import ANALYSIS



def wls_line(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted least squares y = a + b x; returns (a, b)."""
    sw = w.sum()
    xm = (w * x).sum() / sw
    ym = (w * y).sum() / sw
    sxx = (w * (x - xm) ** 2).sum()
    b = (w * (x - xm) * (y - ym)).sum() / sxx if sxx > 0 else 0.0
    return ym - b * xm, b


def l1_line(x: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> tuple[float, float]:
    """Weighted median (L1, quantile-0.5) regression: min sum |y - a - b x| / sigma.

    Solved as a linear programme. Its residuals are scaled by sigma, so small
    and large messages count alike, and half the points can be off the line
    before it moves -- the right start for IRLS."""
    n = len(x)
    xs = max(float(np.max(np.abs(x))), 1.0)      # conditioning: slope per unit of xs
    ys = max(float(np.max(np.abs(y))), 1e-30)
    w = 1.0 / sigma * ys
    # variables: a, b, u_1..u_n, v_1..v_n with y/ys = a + b x/xs + u - v
    c = np.concatenate([[0.0, 0.0], w, w])
    A = np.hstack([np.ones((n, 1)), (x / xs)[:, None], np.eye(n), -np.eye(n)])
    bounds = [(None, None), (None, None)] + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=A, b_eq=y / ys, bounds=bounds, method="highs")
    if not res.success:
        return wls_line(x, y, 1.0 / sigma ** 2)
    return float(res.x[0] * ys), float(res.x[1] * ys / xs)


def robust_line(x: np.ndarray, y: np.ndarray, sigma: np.ndarray,
                start: tuple[float, float] | None = None,
                iters: int = 30) -> tuple[float, float, np.ndarray]:
    """Bisquare IRLS on residuals standardised by `sigma` and by a MAD scale.

    Returns (a, b, robustness weights in [0, 1]). A point far off the line
    gets weight 0, so a few outliers cannot drag the fit; the start from the
    weighted L1 fit keeps IRLS from locking onto the outliers at first."""
    if start is None:
        start = l1_line(x, y, sigma) if len(x) >= 3 else wls_line(x, y, 1.0 / sigma ** 2)
    a, b = start
    rw = np.ones_like(x)
    for _ in range(iters):
        z = (y - a - b * x) / sigma
        scale = POLICY.mad_sigma * np.median(np.abs(z - np.median(z)))
        # Never call the noise smaller than the points' own error bars say.
        scale = max(scale, 1.0)
        u = z / (ANALYSIS.tukey_c * scale)
        rw = np.where(np.abs(u) < 1, (1 - u ** 2) ** 2, 0.0)
        if np.count_nonzero(rw) < 2:
            rw = np.ones_like(x)
        a_new, b_new = wls_line(x, y, rw / sigma ** 2)
        done = abs(a_new - a) <= 1e-10 * (abs(a) + 1e-12) and \
            abs(b_new - b) <= 1e-10 * (abs(b) + 1e-30)
        a, b = a_new, b_new
        if done:
            break
    return a, b, rw


def line_covariance(x: np.ndarray, y: np.ndarray, sigma: np.ndarray, rw: np.ndarray,
                    a: float, b: float) -> np.ndarray:
    """Covariance of (a, b) from the weighted normal equations, scaled by the
    reduced chi-square when it exceeds 1 (model error beyond the CIs)."""
    w = rw / sigma ** 2
    keep = rw > 0
    X = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.pinv(X.T @ (w[:, None] * X))
    dof = max(int(keep.sum()) - 2, 1)
    chi2 = float((w * (y - a - b * x) ** 2).sum()) / dof
    return cov * max(chi2, 1.0)
