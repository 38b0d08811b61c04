"""Measured against simulated, point by point: the launch-level estimates of the source runs
and of the twin's simulated runs, each point's error, its target and, outside it, why (a
`Reason`: its kind and figures; report/calibrate.py says it in words)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from mpiscope.analysis.policy import ANALYSIS

# targets by what a point is to the fit (values and evidence: analysis.policy, "the twin")
TARGETS = {"fitted": ANALYSIS.twin_target_fitted, "held out": ANALYSIS.twin_target_held_out,
           "not fitted": ANALYSIS.twin_target_not_fitted}
KEY = ["benchmark", "ranks", "size"]


@dataclass(frozen=True)
class Reason:
    """Why a point lies outside its target, most direct first: its launches were `disturbed`
    (`cause`: what the results layer found) or `oversubscribed`; the measurement's own `spread`
    (its relative half-width) exceeds the target; a pingpong at a `switch` of regimes (`between`
    the two sizes) or off its regime's line (`regime`); messages `in_flight` together; SimGrid's
    `algorithm` (of `selector`) for a collective."""
    kind: str
    cause: str = ""
    spread: float = math.nan
    between: tuple[int, int] = (0, 0)
    selector: str = ""


@dataclass(frozen=True)
class Summary:
    points: int
    median: float          # of |error|
    worst: float           # largest |error|, signed
    worst_benchmark: str   # the point of the largest |error|
    worst_size: int
    worst_ranks: int
    outside: int


def _cause(frame: pd.DataFrame) -> list[Reason | None]:
    """What disturbed each point's launches, as the results layer judged it (None for nothing)."""
    points = frame["point"] if "point" in frame else [None] * len(frame)
    over = frame["oversubscribed"] if "oversubscribed" in frame else [False] * len(frame)
    out: list[Reason | None] = []
    for lp, o in zip(points, over):
        said = getattr(lp, "busy", "") or next(iter(getattr(lp, "disturbed", ()) or ()), "")
        out.append(Reason("disturbed", cause=said) if said else Reason("oversubscribed") if o is True else None)
    return out


def _estimates(frame: pd.DataFrame) -> pd.DataFrame:
    cols = [*KEY, "time_median_us", "time_ci_low_us", "time_ci_high_us"]
    if frame.empty or not set(cols) <= set(frame.columns):
        return pd.DataFrame(columns=[*cols, "cause"])
    rows = frame[cols].assign(cause=_cause(frame)).dropna(subset=["time_median_us"])
    # one figure a point: several source runs of one point, their median
    return rows.groupby(KEY, as_index=False).agg(
        time_median_us=("time_median_us", "median"), time_ci_low_us=("time_ci_low_us", "median"),
        time_ci_high_us=("time_ci_high_us", "median"),
        cause=("cause", lambda c: next((x for x in c if isinstance(x, Reason)), None)))


def role(benchmark: str, size: int, fitted: set[int], held: set[int]) -> str:
    if benchmark == "pingpong" and size in held:
        return "held out"
    if benchmark == "pingpong" and size in fitted:
        return "fitted"
    return "not fitted"


def compare(measured: pd.DataFrame, simulated: pd.DataFrame, fitted: set[int], held: set[int],
            switches: tuple[tuple[int, int], ...] = (), selector: str = "mpich") -> pd.DataFrame:
    """A row per point both sides have: the measured estimate and its interval, the simulated
    one, the error (simulated / measured - 1), the point's role and target, and the `Reason` a
    point outside its target is (None inside it)."""
    m, s = _estimates(measured), _estimates(simulated)
    both = m.merge(s[[*KEY, "time_median_us"]], on=KEY, suffixes=("", "_sim"))
    rows = []
    for r in both.itertuples(index=False):
        kind = role(r.benchmark, int(r.size), fitted, held)
        err = r.time_median_us_sim / r.time_median_us - 1
        target = TARGETS[kind]
        half = (r.time_ci_high_us - r.time_ci_low_us) / 2 / r.time_median_us \
            if pd.notna(r.time_ci_high_us) and pd.notna(r.time_ci_low_us) else np.nan
        rows.append({"benchmark": r.benchmark, "ranks": int(r.ranks), "size": int(r.size), "role": kind,
                     "measured_us": r.time_median_us, "measured_half_width": half,
                     "simulated_us": r.time_median_us_sim, "error": err, "target": target,
                     "outside": abs(err) > target,
                     "reason": _reason(r.benchmark, int(r.size), half, target, switches, selector, r.cause)
                     if abs(err) > target else None})
    return pd.DataFrame(rows, columns=["benchmark", "ranks", "size", "role", "measured_us", "measured_half_width",
                                       "simulated_us", "error", "target", "outside", "reason"])


def _reason(benchmark: str, size: int, half: float, target: float, switches: tuple[tuple[int, int], ...],
            selector: str, cause: Reason | None = None) -> Reason:
    if isinstance(cause, Reason):
        return cause
    if pd.notna(half) and half > target:
        return Reason("spread", spread=float(half))
    near = next(((a, b) for a, b in switches if a <= size <= b), None)
    if benchmark == "pingpong" and near:
        return Reason("switch", between=near)
    if benchmark == "pingpong":
        return Reason("regime")
    if benchmark in ("bw", "bibw", "pingpong_window"):
        return Reason("in_flight")
    return Reason("algorithm", selector=selector)


def summaries(table: pd.DataFrame) -> Mapping[str, Summary]:
    """Per role and for every point: median |error|, the worst, how many are outside target."""
    out = {}
    for name, g in [*table.groupby("role", sort=False), ("all", table)]:
        if g.empty:
            continue
        worst = g.loc[g["error"].abs().idxmax()]
        out[str(name)] = Summary(len(g), float(g["error"].abs().median()), float(worst["error"]),
                                 str(worst["benchmark"]), int(worst["size"]), int(worst["ranks"]),
                                 int(g["outside"].sum()))
    return out
