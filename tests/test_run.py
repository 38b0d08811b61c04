"""`mpiscope run` end to end on the embedded MPICH, then runs/show/export on what it kept."""
import io
import json

import pandas as pd
import pytest

from mpiscope_test_fixtures.synthetic import records_of


FAST = ["--sizes", "1:1K", "--max-time", "0.02", "--no-progress"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="module")
def first_run(cli, workdir):
    r = cli("run", "-b", "pingpong,bw", *FAST, "--env", "MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE=8192", cwd=workdir)
    assert r.returncode == 0, r.stderr
    runs = list((workdir / "mpiscope-runs").iterdir())
    assert len(runs) == 1
    return r, runs[0]


def test_run_prints_summary_and_where_it_was_saved(first_run):
    r, path = first_run
    assert "pingpong" in r.stdout and "bw" in r.stdout and "median" in r.stdout
    assert f"saved in {path.name}" in r.stdout.replace("mpiscope-runs/", "")
    assert "Traceback" not in r.stderr


def test_run_directory_keeps_records_commands_and_stderr(first_run):
    _, path = first_run
    meta = json.loads((path / "run.json").read_text())
    assert meta["status"] == "ok"
    assert meta["mpi"]["vendor"] == "MPICH"
    assert meta["launcher_command"][1:3] == ["-n", "2"]
    assert meta["launcher_command"][0].endswith("mpiexec")
    assert meta["engine_command"][0].endswith("mpiscope-engine")
    assert (path / "stderr.txt").exists()
    recs = records_of(path)
    assert recs[0]["type"] == "context" and recs[0]["world_size"] == 2
    assert recs[-1]["type"] == "end"
    points = [r for r in recs if r["type"] == "point"]
    assert len(points) == 2 * 11
    # --env reaches the ranks through the launcher (-genv); the engine records it
    assert recs[0]["env"]["MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE"] == "8192"


def test_runs_and_show(cli, first_run, workdir):
    _, path = first_run
    r = cli("runs", cwd=workdir)
    assert r.returncode == 0 and path.name in r.stdout
    r = cli("show", path.name[:12], cwd=workdir)
    assert r.returncode == 0, r.stderr
    assert "pingpong" in r.stdout and "mpiexec" in r.stdout
    r = cli("show", str(path))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "markdown"])
def test_export_every_format_loads_in_pandas(cli, first_run, workdir, fmt):
    _, path = first_run
    if fmt == "parquet":
        out = workdir / "t.parquet"
        r = cli("export", "latest", "--format", fmt, "-o", str(out), cwd=workdir)
        assert r.returncode == 0, r.stderr
        df = pd.read_parquet(out)
    else:
        r = cli("export", path.name, "--format", fmt, "-o", "-", cwd=workdir)
        assert r.returncode == 0, r.stderr
        if fmt == "csv":
            df = pd.read_csv(io.StringIO(r.stdout))
        elif fmt == "json":
            df = pd.read_json(io.StringIO(r.stdout))
        else:
            lines = r.stdout.strip().splitlines()
            assert lines[0].startswith("| run_id |") and lines[1].startswith("|---|")
            df = pd.read_csv(io.StringIO("\n".join([lines[0]] + lines[2:])), sep="|").iloc[:, 1:-1]
            df.columns = [c.strip() for c in df.columns]
    assert len(df) == 22
    assert set(df["benchmark"].astype(str).str.strip()) == {"pingpong", "bw"}
    for col in ("run_id", "mpi_vendor", "mpi_version", "world_size", "size", "time_median_us",
                "time_ci_low_us", "time_ci_high_us", "bw_median_MBps", "samples", "converged", "opt_max_time_s"):
        assert col in df.columns


def test_damaged_records_are_reported_not_fatal(cli, first_run, workdir, tmp_path):
    _, path = first_run
    import shutil
    copy = tmp_path / path.name
    shutil.copytree(path, copy)
    with open(copy / "records.jsonl", "ab") as f:
        f.write(b'{"type": "point", "benchm')
    r = cli("show", str(copy))
    assert r.returncode == 0, r.stderr
    assert "truncated" in r.stderr
    r = cli("export", str(copy), "--format", "csv")
    assert r.returncode == 0 and len(pd.read_csv(io.StringIO(r.stdout))) == 22


def test_time_budget_check_and_raw_reach_the_engine(cli, tmp_path):
    r = cli("run", "-b", "pingpong", "--sizes", "1:64", "--time-budget", "0.7", "--check", "--raw",
            "--no-progress", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    recs = records_of(run)
    assert recs[0]["options"]["max_time_s"] == pytest.approx(0.1)
    points = [p for p in recs if p["type"] == "point"]
    assert all(p["check"]["errors"] == 0 and len(p["samples_us"]) == p["time_us"]["n"] for p in points)


@pytest.mark.parametrize("args, fragment", [
    (["run", "--mpi", "nosuchmpi"], "unknown MPI 'nosuchmpi'"),
    (["run", "-b", "pingpog"], "did you mean 'pingpong'"),
    (["run", "--sizes", "1:4Q"], "unknown suffix"),
    (["run", "--sizes", "8:1"], "start is larger"),
    (["run", "--env", "NOEQUALS"], "NAME=VALUE"),
    (["run", "-n", "1"], "at least 2 ranks"),
    (["run", "-n", "0"], "-n/--ranks must be at least 1"),
    (["run", "-n", "-2", "-b", "pingpong"], "-n/--ranks must be at least 1"),
    (["run", "--ci-target", "inf"], "--ci-target expects a number"),
    (["run", "--order", "5,1"], "--order"),
    (["run", "--launcher-args=--oversubscribe", "--sizes", "1"], "not accepted by MPICH"),
    (["run", "--launcher-args", '"unbalanced'], "balance the quotes"),
    (["run", "--engine-args=--npmin 2 :"], "holds a lone ':'"),
    (["run", "--engine-args=--buffer-offset 4096"], "--buffer-offset expects S or S,R"),
    (["run", "--max-time", "0"], "--max-time must be a positive number"),
    (["export", "nosuchrun"], "no run 'nosuchrun'"),
    (["show", "nosuchrun"], "no run 'nosuchrun'"),
    (["mpi", "show", "nosuchmpi"], "unknown MPI"),
    (["mpi", "remove", "nosuchmpi"], "no registered MPI"),
    (["mpi", "add", "/nonexistent/prefix"], "is not a directory"),
    (["run", "--bogus-option"], "unrecognized arguments"),
])
def test_errors_exit_2_with_the_fix_and_no_traceback(cli, tmp_path, args, fragment):
    r = cli(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "mpiscope: error:" in r.stderr
    assert fragment in " ".join(r.stderr.split())
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "mpiscope-runs").exists() or args[0] != "run"


def test_bench_list_shows_the_registry(cli):
    r = cli("bench", "list")
    assert r.returncode == 0, r.stderr
    assert "pingpong" in r.stdout and "min ranks" in r.stdout


def test_ctrl_c_keeps_the_points_and_leaves_no_process(embedded_mpi, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", "run", "-b", "bw", "--sizes", "1:4M",
                             "--max-time", "1", "--ci-target", "0.0001", "--no-progress",
                             "--runs-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records = None
    for _ in range(600):  # wait until the first point is stored, then interrupt
        time.sleep(0.1)
        records = next(tmp_path.glob("*/records.jsonl"), None)
        if records and records.read_text().count('"point"') >= 1:
            break
    proc.send_signal(signal.SIGINT)
    out, errs = proc.communicate(timeout=60)
    assert proc.returncode == 130, errs
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["points"] >= 1
    assert f"mpiscope run --resume {run.name}" in errs  # the message names the command that finishes it
    lines = (run / "records.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)
    time.sleep(0.5)
    engine = meta["engine_command"][0]
    left = subprocess.run(["pgrep", "-f", engine], capture_output=True, text=True).stdout.split()
    assert [pid for pid in left if int(pid) != os.getpid()] == [], f"ranks of {engine} still running"


def test_default_run_adds_the_main_collectives_on_every_core(cli, tmp_path):
    r = cli("run", "--sizes", "1,1K", "--max-time", "0.05", "--no-progress", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    records = records_of(run)
    measured = {rec["benchmark"] for rec in records if rec["type"] == "point"}
    from mpiscope.launchers import local_cores
    from mpiscope.plan.engine import DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVES
    assert measured == set(DEFAULT_BENCHMARKS) | set(DEFAULT_COLLECTIVES)
    contexts = [rec for rec in records if rec["type"] == "context"]
    assert [c["world_size"] for c in contexts] == [2, max(2, local_cores())]  # pairs, then every core
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and len(meta["launches"]) == 2
    assert "allreduce" in r.stdout and "pingpong" in r.stdout
