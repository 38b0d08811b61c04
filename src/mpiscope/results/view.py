"""The results of a set of runs, built once by the results layer and read by every reporter
(`mpiscope.report.reporter`): the per-launch tidy table, the launch-level frame (estimate,
interval, evidence flag, disturbed launches, drift: `results.frame`), each run's launch-level
points, and what disturbed each launch as a whole (its end record's counters). A reporter
formats these figures; it never derives one."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping, NamedTuple, Protocol, Sequence

import pandas as pd

from mpiscope.records.model import Context, End, Point
from mpiscope.records.reader import RecordFile
from mpiscope.records.run import RunView
from mpiscope.results.table import column_id, tidy
from mpiscope.results.disturbance import Tally, launch_disturbed
from mpiscope.results.control import RunControl, run_control
from mpiscope.results.frame import launch_frame
from mpiscope.results.launches import LaunchPoint
from mpiscope.results.points import launch_of


class Estimate(NamedTuple):
    """One point of one run (and configuration) at the launch level, as every reader shows it."""
    point: LaunchPoint
    evidence: str  # "" when the interval informs, else the flag shown in its place (results.evidence)


class Judged(NamedTuple):
    """What disturbed one run's points and launches, as the results derived it: its point records
    in the order of its records file with each one's `disturbed` cell, each finished launch's
    cause, and the run's machine-state control (None when it recorded none)."""
    points: Sequence[Any]
    causes: Sequence[str]
    launches: Mapping[int, str]
    control: RunControl | None = None


class LaunchRun(RunView, Protocol):
    """What the results read of a run beyond the tidy table's view: its records."""
    def records(self) -> RecordFile: ...


@dataclass(frozen=True)
class Results:
    """Everything the reporters show of `runs`, derived once."""
    runs: tuple[LaunchRun, ...]
    per_launch: pd.DataFrame  # the tidy table: a row per point and launch (results.table.tidy)
    # (run id, launch) -> what disturbed the launch as a whole ("" for nothing), each finished launch
    launch_causes: Mapping[tuple[str, int], str] = field(default_factory=dict)
    # run id -> its machine-state control (results.control), for the runs that recorded one
    controls: Mapping[str, RunControl] = field(default_factory=dict)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """A row per point and configuration over its launches (results.frame.launch_frame)."""
        return launch_frame(self.per_launch)

    def table(self, per_launch: bool = False) -> pd.DataFrame:
        """The frame the API, exports and tables read: launch-level, or a row per launch."""
        return self.per_launch if per_launch else self.frame

    def records(self, run_id: str) -> RecordFile:
        return next(r for r in self.runs if r.id == run_id).records()

    def points(self, run_id: str) -> dict[tuple, Estimate]:
        """The launch-level points of one run by (point key, configuration): a run of a sweep
        configuration given with its sibling runs shows the pooled estimate of their launches."""
        df = self.frame
        if df.empty or "point" not in df or "run_id" not in df:
            return {}
        mine = set(self.per_launch.loc[self.per_launch["run_id"] == column_id(run_id), "point"].map(id))
        flags = df["evidence"] if "evidence" in df else pd.Series("", index=df.index)
        return {(lp.key, lp.config): Estimate(lp, str(flag or ""))
                for lp, flag in zip(df["point"], flags)
                if isinstance(lp, LaunchPoint) and any(id(p) in mine for p in lp.points)}

    def judged(self, run_id: str) -> Judged:
        """What disturbed the points and launches of one run (the per-launch table's `disturbed`
        column and `launch_causes`) and its control (`controls`), for readers of its records."""
        rows = self.per_launch
        launches = {launch: cause for (run, launch), cause in self.launch_causes.items() if run == run_id}
        control = self.controls.get(run_id)
        if not {"run_id", "point", "disturbed"} <= set(rows.columns):
            return Judged((), (), launches, control)
        mine = (rows["run_id"] == column_id(run_id)).to_numpy()
        return Judged(rows["point"].to_numpy()[mine], rows["disturbed"].to_numpy()[mine], launches, control)

    @property
    def launches_switched(self) -> dict[tuple[str, int], str]:
        """(run id, launch) -> "machine state switched: ...": the launches whose control moved
        beyond its run's noise (results.control), a state of the machine, not a configuration."""
        return {k: cause for rc in self.controls.values() for k, cause in rc.switched().items()}

    @property
    def launches_disturbed(self) -> dict[tuple[str, int], str]:
        """(run id, launch) -> what disturbed the launch as a whole, read from its end record's
        counters (results.disturbance.launch_disturbed); launches that nothing disturbed are left out."""
        return {k: cause for k, cause in self.launch_causes.items() if cause}


def launch_causes(records: Iterable[Any]) -> dict[int, str]:
    """Each finished launch's cause ("" for none) by launch number: the end record's counters
    under the rule, over the points that launch measured, with the core count of its own context."""
    out: dict[int, str] = {}
    ctx: Context | None = None
    tallies: dict[int, Tally] = defaultdict(Tally)
    for rec in records:
        if isinstance(rec, Context):
            ctx = rec
        elif isinstance(rec, Point) and rec.imported is None:
            tallies[launch_of(rec)].add(rec)
        elif isinstance(rec, End):
            launch = launch_of(rec)
            out[launch] = launch_disturbed(rec, ctx, tallies[launch])
    return out


def results_of(runs: Iterable[LaunchRun]) -> Results:
    """The results of runs, in the order given (each run's records read once: store.Run caches
    them); the per-launch table gains `launch_disturbed`, what disturbed each row's launch as a
    whole ("" for nothing)."""
    rs = tuple(runs)
    df = tidy(rs)
    whole = {(run.id, launch): cause for run in rs for launch, cause in launch_causes(run.records()).items()}
    if not df.empty and "run_id" in df:
        launch = df["launch"] if "launch" in df else pd.Series(0, index=df.index)
        df["launch_disturbed"] = [whole.get((r, int(n) if pd.notna(n) else 0), "")
                                  for r, n in zip(df["run_id"].tolist(), launch.tolist())]  # read whole, not per cell
    controls = {run.id: rc for run in rs for rc in [run_control(run.records(), run.id)] if rc is not None}
    if controls and not df.empty and "run_id" in df:
        switched = {k: cause for rc in controls.values() for k, cause in rc.switched().items()}
        launch = df["launch"] if "launch" in df else pd.Series(0, index=df.index)
        df["control_switched"] = [switched.get((r, int(n) if pd.notna(n) else 0), "")
                                  for r, n in zip(df["run_id"].tolist(), launch.tolist())]
    return Results(rs, df, whole, controls)
