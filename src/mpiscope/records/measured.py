"""What the analysis reads of a measurement (`Measured`): a size, the median time and its
confidence interval. A `Point` is one, a `results.launches.LaunchPoint` (a point over its
launches) is one; `Synthetic` is the one stand-in, for data made up in tests and examples."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from mpiscope.records.model import Context, End, Failure, Point, Skip, Timeout


@runtime_checkable
class Measured(Protocol):
    """One benchmark at one size on some ranks: its median time (µs) and the 95 % CI of it."""
    @property
    def benchmark(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def ranks(self) -> int: ...
    @property
    def median(self) -> float | None: ...
    @property
    def ci_low(self) -> float | None: ...
    @property
    def ci_high(self) -> float | None: ...
    @property
    def n(self) -> int: ...
    @property
    def samples(self) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class Synthetic:
    """A made-up measurement with the fields the analysis reads."""
    size: int
    median: float                      # microseconds
    ci_low: float | None = None        # 95 % CI of the median, microseconds
    ci_high: float | None = None
    n: int = 0
    benchmark: str = "pingpong"
    ranks: int = 2
    samples: tuple[float, ...] = field(default=(), repr=False)


def is_measured(r: object) -> bool:
    """A typed point, or another object with what `Measured` names (the protocol check is slow:
    records are told apart by their class first)."""
    if isinstance(r, Point):
        return True
    return not isinstance(r, (Context, Skip, Timeout, End, Failure)) and isinstance(r, Measured)
