"""The robust launch-level location (docs/statistics.md, "The estimate"): the geometric mean of
the launch medians without its wild launches. From POLICY.robust_min_launches launches on, a
launch whose log median lies more than POLICY.wild_sd robust standard deviations (MAD-based, at
least the launches' own sampling SE) and POLICY.wild_ratio-fold from the median of the launch
medians is wild, as long as at least POLICY.robust_keep of the launches stay: another mode or a
disturbed launch, not the tail of one level. Clean launches give exactly the geometric mean and
the Student interval."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from mpiscope.results.policy import POLICY, Policy


def wild(logs: np.ndarray, within_var: float = 0.0, policy: Policy = POLICY) -> np.ndarray:
    """Which of `logs` (log launch medians) are wild launches (all False when none may be left
    out: too few launches, or too many would go)."""
    logs = np.asarray(logs, float)
    out = np.zeros(len(logs), dtype=bool)
    if len(logs) < policy.robust_min_launches:
        return out
    centre = float(np.median(logs))
    within = within_var if np.isfinite(within_var) else 0.0
    spread = max(policy.mad_sigma * float(np.median(np.abs(logs - centre))), math.sqrt(max(within, 0.0)))
    far = np.abs(logs - centre) > max(policy.wild_sd * spread, math.log(policy.wild_ratio))
    return far if far.any() and (~far).sum() >= max(3, policy.robust_keep * len(logs)) else out


def robust_location(logs: np.ndarray, within_var: float = 0.0, policy: Policy = POLICY
                    ) -> tuple[float, float, int]:
    """(location, variance of one launch, launches left out as wild) of `logs`: the mean and
    sample variance of the launches that are not wild."""
    logs = np.asarray(logs, float)
    kept = logs[~wild(logs, within_var, policy)]
    var = float(kept.var(ddof=1)) if len(kept) >= 2 else float("nan")
    return float(kept.mean()), var, len(logs) - len(kept)


def robust_interval(logs: np.ndarray, within_var: float = 0.0, level: float = POLICY.level,
                    policy: Policy = POLICY) -> tuple[float, float, int]:
    """(location, half-width of its `level` interval, launches left out as wild) of `logs`: the
    Student interval over the launches kept; where they all agree (a coarse timer), their own
    sampling variance `within_var` stands in for the spread."""
    centre, var, left_out = robust_location(logs, within_var, policy)
    k = len(logs) - left_out
    total = var if var > 0 or not np.isfinite(within_var) else within_var
    return centre, float(special.stdtrit(k - 1, 0.5 + level / 2) * math.sqrt(total / k)), left_out
