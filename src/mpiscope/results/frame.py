"""The launch-level frame: the tidy table with one row per point and configuration of a run, its
figures taken over the run's launches (`results.launches.aggregate`) with the drift and the
evidence flag, sorted by benchmark, variant, size: what every table, plot, export, report and the
API show unless asked for each launch's own rows."""
from __future__ import annotations

from dataclasses import replace
from operator import attrgetter
from typing import Any

import pandas as pd

from mpiscope.results.evidence import evidence
from mpiscope.results.launches import PRIOR_DRIFT, Drift, LaunchPoint, aggregate_runs, with_drift, with_other_state
from mpiscope.results.points import configuration_of, disturbed_of
from mpiscope.records.model import Point
from mpiscope.results.states import kept_in_one_state
from mpiscope.util import gcpause

# Columns of one launch's record that no launch-level figure replaces: left out of the frame.
_PER_LAUNCH = ("launch", "time_min_us", "time_mean_us", "time_p90_us", "time_p99_us", "time_stddev_us",
               "time_max_us", "bw_max_MBps", "busbw_max_MBps", "start_time", "warmup", "disturbed",
               "launch_disturbed", "control_switched")
# Launch-level columns, in the order they follow the point's figures.
LEVEL_COLUMNS = ("launches", "launch_medians_us", "share_between", "half_width_rel", "launch_ci_low_us",
                 "launch_ci_high_us", "launch_half_width_rel", "modes", "drift_runs", "run_levels", "evidence",
                 "disturbed_launches")


_SAMPLES, _ELAPSED, _INVALID = map(attrgetter, ("time_us.n", "elapsed_s", "invalid"))


def is_launch_level(df: pd.DataFrame) -> bool:
    return "launches" in df.columns


def _rate(row: dict[str, Any], col: str, lp: LaunchPoint) -> float | None:
    """A rate column (bytes per time) at the launch-level estimate: the first launch's rate
    scaled by its time over the estimate, so bw, busbw and the ring's figures all follow."""
    v, t = row.get(col), row.get("time_median_us")
    if v is None or t is None or pd.isna(v) or pd.isna(t) or not lp.median:
        return v
    return float(v) * float(t) / lp.median


def _drifted(base: dict[str, Any], lp: LaunchPoint, runs: int) -> LaunchPoint:
    """A point of one run with the run-to-run drift its run.json keeps, else the stated prior (a
    sweep configuration's runs pooled are several runs already: no drift added). A simulated
    point has no prior: the simulator repeats its figures, so only a drift learnt from runs
    whose figures differ widens it."""
    drift = base.get("drift")
    if isinstance(drift, Drift) or runs != 1:
        return with_drift(lp, drift) if runs == 1 else lp
    simulated = base.get("simulated")
    return lp if isinstance(simulated, str) else with_drift(lp, PRIOR_DRIFT)


def _row(base: dict[str, Any], lp: LaunchPoint) -> dict[str, Any]:
    est = base.get("estimate")
    if isinstance(est, str) and est != "median":  # an imported tool's mean: its own figures follow
        base = {**base, **{f"{pre}_median_{unit}": base.get(f"{pre}_{est}_{unit}")
                           for pre, unit in (("time", "us"), ("bw", "MBps"), ("busbw", "MBps"))}}
    row = {k: v for k, v in base.items() if k not in _PER_LAUNCH}
    for col in [c for c in row if c.endswith("_MBps") or c == "msg_rate"]:
        row[col] = _rate(base, col, lp)
    pts = lp.points
    stopped = [p for p in pts if not p.converged and p.stopped_early]
    # sums of the launches' fields, read in C (a point of 10,000 launches); a None adds nothing
    row.update(time_median_us=lp.median, time_ci_low_us=lp.ci_low, time_ci_high_us=lp.ci_high,
               samples=sum(map(_SAMPLES, pts)), converged=not stopped,
               stop_reason=stopped[0].stop_reason if stopped else base.get("stop_reason"),
               not_converged=len(stopped),
               elapsed_s=sum(filter(None, map(_ELAPSED, pts)), 0.0) if "elapsed_s" in base else None,
               invalid=sum(filter(None, map(_INVALID, pts))) if "invalid" in base else None,
               launches=lp.launches, launch_medians_us=" ".join(f"{m:.6g}" for m in lp.launch_medians),
               share_between=lp.share_between, half_width_rel=lp.half_width_rel,
               launch_ci_low_us=lp.launch_ci[0], launch_ci_high_us=lp.launch_ci[1],
               launch_half_width_rel=lp.launch_half_width_rel, modes=tuple(lp.modes),
               run_levels=tuple(lp.drift.levels) if lp.drift is not None else (),
               drift_var=lp.drift.var if lp.drift is not None else None,
               drift_runs=lp.drift.runs if lp.drift is not None and not lp.drift.prior else None,
               drift=lp.drift, evidence=evidence(lp), disturbed_launches=len(lp.disturbed), point=lp)
    return row


def pooled(rows: pd.DataFrame) -> list[LaunchPoint]:
    """The launch points of tidy-table rows of one configuration: every launch of every run is
    one launch, disturbed as the table's `disturbed` column says (else by the record's own rule)."""
    runs = [r["point"].tolist() for _, r in rows.groupby("run_id", sort=False)]
    # tolist: a column of text read whole, not a Python object made per cell by iterating it
    judged = dict(zip(map(id, rows["point"].tolist()), rows["disturbed"].tolist())) if "disturbed" in rows else {}

    def cause(p: Any) -> str:
        value = judged.get(id(p))
        return value if isinstance(value, str) else disturbed_of(p)
    return aggregate_runs(runs, cause)


def launch_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point and configuration: `time_median_us` is the launch-level estimate and
    `time_ci_*_us` its 95 % interval over launches (a single launch: that launch's own), the rates
    follow the estimate, `launches` counts the launches, `share_between` is the share of a
    launch's variance that lies between launches, `modes` holds the levels the launches fell
    into (`Mode` values; report/modes.py words them), `run_levels` the levels of the runs the drift
    was learnt from, `point` holds the `LaunchPoint`; the other columns are the first launch's. The launches
    of a configuration are those of one run, or of every run of one sweep configuration (a
    sweep's own launches). A frame already at this level is returned as it is."""
    if df.empty or is_launch_level(df) or "point" not in df or "run_id" not in df:
        return df
    # a launch point, its row and its summaries hold no cycles: made without the collector, which
    # would walk them and the table again every few thousand objects (1.3 s of 200 MB in a Python
    # caller; the mpiscope command has frozen what reading made already)
    with gcpause.paused():
        return _launch_frame(df)


def _left_out_switched(g: pd.DataFrame) -> dict[tuple, list[str]]:
    """Per point (key, configuration) of one run's rows: the causes of the launches whose control
    switched in which the point was disturbed and left out (results.states.kept_in_one_state)."""
    if "disturbed" not in g:
        return {}
    out: dict[tuple, list[str]] = {}
    for p, why, switched in zip(g["point"].tolist(), g["disturbed"].tolist(), g["control_switched"].tolist()):
        if isinstance(why, str) and why and isinstance(switched, str) and switched and isinstance(p, Point):
            out.setdefault((p.key, configuration_of(p)), []).append(switched)
    return out


def _launch_frame(df: pd.DataFrame) -> pd.DataFrame:
    group = df["run_id"].astype(object)
    if "sweep_config" in df:
        group = df["sweep_config"].where(df["sweep_config"].notna(), group)
    rows = []
    for _, g in df.groupby(group, sort=False):
        at = dict(zip(map(id, g["point"].tolist()), range(len(g))))
        runs = g["run_id"].nunique()
        switched = g["control_switched"].to_numpy() if "control_switched" in g else None
        left_out = _left_out_switched(g) if switched is not None and runs == 1 else {}
        lps = pooled(g)
        # each point's first row as a dict, all in one call (not a dict per launch row; one call a
        # point took 0.56 of 0.62 CPU s of a default run's frame, a busy machine's seconds)
        firsts = g.iloc[[at[id(lp.points[0])] for lp in lps]].to_dict("records")
        for lp, base in zip(lps, firsts):
            lp = _drifted(base, lp, runs)
            flags: list[bool] = []
            if switched is not None:  # launches whose machine-state control moved (results.control)
                flags = [bool(switched[at[id(p)]]) for p in lp.points]
                lp = with_other_state(lp, flags)
            unmet = base.get("unmet_machine_state")
            if runs == 1 and isinstance(unmet, str) and unmet and lp.drift is not None:
                lp = replace(lp, unmet_state=unmet)  # results.states
            elif left_out and lp.drift is not None and \
                    (one := kept_in_one_state(flags, left_out.get((lp.key, lp.config), ()))):
                lp = replace(lp, unmet_state=one)
            rows.append(_row(base, lp))
            if runs != 1:  # several runs pooled (a sweep configuration): no one run's machine state
                rows[-1].pop("unmet_machine_state", None)
            if switched is not None:
                rows[-1]["state_switched_launches"] = sum(flags)
                rows[-1]["other_state_us"] = lp.other_state
    out = pd.DataFrame(rows)
    # one order everywhere: the runs as given, then benchmark, variant, size (issue 31), ranks
    keys = [c for c in ("benchmark", "variant", "size", "ranks") if c in out]
    if keys:
        run_order = pd.Series(pd.factorize(out["run_id"])[0], index=out.index, name="_run")
        out = out.assign(_run=run_order).sort_values(["_run", *keys], kind="stable", na_position="first",
                                                     ignore_index=True).drop(columns="_run")
    if "not_converged" in out and not out["not_converged"].any():
        out = out.drop(columns="not_converged")
    return out
