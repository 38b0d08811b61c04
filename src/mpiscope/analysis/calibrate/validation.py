"""Measured against simulated, point by point: the launch-level estimates of the source runs
and of the twin's simulated runs, each point's error, its target and, outside it, why (a
`Reason`: its kind and figures; report/calibrate.py says it in words)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from mpiscope.analysis.policy import ANALYSIS

# targets by what a point is to the fit (values and evidence: analysis.policy, "the twin")
TARGETS = {"fitted": ANALYSIS.twin_target_fitted, "held out": ANALYSIS.twin_target_held_out,
           "not fitted": ANALYSIS.twin_target_not_fitted}
KEY = ["benchmark", "ranks", "size"]


@dataclass(frozen=True)
class Reason:
    """Why a point lies outside its target. A cause the point's own size and benchmark name comes
    first, since it explains the error whatever the launches went through: a pingpong
    at a `switch` of regimes the fit found (`between` the two sizes) or at a `breakpoint` of SMPI's
    piecewise factors (`between` the measured sizes either side); messages `in_flight` together
    (SMPI shares the link among them). Then the measurement's own state, where it can be the cause:
    `disturbed` (`cause`: what the results layer found) or `oversubscribed` only when the
    measured time is the longer (a disturbance adds time, it never takes it away); its `spread`
    (relative half-width) past the target. Where that interval is wider than the target, this
    state of the measurement (disturbed, then spread) comes before `in_flight` too: such a bw
    point says nothing of SMPI's sharing. What is left: off its regime's line (`regime`), or
    SimGrid's `algorithm` (of `selector`) for a collective."""
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


def factor_breakpoints(cfg: Sequence[str]) -> tuple[int, ...]:
    """The sizes at which SMPI's piecewise `smpi/lat-factor` and `smpi/bw-factor` (KEY:VALUE, as a
    twin's record keeps them: "smpi/bw-factor:0:0.9;65536:0.97") change, 0 left out."""
    out: set[int] = set()
    for c in cfg:
        key, _, value = str(c).partition(":")
        if key not in ("smpi/lat-factor", "smpi/bw-factor"):
            continue
        for section in value.split(";"):
            size = section.split(":", 1)[0].strip()
            if size.isdigit() and int(size) > 0:
                out.add(int(size))
    return tuple(sorted(out))


def _bracket(size: int, sizes: Sequence[int], breakpoints: tuple[int, ...]) -> tuple[int, int] | None:
    """The measured sizes either side of a factor breakpoint (SMPI's factor applies from its size
    up) when `size` is one of them; None when no breakpoint lies next to it."""
    for b in breakpoints:
        below = [s for s in sizes if s < b]
        above = [s for s in sizes if s >= b]
        if below and above and size in (max(below), min(above)):
            return max(below), min(above)
    return None


def compare(measured: pd.DataFrame, simulated: pd.DataFrame, fitted: set[int], held: set[int],
            switches: tuple[tuple[int, int], ...] = (), selector: str = "mpich",
            breakpoints: tuple[int, ...] = ()) -> pd.DataFrame:
    """A row per point both sides have: the measured estimate and its interval, the simulated
    one, the error (simulated / measured - 1), the point's role and target, and the `Reason` a
    point outside its target is (None inside it). `breakpoints`: SMPI's factor breakpoints
    (`factor_breakpoints` of the twin's cfg)."""
    m, s = _estimates(measured), _estimates(simulated)
    both = m.merge(s[[*KEY, "time_median_us"]], on=KEY, suffixes=("", "_sim"))
    sizes = {b: sorted(int(x) for x in g["size"]) for b, g in both.groupby("benchmark")}
    rows = []
    for r in both.itertuples(index=False):
        kind = role(r.benchmark, int(r.size), fitted, held)
        err = r.time_median_us_sim / r.time_median_us - 1
        target = TARGETS[kind]
        half = (r.time_ci_high_us - r.time_ci_low_us) / 2 / r.time_median_us \
            if pd.notna(r.time_ci_high_us) and pd.notna(r.time_ci_low_us) else np.nan
        point = Point(r.benchmark, int(r.size), float(err), float(half))
        rows.append({"benchmark": r.benchmark, "ranks": int(r.ranks), "size": int(r.size), "role": kind,
                     "measured_us": r.time_median_us, "measured_half_width": half,
                     "simulated_us": r.time_median_us_sim, "error": err, "target": target,
                     "outside": abs(err) > target,
                     "reason": reason(point, target, Known(switches, breakpoints, tuple(sizes[r.benchmark]),
                                                           selector), r.cause)
                     if abs(err) > target else None})
    return pd.DataFrame(rows, columns=["benchmark", "ranks", "size", "role", "measured_us", "measured_half_width",
                                       "simulated_us", "error", "target", "outside", "reason"])


@dataclass(frozen=True)
class Point:
    """A validation point as `reason` reads it: its error (simulated / measured - 1) and the
    relative half-width of its measured interval."""
    benchmark: str
    size: int
    error: float
    half: float = math.nan


@dataclass(frozen=True)
class Known:
    """What is known of the twin and the runs: the fit's regime switches, SMPI's factor
    breakpoints, the sizes measured of the point's benchmark, the collective selector."""
    switches: tuple[tuple[int, int], ...] = ()
    breakpoints: tuple[int, ...] = ()
    sizes: tuple[int, ...] = ()
    selector: str = "mpich"


def reason(point: Point, target: float, known: Known, cause: Reason | None = None) -> Reason:
    """Why a point outside its target is there, in `Reason`'s order: a named cause of the point's
    own first, then a disturbance that can have caused the error, then what is left."""
    named = _named(point, known)
    wide = pd.notna(point.half) and point.half > target  # the measurement's own interval past the target
    if named is not None and not (named.kind == "in_flight" and wide):  # a wide bw is its spread's, first
        return named
    if isinstance(cause, Reason) and point.error < 0:  # the measurement is the slower side
        return cause
    if wide:
        return Reason("spread", spread=float(point.half))
    if point.benchmark == "pingpong":
        return Reason("regime")
    return Reason("algorithm", selector=known.selector)


def _named(point: Point, known: Known) -> Reason | None:
    """A cause the point's size and benchmark name, or None."""
    if point.benchmark == "pingpong":
        near = next(((a, b) for a, b in known.switches if a <= point.size <= b), None)
        if near:
            return Reason("switch", between=near)
        bracket = _bracket(point.size, known.sizes, known.breakpoints)
        return Reason("breakpoint", between=bracket) if bracket else None
    if point.benchmark in ("bw", "bibw", "pingpong_window"):
        return Reason("in_flight")
    return None


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
