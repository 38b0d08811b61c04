"""Persistent collectives (MPI 4.0: MPI_Bcast_init ... MPI_Start) on the real engine: every
blocking collective as a persistent row, family "persistent" beside the persistent
point-to-point rows; the same buffers, layouts and --check as the blocking twin; the call
and the interface that made the requests in the record; and, built without them (what an
MPI that lacks them gets), listed unavailable and recorded as skips with the reason."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ENGINE_SRC, run_engine

TWINS = ["barrier", "bcast", "reduce", "allreduce", "allgather", "allgatherv", "alltoall", "alltoallv",
         "alltoallw", "gather", "gatherv", "scatter", "scatterv", "reduce_scatter", "reduce_scatter_block",
         "scan", "exscan"]
PCOLL = [f"{t}_persistent" for t in TWINS]
# barrier sync: window sync's clock synchronisation costs seconds per point on a loaded machine,
# and these tests check records and data, not how samples start
QUICK = ["--reps", "4", "--warmup", "2", "--warmup-bytes", "8", "--timeout", "60", "--sync", "barrier"]


def listing(engine: Path) -> dict[str, dict]:
    done = subprocess.run([str(engine), "--list", "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {r["name"]: r for r in json.loads(done.stdout)}


def init_call(twin: str) -> str:
    return f"MPI_{twin[0].upper()}{twin[1:]}_init"


def check_against_twins(run, ranks: int) -> None:
    """Every persistent point verified the bytes its blocking twin verified, without error."""
    assert run.returncode == 0, run.stderr
    for twin in TWINS:
        mine, theirs = run.points(f"{twin}_persistent"), run.points(twin)
        assert mine and [p["size"] for p in mine] == [p["size"] for p in theirs], twin
        for p, q in zip(mine, theirs):
            assert p["family"] == "persistent" and p["ranks"] == ranks
            assert p["check"]["errors"] == 0, (twin, p["size"])
            assert p["check"]["verified_bytes"] == q["check"]["verified_bytes"], (twin, p["size"])
            for field in ("bytes_per_op", "ops_per_event", "sample_from", "datatype", "count"):
                assert p.get(field) == q.get(field), (twin, field)
            assert p["persistent_call"] == init_call(twin)
            assert p["time_us"]["n"] + p["invalid"] == 4 and p["t_min_us"] <= p["t_max_us"]
            # IMB-MPI4's *_persist phases; the pure one (*_persist_pure, OSU's figure) is the point's time
            assert p["overlap"]["pure_us"] == p["time_us"]["median"] and "overlap" not in q
            assert {"cpu_us", "ovrl_us", "overlap_pct", "compute_iters"} <= set(p["overlap"])


def test_listed_with_the_persistent_point_to_point_rows(engine_mpich, engine_openmpi):
    for engine in (engine_mpich, engine_openmpi):
        rows = listing(engine)
        family = [name for name, r in rows.items() if r["family"] == "persistent"]
        assert family == ["pingpong_persistent", "bw_persistent", *PCOLL]
        # both libraries have them: MPICH as MPI 4, Open MPI 5 while it reports MPI 3.1
        assert all(rows[n]["available"] and rows[n]["unavailable"] is None for n in family)
        assert all(rows[n]["collective"] and rows[n]["min_ranks"] == 1 and rows[n]["overlap"] for n in PCOLL)


@pytest.mark.parametrize("ranks", [1, 2])
def test_checked_like_their_blocking_twins_mpich(engine_mpich, mpich_launch, ranks):
    run = run_engine(mpich_launch(ranks), engine_mpich, "--sizes", "8,1K", "--check", *QUICK, *PCOLL, *TWINS)
    check_against_twins(run, ranks)
    # built against the MPI it runs with: the compile-time version is the one it reports
    assert {p["persistent_from"] for p in run.points() if p["family"] == "persistent"} == {
        f"MPI {run.context['mpi_version']}"}
    bcast = run.points("bcast_persistent")[-1]
    assert bcast["check"]["verified_bytes"] == 3 * 1024 * (ranks - 1)


def test_four_ranks_rotating_roots_in_place_off_cache_openmpi(engine_openmpi, openmpi_launch):
    # a request per root, and new requests whenever --off-cache moves the buffers
    rooted = ["bcast", "reduce", "gather", "gatherv", "scatter", "scatterv", "allreduce", "alltoallw"]
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "8,4K", "--check", "--rotate-root",
                     "--in-place", "--datatype", "double", "--off-cache=64K", "--nbc-test", "2", *QUICK,
                     *[f"{t}_persistent" for t in rooted], *rooted)
    assert run.returncode == 0, run.stderr
    for twin in rooted:
        for p, q in zip(run.points(f"{twin}_persistent"), run.points(twin)):
            assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] == q["check"]["verified_bytes"] > 0
            assert p["rotate_root"] and p["in_place"] and p["datatype"] == "double"
            assert p["overlap"]["mpi_test_calls"] == 2
            assert p["persistent_from"].startswith("Open MPI 5")


def test_four_ranks_every_row_openmpi(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "16", "--check", *QUICK,
                     *[p for p in PCOLL if p != "barrier_persistent"], *[t for t in TWINS if t != "barrier"])
    assert run.returncode == 0, run.stderr
    for twin in TWINS[1:]:
        (p,), (q,) = run.points(f"{twin}_persistent"), run.points(twin)
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] == q["check"]["verified_bytes"] > 0


def test_check_detects_corruption(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", *QUICK, "allreduce_persistent",
                     "alltoallw_persistent", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    # a flipped byte per rank and iteration; a float of sums differs in its element
    assert [p["check"]["errors"] for p in run.points()] == [6, 6]


@pytest.fixture(scope="module")
def engine_without(mpich_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The engine as an MPI without persistent collectives builds it."""
    out = tmp_path_factory.mktemp("engine-no-pcoll")
    done = subprocess.run(["make", "-s", "-C", str(ENGINE_SRC), f"MPICC={mpich_bin / 'mpicc'}", f"BUILD={out}",
                           "WERROR=1", "CFLAGS=-O2 -g -DMPISCOPE_NO_PERSISTENT_COLL"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out / "mpiscope-engine"


def test_unavailable_rows_are_listed_and_recorded_as_skips(engine_without, mpich_launch):
    rows = listing(engine_without)
    for name in PCOLL:
        assert not rows[name]["available"] and "without persistent collectives" in rows[name]["unavailable"]
    assert rows["pingpong_persistent"]["available"] and rows["bcast"]["available"]
    text = subprocess.run([str(engine_without), "--list"], capture_output=True, text=True).stdout
    assert "[unavailable: " in text.splitlines()[[n.split()[0] for n in text.splitlines()].index("bcast_persistent")]
    plan = json.loads(subprocess.run([str(engine_without), "--plan", "--ranks", "2", "--sizes", "8", "persistent"],
                                     capture_output=True, text=True).stdout)
    skipped = {p["benchmark"] for p in plan["points"] if "skip" in p}
    assert skipped == set(PCOLL)
    # the family on the command line: the point-to-point rows measured, the rest skips with the reason
    run = run_engine(mpich_launch(2), engine_without, "--sizes", "8", "--check", *QUICK, "persistent")
    assert run.returncode == 0, run.stderr
    assert [p["benchmark"] for p in run.points()] == ["pingpong_persistent", "bw_persistent"]
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [s["benchmark"] for s in skips] == PCOLL
    assert all("without persistent collectives" in s["reason"] for s in skips)
    assert run.records[-1] == {**run.records[-1], "type": "end", "points": 2}
