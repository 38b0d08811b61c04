"""The headline says what the figures rest on (issue 44): on a real run, its counts are the
counts of the exported intervals over the run's launches (the interval the launch target applies
to and the headline prints), they add up to every exported point, the printed brackets are those
intervals, and the drift from run to run is said apart, as the exported `time_ci_*` include it."""
from __future__ import annotations

import io
import re

import pandas as pd

from mpiscope.plan.engine import DEFAULT_COLLECTIVES
from mpiscope.report.headline import run_headline
from mpiscope.results.view import results_of
from mpiscope.store.runs import Run

TARGET = 0.05


def test_the_headline_counts_are_the_exported_intervals_counts(cli, tmp_path):
    r = cli("run", "-b", "pingpong,bw", "--sizes", "8,1K,64K", "--launches", "3", "--max-time", "0.05",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr
    (path,) = tmp_path.iterdir()
    run = Run(path)
    results = results_of([run])
    lines = run_headline(list(run.records()), DEFAULT_COLLECTIVES, {}, TARGET, list(results.points(run.id).values()),
                         asked=3)
    evidence = lines[-1]
    exported = cli("export", str(path), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    df = pd.read_csv(io.StringIO(exported.stdout))
    assert len(df) == 6

    # the counts, read off the exported intervals over the run's launches
    flags = df["evidence"].fillna("")
    clocked = flags.str.startswith("shorter than the clocks agree")
    busy = flags.str.startswith("machine busy") | clocked
    half = df["launch_half_width_rel"]
    assert (half - (df["launch_ci_high_us"] - df["launch_ci_low_us"]) / 2 / df["time_median_us"]).abs().max() < 1e-9
    within, wider = int(((half <= TARGET) & ~busy).sum()), int(((half > TARGET) & ~busy).sum())
    bare = int((half.isna() & ~busy).sum())
    said = re.match(r"evidence: (\d+) points from [0-9-]+ launch(?:es)?: (\d+) within the target", evidence)
    assert said, evidence
    assert int(said[1]) == len(df) and int(said[2]) == within
    assert (f"{wider} wider: about " in evidence) == (wider > 0)
    assert (f"{bare} without an interval" in evidence) == (bare > 0)
    assert (f"{int((busy & ~clocked).sum())} on a busy machine" in evidence) == bool((busy & ~clocked).any())
    assert (f"{int(clocked.sum())} shorter than the ranks' clocks agree" in evidence) == bool(clocked.any())
    assert within + wider + bare + int(busy.sum()) == len(df)  # they add up

    # the latency line prints the exported interval over the launches (unless it is flagged)
    row = df[(df["benchmark"] == "pingpong") & (df["size"] == 8)].iloc[0]
    latency = lines[0]
    assert latency.startswith("latency (8 B, pingpong, half round trip): ")
    if "(" not in latency.split(": ", 1)[1]:
        low, high = (float(x.replace(",", "")) for x in re.search(r"\[([0-9.,]+)-([0-9.,]+)\]", latency).groups())
        assert abs(low - row["launch_ci_low_us"]) <= 0.006 * row["launch_ci_low_us"]
        assert abs(high - row["launch_ci_high_us"]) <= 0.006 * row["launch_ci_high_us"]
    # and another run's interval (with the drift, the exported time_ci_*) is said apart, never narrower
    assert (df["time_ci_high_us"] >= df["launch_ci_high_us"] - 1e-12).all()
    assert any(line.startswith("another run may read within about +-") for line in lines)


def test_the_budget_warning_counts_the_points_the_evidence_line_calls_wider(cli, tmp_path):
    """Auto launches that stop short of a target no run here meets (+-0.1 %) leave points wider
    than it: the warning's count is the evidence line's, one number for one thing, and its cap
    is the run's own launches, not the launches a point rests on."""
    r = cli("run", "-b", "pingpong", "--sizes", "8,1K", "--launches", "auto", "--launch-target", "0.001",
            "--time-budget", "2", "--max-time", "0.05", "--no-progress", "--no-report", "--runs-dir", str(tmp_path),
            timeout=600)
    assert r.returncode == 0, r.stderr
    (path,) = tmp_path.iterdir()
    run = Run(path)
    assert run.meta().extra["launch_policy"]["stopped"][:1].isdigit()  # stopped with points wider
    # the evidence line as the default run prints it (this run's -b prints the table instead)
    evidence = run_headline(list(run.records()), DEFAULT_COLLECTIVES, {}, 0.001,
                            list(results_of([run]).points(run.id).values()))[-1]
    wider = re.search(r"; (\d+) wider: about ", evidence)
    warned = [line for line in r.stderr.splitlines() if "still wider than the target" in line]
    assert wider, evidence  # +-0.1 %: some point is wider
    (warning,) = warned
    assert re.match(r"warning: (\d+) point\(s\) still wider", warning)[1] == wider[1], (evidence, warning)

    # the planner's count when it stopped (busy points in, refinement to come) is not the warning's
    meta = run.meta()
    run.update(extra={**meta.extra, "launch_policy": {
        **meta.extra["launch_policy"], "stopped": "99 point(s) still wider than the target after 10 launches"}})
    shown = cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    (warning,) = [line for line in (shown.stdout + shown.stderr).splitlines() if "still wider than the" in line]
    assert re.match(r"warning: (\d+) point\(s\) still wider", warning)[1] == wider[1], (evidence, warning)
    assert "auto launches stopped at their cap of 10 launches of the run's own plan (refinement launches are " \
           "extra)" in warning
