"""Which layer serves a collective, read from the library, and the liveness check before the race:
MPICH's allreduce on one node is served by the POSIX shared-memory collective, so its MPIR
algorithm variable changes nothing and is not raced; forcing the POSIX layer to fall back to MPIR
makes the MPIR algorithms live and raced. Open MPI's component choice comes from its own verbose
output."""
from __future__ import annotations

import json
from pathlib import Path

from mpiscope.mpi.layers import MPIR, POSIX, mpich_serving, ompi_serving, poor_algorithm
from mpiscope.store.runs import Run

TUNE = ["allreduce", "-n", "2", "--sizes", "64K", "--algorithms", "allreduce=tree", "--rounds", "2",
        "--verify-launches", "2", "--verify-max-launches", "2", "--max-time", "0.05", "--no-progress"]
POSIX_MPIR = "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir"


def result_of(stdout: str) -> dict:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("tune: /"))
    return json.loads((Path(line.split()[1]) / "tune.json").read_text())


def test_mpich_layers_are_read_from_mpivars(embedded_mpi):
    from mpiscope.mpi.collectives import mpivars
    listed = mpivars(embedded_mpi)
    for coll in ("allreduce", "bcast", "reduce", "barrier"):
        s = mpich_serving(listed, coll)
        assert s.layer == POSIX and s.component == "release_gather" and not s.algorithms_steer, s
        assert "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD=5" in s.why and "MPIR" in s.others
        (knob,) = s.knobs
        assert knob.default == "auto" and {"mpir", "release_gather"} <= set(knob.values)
    assert mpich_serving(listed, "allgather").layer == MPIR  # its POSIX layer's default is mpir
    assert mpich_serving(listed, "gather").layer == MPIR  # no POSIX layer at all
    forced = mpich_serving(listed, "allreduce", env=dict([POSIX_MPIR.split("=")]))
    assert forced.layer == MPIR and forced.algorithms_steer
    across = mpich_serving(listed, "allreduce", nodes=2)
    assert across.layer == "composition" and across.knobs[0].values == ("0", "1", "2", "3", "4")


# as Open MPI 5.0.11 prints it (two ranks' lines interleaved); cid 3 is the engine's own split of
# MPI_COMM_WORLD, cid 4 a communicator coll/han makes for itself
VERBOSE = """\
[vm:1] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
[vm:1] coll:base:comm_select: selecting       basic, priority  10, Enabled
[vm:1] coll:base:comm_select: new communicator: MPI_COMM_SELF (cid 1)
[vm:2] coll:base:comm_select: new communicator: MPI_COMM_WORLD (cid 0)
[vm:1] coll:base:comm_select: selecting        self, priority  75, Enabled
[vm:1] coll:base:comm_select: new communicator: MPI COMM 3 SPLIT FROM 0 (cid 3)
[vm:1] coll:han:comm_query (3/MPI COMM 3 SPLIT FROM 0): comm has only local processes; disqualifying myself
[vm:2] coll:base:comm_select: selecting       basic, priority  10, Enabled
[vm:1] coll:base:comm_select: selecting       adapt, priority   0, Disabled
[vm:1] coll:base:comm_select: selecting       basic, priority  10, Enabled
[vm:1] coll:base:comm_select: selecting       tuned, priority  30, Enabled
[vm:1] coll:base:comm_select: new communicator:  (cid 4)
[vm:1] coll:base:comm_select: component disqualified: han (due to communicator info key)
[vm:1] coll:base:comm_select: selecting          sm, priority  90, Enabled
"""


def test_openmpi_component_comes_from_its_verbose_output():
    one = ompi_serving(VERBOSE, "allreduce")
    assert one.component == "tuned" and one.algorithms_steer and "tuned 30" in one.why and "sm" not in one.why
    two = VERBOSE.replace("coll:han:comm_query (3/MPI COMM 3 SPLIT FROM 0): comm has only local processes; "
                          "disqualifying myself", "coll:base:comm_select: selecting         han, priority  35, Enabled")
    assert ompi_serving(two, "allreduce").component == "han" and not ompi_serving(two, "allreduce").algorithms_steer
    assert ompi_serving(two, "reduce_scatter").component == "tuned"  # han does not implement it
    assert ompi_serving("", "allreduce").component == "unknown"


def test_the_poor_choice_is_one_the_library_lists():
    assert poor_algorithm("openmpi", "allreduce", ["1", "2", "3"]) == "1"
    assert poor_algorithm("mpich", "allreduce", ["ring", "tree"]) == "tree"
    assert poor_algorithm("mpich", "allreduce", ["ring"]) == "ring"  # not listed: the first
    assert poor_algorithm("mpich", "gather", []) is None


def test_mpich_mpir_algorithm_is_not_live_while_posix_serves(cli, tmp_path):
    r = cli("tune", *TUNE, "--runs-dir", str(tmp_path), timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = result_of(r.stdout)
    assert res["layers"]["allreduce"]["layer"] == POSIX
    (alg,) = [row for row in res["liveness"] if row["knob"] == "algorithm"]
    assert alg["variable"] == "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" and alg["poor"].startswith("tree:")
    assert not alg["live"] and alg["verdict"] != "slower" and min(alg["launches"]) >= 2, alg
    assert "allreduce 2" in res["not_live"]
    # its candidates are not raced: no race run, no change, and the file cannot reach the calls
    assert res["decisions"] == [] and "race_run" not in res and not res["changes"]
    assert "no file can change allreduce at 2 ranks" in res["reaches"]
    assert "not live here, not raced" in r.stdout and "release_gather" in r.stdout


def test_posix_falling_back_to_mpir_makes_the_mpir_algorithms_live_and_raced(cli, tmp_path):
    r = cli("tune", *TUNE, "--env", POSIX_MPIR, "--runs-dir", str(tmp_path), timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = result_of(r.stdout)
    assert res["layers"]["allreduce"]["layer"] == MPIR
    (alg,) = [row for row in res["liveness"] if row["knob"] == "algorithm"]
    assert alg["live"] and alg["verdict"] == "slower" and alg["ratio"] > 1.05, alg
    assert res["race_run"] and {d["size"] for d in res["decisions"]} == {65536}
    # the check's launches of the library's default are the race's: it launches the default no more
    # (two rounds, three launches of it already), runs in the same steady state, and counts them
    race = Run(Path(res["race_run"]))
    assert all(p.tag["algorithms"]["allreduce"] != "default" for p in race.records().points)
    assert all(part.env.get("MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD") == "0" for part in race.meta().parts)
    (decision,) = res["decisions"]
    assert decision["launches"]["default"] >= 1  # every one of them the check's
    # what a centre installs: the layer forced for the tune, beside the file's variable
    assert res["env"]["MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM"] == "mpir"
    assert "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE" in res["env"]


def test_live_launches_of_one_is_one_line(cli_offline, tmp_path):
    r = cli_offline("tune", "allreduce", "--live-launches", "1", "--runs-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "mpiscope: error: --live-launches must be 0 (no check) or 2 or more: one launch a side gives no interval"]


def test_liveness_compares_each_side_s_usual_fast_state():
    """Launches 1000 x slower now and then (a loaded machine) are left out where the fast ones are
    the usual state; a fast state of few launches is not compared with the other side's usual one."""
    from mpiscope.analysis.tune import fastest_mode
    from mpiscope.results.launches import LaunchPoint, find_modes

    def point(medians: list[float]) -> LaunchPoint:
        return LaunchPoint("allreduce", 65536, 2, None, 1.0, None, None, tuple(medians), modes=find_modes(medians))
    assert fastest_mode(point([21619, 30.7, 94.6, 30.3, 18518, 22637])) == [30.3, 30.7, 94.6]
    rare = [99054, 7.9, 112355, 62130, 8.6]
    assert fastest_mode(point(rare)) == rare
    assert fastest_mode(point([10.0, 11.0, 12.0])) == [10.0, 11.0, 12.0]


def test_a_rank_count_the_engine_measures_no_size_of_is_a_not_live_row(cli, tmp_path):
    """alltoall of 2000 MB at 2 ranks is beyond an MPI int count: the engine skips every size, so
    the liveness check has nothing to launch; each knob's row says so and tune ends normally."""
    r = cli("tune", "alltoall", "-n", "2", "--sizes", "2000M", "--rounds", "2", "--verify-launches", "2",
            "--verify-max-launches", "2", "--max-time", "0.05", "--no-progress", "--runs-dir", str(tmp_path),
            timeout=600)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = result_of(r.stdout)
    assert res["liveness"] and all(not row["live"] and row["verdict"] == "unmeasured" and row["size"] is None
                                   for row in res["liveness"])
    assert all("no size measured at 2 ranks" in row["evidence"] for row in res["liveness"])
    assert res["decisions"] == [] and not res["changes"]
