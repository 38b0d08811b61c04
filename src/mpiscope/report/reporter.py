"""The one reporter interface: every output (terminal summary, side-by-side tables, exports, plots,
the HTML report, the API's frames) is a `Reporter` that renders the same `Results`, built once by
the results layer (`mpiscope.results.view.results_of`). A reporter formats; it never derives a
launch-level figure (docs/architecture.md, *One results layer*)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, TypeVar

import pandas as pd

from mpiscope.results.view import LaunchRun, Results, results_of

T_co = TypeVar("T_co", covariant=True)


class Reporter(Protocol[T_co]):
    """One output of a set of results."""
    def render(self, results: Results) -> T_co: ...


@dataclass(frozen=True)
class Frame:
    """The table the API returns (`api.table`): a row per point over its launches with its
    estimate, interval and evidence flag, or with `per_launch` a row per point and launch."""
    per_launch: bool = False

    def render(self, results: Results) -> pd.DataFrame:
        return results.table(self.per_launch)


def report(runs: Iterable[LaunchRun] | Results, reporter: Reporter[T_co]) -> T_co:
    """`reporter`'s output of runs (their results built here) or of results already built."""
    return reporter.render(runs if isinstance(runs, Results) else results_of(runs))
