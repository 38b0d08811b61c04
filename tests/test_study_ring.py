"""`mpiscope study ring` under real mpiexec: every series lands in one run with its tag, the
ring's contents are verified, the imbalance follows the study's driver, algorithm 1 with a small
eager limit is reported as deadlocked while the study goes on, and the figures are drawn."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpiscope.report.deadlocks import deadlock_table
from mpiscope.plan.describe import Description
from mpiscope.results.table import tidy
from mpiscope.report import plots
from mpiscope.execute.part import Target
from mpiscope.plan.engine import expand_sizes
from mpiscope.store.runs import Run
from mpiscope.studies.ring import RING_NBLOCKS, RingStudyConfig, measurement, series


def _run_dir(stdout: str) -> Path:
    line = next(x for x in stdout.splitlines() if x.startswith("saved in "))
    return Path(line.removeprefix("saved in ").strip())


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines() if x.strip()]


def test_plan_follows_the_study_driver(embedded_mpi, mpich_engine):
    words = [b // 8 for b in expand_sizes(mpich_engine, "0:30:*1.2", "words")]
    assert words == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29]
    m = measurement(RingStudyConfig(), Description(launches=1), Target(embedded_mpi, mpich_engine))
    todo = m.extra["series"]
    names = [s["name"] for s in todo]
    assert len(names) == len(set(names)) == len(m.parts) == 10 + len(RING_NBLOCKS)
    assert max(m.extra["config"]["words"]) * 8 <= 8 * 500_000  # the engine's plan of the sweep
    testall = [p.plan for p in m.parts if "nblock" in p.tag]
    assert {(p.sizes, p.units) for p in testall} == {("65536,1048576", "bytes")}  # the MPI_Testall series' two sizes
    assert all(p.tag["series"] == s["name"] for p, s in zip(m.parts, todo))
    levels = series(RingStudyConfig(env_levels={"X": ["1", "2"], "Y": ["a", "b"]}), top=8 * 500_000)
    assert len(levels) == 4 * len(todo)


def test_study_on_four_ranks_with_a_small_eager_limit(cli, openmpi_prefix, tmp_path):
    r = cli("study", "ring", "--mpi", "openmpi", "-n", "4", "--quick", "--sizes", "0:512:*2", "--nblocks", "64,256",
            "--check", "--env", "OMPI_MCA_btl_sm_eager_limit=1024", "--no-progress", "--runs-dir", str(tmp_path),
            timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    run = _run_dir(r.stdout)
    meta = json.loads((run / "run.json").read_text())
    recs = _records(run)
    points = [p for p in recs if p["type"] == "point"]
    names = [s["name"] for s in meta["series"]]
    assert len(names) == 12 and meta["study"] == "ring"
    # every series is in the one run, each record tagged with its factors
    assert {p["tag"]["series"] for p in points} == set(names)
    for p in points:
        assert p["tag"]["env_OMPI_MCA_btl_sm_eager_limit"] == "1024"
        assert p["tag"]["algorithm"] == p["ringcs"]["algorithm"] == int(p["benchmark"][-1])
        assert p["check"]["errors"] == 0 and (p["check"]["verified_bytes"] > 0) == (p["size"] > 0)  # ring contents
        sched = p["ringcs"]["ncompute_schedule"]
        assert len(sched) == 4 and p["ringcs"]["bw_includes_compute"] is True
        if p["tag"]["load"] == "balanced":
            assert all(n == 0 for row in sched for n in row)
        else:  # iand(iter + me, 1) == 0 -> ncompute_A = 1, else ncompute_B = 200
            assert sched == [[1 if (it + rank) % 2 == 0 else 200 for it in range(1, 11)] for rank in range(4)]
    # algorithm 1 deadlocks just above the eager limit (its header makes 1024 itself too big)...
    table = deadlock_table(Run(run).records())
    table = table.assign(series=table["series"].str.split(" OMPI").str[0]).set_index("series")
    for load in ("balanced", "imbalanced"):
        row = table.loc[f"alg1 {load}"]
        assert row["deadlock"] in (1024, 2048) and row["result"].startswith(f"deadlock at {int(row['deadlock'])} bytes")
        assert row["largest_ok"] == row["deadlock"] // 2
        # every larger size is a time-out (the relaunch past the first hang) or recorded as not measured
        later = {x["size"] for x in recs if x.get("tag", {}).get("series", "").split(" OMPI")[0] == f"alg1 {load}"
                 and x["type"] in ("timeout", "skip")
                 and x["size"] >= row["deadlock"]}
        assert later == {s for s in (1024, 2048, 4096) if s >= row["deadlock"]}
    # ...and the study went on: the compliant algorithms are measured beyond it, never "deadlocked"
    # (4 ranks on 2 cores may still time out a slow point: the table says so, not "deadlock")
    for k in (2, 3, 4, 5):
        for load in ("balanced", "imbalanced"):
            assert table.loc[f"alg{k} {load}"]["largest_ok"] > 2048
            assert not table.loc[f"alg{k} {load}"]["result"].startswith("deadlock")
    assert "deadlock at" in r.stdout and "no deadlock up to" in r.stdout
    assert "leading algorithm" in r.stdout and "MPI_Testall" in r.stdout
    for name in ("ring-bandwidth-vs-size.png", "ring-bandwidth-vs-nblock.png", "ring-deadlocks.png"):
        assert (run / name).stat().st_size > 1000 and f"figure: {run / name}" in r.stdout


def test_study_on_two_ranks_of_mpich_and_its_figures(cli, mpich_engine, tmp_path):
    r = cli("study", "ring", "-n", "2", "--quick", "--sizes", "0:256:*4", "--nblocks", "32,1024", "--check",
            "--no-progress", "--runs-dir", str(tmp_path), timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    run = _run_dir(r.stdout)
    recs = _records(run)
    points = [p for p in recs if p["type"] == "point"]
    assert all(p["check"]["errors"] == 0 for p in points)
    assert {p["ringcs"]["words"] for p in points if "nblock" not in p} == {0, 1, 4, 16, 64, 256}
    assert not [x for x in recs if x["type"] == "timeout"]  # 2 KiB stays below MPICH's eager limit
    sched = next(p for p in points if p["tag"]["load"] == "imbalanced")["ringcs"]["ncompute_schedule"]
    assert sched == [[200, 1] * 5, [1, 200] * 5]

    df = tidy([Run(run)])
    fig = plots.ring_size_plot(df)
    balanced, imbalanced = fig.axes
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["balanced load", "imbalanced load"]
    for ax in fig.axes:
        lines = [line for line in ax.lines if line.get_gid() == "series"]
        assert len(lines) == 5                                      # one per algorithm
        assert all(sorted(line.get_xdata()) == [8, 32, 128, 512, 2048] for line in lines)  # every size but 0
    assert len(fig.legends[0].get_texts()) == 5
    (ax,) = plots.ring_nblock_plot(df).axes
    lines = [line for line in ax.lines if line.get_gid() == "series"]
    assert [line.get_label() for line in lines] == ["2 KiB"]
    assert list(lines[0].get_xdata()) == [32, 1024]
    assert sorted(p.name for p in run.glob("ring-*.png")) == [
        "ring-bandwidth-vs-nblock.png", "ring-bandwidth-vs-size.png", "ring-deadlocks.png"]
    assert set(deadlock_table(Run(run).records())["result"]) == {"no deadlock up to 2048 bytes"}


@pytest.mark.parametrize("args, message", [
    (["-n", "3"], "even number of ranks"),
    (["--imbalance", "1"], "--imbalance expects A,B"),
    (["--nblocks", "0"], "--nblocks expects positive integers"),
    (["--env", "1X=2"], "--env expects NAME=VALUE"),
    (["--sizes", "10:1:*1.2"], "is empty"),
])
def test_bad_input_is_one_line(cli, tmp_path, args, message):
    r = cli("study", "ring", *args, "--runs-dir", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.startswith("mpiscope: error:") and message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
