"""What a point's interval can say (docs/statistics.md, "Evidence"): "" when it informs; "machine
busy: CAUSE" when most launches were disturbed ("shorter than the clocks agree: CAUSE" when the
clock synchronisation's bound was the only cause); "insufficient evidence: about N more launches"
when high/low exceeds POLICY.max_span ("two machine states: ..." when the other state of the
machine this run met made it so). Every reader shows this text in place of such a band; the
headline, which shows the interval over the run's launches alone, flags that one
(`launch_evidence`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import special

from mpiscope.results.disturbance import clock_bound_only
from mpiscope.results.launches import LaunchPoint, launches_needed
from mpiscope.results.policy import POLICY, Policy

# the flag of a point whose run met one state of the machine where it has shown another
UNMET = "one machine state"


def more_launches(lp: LaunchPoint, policy: Policy = POLICY) -> int | None:
    """About how many more launches bring `lp`'s interval within policy.max_span at its observed
    variance; None when no number can (the drift from run to run alone is wider: more runs)."""
    half = np.log(policy.max_span) / 2
    drift_half = special.ndtri(0.5 + policy.level / 2) * np.sqrt(lp.drift.var) if lp.drift is not None else 0.0
    if drift_half >= half:
        return None
    # the launches' part and the drift add in quadrature (results.launches.with_drift): the
    # launches may take what the drift leaves of the half-width, not the difference of the two
    target = float(np.expm1(np.sqrt(half ** 2 - drift_half ** 2)))
    return max(launches_needed(lp, max(target, 1e-6)) - lp.launches, 1)


def clock_bound(lp: object) -> bool:
    """Whether a point most of whose launches were disturbed (`busy`) was disturbed by nothing but
    the clock synchronisation's bound, in every launch left out (`disturbed`): an event shorter
    than the ranks' clocks agree, the tiny collectives of an idle machine too."""
    causes = getattr(lp, "disturbed", ()) or (getattr(lp, "busy", ""),)
    return bool(getattr(lp, "busy", "")) and all(clock_bound_only(c) for c in causes)


def busy_flag(lp: LaunchPoint) -> str:
    """The flag of a point most of whose launches were disturbed: "machine busy: CAUSE" (the
    commonest cause), or "shorter than the clocks agree: CAUSE" where the clock bound was the
    only cause (`clock_bound`)."""
    return f"shorter than the clocks agree: {lp.busy}" if clock_bound(lp) else f"machine busy: {lp.busy}"


def launch_evidence(lp: LaunchPoint, policy: Policy = POLICY) -> str:
    """The flag of `lp`'s interval over this run's launches alone (`LaunchPoint.launch_ci`, the
    headline's): '' when it informs; more launches always narrow it, so the number is theirs."""
    if lp.busy:
        return busy_flag(lp)
    low, high = lp.launch_ci
    if low and high and low > 0 and high / low > policy.max_span:
        span = float(np.expm1(np.log(policy.max_span) / 2))
        return f"insufficient evidence: about {max(launches_needed(lp, span) - lp.launches, 1)} more launches"
    return ""


def wider(points: Sequence, target: float) -> list:
    """The points whose interval over this run's launches (`launch_half_width_rel`) is wider than
    the launch `target`, busy ones and those without an interval left out: the headline's
    "wider" count, which the budget warning repeats."""
    return [p for p in points if not getattr(p, "busy", "") and p.launch_half_width_rel > target]


def evidence(lp: LaunchPoint, policy: Policy = POLICY) -> str:
    """The flag of one point: '' when its interval informs; where the other state of the machine
    that this run met made it too wide (`launches.with_other_state`), the two readings; where the
    point was measured in one state of the machine only (`lp.unmet_state`, results.states: the
    machine showed earlier runs a state this run did not meet, or the point was left out where
    the run's state switched), that state: the interval holds for it alone, and how far the
    point moves in the other is unknown."""
    if lp.busy:
        return busy_flag(lp)
    if lp.ci_low and lp.ci_high and lp.ci_low > 0 and lp.ci_high / lp.ci_low > policy.max_span:
        if lp.other_state is not None and lp.state_ci is not None and lp.state_ci[1] / lp.state_ci[0] <= policy.max_span:
            return (f"two machine states: {lp.median:.3g} us, and {lp.other_state:.3g} us in the launches whose "
                    f"control switched; another run may read either")
        n = more_launches(lp, policy)
        return ("insufficient evidence: more runs needed (the drift from run to run is wider than the bound)"
                if n is None else f"insufficient evidence: about {n} more launches")
    if lp.unmet_state and lp.ci_low:
        return f"{UNMET}: {lp.unmet_state}; another run may read that state"
    return ""
