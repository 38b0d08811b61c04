"""`mpiscope run --launcher srun`, `--submit slurm` and `mpiscope sweep --submit slurm` under a
real (local) Slurm: srun with the PMI each library speaks gives one job, a wrong pairing is
reported as singletons with the fix, and batch jobs put their runs in the same run store."""
from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from mpiscope.records import Context
from mpiscope.store.runs import Run, list_runs


QUICK = ["-b", "pingpong", "--sizes", "8,1K", "--max-time", "0.05", "--no-progress"]
PMI = {"mpich": "--mpi=pmi2", "openmpi": "--mpi=pmix"}
JOB_TIMEOUT = 180


def mpiscope(slurm, args: list[str], cwd: Path, timeout: float = 240):
    """The real CLI with this Slurm's clients on PATH (as on a login node)."""
    return slurm.run([sys.executable, "-m", "mpiscope", *args], cwd=cwd, timeout=timeout)


def mpi_option(lib: str, request) -> list[str]:
    if lib == "openmpi":
        request.getfixturevalue("openmpi_prefix")  # registered in the session's MPISCOPE_HOME
        return ["--mpi", "openmpi"]
    request.getfixturevalue("mpiscope_home")
    return []


def one_job_of(run: Run, ranks: int) -> Context:
    recs = run.records()
    ctx = recs.contexts
    assert len(ctx) == 1 and ctx[0].world_size == ranks, ctx
    assert recs.ends, "the engine did not finish"
    return ctx[0]


def submitted(stdout: str) -> list[int]:
    return [int(x) for x in re.findall(r"submitted batch job (\d+)", stdout)]


@pytest.mark.parametrize("lib", ["mpich", "openmpi"])
def test_run_with_srun_gives_one_job(slurm_cluster, lib, request, tmp_path):
    runs = tmp_path / "runs"
    r = mpiscope(slurm_cluster, ["run", "--launcher", "srun", "--runs-dir", str(runs), *QUICK,
                                 *mpi_option(lib, request)], tmp_path)
    assert r.returncode == 0, r.stderr
    (run,) = list_runs(runs)
    meta = run.meta()
    assert meta.status == "ok", meta.error
    argv = meta.launcher_command
    assert Path(argv[0]).name == "srun" and PMI[lib] in argv and argv[argv.index("-n") + 1] == "2"
    assert meta.parts[0].placement.to_json() == {"launcher": "srun"}
    ctx = one_job_of(run, 2)
    assert [x.host for x in ctx.ranks] == [slurm_cluster.node] * 2
    assert [p.size for p in run.records().points] == [8, 1024]
    r = mpiscope(slurm_cluster, ["export", run.id, "--runs-dir", str(runs), "--format", "csv"], tmp_path)
    df = pd.read_csv(io.StringIO(r.stdout))
    assert set(df["launcher"]) == {"srun"} and set(df["placement"]) == {"intra-node"}


@pytest.mark.parametrize("lib,plugin,bench,expect", [
    # pingpong needs 2 ranks: each singleton refuses to start
    ("openmpi", "pmi2", ["-b", "pingpong", "--sizes", "8"], "the engine refused to start with 2 ranks"),
    # barrier runs on 1 rank: two complete 1-rank jobs, two context records
    ("mpich", "none", ["-b", "barrier", "--sizes", "0"], "ran as 2 job(s) of 1 rank(s)"),
])
def test_wrong_pmi_under_srun_is_reported_with_the_fix(slurm_cluster, lib, plugin, bench, expect, request,
                                                       tmp_path):
    runs = tmp_path / "runs"
    r = mpiscope(slurm_cluster, ["run", "--launcher", "srun", f"--launcher-args=--mpi={plugin}", "-n", "2",
                                 "--max-time", "0.05", "--no-progress", "--runs-dir", str(runs), *bench,
                                 *mpi_option(lib, request)], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]  # after the launcher's last words, one line
    assert last.startswith("mpiscope: error:") and expect in last
    assert f"srun --mpi={plugin} is not the PMI" in last
    (run,) = list_runs(runs)
    assert run.meta().status == "failed"
    assert [a for a in run.meta().launcher_command if a.startswith("--mpi")] == [f"--mpi={plugin}"]


def test_submit_run_lands_in_the_run_store(slurm_cluster, mpiscope_home, tmp_path):
    runs = tmp_path / "runs"
    args = ["run", *QUICK, "--ranks-per-node", "2", "--submit", "slurm", "--runs-dir", str(runs)]

    dry = mpiscope(slurm_cluster, [*args, "--dry-run"], tmp_path)
    assert dry.returncode == 0, dry.stderr
    for line in ("#SBATCH --nodes=1", "#SBATCH --ntasks=2", "#SBATCH --ntasks-per-node=2", "batch-run"):
        assert line in dry.stdout
    assert re.search(r"^#SBATCH --time=\d+$", dry.stdout, re.M)
    assert not submitted(dry.stdout) and not runs.exists()  # printed, nothing written or submitted

    r = mpiscope(slurm_cluster, args, tmp_path)
    assert r.returncode == 0, r.stderr
    (job,) = submitted(r.stdout)
    state = slurm_cluster.wait_job(job, timeout=JOB_TIMEOUT)
    log = runs / "batch" / f"slurm-{job}.out"
    assert state == "COMPLETED", log.read_text() if log.exists() else state
    (run,) = list_runs(runs)
    meta = run.meta()
    assert meta.status == "ok" and meta.extra["batch"]["SLURM_JOB_ID"] == str(job)
    # inside the allocation srun is the default launcher
    assert Path(meta.launcher_command[0]).name == "srun"
    one_job_of(run, 2)
    assert f"saved in {run.path}" in log.read_text()
    listed = mpiscope(slurm_cluster, ["runs", "--runs-dir", str(runs)], tmp_path)
    assert run.id in listed.stdout


SPEC = """
name = "slurm-sweep"
[measure]
benchmarks = ["pingpong"]
sizes = "8,64K"
max_time = 0.05
[factors]
ranks = 2
[factors.env]
MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE = ["1024", "131072"]
"""


def test_sweep_submit_runs_every_configuration_as_a_job(slurm_cluster, mpiscope_home, tmp_path):
    runs = tmp_path / "runs"
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC)
    dry = mpiscope(slurm_cluster, ["sweep", str(spec), "--submit", "slurm", "--dry-run", "--runs-dir", str(runs)],
                   tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.count("#!/bin/bash") == 2 and not runs.exists()

    r = mpiscope(slurm_cluster, ["sweep", str(spec), "--submit", "slurm", "--runs-dir", str(runs)], tmp_path)
    assert r.returncode == 0, r.stderr
    jobs = submitted(r.stdout)
    assert len(jobs) == 2
    for job in jobs:
        assert slurm_cluster.wait_job(job, timeout=JOB_TIMEOUT) == "COMPLETED"
    (sweep_dir,) = (runs / "sweeps").iterdir()
    entries = [json.loads(x) for x in (sweep_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(e["job"] for e in entries if e["event"] == "submitted") == sorted(jobs)
    finished = [e for e in entries if e["event"] == "finished"]
    assert len(finished) == 2 and {e["status"] for e in finished} == {"ok"}
    eager = set()
    for e in finished:
        run = Run(runs / e["run"])
        assert run.meta().sweep.config == e["config"]
        eager.add(one_job_of(run, 2).env["MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE"])
    assert eager == {"1024", "131072"}  # each job measured its own configuration
    table = mpiscope(slurm_cluster, ["table", str(sweep_dir)], tmp_path)
    assert table.returncode == 0, table.stderr


def test_submitted_default_run_measures_pairs_then_collectives(slurm_cluster, mpiscope_home, tmp_path):
    """Without -b, `mpiscope run` measures the pair benchmarks and then the main collectives
    into one run; the batch job does the same, in an allocation large enough for both."""
    from mpiscope.plan.engine import DEFAULT_BENCHMARKS, DEFAULT_COLLECTIVES
    runs = tmp_path / "runs"
    r = mpiscope(slurm_cluster, ["run", "--sizes", "8", "--max-time", "0.05", "--no-progress", "--submit", "slurm",
                                 "--runs-dir", str(runs)], tmp_path)
    assert r.returncode == 0, r.stderr
    (job,) = submitted(r.stdout)
    assert slurm_cluster.wait_job(job, timeout=JOB_TIMEOUT) == "COMPLETED"
    (run,) = list_runs(runs)
    assert run.meta().status == "ok", run.meta().error
    measured = {p.benchmark for p in run.records().points}
    assert measured == set(DEFAULT_BENCHMARKS) | set(DEFAULT_COLLECTIVES)
