"""The robust launch-level location (docs/statistics.md, "The estimate"): the geometric mean of
the launch medians without its wild launches. From POLICY.robust_min_launches launches on, a
launch whose log median lies more than POLICY.wild_sd robust standard deviations (MAD-based, at
least the launches' own sampling SE) and POLICY.wild_ratio-fold from the median of the launch
medians is wild, as long as at least POLICY.robust_keep of the launches stay: another mode or a
disturbed launch, not the tail of one level. Clean launches give exactly the geometric mean and
the Student interval."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import overload

import numpy as np
from scipy import special

from mpiscope.results.policy import POLICY, Policy


@overload
def t_quantile(dof: float, q: float) -> float: ...
@overload
def t_quantile(dof: np.ndarray, q: float) -> np.ndarray: ...
def t_quantile(dof: float | np.ndarray, q: float) -> float | np.ndarray:
    """Student's t quantile (`special.stdtrit`) at `dof` degrees of freedom, the one place the
    package takes it: of a number, kept per degrees of freedom and level (each is an iterative
    search, and every point of every run asks for one of the same few); of an array, each of
    its elements in one call."""
    if isinstance(dof, np.ndarray):
        return special.stdtrit(dof, q)
    return _kept_t_quantile(dof, q)


@lru_cache(maxsize=1 << 12)
def _kept_t_quantile(dof: float, q: float) -> float:
    return float(special.stdtrit(dof, q))


def wild(logs: np.ndarray, within_var: float = 0.0, policy: Policy = POLICY) -> np.ndarray:
    """Which of `logs` (log launch medians) are wild launches (all False when none may be left
    out: too few launches, or too many would go)."""
    return wild_rows(np.asarray(logs, float)[None, :], np.array([within_var], float), policy)[0]


def wild_rows(logs: np.ndarray, within_var: np.ndarray, policy: Policy = POLICY) -> np.ndarray:
    """`wild` of each row of `logs` (points x launches), each with its own `within_var`."""
    out = np.zeros(logs.shape, dtype=bool)
    if logs.shape[1] < policy.robust_min_launches:
        return out
    centre = np.median(logs, axis=1, keepdims=True)
    within = np.where(np.isfinite(within_var), within_var, 0.0)
    spread = np.maximum(policy.mad_sigma * np.median(np.abs(logs - centre), axis=1), np.sqrt(np.maximum(within, 0.0)))
    far = np.abs(logs - centre) > np.maximum(policy.wild_sd * spread, math.log(policy.wild_ratio))[:, None]
    allowed = far.any(axis=1) & ((~far).sum(axis=1) >= max(3, policy.robust_keep * logs.shape[1]))
    out[allowed] = far[allowed]
    return out


def robust_location(logs: np.ndarray, within_var: float = 0.0, policy: Policy = POLICY
                    ) -> tuple[float, float, int]:
    """(location, variance of one launch, launches left out as wild) of `logs`: the mean and
    sample variance of the launches that are not wild."""
    centre, var, left_out = location_rows(np.asarray(logs, float)[None, :], np.array([within_var], float), policy)
    return float(centre[0]), float(var[0]), int(left_out[0])


def location_rows(logs: np.ndarray, within_var: np.ndarray, policy: Policy = POLICY
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`robust_location` of each row of `logs` (points x launches) at once: numpy's calls made
    once for a run's points, not once a point; a row with wild launches is worked out alone over
    the launches it keeps (the same sums, in the same order, as for that row by itself)."""
    far = wild_rows(logs, within_var, policy)
    left_out = far.sum(axis=1)
    n = logs.shape[1]
    centre = logs.mean(axis=1) if n else np.full(len(logs), math.nan)
    var = logs.var(axis=1, ddof=1) if n >= 2 else np.full(len(logs), math.nan)
    for r in np.flatnonzero(left_out):
        kept = logs[r][~far[r]]
        centre[r] = kept.mean()
        var[r] = kept.var(ddof=1) if len(kept) >= 2 else math.nan
    return centre, var, left_out


def robust_interval(logs: np.ndarray, within_var: float = 0.0, level: float = POLICY.level,
                    policy: Policy = POLICY) -> tuple[float, float, int]:
    """(location, half-width of its `level` interval, launches left out as wild) of `logs`: the
    Student interval over the launches kept; where they all agree (a coarse timer), their own
    sampling variance `within_var` stands in for the spread."""
    centre, half, left_out = interval_rows(np.asarray(logs, float)[None, :], np.array([within_var], float), level,
                                           policy)
    return float(centre[0]), float(half[0]), int(left_out[0])


def interval_rows(logs: np.ndarray, within_var: np.ndarray, level: float = POLICY.level, policy: Policy = POLICY
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`robust_interval` of each row of `logs` (points x launches), each with its `within_var`."""
    centre, var, left_out = location_rows(logs, within_var, policy)
    k = logs.shape[1] - left_out
    total = np.where((var > 0) | ~np.isfinite(within_var), var, within_var)
    t = np.array([t_quantile(int(kept) - 1, 0.5 + level / 2) for kept in k.tolist()])
    return centre, t * np.sqrt(total / k), left_out
