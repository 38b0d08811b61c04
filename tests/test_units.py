"""Small pure pieces: vendor strings, launcher argv, the store's reader, plan checks."""
import json

import pytest

from mpiscope.util.errors import UsageError
from mpiscope.launchers import Job, launcher_for
from mpiscope.launchers.hydra import Hydra
from mpiscope.launchers.openmpi import OpenMpi
from mpiscope.mpi.library import MpiLibrary
from mpiscope.launchers.base import launcher_family
from mpiscope.mpi.vendor import parse_library_version
from mpiscope.plan.engine import Plan, compress, make_plan, spread_budget
from mpiscope.util.typed import dump, load
from mpiscope.records import read_records
from mpiscope.store.runs import Run, resolve


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
    # whole records (a context needs its world size, a point its benchmark, ranks and times)
    f.write_bytes(b'{"type": "context", "world_size": 2}\nnot json\n[1]\n'
                  b'{"type": "point", "benchmark": "bw", "size": 1, "ranks": 2, "time_us": {"n": 3, "median": 1.0}}\n'
                  b'{"type": "po')
    recs = read_records(f)
    assert [type(r).__name__.lower() for r in recs.records] == ["context", "point"]
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
    assert a.meta().status == "unreadable"


def test_plan_suggests_close_benchmark_names(mpich_engine):
    with pytest.raises(UsageError, match="did you mean 'pingpong'"):
        make_plan(mpich_engine, ["pingpog"], 2, sizes="1:4")


def test_plan_checks_ranks_and_options(mpich_engine):
    with pytest.raises(UsageError, match="at least 2 ranks"):
        make_plan(mpich_engine, ["pingpong"], 1, sizes="1")
    with pytest.raises(UsageError, match="even"):
        make_plan(mpich_engine, ["ringcs1"], 3, sizes="8")  # msgrate runs on odd counts too
    with pytest.raises(UsageError, match="--max-time"):
        make_plan(mpich_engine, ["bw"], 2, sizes="1", max_time=0)
    plan, planned = make_plan(mpich_engine, ["pingpong", "bw"], 2, sizes="1:4", max_time=0.5, check=True)
    assert len(planned.points) == 6
    assert plan.engine_args() == ["--sizes", "1:4", "--max-time", "0.5", "--check", "pingpong", "bw"]
    assert load(Plan, json.loads(json.dumps(dump(plan)))) == plan


def test_a_time_budget_spreads_over_every_point_of_every_plan(mpich_engine):
    plans = [make_plan(mpich_engine, ["pingpong"], 2, sizes="1:16"), make_plan(mpich_engine, ["barrier"], 2)]
    assert [p.max_time_s for p in spread_budget(plans, 6.0)] == [1.0, 1.0]  # 5 + 1 points
    with pytest.raises(UsageError, match="--time-budget"):
        spread_budget(plans, 0)


def test_points_are_named_in_the_engines_short_grammar():
    assert compress([0, 1, 2, 3, 7, 9, 10]) == "0-3,7,9-10"
    assert compress([7, 0, 1, 2, 3, 9, 10, 7]) == "7,0-3,9-10"  # the order is the measuring order
    assert compress([5]) == "5"


def test_time_bounds_follow_what_the_engine_says_bounds_each_point():
    from mpiscope.plan.engine import FIXED_REPS_PHASE_S, Planned, PlanPoint
    points = (PlanPoint(0, "pairs", 8, 4, phases=10), PlanPoint(1, "pingpong", 8, 4))
    assert Planned(points, max_time_s=0.5).bound_s() == 11 * 0.5          # every phase to its cap
    assert Planned(points, max_time_s=0.5, timeout_s=2).bound_s() == 11 * 2
    assert Planned(points, max_time_s=0.5, reps=10**6).bound_s() == 11 * FIXED_REPS_PHASE_S
    assert Planned(points).wall_limit_s(points[1:]) == 3 * 1.0 + 60 + 2


def test_runs_made_in_one_second_with_one_suffix_get_names_of_their_own(tmp_path, monkeypatch):
    """A run's name is its second and 4 random hex digits: runs made within one second (a sweep,
    a history's test series) may draw the same name; the second draws again instead of failing
    (a FileExistsError once ended a test series of this suite)."""
    import mpiscope.store.runs as runs
    names = iter(["20261202-165652-18ad", "20261202-165652-18ad", "20261202-165652-18ae"])
    monkeypatch.setattr(runs, "new_run_id", lambda: next(names))
    first, second = Run.create(tmp_path), Run.create(tmp_path)
    assert (first.id, second.id) == ("20261202-165652-18ad", "20261202-165652-18ae")
    monkeypatch.setattr(runs, "new_run_id", lambda: "20261202-165652-18ad")
    with pytest.raises(UsageError, match="every new run name tried exists already"):
        Run.create(tmp_path)
