"""The Python API (mpiscope.api, docs/python.md) on real runs of the embedded MPICH: what it
loads, measures, fits, compares, predicts and draws has the structure promised, agrees with the
commands that are layered on it, and bad input raises a typed error instead of exiting."""
from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
import warnings

import pandas as pd
import pytest

import mpiscope
from mpiscope import api
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.records import Point

SIZES = "1:4K"                     # 13 sizes: enough for the switch search (6)
EXPECTED = [2 ** k for k in range(13)]
SMALL = dict(sizes=SIZES, ranks=2, launches=1, max_time=0.01)


def test_import_mpiscope_is_cheap_and_names_the_api():
    code = ("import sys, mpiscope; assert 'mpiscope.api' not in sys.modules and 'pandas' not in sys.modules; "
            "mpiscope.load; assert 'mpiscope.api' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert set(mpiscope.API) == set(api.__all__)
    assert all(getattr(mpiscope, name) is getattr(api, name) for name in api.__all__)
    # a subpackage of that name would shadow the function once imported (mpiscope.measure did)
    import pkgutil
    assert not set(api.__all__) & {m.name for m in pkgutil.iter_modules(mpiscope.__path__)}
    with pytest.raises(AttributeError):
        mpiscope.no_such_name


def test_every_public_name_is_documented_and_typed():
    for name in api.__all__:
        obj = getattr(api, name)
        assert inspect.getdoc(obj), name
        if inspect.isfunction(obj):
            sig = inspect.signature(obj)
            assert sig.return_annotation is not inspect.Signature.empty, name
            assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values()), name


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory, mpiscope_home):
    return tmp_path_factory.mktemp("api-runs")


@pytest.fixture(scope="module")
def two_runs(runs_dir, embedded_mpi):
    """Two runs of the same points, measured through the API (on the embedded MPICH)."""
    return [api.measure("pingpong", runs_dir=runs_dir, **SMALL) for _ in range(2)]


def test_measure_returns_the_stored_run_with_its_table(two_runs, runs_dir):
    run = two_runs[0]
    assert isinstance(run, api.Run) and run.status == "ok" and run.path.parent == runs_dir
    assert run.info.mpi is not None and list(run.info.parts[0].plan.benchmarks) == ["pingpong"]
    assert [p.size for p in run.points] == sorted(p.size for p in run.points)  # launch 0 in plan order
    assert all(isinstance(p, Point) and p.ranks == 2 for p in run.points)
    df = run.table()
    assert sorted(df["size"]) == EXPECTED and set(df["benchmark"]) == {"pingpong"}
    assert {"time_median_us", "time_ci_low_us", "time_ci_high_us", "launches", "run_id", "mpi_name",
            "world_size", "point"} <= set(df.columns)
    assert (df["time_ci_low_us"] <= df["time_median_us"]).all() and (df["time_median_us"] <= df["time_ci_high_us"]).all()
    per_launch = run.table(per_launch=True)
    assert list(per_launch["launch"].unique()) == [0] and len(per_launch) == len(EXPECTED)
    assert f"run {run.id}" in run.summary() and "pingpong" in run.summary()
    assert run.problems == []


def test_load_by_latest_id_prefix_path_and_several(two_runs, runs_dir):
    first, second = two_runs
    assert api.load("latest", runs_dir).id == second.id
    assert api.load(first.id, runs_dir=runs_dir).path == first.path
    assert api.load(first.path).id == first.id                      # a path needs no runs directory
    assert [r.id for r in api.list_runs(runs_dir)] == [first.id, second.id]
    both = api.load_runs(first.id, second.path, runs_dir=runs_dir)
    assert isinstance(both, api.Runs) and both.ids == [first.id, second.id] and len(both) == 2
    assert both[0].id == first.id and both[:1].ids == [first.id]
    assert api.load_runs(runs_dir).ids == both.ids                 # a directory of runs
    t = both.table()
    assert sorted(t["run_id"].unique()) == sorted(both.ids) and len(t) == 2 * len(EXPECTED)
    assert api.table([first, second]).shape == t.shape
    with pytest.raises(UsageError, match="no run 'nope'"):
        api.load("nope", runs_dir)
    with pytest.raises(UsageError):
        api.load_runs()


def test_load_sweep_reads_a_sweeps_finished_runs(two_runs, runs_dir, tmp_path):
    """A sweep directory as `mpiscope sweep` keeps it: sweep.json and results.jsonl naming its runs."""
    from mpiscope.store.runs import ConfigRef, SweepDir, SweepEntry, SweepPlan
    sd = SweepDir(tmp_path / "sweeps" / "demo-20261123-000000")
    sd.path.mkdir(parents=True)
    sd.write(SweepPlan("demo", [ConfigRef("c001", {"algorithm": "a"})], runs_dir=str(runs_dir), launches=2))
    for k, run in enumerate(two_runs):
        sd.log(SweepEntry("c001", k, run=run.id, status="ok"))
    runs = api.load_sweep(sd.path)
    assert runs.ids == [r.id for r in two_runs] and runs.sweep == sd.path
    assert api.load_runs(sd.path).ids == runs.ids
    with pytest.raises(UsageError, match="sweep directory"):
        api.load(sd.path)
    # a sweep of one configuration is one side of a comparison: its two launches
    assert [r.id for r in api.compare_side(str(sd.path))] == runs.ids
    with pytest.raises(UsageError, match="not a sweep directory"):
        api.load_sweep(tmp_path)


def test_fit_is_what_mpiscope_model_prints(two_runs, runs_dir, cli):
    run = two_runs[0]
    m = api.fit(run)
    assert m.benchmark == "pingpong" and m.runs == [run.id]
    regimes = m.regimes
    assert list(regimes.columns) == ["size_from", "size_to", "alpha_us", "beta_us_per_byte", "bandwidth_MBps",
                                     "bandwidth_MiBps", "n_half_bytes", "points", "valid", "why", "flag"]
    assert len(regimes) >= 1 and (regimes["size_from"] <= regimes["size_to"]).all()
    assert set(regimes["size_from"]) | set(regimes["size_to"]) <= set(EXPECTED)  # measured sizes bound them
    assert all(1 < s < 4096 for s in m.switches)
    assert len(m.fits()) == len(regimes)
    r = cli("model", run.id, "--json", "--runs-dir", str(runs_dir))
    assert r.returncode == 0, r.stderr
    cli_json, api_json = json.loads(r.stdout), m.to_dict()
    assert cli_json.keys() == api_json.keys() and cli_json["sizes"] == api_json["sizes"] == len(EXPECTED)
    assert [g["size_range"] for g in cli_json["regimes"]] == [g["size_range"] for g in api_json["regimes"]]
    assert str(m) == m.text and m.text.startswith("Model of pingpong")
    with pytest.raises(UsageError, match="no bcast points"):
        api.fit(run, "bcast")


def test_compare_is_what_mpiscope_compare_prints(two_runs, runs_dir, cli):
    base, cand = two_runs
    c = api.compare(base, cand)
    t = c.table()
    assert sorted(t["size"]) == EXPECTED and set(t["verdict"]) <= {"slower", "faster", "same", "inconclusive"}
    assert {"baseline_us", "candidate_us", "change", "test", "p_adj", "effect"} <= set(t.columns)
    assert ((t["candidate_us"] / t["baseline_us"] - 1) - t["change"]).abs().max() < 1e-12
    assert c.baseline_name == base.id and c.candidate_name == cand.id
    assert {pc.size for pc in c.regressions(0.0)} == set(t.loc[t["verdict"] == "slower", "size"])
    assert api.compare(base.id, f"{cand.id}", runs_dir=runs_dir).table().equals(t)  # ids as the CLI takes them
    r = cli("compare", base.id, cand.id, "--runs-dir", str(runs_dir))
    assert r.returncode == 0, r.stderr
    assert " ".join(c.summary.split()) in " ".join(r.stdout.split())
    with pytest.raises(UsageError, match="no benchmark and size in common"):
        api.compare(base, cand, benchmark="bcast")
    with pytest.raises(UsageError, match="alpha"):
        api.compare(base, cand, alpha=2)


def test_predict_from_a_run_and_from_given_parameters(two_runs):
    p = api.predict(two_runs[0], ["allreduce", "bcast"], ranks=[2, 8, 4])
    assert list(p.tables) == ["allreduce", "bcast"] and p.parameters.startswith("pingpong regimes")
    t = p.table
    assert sorted(t["p"].unique()) == [2, 4, 8] and sorted(t["n"].unique()) == list(api.PREDICT_SIZES)
    for _, row in t.iterrows():  # the winner is the fastest algorithm of its row
        times = [row[c] for c in t.columns if c not in ("collective", "p", "n", "best", "best_us", "mpich_default")
                 and pd.notna(row[c])]
        assert row["best_us"] == min(times)
    assert p.winners("allreduce").startswith("allreduce: fastest algorithm")
    given = api.predict(None, ["bcast"], ranks=[2], sizes=[0], alpha=3.0, beta=0.001)
    assert given.table["best_us"].iloc[0] == pytest.approx(3.0)  # n = 0: one latency on two ranks
    for bad, match in [(dict(collectives=["nope"], alpha=1.0, beta=0.1), "unknown collective"),
                       (dict(alpha=1.0), "both alpha"), (dict(), "needs alpha and beta"),
                       (dict(alpha=-1.0, beta=0.1), "must not be negative")]:
        with pytest.raises(UsageError, match=match):
            api.predict(None, **bad)


def test_plots_and_report(two_runs, tmp_path):
    found = api.plots(two_runs[0])
    assert [p.name for p in found] == ["latency", "bandwidth"]
    assert found[0]._repr_png_().startswith(b"\x89PNG")  # what a notebook shows
    files = api.write_plots(two_runs, tmp_path / "figs", fmt="svg")
    assert [f.name for f in files] == ["latency.svg", "bandwidth.svg"] and all(f.stat().st_size for f in files)
    html = api.write_report(two_runs, tmp_path)
    assert html == tmp_path / "report.html"
    text = html.read_text()
    assert all(r.id in text for r in two_runs)
    with pytest.raises(UsageError, match="does not exist"):
        api.write_report(two_runs, tmp_path / "no" / "such.html")
    with pytest.raises(UsageError, match="png or svg"):
        api.write_plots(two_runs, tmp_path, fmt="gif")


def test_a_damaged_run_loads_with_a_warning(two_runs, tmp_path):
    copy = tmp_path / two_runs[0].id
    shutil.copytree(two_runs[0].path, copy)
    with open(copy / "records.jsonl", "a") as f:
        f.write('{"type": "point", "benchm\n')
    with pytest.warns(api.RecordsWarning, match="line .* is corrupt"):
        run = api.load(copy)
    assert len(run.problems) == 1 and len(run.table()) == len(EXPECTED)


@pytest.mark.parametrize("kwargs, match", [
    (dict(benchmarks="no_such_benchmark"), "no_such_benchmark"),
    (dict(max_time=-1.0), "max_time must be a positive number"),
    (dict(launches=0), "between 1 and 1000"),
    (dict(env={"1BAD": "x"}), "not a valid variable name"),
    (dict(mpi="no-such-mpi"), "no-such-mpi"),
])
def test_bad_measurements_raise_typed_errors(kwargs, match, runs_dir, embedded_mpi):
    args = {**dict(benchmarks="pingpong", sizes="1:8", ranks=2, launches=1), **kwargs}
    before = sorted(p.name for p in runs_dir.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(MpiscopeError, match=match):
            api.measure(runs_dir=runs_dir, **args)
    assert sorted(p.name for p in runs_dir.iterdir()) == before  # nothing half-written


def test_side_by_side_tables(two_runs):
    [t] = api.side_by_side(two_runs)
    assert t.benchmark == "pingpong" and t.columns == [r.id for r in two_runs] and t.sizes == EXPECTED
    assert list(t.us.columns) == t.columns and (t.us > 0).all().all()
    assert t.us.loc[1, two_runs[0].id] == two_runs[0].table().set_index("size").loc[1, "time_median_us"]
    with pytest.raises(UsageError, match="no 'bcast' points"):
        api.side_by_side(two_runs, "bcast")


def test_a_failed_launch_raises_with_the_run_kept(embedded_mpi, tmp_path):
    """mpiexec rejects an argument: the run is kept (failed) and the error carries its path and the
    launcher's own words."""
    from mpiscope.util.errors import MeasurementError
    with pytest.raises(MeasurementError, match="launcher stderr") as caught:
        api.measure("pingpong", sizes="1:8", ranks=2, launches=1, launcher_args=["--no-such-launcher-flag"],
                    runs_dir=tmp_path)
    run = api.load(caught.value.run_path)
    assert run.status == "failed" and run.points == []
    assert "no-such-launcher-flag" in str(caught.value)


DATA = __import__("pathlib").Path(__file__).resolve().parent / "data" / "imports"


def test_import_runs_and_compare_an_imported_osu_run_with_a_measured_one(runs_dir, embedded_mpi, tmp_path):
    """api.import_runs stores OSU output as a run (docs/import.md); compare lines its points up with
    a measured run of the same benchmarks, the one-sided ones by their synchronisation (variant)."""
    lat, put = DATA / "osu-7.4_latency_mpich.txt", DATA / "osu-7.4_put_latency_mpich.txt"
    osu = api.import_runs([lat, put], mpi_label="MPICH 5.0.2", runs_dir=tmp_path)
    assert isinstance(osu, api.Run) and osu.status == "ok" and osu.path.parent == tmp_path
    t = osu.table()
    assert set(zip(t["benchmark"], t["tool_benchmark"])) == {("pingpong", "osu_latency"),
                                                             ("put_latency", "osu_put_latency")}
    assert set(t["estimate"]) == {"mean"} and set(t.loc[t["benchmark"] == "put_latency", "variant"]) == {"flush"}
    first = next(x for x in lat.read_text().splitlines() if x.startswith("1 "))  # "1   <us>"
    # in the launch-level frame time_median_us is the estimate, and `estimate` says it is a mean
    assert t[(t["benchmark"] == "pingpong") & (t["size"] == 1)]["time_median_us"].item() == float(first.split()[1])
    assert api.load(osu.id, runs_dir=tmp_path).id == osu.id  # one path in: a single file works too
    assert api.import_runs(str(put), runs_dir=tmp_path / "one").points[0].variant == "flush"
    measured = api.measure(["pingpong", "put_latency"], sizes="1:64", ranks=2, launches=1, max_time=0.01,
                           runs_dir=tmp_path)
    c = api.compare(measured, osu)
    ct = c.table()
    assert set(ct["benchmark"]) == {"pingpong", "put_latency flush"}
    assert sorted(ct.loc[ct["benchmark"] == "put_latency flush", "size"]) == [1, 2, 4, 8, 16, 32, 64]
    assert set(ct["verdict"]) == {"untested"} and "OSU 7.4 mean" in c.candidate_figure
    with pytest.raises(UsageError, match=r"line 3: .*not a number"):
        bad = tmp_path / "bad.txt"
        bad.write_text("# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n1   x.5\n")
        api.import_runs([bad], runs_dir=tmp_path / "bad")
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())
