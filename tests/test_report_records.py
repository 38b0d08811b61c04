"""The report side on typed records alone (no engine): runs written with the store's own writer
from synthetic records, read back through the one reader, and every reader of them: the summary
and its placement table, the warnings, the tidy export, the plots (pair maps included), the HTML
page, and the reader commands."""
from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from mpiscope.mpi.library import MpiLibrary
from mpiscope.records import (Check, Context, End, Pair, Point, RankPlace, Rate, Skip, Stats, Timeout,
                              read_records)
from mpiscope.results.table import OBJECT_COLUMNS, tidy
from mpiscope.store.runs import Run
from mpiscope.util.units import human_size
from mpiscope_test_fixtures.synthetic import stored_run, tidy_row_by_row

LIB = MpiLibrary("embedded", Path("/opt/mpi/bin/mpicc"), Path("/opt/mpi/bin/mpiexec"), "embedded",
                 vendor="MPICH", version="5.0.2")
SIZES = [2 ** k for k in range(17)]
PAIR_MAP = {"unit": "time per message from row rank to column rank",
            "one_pair": {"matrix_us": [[None, 0.8, 5.0], [0.8, None, 5.2], [5.0, 5.2, None]],
                         "matrix_MBps": [[None, 10.0, 1.6], [10.0, None, 1.5], [1.6, 1.5, None]]},
            "rings": {"matrix_us": [[None, 4.7, 4.0], [0.2, None, 4.1], [4.0, 4.1, None]],
                      "matrix_MBps": [[None, 1.7, 2.0], [35.4, None, 2.0], [2.0, 2.0, None]]}}


def context(hosts: tuple[str, ...] = ("h0",), world: int = 2, env: dict | None = None,
            oversubscribed: bool = False) -> Context:
    ranks = tuple(RankPlace(r, hosts[r % len(hosts)], (r,), True) for r in range(world))
    return Context(world_size=world, engine_version="1.0", mpi_library_version="MPICH Version: 5.0.2\nbuilt",
                   hosts=hosts, ranks=ranks, cores_online=2, oversubscribed=oversubscribed,
                   options={"sizes": "1:64K"}, env=env or {})


def point(bench: str, size: int, median: float, ranks: int = 2, family: str = "p2p", same_host: bool = True,
          converged: bool = True, pairs: tuple[Pair, ...] | None = None, **kw) -> Point:
    if pairs is None:
        pairs = (Pair((0, 1), same_host),) if family == "p2p" else ()
    return Point(bench, size, ranks, Stats(n=50, median=median, min=0.9 * median, mean=median,
                                           ci_low=0.99 * median, ci_high=1.01 * median, stddev=0.01 * median),
                 family=family, pairs=pairs, participants=(0, 1) if pairs else tuple(range(ranks)),
                 bytes_per_op=float(size), bw_MBps=Rate(size / median, None) if size else None,
                 converged=converged, stop_reason="ci_target" if converged else "max_time", **kw)


def pingpong(scale: float = 1.0, same_host: bool = True) -> list[Point]:
    """An eager regime up to 4 KiB and a rendezvous one from 8 KiB: one switch."""
    T = lambda n: scale * float(np.where(n < 8192, 1.0 + n / 4000.0, 3.0 + n / 12000.0))
    return [point("pingpong", s, T(s), same_host=same_host) for s in SIZES] + \
           [point("bw", s, T(s) / 2, same_host=same_host) for s in SIZES]


def store(runs_dir: Path, records: list, status: str = "ok", warnings: tuple[str, ...] = ()) -> Run:
    return stored_run(runs_dir, records, status, warnings, mpi=LIB, launcher_command=["/opt/mpi/bin/mpiexec", "-n", "2"])


@pytest.fixture
def runs(tmp_path) -> dict[str, Run]:
    d = tmp_path / "runs"
    return {
        "p2p": store(d, [context(env={"X": "a"}), *pingpong(), End(points=34)]),
        "slower": store(d, [context(env={"X": "b"}), *pingpong(2.0), End(points=34)]),
        "trouble": store(d, [context(oversubscribed=True),
                             point("allreduce", 8, 2.0, family="coll", converged=False),
                             point("allreduce", 64, 2.5, family="coll", invalid=3, check=Check(2, 64)),
                             Skip("allreduce", 1, 2, "a float reduction needs 4 bytes"),
                             Timeout("allreduce", 1024, 2, limit_s=1.0)],  # and no end line
                         warnings=("ran on 2 cores",)),
        "hosts": store(d, [context(("a", "b"), world=3),
                           point("pairs", 8, 1.0, ranks=3, details={"pair_map": PAIR_MAP}),
                           *(point("pingpong", s, 2 + s / 100, same_host=False) for s in (8, 1024, 65536)),
                           *(point("ring", s, 2 + s / 100, pairs=(Pair((0, 1), True), Pair((1, 2), False)))
                             for s in (8, 1024, 65536)), End(points=7)]),
    }


def test_summary_and_placement_of_a_run_over_two_hosts(runs):
    from mpiscope.report.placement import INTER, MIXED, groups
    from mpiscope.report.summary import print_run
    run = runs["hosts"]
    console = Console(record=True, width=200)
    print_run(console, run)
    text = console.export_text()
    assert "MPICH 5.0.2 (embedded), 3 ranks on 2 host(s)" in text and "[ok]" in text
    assert "pingpong (2 ranks)" in text and "by placement" in text and INTER in text and MIXED in text
    fits = {(g.benchmark, g.placement): g for g in groups(run.records())}
    assert set(fits) == {("pairs", "intra-node"), ("pingpong", INTER), ("ring", MIXED)}
    assert fits["pingpong", INTER].fit.alpha_us == pytest.approx(2.0)
    assert fits["pairs", "intra-node"].fit is None and "2 points" in fits["pairs", "intra-node"].why_no_fit


def test_warnings_name_every_problem(runs):
    from mpiscope.report.summary import print_run
    from mpiscope.report.warnings import run_warnings
    with open(runs["trouble"].path / "records.jsonl", "a") as f:
        f.write("{cut short\n")
    w = run_warnings(runs["trouble"])
    text = "\n".join(w)
    assert w[0] == "ran on 2 cores"  # run.json's own first; its oversubscription sentence says the same
    assert "more ranks than it has cores" not in text
    assert "1 point(s) did not finish" in text and "allreduce on 2 ranks at 1 KiB" in text
    assert "received data was wrong (--check) at 64 B" in text
    assert "1 of 2 points did not converge (stopped by max_time)" in text
    assert "3 samples in 1 points were invalid" in text
    assert "skipped (a float reduction needs 4 bytes): allreduce on 2 ranks at 1 B" in text
    assert "line 6 is corrupt and was skipped" in text and "no end line" in text
    assert run_warnings(runs["p2p"]) == []
    console = Console(record=True, width=200)
    print_run(console, runs["trouble"])
    text = console.export_text()
    assert "hung" in text and "skipped" in text and "corrupt" in text


def test_a_point_slowed_past_the_watchdog_is_named_as_slowed_not_hung(tmp_path):
    from mpiscope.report.warnings import run_warnings
    slowed = point("bw", 128, 40.0, elapsed_s=7.4, watchdog_limit_s=2.3, watchdog_extensions=3)
    run = store(tmp_path, [context(), point("bw", 64, 20.0, elapsed_s=0.4), slowed, End(points=2)])
    stored = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    assert [("watchdog_extensions" in r, r.get("watchdog_limit_s")) for r in stored if r["type"] == "point"] == \
        [(False, None), (True, 2.3)]  # the engine's line: the fields only when extended
    assert [p.watchdog_extensions for p in run.records().points] == [None, 3]
    text = "\n".join(run_warnings(run))
    assert "1 point(s) ran past the engine's watchdog limit while still progressing" in text
    assert "not hung" in text and "bw 128 B (7.4 s against a limit of 2.3 s): bw on 2 ranks at 128 B" in text
    assert "did not finish" not in text


def test_tidy_export_leaves_the_typed_points_out(runs):
    from mpiscope.report.export import render
    df = tidy([runs["p2p"], runs["hosts"]])
    assert "point" in OBJECT_COLUMNS and isinstance(df["point"].iloc[0], Point)
    for fmt in ("csv", "json", "markdown"):
        assert "point" not in render(df, fmt).decode().splitlines()[0]
    csv = pd.read_csv(io.StringIO(render(df, "csv").decode()))
    assert list(csv.columns) == [c for c in df.columns if c != "point"]
    assert set(csv["placement"].dropna()) == {"intra-node", "inter-node", "mixed"}
    assert json.loads(render(df, "json"))[0]["env_X"] == "a"


def test_plots_fit_the_typed_points_and_draw_pair_maps(runs):
    from mpiscope.report import plots
    df = tidy([runs["p2p"], runs["hosts"]])
    models = plots.fit_models(df[df["run_id"] == runs["p2p"].id])
    assert {m.label for m in models} == {"pingpong", "bw"}
    ping = next(m for m in models if m.benchmark == "pingpong")
    assert len(ping.report.switches) == 1 and 4096 <= ping.report.switches[0].size <= 8192
    assert ping.report.regimes[1].fit.alpha_us == pytest.approx(3.0, rel=0.01)
    names = [p.name for p in plots.all_plots(df)]
    assert names[:2] == ["latency", "bandwidth"]
    # one heat map per mode of the pairs point, named by its run when several runs are drawn
    hosts = runs["hosts"].id
    assert names[2:] == [f"matrix-pairs-8-{hosts}", f"matrix-pairs-8-rings-{hosts}"]


def test_html_report_of_typed_runs(runs):
    from mpiscope.report.html import render
    page = render([runs["p2p"], runs["trouble"], runs["hosts"]])
    assert page.count("<figure") == 5  # latency, bandwidth, collectives against size, two pair maps
    assert "regime 1" in page and "did not converge" in page and "MPICH Version: 5.0.2" in page
    assert "/opt/mpi/bin/mpiexec -n 2" in page and "X=a" in page
    assert page.count("<details") == 3


def test_side_by_side_table_and_variation(runs):
    from mpiscope.analysis.variation import variation
    from mpiscope.report.table import side_by_side, with_config
    from mpiscope.report.variation import summary_table, variation_table
    df = tidy([runs["p2p"], runs["slower"]])
    (t,) = side_by_side(df, "pingpong")
    assert t.columns == ["env_X=a", "env_X=b"] and t.sizes == SIZES
    assert t.cell(8, "env_X=b").endswith("(2)") and t.cell(512, "env_X=a") == "453.9"  # beyond 256 B: MB/s only
    v = variation(with_config(df))
    console = Console(record=True, width=200)
    console.print(variation_table(v))
    console.print(summary_table(v))
    assert "env_X=a" in console.export_text()


def test_compare_on_typed_points(runs):
    from mpiscope.results.compare import compare_points, regressions
    changes = compare_points(runs["p2p"].records(), runs["slower"].records())
    assert len(changes) == 2 * len(SIZES) and all(pc.test == "ci z-test" for pc in changes)
    assert {pc.verdict for pc in changes} == {"slower"}
    assert len(regressions(changes, 0.5)) == len(changes)


def test_reader_commands_on_stored_runs(cli_offline, runs, tmp_path):
    d = str(runs["p2p"].path.parent)
    a, b, hosts = runs["p2p"].id, runs["slower"].id, runs["hosts"].id
    for args in (["show", a], ["export", a, b], ["table", a, b], ["model", a], ["compare", a, b],
                 ["plot", a, "-o", str(tmp_path / "plots")], ["report", a, b, "-o", str(tmp_path / "r.html")],
                 ["pairs", hosts], ["predict", "--validate", a, "--alpha", "1", "--beta", "0.001"]):
        r = cli_offline(*args, "--runs-dir", d)
        if args[0] == "predict":  # no collectives in the run: one line, status 2
            assert r.returncode == 2 and "no collective points" in r.stderr, r.stderr
            continue
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    assert json.loads(cli_offline("model", a, "--json", "--clock-mhz", "1000", "--runs-dir", d).stdout)["sizes"] == 17
    assert "slow: 1 <-> 2 (b <-> a)" in cli_offline("pairs", hosts, "--runs-dir", d).stdout


def test_records_round_trip_through_the_store(runs):
    recs = read_records(runs["hosts"].path / "records.jsonl")
    assert not recs.problems and recs.points[0].details["pair_map"] == PAIR_MAP


# --- several launches: the launch level in the summary, tables, exports, plots and report ---------

def launched(points: list[Point], launch: int) -> list[Point]:
    return [dataclasses.replace(p, tag={**p.tag, "launch": launch}) for p in points]


@pytest.fixture
def multi(tmp_path) -> dict[str, Run]:
    """Three launches of the p2p run, each slower or faster as a whole; six launches of one point
    that fall into two levels (0.145 us in four, 0.40 us in two); one launch of the same."""
    d = tmp_path / "runs"
    scales = (1.0, 1.1, 0.93)
    three = [context()] + [p for k, s in enumerate(scales) for p in launched(pingpong(s), k)]
    three += [dataclasses.replace(Timeout("pingpong", 1 << 20, 2, limit_s=1.0), tag={"launch": k}) for k in (0, 2)]
    levels = (0.40, 0.145, 0.146, 0.402, 0.144, 0.145)
    bimodal = [context()] + [p for k, m in enumerate(levels) for p in launched([point("pingpong", 8, m)], k)]
    return {"three": store(d, [*three, End(points=34)]), "bimodal": store(d, [*bimodal, End(points=1)]),
            "one": store(d, [context(), point("pingpong", 8, 0.145), End(points=1)])}


def summary_text(run: Run) -> str:
    from mpiscope.report.summary import print_run
    console = Console(record=True, width=220)
    print_run(console, run)
    return console.export_text()


def test_summary_has_one_row_per_point_over_three_launches(multi):
    from mpiscope.report.summary import SINGLE_LAUNCH_NOTE
    from mpiscope.results.launches import PRIOR_DRIFT, aggregate, with_drift
    text = summary_text(multi["three"])
    assert "3 launches" in text and SINGLE_LAUNCH_NOTE.split(":")[0] not in text
    rows = [line.split("│")[1:-1] for line in text.splitlines() if line.startswith("│ pingpong")]
    assert len(rows) == len(SIZES) + 1  # 17 points once each, the time-out once
    # a first run: the interval includes the stated prior for the drift from run to run
    lp = {p.size: with_drift(p, PRIOR_DRIFT) for p in aggregate(multi["three"].records())
          if p.benchmark == "pingpong"}
    for cells in rows[:-1]:
        size = next(s for s in SIZES if cells[1].strip() == human_size(s))
        est, ci, launches = (c.strip() for c in cells[2:5])
        assert launches == "3" and float(est) == pytest.approx(lp[size].median, rel=6e-3)
        lo, hi = (float(x) for x in ci.split("–"))
        assert (lo, hi) == (pytest.approx(lp[size].ci_low, rel=6e-3), pytest.approx(lp[size].ci_high, rel=6e-3))
        # the interval comes from the launch medians (about +-10 %), not one launch's +-1 %
        assert lo < min(lp[size].launch_medians) * 1.01 and hi > max(lp[size].launch_medians) * 0.99
    assert "hung" in rows[-1][2] and "in 2 of 3 launches" in rows[-1][-1]


def test_summary_and_report_show_the_levels_of_a_bimodal_point(multi):
    from mpiscope.report.html import render
    text = summary_text(multi["bimodal"])
    (row,) = [line for line in text.splitlines() if line.startswith("│ pingpong")]
    assert "│        6 │" in row and "2 levels: 0.145 us (67%), 0.401 us (33%)" in row
    page = render([multi["bimodal"]])
    assert '<span class="modes">2 levels: 0.145 us (67%), 0.401 us (33%)</span>' in page
    assert "Each point was measured in <b>6 launches</b>" in page and "fell into distinct levels" in page


def test_a_single_launch_says_its_interval_covers_that_launch_only(multi):
    from mpiscope.report.html import render
    from mpiscope.report.summary import SINGLE_LAUNCH_NOTE
    text = " ".join(summary_text(multi["one"]).split())
    assert "1 launch," in text and SINGLE_LAUNCH_NOTE in text
    page = render([multi["one"]])
    assert 'class="single-launch"' in page and "covers that launch only" in page
    assert "launch-dots" not in "".join(svgs(page))  # nothing beside the line to show


def svgs(page: str) -> list[str]:
    import base64
    import re
    return [base64.b64decode(m).decode() for m in re.findall(r"data:image/svg\+xml;base64,([^\"]+)", page)]


def test_report_and_plots_draw_each_launch_beside_its_point(multi):
    from mpiscope.report import plots
    from mpiscope.report.html import render
    from mpiscope.results.frame import launch_frame
    df = tidy([multi["three"]])
    assert sorted(df["launch"].unique()) == [0, 1, 2] and len(df) == 3 * 2 * len(SIZES)
    fig = plots.latency_plot(df)
    ax = fig.axes[0]
    dots = [c for c in ax.collections if c.get_gid() == "launch-dots"]
    assert len(dots) == 2  # one set per line: pingpong and bw
    xy = np.concatenate([c.get_offsets() for c in dots])
    assert len(xy) == 3 * 2 * len(SIZES)
    ping = df[(df["benchmark"] == "pingpong") & (df["size"] == 8)]
    near = xy[(xy[:, 0] > 6) & (xy[:, 0] < 11)]  # beside 8 B, spread a little along the size axis
    assert sorted(near[:, 1]) == pytest.approx(sorted([*ping["time_median_us"], *ping["time_median_us"] / 2]))
    assert len(set(near[:, 0])) == 3
    # the line is the launch-level estimate, the band its interval over launches
    lf = launch_frame(df)
    line = next(ln for ln in ax.lines if ln.get_gid() == "series" and ln.get_label() == "pingpong")
    assert list(line.get_ydata()) == list(lf[lf["benchmark"] == "pingpong"].sort_values("size")["time_median_us"])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95% interval over launches" in labels and "one launch's median" in labels
    page = render([multi["three"]])
    assert sum('id="launch-dots' in svg for svg in svgs(page)) == 2  # latency and bandwidth
    assert "3 launches" in page and "95% interval over 3 launches" in page
    # the models rest on the launch-level points, one per size
    ping_model = next(m for m in plots.fit_models(df) if m.benchmark == "pingpong")
    assert sum(f.n_points for f in (r.fit for r in ping_model.report.regimes)) <= len(SIZES) + 1


def test_launch_frame_and_per_launch_rows(multi):
    from mpiscope.report.export import render
    from mpiscope.results.frame import launch_frame
    from mpiscope.results.launches import PRIOR_DRIFT, aggregate, with_drift
    df = tidy([multi["three"], multi["one"]])
    lf = launch_frame(df)
    assert len(lf) == 2 * len(SIZES) + 1 and "launch" not in lf and "point" in lf
    assert set(lf["launches"]) == {3, 1}
    lp = {(p.benchmark, p.size): p for p in aggregate(multi["three"].records())}
    row = lf[(lf["run_id"] == multi["three"].id) & (lf["benchmark"] == "bw") & (lf["size"] == 1024)].iloc[0]
    want = with_drift(lp["bw", 1024], PRIOR_DRIFT)  # a first run: the stated prior for the drift
    assert (row.time_median_us, row.time_ci_low_us, row.time_ci_high_us) == (want.median, want.ci_low, want.ci_high)
    assert row.bw_median_MBps == pytest.approx(1024 / want.median) and row.samples == 150
    assert row.launch_medians_us.split() == [f"{m:.6g}" for m in want.launch_medians]
    assert launch_frame(lf) is lf
    csv = pd.read_csv(io.StringIO(render(lf, "csv").decode()))
    assert {"launches", "share_between", "modes", "half_width_rel", "time_ci_low_us"} <= set(csv.columns)
    assert list(csv.columns)[0] == "run_id"


def test_table_and_export_commands_at_the_launch_level_and_per_launch(cli_offline, multi):
    d = str(multi["three"].path.parent)
    three = multi["three"].id
    r = cli_offline("export", three, "--format", "csv", "--runs-dir", d)
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(io.StringIO(r.stdout))
    assert len(df) == 2 * len(SIZES) and set(df["launches"]) == {3} and "launch" not in df
    r = cli_offline("export", three, "--format", "csv", "--per-launch", "--runs-dir", d)
    df = pd.read_csv(io.StringIO(r.stdout))
    assert len(df) == 3 * 2 * len(SIZES) and sorted(df["launch"].unique()) == [0, 1, 2] and "launches" not in df
    r = cli_offline("table", three, "--benchmark", "pingpong", "--format", "markdown", "--runs-dir", d)
    assert r.returncode == 0, r.stderr
    assert "launch-level estimates over 3 launches per point" in r.stdout
    assert "| size (bytes) | all runs |" in r.stdout
    r = cli_offline("table", three, "--benchmark", "pingpong", "--format", "csv", "--per-launch", "--runs-dir", d)
    assert r.returncode == 0, r.stderr
    got = pd.read_csv(io.StringIO(r.stdout))
    assert list(got.columns)[2:] == [f"launch={k} {u}" for k in range(3) for u in ("MB/s", "us")]
    assert got["launch=1 us"].iloc[0] == pytest.approx(1.1 * got["launch=0 us"].iloc[0])


def test_the_tidy_table_is_the_row_by_row_table_when_launches_differ(tmp_path):
    """What a launch gives its rows (options, environment) is kept once per launch and typed from
    the launches' values: the table, its column order and its types are those of a frame built
    row by row, here with an option that is a number in one launch and text in another, one that
    only some launches have, and an environment variable of one launch."""
    first = dataclasses.replace(context(env={"X": "a"}), options={"sizes": "8", "window": 64, "warmup": 8})
    second = dataclasses.replace(context(), options={"sizes": "8", "window": "auto"})
    third = dataclasses.replace(context(env={"Y": "1"}), options={"sizes": "8", "window": 32, "warmup": 4})
    records = [first, *launched([point("pingpong", 8, 1.0), point("allreduce", 8, 2.0, family="coll")], 0),
               second, *launched([point("pingpong", 8, 1.1)], 1),
               third, *launched([point("pingpong", 8, 0.9), point("pingpong", 16, 1.2)], 2), End(points=5)]
    run = store(tmp_path / "runs", records)
    table = tidy([run])
    pd.testing.assert_frame_equal(table, tidy_row_by_row(run))
    assert list(table["opt_window"]) == [64, 64, "auto", 32, 32]
    assert table["opt_warmup"].dtype == float and table["opt_warmup"].isna().tolist() == [False] * 2 + [True] + [False] * 2
