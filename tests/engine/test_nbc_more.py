"""The rest of the nonblocking collectives (igather(v), iscatter(v), iallgatherv, ialltoallv/w,
ireduce_scatter_block, iscan, iexscan) and blocking alltoallw on the real engine: the blocking
twin's buffers and --check, the three phases (pure, compute, overlapped) with the IMB-NBC
pure time and OSU's -t (--nbc-test) MPI_Test calls in the record, at 1, 2 (MPICH) and 4
(Open MPI) ranks."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_engine

TWINS = {"igather": "gather", "igatherv": "gatherv", "iscatter": "scatter", "iscatterv": "scatterv",
         "iallgatherv": "allgatherv", "ialltoallv": "alltoallv", "ialltoallw": "alltoallw",
         "ireduce_scatter_block": "reduce_scatter_block", "iscan": "scan", "iexscan": "exscan"}
# barrier sync: window sync's clock synchronisation costs seconds per point on a loaded machine,
# and these tests check records and data, not how samples start
QUICK = ["--reps", "3", "--warmup", "2", "--warmup-bytes", "8", "--timeout", "60", "--sync", "barrier"]


def check_run(run, ranks: int, tests: int) -> None:
    assert run.returncode == 0, run.stderr
    for nb, twin in TWINS.items():
        mine, theirs = run.points(nb), run.points(twin)
        assert mine and [p["size"] for p in mine] == [q["size"] for q in theirs], nb
        for p, q in zip(mine, theirs):
            assert p["family"] == "nbc" and p["ranks"] == ranks
            assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] == q["check"]["verified_bytes"], nb
            for field in ("bytes_per_op", "datatype", "count", "busbw_factor"):
                assert p.get(field) == q.get(field), (nb, field)
            o = p["overlap"]
            # IMB-NBC's *_pure figure is phase 0, the point's own time
            assert o["pure_us"] == p["time_us"]["median"] and o["mpi_test_calls"] == tests
            assert o["compute_iters"] >= 0 and 0 <= o["overlap_pct"] <= 100
    # alltoallw has alltoallv's layout with byte displacements: the same bytes verified
    for p, q in zip(run.points("alltoallw"), run.points("alltoallv")):
        assert p["family"] == "coll" and p["check"]["verified_bytes"] == q["check"]["verified_bytes"]
        assert p["check"]["errors"] == 0


@pytest.mark.parametrize("ranks", [1, 2])
def test_checked_like_their_blocking_twins_mpich(engine_mpich, mpich_launch, ranks):
    run = run_engine(mpich_launch(ranks), engine_mpich, "--sizes", "8,1K", "--check", "--nbc-test", "3", *QUICK,
                     *TWINS, *TWINS.values())
    check_run(run, ranks, 3)
    if ranks == 2:  # what a 2-rank gather verifies: both blocks at the root, three times
        assert [p["check"]["verified_bytes"] for p in run.points("igather")] == [48, 3 * 2 * 1024]


def test_four_ranks_in_place_rotating_doubles_openmpi(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "16,2K", "--check", "--in-place",
                     "--rotate-root", "--datatype", "double", "--nbc-test", "5", *QUICK, *TWINS, *TWINS.values())
    check_run(run, 4, 5)
    assert all(p["in_place"] and p["datatype"] == "double" for p in run.points("ialltoallw"))


def test_existing_nbc_rows_report_the_pure_time(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", *QUICK, "ibcast", "iallreduce", "ibarrier")
    assert run.returncode == 0, run.stderr
    for p in run.points():
        assert p["overlap"]["pure_us"] == p["time_us"]["median"] and p["overlap"]["mpi_test_calls"] == 0


def test_check_detects_corruption(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", *QUICK, "ialltoallw", "alltoallw",
                     "iscatterv", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    # a flipped byte per rank and iteration wherever a block lands at the buffer's start
    errors = [p["check"]["errors"] for p in run.points()]
    assert errors[0] == errors[1] == 6 and errors[2] > 0


def test_nbc_family_plans_old_and_new_rows(engine_mpich):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "2", "--sizes", "8", "nbc", "alltoallw"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout)["benchmarks"]
    assert names[:7] == ["ibarrier", "ibcast", "ireduce", "iallreduce", "iallgather", "ialltoall", "ireduce_scatter"]
    assert names[7:] == [*TWINS, "alltoallw"]
