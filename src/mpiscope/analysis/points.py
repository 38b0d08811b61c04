"""The one input type of the analysis: a measured point (size, median time and
its confidence interval), read from the engine's `point` records."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

# A CI narrower than this fraction of the median is not believed: the medians
# of neighbouring sizes scatter more than their own CIs say (cache state, page
# placement), so weights built from raw CIs would let one point dominate.
REL_SIGMA_FLOOR = 0.005
# Below the timer's practical resolution nothing is resolved (microseconds).
ABS_SIGMA_FLOOR_US = 0.002


@dataclass(frozen=True)
class Point:
    size: int
    median: float                      # microseconds
    ci_low: float | None = None        # 95 % CI of the median, microseconds
    ci_high: float | None = None
    n: int = 0
    benchmark: str = "pingpong"
    ranks: int = 2
    samples: tuple[float, ...] = field(default=(), repr=False)

    @property
    def sigma(self) -> float:
        """Standard error of the median, from the 95 % CI, floored."""
        if self.ci_low is not None and self.ci_high is not None:
            half = (self.ci_high - self.ci_low) / 2.0
            s = half / 1.96
        else:
            s = 0.0
        return max(s, REL_SIGMA_FLOOR * abs(self.median), ABS_SIGMA_FLOOR_US)


def point_from_record(rec: Mapping) -> Point:
    t = rec["time_us"]
    return Point(size=int(rec["size"]), median=float(t["median"]),
                 ci_low=t.get("ci_low"), ci_high=t.get("ci_high"),
                 n=int(t.get("n", 0)), benchmark=str(rec.get("benchmark", "")),
                 ranks=int(rec.get("ranks", 2)),
                 samples=tuple(rec.get("samples_us") or ()))


def points_from_records(records: Iterable[Mapping], benchmark: str | None = "pingpong",
                        ranks: int | None = None) -> list[Point]:
    """Point records of one benchmark (and rank count), sorted by size.

    Repeated sizes (several launches, refinement rounds) are all kept: the fits
    treat each as one observation."""
    pts = [point_from_record(r) for r in records
           if r.get("type") == "point"
           and (benchmark is None or r.get("benchmark") == benchmark)
           and (ranks is None or int(r.get("ranks", 0)) == ranks)]
    return sorted(pts, key=lambda p: p.size)


def arrays(points: Sequence[Point]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sizes, medians, sigmas) as float arrays, in the given order."""
    x = np.array([p.size for p in points], dtype=float)
    y = np.array([p.median for p in points], dtype=float)
    s = np.array([p.sigma for p in points], dtype=float)
    return x, y, s
