"""The robust launch-level location: Huber's M-estimator of the log launch medians, with a MAD
scale, from POLICY.robust_min_launches launches on (docs/statistics.md, "The estimate"). Clean
launches give the mean and the sample variance (the Student interval as before); one wild launch
counts as at most `huber_k` scales."""
from __future__ import annotations

import numpy as np

from mpiscope.results.policy import POLICY, Policy


def huber(y: np.ndarray, floor: float = 0.0, policy: Policy = POLICY) -> tuple[float, float]:
    """(location, variance of one observation) of `y` (log launch medians). The scale is
    1.4826 MAD, at least `floor` (the launches' own sampling SE: a spread inside it is no spread),
    else the sample SD when both are 0; the variance is Huber's sandwich
    s^2 sum(psi^2)/(L-1) / mean(psi')^2, the sample variance when no launch is clipped."""
    y = np.asarray(y, float)
    if len(y) < 2:
        return float(y.mean()), float("nan")
    if len(y) < policy.robust_min_launches:  # too few to tell a wild launch from spread
        return float(y.mean()), float(y.var(ddof=1))
    k = policy.huber_k
    scale = max(policy.mad_sigma * float(np.median(np.abs(y - np.median(y)))), floor)
    if not scale > 0:
        scale = float(y.std(ddof=1))
    if not scale > 0:
        return float(y.mean()), 0.0
    mu = float(np.median(y))
    for _ in range(100):
        r = (y - mu) / scale
        step = scale * float(np.clip(r, -k, k).mean()) / max(float((np.abs(r) <= k).mean()), 1 / len(y))
        mu += step
        if abs(step) <= 1e-12 * scale:
            break
    r = (y - mu) / scale
    psi, inside = np.clip(r, -k, k), float((np.abs(r) <= k).mean())
    var = scale ** 2 * float((psi ** 2).sum()) / (len(y) - 1) / max(inside, 1 / len(y)) ** 2
    return mu, var
