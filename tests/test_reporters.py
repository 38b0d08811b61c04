"""One results layer, one reporter interface: the terminal summary, the side-by-side tables, the
exports, the plots, the HTML page and the API render the same `Results` (built once by
results.view), and no module outside results/ derives a launch-level figure; the end record's
launch-wide counters go through the disturbance rule and are shown beside the launch."""
from __future__ import annotations

import ast
import dataclasses
import functools
import io
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from mpiscope.records import Context, End, Point, Rate, Stats
from mpiscope.report.export import Export
from mpiscope.report.html import Html
from mpiscope.report.plots import Plots
from mpiscope.report.reporter import Frame, report
from mpiscope.report.summary import Summary
from mpiscope.report.table import SideBySideTables
from mpiscope.results.disturbance import launch_disturbed
from mpiscope.results.view import Results, results_of
from mpiscope.store.runs import Run
from mpiscope_test_fixtures.synthetic import stored_run

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mpiscope"
CTX = Context(world_size=2, cores_online=2)


def counters(nivcsw: int, steal: float = 0.0) -> dict:
    return {"nvcsw": [0, 0], "nivcsw": [nivcsw, 1], "steal_s": [steal, steal], "run_queue": [3, 3],
            "loadavg_1m": [2.0, 2.0]}


def point(size: int, median: float, launch: int, nivcsw: int = 0, n: int = 200) -> Point:
    return Point("pingpong", size, 2, Stats(n=n, median=median, ci_low=0.99 * median, ci_high=1.01 * median),
                 warmup=0, elapsed_s=0.1, bytes_per_op=float(size), bw_MBps=Rate(size / median, None),
                 family="p2p", converged=True, stop_reason="ci",
                 disturbance=counters(nivcsw), tag={"launch": launch})


def launch(k: int, wide: float, nivcsw_8: int = 0, whole: int = 5, steal: float = 0.0) -> list:
    """Launch k: an 8 B point (disturbed when nivcsw_8 is high), a 1 KiB point whose launches
    differ `wide`-fold (an interval that informs nothing), then its end record with `whole`
    involuntary switches over the launch."""
    return [CTX, point(8, 1.0 + 0.01 * k, k, nivcsw_8), point(1024, 2.0 * wide ** k, k),
            End(points=2, elapsed_s=1.0, disturbance=counters(whole, steal), tag={"launch": k})]


@pytest.fixture
def run(tmp_path) -> Run:
    recs = [*launch(0, 6.0), *launch(1, 6.0, nivcsw_8=150, whole=900), *launch(2, 6.0, steal=0.5)]
    return stored_run(tmp_path / "runs", recs)


def test_every_reporter_renders_the_one_results(run):
    results = results_of([run])
    frame = results.frame
    assert report(results, Frame()) is frame and report(results, Frame(per_launch=True)) is results.per_launch
    by_size = frame.set_index("size")
    wide = by_size.at[1024, "evidence"]
    assert wide.startswith("insufficient evidence: about ") and by_size.at[8, "evidence"] == ""
    assert by_size.at[8, "disturbed_launches"] == 1  # launch 1's 8 B point: 150 switches in 200 events
    # the export's figures are the frame's
    csv = pd.read_csv(io.BytesIO(report(results, Export("csv"))))
    assert list(csv["time_median_us"]) == pytest.approx(list(frame["time_median_us"]))
    assert list(csv["evidence"].fillna("")) == list(frame["evidence"])
    # the terminal says the frame's estimate and its flag in place of the band
    console = Console(record=True, width=400)
    report(results, Summary(console, console))
    text = console.export_text()
    rows = {line.split("│")[2].strip(): line for line in text.splitlines() if line.startswith("│ pingpong")}
    assert f"{by_size.at[8, 'time_median_us']:.3g}" in rows["8 B"] and wide in rows["1 KiB"]
    # the page, the plots and the tables read it too; the API's table is the frame
    assert wide in report(results, Html())
    assert [p.name for p in report(results, Plots())] == ["latency", "bandwidth"]
    (t,) = report(results, SideBySideTables())
    assert t.us.loc[8].iloc[0] == pytest.approx(by_size.at[8, "time_median_us"])
    from mpiscope import api
    got = api.table(run)
    assert list(got["time_median_us"]) == pytest.approx(list(frame["time_median_us"]))
    assert list(got["evidence"]) == list(frame["evidence"])


def test_the_summary_of_a_run_among_others_shows_that_run_s_points(run, tmp_path):
    other = stored_run(tmp_path / "runs", [*launch(0, 1.0), *launch(1, 1.0)])
    results = results_of([run, other])
    assert results.points(other.id) and set(results.points(run.id)) == set(results.points(other.id))
    for rid in (run.id, other.id):
        for key, est in results.points(rid).items():
            assert all(any(p is q for q in results.records(rid).points) for p in est.point.points)
            row = results.frame[results.frame["point"].map(lambda lp: lp is est.point)]
            assert len(row) == 1 and row["run_id"].iloc[0] == rid and row["evidence"].iloc[0] == est.evidence


# Calls that derive a launch-level figure: only the results layer makes them.
DERIVING = {"aggregate", "aggregate_runs", "launch_summary", "launch_frame", "with_drift", "evidence",
            "more_launches", "drift_between_runs", "launches_needed"}
# Left, each with its reason: the headline, when handed bare records instead of a run's results
# (a run's headline reads results.view.Results.points; the fallback serves records read elsewhere);
# the plan, which picks the next launch from the estimates so far; the model fits, which group
# records their own way (several runs as one `mpiscope model`); the plots, when handed the
# per-launch rows directly.
LEFT = {"mpiscope.report.headline", "mpiscope.plan.schedule", "mpiscope.analysis.measured",
        "mpiscope.report.plots"}


@functools.lru_cache(maxsize=1)
def package_calls() -> dict[str, tuple[set[str], set[str], set[str]]]:
    """Per module of the package (results/ left out): the names it imports from the results
    layer, the names it calls, the attributes it calls (one walk of each file, shared)."""
    out = {}
    for f in PACKAGE.rglob("*.py"):
        rel = f.relative_to(PACKAGE)
        if rel.parts[0] == "results":
            continue
        imported, called, attrs = set(), set(), set()
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("mpiscope.results"):
                imported.update(a.asname or a.name for a in n.names)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                called.add(n.func.id)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                attrs.add(n.func.attr)
        module = ".".join(("mpiscope",) + rel.with_suffix("").parts).removesuffix(".__init__")
        out[module] = (imported, called, attrs)
    return out


def deriving_calls() -> dict[str, set[str]]:
    return {m: hits for m, (imported, called, _) in package_calls().items() if (hits := imported & called & DERIVING)}


def test_nothing_outside_the_results_layer_derives_launch_level_figures():
    found = deriving_calls()
    assert set(found) <= LEFT, {m: c for m, c in found.items() if m not in LEFT}
    assert "mpiscope.report.headline" in found  # the scan sees such a call where there is one


def test_interval_quantiles_are_taken_in_the_results_layer_only():
    """Student and normal quantiles (a launch-level interval's half-width) outside results/: only
    the Hockney fit's, whose interval is of a model coefficient, not of a point."""
    found = {m for m, (_, _, attrs) in package_calls().items() if attrs & {"stdtrit", "ppf", "ndtri"}}
    assert found == {"mpiscope.analysis.hockney"}


def test_a_launch_as_a_whole_goes_through_the_disturbance_rule():
    points = [point(8, 1.0, 0, n=180), point(1024, 2.0, 0, n=180)]  # 360 events in the launch
    end = End(points=2, elapsed_s=1.0, disturbance=counters(120))
    assert launch_disturbed(end, CTX, points) == ("involuntary context switches 120 in 360 events "
                                                  "(run queue 3 on 2 cores)")
    assert launch_disturbed(dataclasses.replace(end, disturbance=counters(60)), CTX, points) == ""
    stolen = dataclasses.replace(end, disturbance=counters(5, steal=0.3))  # 0.3 s of 2 cores x 1 s
    assert launch_disturbed(stolen, CTX, points) == "CPU steal 15% of the host's time"
    assert launch_disturbed(stolen, None, points) == ""  # no core count: steal cannot be judged
    assert launch_disturbed(End(points=2, elapsed_s=1.0), CTX, points) == ""  # records from before the counters


def test_the_launch_s_counters_are_shown_beside_it(run):
    from mpiscope.report.warnings import disturbed_launches
    results = results_of([run])
    assert results.launches_disturbed == {
        (run.id, 1): "involuntary context switches 900 in 400 events (run queue 3 on 2 cores)",
        (run.id, 2): "CPU steal 25% of the host's time"}
    per_launch = results.per_launch.set_index(["launch", "size"])["launch_disturbed"]
    assert per_launch[(0, 8)] == "" and per_launch[(1, 1024)].startswith("involuntary context switches 900")
    assert "launch_disturbed" not in results.frame  # a launch's own column, not a launch-level figure
    said = disturbed_launches(run.records())
    assert said[0].startswith("launch 1 (as a whole: involuntary context switches 900 in 400 events")
    assert "1 of 2 points disturbed (pingpong 8 B: involuntary context switches 150 in 200 events" in said[0]
    assert said[1] == "launch 2 (as a whole: CPU steal 25% of the host's time): none of its 2 points disturbed"
    csv = pd.read_csv(io.BytesIO(report(results, Export("csv", per_launch=True))))
    assert csv["launch_disturbed"].fillna("").str.startswith("CPU steal").sum() == 2


def test_results_are_built_once_per_set_of_runs(run):
    results = results_of([run])
    assert isinstance(results, Results) and results.frame is results.frame  # derived once, then read
    assert results.records(run.id) is run.records()


def test_a_busy_point_names_its_commonest_cause_and_on_a_tie_the_first_launch_s():
    """Every reader shows the one cause the results layer chose: never one a set's order picks."""
    from mpiscope.results.launches import launch_summary
    pts = [point(8, 1.0 + 0.01 * k, k) for k in range(8)]
    causes = {id(p): f"cause {k}" for k, p in enumerate(pts)}  # all disturbed, each differently
    assert launch_summary(pts, disturbed=lambda p: causes[id(p)]).busy == "cause 0"
    causes[id(pts[5])] = causes[id(pts[6])] = "cause 6"
    assert launch_summary(pts, disturbed=lambda p: causes[id(p)]).busy == "cause 6"


def test_many_disturbed_launches_are_told_in_one_line_naming_the_worst(tmp_path):
    from mpiscope.report.warnings import LAUNCH_LINES, disturbed_launches
    recs = [rec for k in range(LAUNCH_LINES + 3)
            for rec in launch(k, 1.0, nivcsw_8=150, whole=900 if k == 4 else 5)]
    said = disturbed_launches(stored_run(tmp_path / "runs", recs).records())
    assert len(said) == 1
    assert said[0].startswith(f"disturbed points in {LAUNCH_LINES + 3} of {LAUNCH_LINES + 3} launches "
                              f"({LAUNCH_LINES + 3} of {2 * (LAUNCH_LINES + 3)} (point, launch) pairs")
    assert "the worst, launch 4 (as a whole: involuntary context switches 900" in said[0]
    assert "--per-launch" in said[0]


def test_a_run_s_end_builds_its_results_once_for_every_output(run, monkeypatch):
    """`mpiscope run`'s end (execute.session.conclude): the headline, summary and warnings, the
    model and report.html read one `Results` (issue 28: the summary and the report built theirs
    each)."""
    from mpiscope.commands.run import headline, summary, warnings
    from mpiscope.execute.session import conclude
    built = []
    init = Results.__init__

    def counted(self, *args, **kwargs):
        built.append(self)
        init(self, *args, **kwargs)
    monkeypatch.setattr(Results, "__init__", counted)
    assert conclude(run, None, show=[headline, summary, warnings], report=True) == 0
    assert len(built) == 1 and (run.path / "report.html").is_file()
