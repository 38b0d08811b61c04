"""Small pure pieces: vendor strings, launcher argv, the store's reader, plan checks."""
import json

import pytest

from mpiscope.errors import UsageError
from mpiscope.launch import Job, launcher_for
from mpiscope.launch.hydra import Hydra
from mpiscope.launch.openmpi import OpenMpi
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.vendor import launcher_family, parse_library_version
from mpiscope.plan import make_plan
from mpiscope.store import Run, read_records, resolve


@pytest.mark.parametrize("text, vendor, version", [
    ("MPICH Version:      5.0.2\nMPICH Release date: ...", "MPICH", "5.0.2"),
    ("Open MPI v5.0.11, package: Open MPI user@localhost Distribution", "Open MPI", "5.0.11"),
    ("Intel(R) MPI Library 2021.10 for Linux* OS\n", "Intel MPI", "2021.10"),
    ("MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date", "MVAPICH", "2.3.7"),
    ("MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)", "Cray MPICH", "8.1.28.2"),
    ("something else", "unknown", ""),
])
def test_vendor_from_library_version(text, vendor, version):
    assert parse_library_version(text) == (vendor, version)


def test_launcher_family_follows_vendor():
    assert launcher_family("Open MPI") == "openmpi"
    assert launcher_family("MPICH") == launcher_family("Intel MPI") == "hydra"
    lib = MpiLibrary("x", "/p/bin/mpicc", "/p/bin/mpiexec", "system", vendor="Open MPI")
    assert isinstance(launcher_for(lib), OpenMpi)


def test_hydra_argv_passes_env_with_genv():
    launch = Hydra("/p/bin/mpiexec").command(Job(["eng", "pingpong"], 2, {"A": "1"}, ["-v"]), cores=2)
    assert launch.argv == ["/p/bin/mpiexec", "-n", "2", "-bind-to", "core", "-genv", "A", "1", "-v", "eng",
                           "pingpong"]
    assert not launch.oversubscribed


def test_hydra_binds_to_cores_only_on_one_host_without_oversubscription():
    def argv(job: Job) -> list[str]:
        return Hydra("mpiexec").command(job, cores=2).argv
    assert "-bind-to" not in argv(Job(["eng"], 4))                            # more ranks than cores
    assert "-bind-to" not in argv(Job(["eng"], 2, hosts=["a", "b"]))          # hosts may share cores
    assert argv(Job(["eng"], 2, binding="none"))[3:5] == ["-bind-to", "none"]  # the user's choice wins


def test_hydra_rejects_oversubscribe_with_the_reason():
    with pytest.raises(UsageError, match="not accepted by MPICH"):
        Hydra("mpiexec").command(Job(["eng"], 4, extra_args=["--oversubscribe"]), cores=2)


def test_openmpi_oversubscribes_and_passes_env_with_x():
    launch = OpenMpi("/p/bin/mpirun").command(Job(["eng"], 4, {"A": "1"}), cores=2)
    assert launch.oversubscribed
    assert "--oversubscribe" in launch.argv
    assert launch.argv[launch.argv.index("-x") + 1] == "A=1"
    assert launch.argv[-1] == "eng"
    assert "--oversubscribe" not in OpenMpi("mpirun").command(Job(["eng"], 2), cores=2).argv


def test_reader_skips_truncated_and_corrupt_lines(tmp_path):
    f = tmp_path / "records.jsonl"
    f.write_bytes(b'{"type": "context"}\nnot json\n[1]\n{"type": "point", "size": 1}\n{"type": "po')
    recs = read_records(f)
    assert [r["type"] for r in recs.records] == ["context", "point"]
    assert len(recs.problems) == 3
    assert "truncated" in recs.problems[-1]
    assert read_records(tmp_path / "missing.jsonl").problems


def test_runs_resolve_by_id_prefix_and_path(tmp_path):
    a = Run.create(tmp_path, {})
    assert resolve(a.id, tmp_path).path == a.path
    assert resolve(str(a.path), tmp_path).path == a.path
    assert resolve(a.id[:17], tmp_path).path == a.path
    with pytest.raises(UsageError, match="no run"):
        resolve("nope", tmp_path)
    (a.path / "run.json").write_text("{broken")
    assert a.meta()["status"] == "unreadable"


REGISTRY = [{"name": "pingpong", "min_ranks": 2}, {"name": "bw", "min_ranks": 2},
            {"name": "msgrate", "min_ranks": 2, "even_ranks": True}]


def test_plan_suggests_close_benchmark_names():
    with pytest.raises(UsageError, match="did you mean 'pingpong'"):
        make_plan(["pingpog"], "1:4", 2, REGISTRY)


def test_plan_checks_ranks_and_options():
    with pytest.raises(UsageError, match="at least 2 ranks"):
        make_plan(["pingpong"], "1", 1, REGISTRY)
    with pytest.raises(UsageError, match="even"):
        make_plan(["msgrate"], "1", 3, REGISTRY)
    with pytest.raises(UsageError, match="--max-time"):
        make_plan(["bw"], "1", 2, REGISTRY, max_time=0)
    plan = make_plan(["pingpong", "bw"], "1:4", 2, REGISTRY, max_time=0.5, check=True)
    assert plan.points == 6
    assert plan.engine_args() == ["--sizes", "1:4", "--max-time", "0.5", "--check", "pingpong", "bw"]
    assert json.dumps(plan.to_json())
