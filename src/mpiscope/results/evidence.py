"""What a point's interval can say (docs/statistics.md, "Evidence"): "" when it informs; "machine
busy: CAUSE" when most launches were disturbed; "insufficient evidence: about N more launches"
when high/low exceeds POLICY.max_span. Every reader shows this text in place of such a band."""
from __future__ import annotations

import numpy as np
from scipy import special

from mpiscope.results.launches import LaunchPoint, launches_needed
from mpiscope.results.policy import POLICY, Policy


def more_launches(lp: LaunchPoint, policy: Policy = POLICY) -> int | None:
    """About how many more launches bring `lp`'s interval within policy.max_span at its observed
    variance; None when no number can (the drift from run to run alone is wider: more runs)."""
    half = np.log(policy.max_span) / 2
    if lp.drift is not None and policy.z95 * np.sqrt(lp.drift.var) >= half:
        return None
    target = float(np.expm1(half - (special.ndtri(0.5 + policy.level / 2) ** 2 * lp.drift.var) ** 0.5
                            if lp.drift is not None else half))
    return max(launches_needed(lp, max(target, 1e-6)) - lp.launches, 1)


def evidence(lp: LaunchPoint, policy: Policy = POLICY) -> str:
    """The flag of one point: '' when its interval informs."""
    if lp.busy:
        return f"machine busy: {lp.busy}"
    if lp.ci_low and lp.ci_high and lp.ci_low > 0 and lp.ci_high / lp.ci_low > policy.max_span:
        n = more_launches(lp, policy)
        return ("insufficient evidence: more runs needed (the drift from run to run is wider than the bound)"
                if n is None else f"insufficient evidence: about {n} more launches")
    return ""
