"""A simulated run (SimGrid SMPI) behaves as a deterministic one: one launch unless a point's
samples differ, no prior drift, host disturbance never applied, limits in host seconds, the
platform's content in its identity, SMPI's breakpoints named as such (docs/simulation.md, "How
a simulated run differs from a measured one")."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from mpiscope.execute.part import SIM_STARTUP_S, Simulated, execute
from mpiscope.execute.simcheck import RANK_BYTES, check_memory
from mpiscope.launchers.base import Launch
from mpiscope.launchers.platform import file_hosts
from mpiscope.launchers.smpirun import breakpoints, simgrid_error
from mpiscope.plan.engine import Part, Plan, Planned, PlanPoint
from mpiscope.records.model import Context, End, Point, Stats
from mpiscope.results.disturbance import disturbed, launch_disturbed
from mpiscope.results.history import configuration_digest, launch_points, run_platforms
from mpiscope.results.launches import aggregate
from mpiscope.results.policy import POLICY
from mpiscope.results.view import results_of
from mpiscope.store.runs import Run
from mpiscope.util.errors import UsageError

needs_simgrid = pytest.mark.skipif(not (shutil.which("smpicc") and shutil.which("smpirun")),
                                   reason="SimGrid's smpicc/smpirun are not installed (apt-get install libsimgrid-dev)")

FOUR = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
 <cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="10GBps" lat="1us" bb_bw="100GBps" bb_lat="0us"/>
</platform>
"""


@pytest.fixture(scope="module")
def smpi(cli) -> None:
    added = cli("mpi", "add", "smpi")
    assert added.returncode == 0 or "exists already" in added.stderr, added.stderr


def one_line_error(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("mpiscope: error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def run_dirs(runs: Path) -> list[Path]:
    """The runs in the order they started (ids of one second sort by a random suffix)."""
    from mpiscope.store.runs import list_runs
    return [run.path for run in list_runs(runs)]


# -- launches and drift --------------------------------------------------------------------------

@needs_simgrid
def test_a_simulated_run_takes_one_launch_and_has_no_prior_drift(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    done = cli("run", "--mpi", "smpi", "-n", "2", "-b", "pingpong,allreduce", "--sizes", "1K:1M",
               "--launches", "auto", "--platform", "cluster:nodes=2", "--no-report", "--runs-dir", str(runs))
    assert done.returncode == 0, done.stderr
    assert "prior drift" not in done.stdout and "simulated: a point repeats its figures" in done.stdout
    (path,) = run_dirs(runs)
    run = Run(path)
    frame = results_of([run]).frame
    collectives = frame[frame["benchmark"] == "allreduce"]
    assert len(collectives) == 11 and (collectives["launches"] == 1).all()  # identical samples: one launch
    # SMPI's pingpong repeats a sample one link latency slower now and then: those points get one
    # more launch, which repeats the first to SimGrid's rounding, and keep one launch's interval
    assert frame["launches"].max() <= 2
    for lp in frame["point"]:
        assert lp.drift is None and max(lp.launch_medians) - min(lp.launch_medians) <= POLICY.simulated_tick_us
        assert (lp.ci_low, lp.ci_high) == (lp.points[0].time_us.ci_low, lp.points[0].time_us.ci_high)
    assert "samples" in run.meta().extra["launch_policy"]["stopped"]
    # the model of a simulated run: SMPI's breakpoints, no cycles of this host's clock
    model = cli("model", path.name, "--runs-dir", str(runs))
    assert model.returncode == 0, model.stderr
    assert "(cycles" not in model.stdout and "MHz" not in model.stdout and "protocol switch" not in model.stdout
    assert "SMPI factor breakpoint" in model.stdout and "smpi/bw-factor and smpi/lat-factor at 65472" in model.stdout


def _point(host_s: float | None, nivcsw: int) -> Point:
    return Point("allreduce", 8, 4, Stats(n=6, median=8.0, min=8.0, ci_low=8.0, ci_high=8.0, stddev=0.0),
                 host_s=host_s, disturbance={"nivcsw": [nivcsw] * 4})


def test_host_disturbance_is_kept_but_never_applied_to_a_simulated_point():
    simulated, measured = _point(0.5, 10 ** 6), _point(None, 10 ** 6)
    assert disturbed(measured, None) and not disturbed(simulated, None)
    assert simulated.disturbance == {"nivcsw": [10 ** 6] * 4}  # recorded all the same
    end = End(elapsed_s=1.0, disturbance={"nivcsw": [10 ** 6] * 4})
    assert launch_disturbed(end, Context(4), [measured])
    assert not launch_disturbed(end, Context(4, simulation={"simulator": "SMPI"}), [simulated])
    (lp,) = aggregate([simulated])
    assert not lp.disturbed and not lp.busy


# -- the platform in the configuration -----------------------------------------------------------

@needs_simgrid
def test_history_and_compare_tell_two_platforms_apart(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    common = ("--mpi", "smpi", "-n", "4", "-b", "allreduce", "--sizes", "64K", "--no-report", "--runs-dir", str(runs))
    for bw in ("12.5GBps", "1GBps", "12.5GBps"):
        assert cli("run", *common, "--platform", f"cluster:nodes=4,bw={bw}").returncode == 0
    fast, slow, again = (Run(p) for p in run_dirs(runs))
    digest = {r.id: {k[0] for k in launch_points(r)} for r in (fast, slow, again)}
    assert digest[fast.id] == digest[again.id] and digest[fast.id] != digest[slow.id]
    assert run_platforms(fast) == run_platforms(again) != run_platforms(slow)
    sim = fast.records().context.simulation
    assert len(sim["digest"]) == 16 and "--cfg=smpi/coll-selector:mpich" in sim["cfg"]
    # a side is one platform: runs of two are refused, in one line
    pooled = cli("compare", f"{fast.id},{slow.id}", again.id, "--runs-dir", str(runs))
    assert "simulated on different platforms" in one_line_error(pooled)
    # as baseline and candidate they are compared, and the slower links are slower
    shown = cli("compare", fast.id, slow.id, "--runs-dir", str(runs))
    assert shown.returncode == 0, shown.stderr
    assert "slower" in shown.stdout and "prior drift" not in shown.stdout
    assert "simulated on different platforms" in shown.stdout and "bw=1GBps" in shown.stdout


@needs_simgrid
def test_a_platform_file_is_known_by_its_content_not_its_path(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    hosts = tmp_path / "hosts"
    hosts.write_text("n0\nn1\n")
    for name in ("a.xml", "b.xml"):
        (tmp_path / name).write_text(FOUR)
        done = cli("run", "--mpi", "smpi", "-n", "2", "-b", "barrier", "--platform", str(tmp_path / name),
                   "--hostfile", str(hosts), "--no-report", "--runs-dir", str(runs))
        assert done.returncode == 0, done.stderr
    a, b = (Run(p) for p in run_dirs(runs))
    assert a.records().context.simulation["platform"] != b.records().context.simulation["platform"]
    assert configuration_digest(a, a.records().context) == configuration_digest(b, b.records().context)


# -- doctor and bad input ------------------------------------------------------------------------

def test_the_hosts_of_a_platform_file_are_read_from_its_xml(tmp_path):
    (tmp_path / "p.xml").write_text(FOUR)
    assert file_hosts(tmp_path / "p.xml") == ["n0", "n1", "n2", "n3"]
    (tmp_path / "none.xml").write_text("<platform version='4.1'><zone id='z' routing='Full'/></platform>")
    with pytest.raises(UsageError, match="--hostfile"):
        file_hosts(tmp_path / "none.xml")
    (tmp_path / "broken.xml").write_text("<platform")
    with pytest.raises(UsageError, match="not a readable XML file"):
        file_hosts(tmp_path / "broken.xml")


@needs_simgrid
def test_doctor_works_on_an_xml_platform_or_refuses_in_one_line(cli, smpi, tmp_path):
    (tmp_path / "four.xml").write_text(FOUR)
    done = cli("doctor", "--mpi", "smpi", "--platform", str(tmp_path / "four.xml"), "--json")
    assert done.returncode in (0, 1), done.stderr
    facts = json.loads(done.stdout)
    hello = next(c for c in facts["checks"] if c["name"].startswith("MPI hello"))
    assert hello["status"] == "ok" and "4 rank(s) on 4 host(s)" in hello["figure"]
    assert facts["hosts"] == ["n0", "n1", "n2", "n3"]
    (tmp_path / "bad.xml").write_text(FOUR.replace('speed="1Gf"', 'speeed="1Gf"'))
    refused = one_line_error(cli("doctor", "--mpi", "smpi", "--platform", str(tmp_path / "bad.xml")))
    assert "SimGrid refuses --platform" in refused and "speeed" in refused


NO_ROUTE = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="z" routing="Full">
 <host id="a" speed="1Gf"/>
 <host id="b" speed="1Gf"/>
</zone>
</platform>
"""


@needs_simgrid
def test_a_simulation_that_fails_says_simgrids_reason_and_a_doctor_that_finds_it(cli, smpi, tmp_path):
    # SimGrid reads this platform (no launch of one rank sends anything), but no message crosses it
    (tmp_path / "p.xml").write_text(NO_ROUTE)
    (tmp_path / "hosts").write_text("a\nb\n")
    where = ("--platform", str(tmp_path / "p.xml"), "--hostfile", str(tmp_path / "hosts"))
    done = cli("run", "--mpi", "smpi", "-n", "2", "-b", "pingpong", "--sizes", "8", *where, "--no-report",
               "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert "SimGrid: You're trying to send data" in said and "no connecting path" in said
    assert f"`mpiscope doctor --mpi smpi {' '.join(where)}`" in said
    # and that doctor names the same reason, not this host's network
    doctor = cli("doctor", "--mpi", "smpi", *where)
    assert doctor.returncode == 1 and "no connecting path" in doctor.stdout and "firewall" not in doctor.stdout


@needs_simgrid
def test_a_platform_simgrid_rejects_is_one_line_and_no_run(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    (tmp_path / "bad.xml").write_text(FOUR.replace('speed="1Gf"', 'speeed="1Gf"'))
    (tmp_path / "hosts").write_text("n0\nn1\n")
    line = one_line_error(cli("run", "--mpi", "smpi", "-n", "2", "-b", "barrier", "--platform",
                              str(tmp_path / "bad.xml"), "--hostfile", str(tmp_path / "hosts"), "--runs-dir", str(runs)))
    assert "SimGrid refuses" in line and "Bad attribute" in line
    line = one_line_error(cli("run", "--mpi", "smpi", "-n", "2", "-b", "barrier",
                              "--launcher-args=--cfg=smpi/no-such-key:1", "--runs-dir", str(runs)))
    assert "smpi/no-such-key" in line
    assert not run_dirs(runs)


@needs_simgrid
def test_more_ranks_than_the_hosts_memory_holds_is_one_line_and_no_run(cli, smpi, tmp_path, monkeypatch):
    import mpiscope.execute.simcheck as simcheck
    monkeypatch.setattr(simcheck, "available_bytes", lambda: 1 << 30)
    runs = tmp_path / "runs"
    line = one_line_error(cli("run", "--mpi", "smpi", "-n", "4096", "-b", "barrier", "--runs-dir", str(runs)))
    assert "-n 4096" in line and "give -n 1024 or fewer" in line
    assert not run_dirs(runs)


def test_the_memory_check_counts_a_rank_at_its_measured_cost():
    check_memory(1024, available=4 << 30)
    with pytest.raises(UsageError, match="give -n 5 or fewer"):
        check_memory(6, available=5 * RANK_BYTES)


def test_simgrids_reason_is_the_line_it_gives():
    stderr = ("[0.000000] ./src/xbt/exception.cpp:95: [xbt_exception/ERROR] Parse error at p.xml:6: Bad attribute\n"
              "[0.000000] ./src/xbt/exception.cpp:96: [xbt_exception/ERROR] Exiting now.\nAborted\n")
    assert simgrid_error(stderr) == "Parse error at p.xml:6: Bad attribute"


# -- limits in host seconds ----------------------------------------------------------------------

def _planned(n: int, max_time_s: float = 0.01) -> tuple[Planned, list[PlanPoint]]:
    entries = [PlanPoint(id=k, benchmark="allreduce", size=8 << k, ranks=4096) for k in range(n)]
    return Planned(points=tuple(entries), max_time_s=max_time_s), entries


def test_a_simulated_launch_limit_is_host_time_and_grows_with_the_ranks():
    planned, entries = _planned(3)
    small, large = Simulated(64), Simulated(4096)
    # 4096 ranks: SimGrid's start-up alone outlasted the 80 s a measured launch of 10 points allows
    # (222 s here, niced on a loaded host)
    assert large.startup_s > small.startup_s >= SIM_STARTUP_S and large.startup_s > 3 * 222
    # each point at the engine's watchdog in host seconds, not at its simulated --max-time
    assert large.limit_s(planned, entries, None) >= large.startup_s + 3 * 3 * 600
    # a point an earlier launch took an hour of host time to simulate gets three times that
    slow = Simulated(4096, {entries[0].key: 3600.0})
    assert slow.limit_s(planned, entries[:1], None) == pytest.approx(slow.startup_s + 3 * 3600)
    # and the engine's watchdog for it follows (the floor of 600 s would call it hung)
    assert slow.watchdog_s(entries) == pytest.approx(3 * 3600) and Simulated(4096).watchdog_s(entries) is None
    # --timeout (host seconds) sets the point's limit, and lengthens the start-up allowed past it
    assert Simulated(4096).limit_s(planned, entries[:1], 5000.0) == pytest.approx(5000 + 3 * 5000)


def test_a_simulated_start_up_past_its_limit_names_timeout(tmp_path):
    run = Run.create(tmp_path)
    planned, entries = _planned(1)
    part = Part(Plan(("allreduce",), 4096))
    out = execute(run, part, entries, Launch(argv=["sleep", "30"], env={}, oversubscribed=False), 0.5, planned,
                  Console(file=io.StringIO()), 2, progress=False, sim=Simulated(4096))
    assert out.status == "failed" and "--timeout" in out.error and "check the hosts" not in out.error


def test_smpis_breakpoints_follow_the_given_factors():
    assert 65472 in breakpoints([]) and 257 in breakpoints([])
    exact = breakpoints(["--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1"])
    assert exact == {65536: "smpi/send-is-detached-thresh"}


# -- the grid study on a twin ---------------------------------------------------------------------

@needs_simgrid
def test_the_grid_study_ranks_task_orders_on_a_platform_beside_a_measured_ranking(cli, smpi, tmp_path):
    from mpiscope.analysis.grid import ranking
    runs = tmp_path / "runs"
    grid = ("study", "grid", "--mpi", "smpi", "--platform", "cluster", "--sizes", "64K", "--no-progress",
            "--runs-dir", str(runs))
    small = cli(*grid, "-n", "4", "--ranks-per-node", "2")
    assert small.returncode == 0, small.stderr
    (small_run,) = run_dirs(runs)
    big = cli(*grid, "-n", "8", "--ranks-per-node", "2", "--beside", small_run.name)
    assert big.returncode == 0, big.stderr
    big_run = next(p for p in run_dirs(runs) if p != small_run)
    ctx = Run(big_run).records().context
    assert ctx.world_size == 8 and len(ctx.hosts) == 4  # two simulated ranks a node, as asked
    table = ranking(results_of([Run(big_run)]).frame).set_index(["shape", "order"])
    # a row of 8 under block order spans 4 nodes whose pairs share the loopback; cyclic puts
    # neighbours on different nodes: the task order matters on the twin as on a machine
    assert table.loc[("1x8", "block"), "row_hosts"] == 4
    assert table.loc[("1x8", "block"), "step_us"] < table.loc[("1x8", "cyclic"), "step_us"]
    beside = " ".join(big.stdout[big.stdout.index("this run beside"):].split())  # as rich wraps it
    assert f"run {small_run.name}, 4 ranks on 2 host(s)" in beside
    assert "1x8" in beside and "1x4" in beside and "measured order" in beside


@needs_simgrid
def test_the_grid_study_refuses_a_beside_run_without_grid_points(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    assert cli("run", "--mpi", "smpi", "-n", "2", "-b", "pingpong", "--sizes", "8", "--platform", "cluster",
               "--no-report", "--runs-dir", str(runs)).returncode == 0
    (other,) = run_dirs(runs)
    r = cli("study", "grid", "--mpi", "smpi", "--platform", "cluster", "-n", "4", "--beside", other.name,
            "--runs-dir", str(runs))
    assert "no grid study points" in one_line_error(r) and run_dirs(runs) == [other]


# -- SimGrid's mpich alltoall at an odd rank count -----------------------------------------------

def test_the_alltoall_simgrid_aborts_on_is_known_by_its_rank_count_size_and_options():
    from mpiscope.execute.simcheck import alltoall_aborts
    assert alltoall_aborts(3, 32768, ()) and alltoall_aborts(5, 1 << 20, ("--cfg=smpi/coll-selector:mpich",))
    assert not alltoall_aborts(3, 32767, ())  # its scatter_dest below 32 KiB blocks
    assert not alltoall_aborts(6, 32768, ()) and not alltoall_aborts(4, 32768, ())  # even: its ring
    assert not alltoall_aborts(3, 32768, ("--cfg=smpi/alltoall:ring",))
    assert not alltoall_aborts(3, 32768, ("smpi/coll-selector:ompi",))


@needs_simgrid
def test_an_alltoall_simgrid_would_abort_on_is_one_line_that_names_the_way_round(cli, smpi, tmp_path):
    runs = tmp_path / "runs"
    args = ("run", "--mpi", "smpi", "-n", "3", "-b", "alltoall", "--sizes", "16K,32K", "--platform", "cluster",
            "--no-report", "--runs-dir", str(runs))
    said = one_line_error(cli(*args))
    assert "--cfg=smpi/alltoall:ring" in said and "even -n" in said and not runs.exists()
    done = cli(*args, "--launcher-args=--cfg=smpi/alltoall:ring")
    assert done.returncode == 0, done.stderr
    (path,) = run_dirs(runs)
    assert sorted(results_of([Run(path)]).frame["size"]) == [16384, 32768]
