"""How many launches a run makes (docs/statistics.md): the launch policy, its option's one
grammar (`--launches N|auto`, a spec's `launches`, the API's `launches`), and the share of the
time budget its first round may spend. schedule.py decides the launches that follow."""
from __future__ import annotations

import os
from dataclasses import dataclass

from mpiscope.results.policy import POLICY

# Values and their evidence: `mpiscope.results.policy`.
MIN_LAUNCHES = POLICY.min_launches
MAX_LAUNCHES = POLICY.max_launches
LAUNCH_TARGET = POLICY.launch_target
AUTO_BUDGET_S = POLICY.auto_budget_s
DEFAULT_ENV = "MPISCOPE_LAUNCHES"  # a site's or a user's default for --launches (e.g. 1)
MOST_LAUNCHES = 1000


@dataclass(frozen=True)
class LaunchPolicy:
    """How many launches: a fixed count, or auto (None): MIN_LAUNCHES, then more while the
    launch-level interval is wider than `target` and the budget allows, up to MAX_LAUNCHES."""
    count: int | None = None
    target: float = LAUNCH_TARGET
    budget_s: float | None = None
    history: str = "auto"  # the earlier runs the drift is learnt from: auto, none, or run ids
    first: int = MIN_LAUNCHES  # auto launches: the first round's (the default run's is larger)
    # auto launches: seconds of their own after the first round (the default run's), instead of
    # what the first round left of the budget
    then_s: float | None = None
    # auto launches of a simulation: one, and a second only for the points whose samples differ
    # within it (a simulator repeats a point exactly; docs/simulation.md)
    simulated: bool = False

    @property
    def auto(self) -> bool:
        return self.count is None

    @property
    def first_round(self) -> int:
        return self.count or self.first


def parse_launches(value: str | int) -> int | None:
    """A number of launches (1 to 1000) or 'auto' (None); ValueError with the problem."""
    if value == "auto":
        return None
    try:
        n = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        n = None
    if n is None:
        raise ValueError(f"takes a number of launches or 'auto', got '{value}'")
    if not 1 <= n <= MOST_LAUNCHES:
        raise ValueError(f"must be between 1 and {MOST_LAUNCHES}, got {n}")
    return n


def default_launches() -> int | None:
    """The launches when none are asked for: $MPISCOPE_LAUNCHES, else auto."""
    text = os.environ.get(DEFAULT_ENV) or "auto"
    try:
        return parse_launches(text)
    except ValueError as e:
        from mpiscope.util.errors import UsageError
        raise UsageError(f"{DEFAULT_ENV} {e}: set it to a number or auto, or unset it") from None


def policy_from(launches: int | None, target: float | None, budget_s: float | None) -> LaunchPolicy:
    """The policy of checked options (the description's launches, launch_target, time_budget)."""
    return LaunchPolicy(launches, target or LAUNCH_TARGET, budget_s)


def first_round_budget(policy: LaunchPolicy) -> float | None:
    """The share of --time-budget the first round's launches may spend per launch: all of it
    over fixed launches; with auto launches half, the rest is for the launches that follow."""
    if policy.budget_s is None:
        return None
    return policy.budget_s / policy.first_round / (2 if policy.auto else 1)


def sampling(policy: LaunchPolicy, ci_target: float | None, max_time: float | None, reps: int | None,
             time_budget: float | None) -> tuple[float | None, float | None]:
    """The engine's --ci-target and --max-time per launch: the user's, or with several launches
    and nothing chosen, the first round's lighter sampling."""
    if policy.first_round == 1 or any(v is not None for v in (ci_target, max_time, reps, time_budget)):
        return ci_target, max_time
    return POLICY.first_round_ci_target, POLICY.first_round_max_time_s
