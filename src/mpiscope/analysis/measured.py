"""How the analysis reads measurements (`records.measured.Measured`): `select`, the one way the
fits get their observations, and the standard error every fit weighs a point by."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Sequence

import numpy as np

from mpiscope.records.measured import Measured, is_measured
from mpiscope.records.model import Point, Record
from mpiscope.results.launches import aggregate, configuration_of, launch_of
from mpiscope.results.policy import POLICY

from .policy import ANALYSIS


def sigma(p: Measured) -> float:
    """Standard error of the median, from the 95 % CI, floored."""
    s = (p.ci_high - p.ci_low) / 2.0 / POLICY.z95 if p.ci_low is not None and p.ci_high is not None else 0.0
    return max(s, ANALYSIS.rel_sigma_floor * abs(p.median or 0.0), ANALYSIS.abs_sigma_floor_us)


def select(records: Iterable[Record | Measured], benchmark: str | None = "pingpong",
           ranks: int | None = None, variant: str | None = None) -> list[Measured]:
    """The measurements of one benchmark (and rank count, and variant such as an RMA
    synchronisation mode) among typed records, sorted by size; other records (contexts,
    time-outs, skips) and points without a valid sample are left out.

    One observation per point and configuration: the records of a point's launches become one
    `LaunchPoint` (`launch_level`), so a fit weighs it by its launch-level interval."""
    pts = [r for r in records if is_measured(r) and r.median is not None
           and (benchmark is None or r.benchmark == benchmark) and (ranks is None or r.ranks == ranks)
           and (variant is None or getattr(r, "variant", None) == variant)]
    return sorted(launch_level(pts), key=lambda p: p.size)


def launch_level(points: Iterable[Measured]) -> list[Measured]:
    """Points that carry a launch tag, aggregated over their launches (`launches.aggregate`);
    anything else as it is: a point of a run measured before launches were tagged (each record
    one observation, as then), a `LaunchPoint`, a `Synthetic`.

    Records of several runs may be concatenated (`mpiscope model RUN1 RUN2`): a point that
    comes again in a launch it was already measured in starts another run, and the launches
    are renumbered so that each launch of each run stays one launch."""
    tagged: list[tuple[int, Point]] = []
    rest: list[Measured] = []
    run, seen = 0, set()
    for p in points:
        if not (isinstance(p, Point) and "launch" in p.tag):
            rest.append(p)
            continue
        k = (p.key, configuration_of(p), launch_of(p))
        if k in seen:
            run, seen = run + 1, set()
        seen.add(k)
        tagged.append((run, p))
    if run:
        ids = {rl: i for i, rl in enumerate(sorted({(r, launch_of(p)) for r, p in tagged}))}
        recs = [replace(p, tag={**p.tag, "launch": ids[r, launch_of(p)]}) for r, p in tagged]
    else:
        recs = [p for _, p in tagged]
    return [*aggregate(recs), *rest] if recs else rest


def arrays(points: Sequence[Measured]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sizes, medians, sigmas) as float arrays, in the given order."""
    x = np.array([p.size for p in points], dtype=float)
    y = np.array([p.median for p in points], dtype=float)
    s = np.array([sigma(p) for p in points], dtype=float)
    return x, y, s
