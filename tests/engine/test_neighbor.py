"""Neighbourhood collectives on the real engine: the five calls blocking and nonblocking on
Cartesian (periodic and open), circulant and random graph topologies, at 1, 2 (MPICH) and 4
(Open MPI) ranks with --check; the topology in the record; the nonblocking rows' overlap
phases; --cart-dims that do not fit as skips; bad topology options as one-line errors."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_engine

CALLS = ["neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
         "neighbor_alltoallw"]
ROWS = CALLS + [f"i{c}" for c in CALLS]
# barrier sync: window sync's clock synchronisation costs seconds per point on a loaded machine,
# and these tests check records and data, not how samples start
QUICK = ["--reps", "3", "--warmup", "2", "--warmup-bytes", "8", "--timeout", "60", "--sync", "barrier"]


def check_points(run, ranks: int, in_edges: int, out_degree: int, sizes: list[int]) -> None:
    """Every row checked without error; the even rows verified every byte of every real
    in-edge (in_edges over all ranks), the uneven forms what their blocking twins did."""
    assert run.returncode == 0, run.stderr
    for row in ROWS:
        points = run.points(row)
        assert [p["size"] for p in points] == sizes, row
        for p in points:
            assert p["family"] == "neighbor" and p["ranks"] == ranks
            assert p["check"]["errors"] == 0, (row, p["size"])
            assert p["bytes_per_op"] == out_degree * p["size"]
            assert len(p["destinations"]) == out_degree
    for call in CALLS:
        for p, q in zip(run.points(call), run.points(f"i{call}")):
            assert p["check"]["verified_bytes"] == q["check"]["verified_bytes"], call
            assert "overlap" not in p and q["overlap"]["pure_us"] == q["time_us"]["median"]
            # oversubscribed, window sync may drop a phase's late samples: their count, not their number
            assert {"cpu_us", "ovrl_us", "cpu_n", "ovrl_n", "compute_iters"} <= set(q["overlap"])
            assert 0 <= q["overlap"]["overlap_pct"] <= 100
    for row in ("neighbor_allgather", "neighbor_alltoall"):
        assert [p["check"]["verified_bytes"] for p in run.points(row)] == [3 * in_edges * s for s in sizes]
    # the v and w forms share one uneven layout under --check
    for p, q in zip(run.points("neighbor_alltoallv"), run.points("neighbor_alltoallw")):
        assert p["check"]["verified_bytes"] == q["check"]["verified_bytes"] > 0


@pytest.mark.parametrize("ranks", [1, 2])
def test_periodic_cart_mpich(engine_mpich, mpich_launch, ranks):
    run = run_engine(mpich_launch(ranks), engine_mpich, "--sizes", "7,1K", "--check", "--nbc-test", "2", *QUICK,
                     *ROWS)
    # 2-D periodic: four neighbours each, itself or the other rank twice over
    check_points(run, ranks, in_edges=4 * ranks, out_degree=4, sizes=[7, 1024])
    p = run.points("ineighbor_alltoall")[0]
    assert p["topology"] == "cart" and p["dims"] == [ranks, 1] and p["periodic"]
    assert p["sources"] == p["destinations"] == ([0, 0, 0, 0] if ranks == 1 else [1, 1, 0, 0])
    assert p["overlap"]["mpi_test_calls"] == 2


@pytest.mark.parametrize("args, in_edges, out_degree, rank0_sources, rank0_destinations", [
    (["--topology", "cart"], 16, 4, [2, 2, 1, 1], [2, 2, 1, 1]),
    (["--topology", "cart", "--cart-open"], 8, 4, [None, 2, None, 1], [None, 2, None, 1]),
    (["--topology", "cart", "--cart-dims", "0x0x0"], 24, 6, [2, 2, 1, 1, 0, 0], [2, 2, 1, 1, 0, 0]),
    (["--topology", "circulant", "--graph-degree", "3"], 12, 3, [1, 2, 3], [1, 3, 2]),
    (["--topology", "random", "--graph-degree", "2"], 8, 2, None, None),
])
def test_topologies_on_four_ranks_openmpi(engine_openmpi, openmpi_launch, args, in_edges, out_degree,
                                          rank0_sources, rank0_destinations):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "5,300", "--check", *args, *QUICK, *ROWS)
    check_points(run, 4, in_edges, out_degree, [5, 300])
    p = run.points("neighbor_alltoallv")[0]
    assert p["topology"] == args[1]
    if rank0_sources is not None:
        assert p["sources"] == rank0_sources and p["destinations"] == rank0_destinations
    if args[1] == "cart":
        assert p["dims"] == ([2, 2, 1] if "0x0x0" in args else [2, 2]) and p["periodic"] == ("--cart-open" not in args)
    else:
        assert p["graph_degree"] == out_degree
    assert run.context["options"]["topology"] == args[1]


def test_check_detects_corruption(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", *QUICK, "neighbor_alltoall",
                     "ineighbor_allgatherv", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    assert [p["check"]["errors"] for p in run.points()] == [6, 6]


def test_dims_that_do_not_fit_are_skips(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--cart-dims", "3x1", *QUICK,
                     "neighbor_allgather", "neighbor_alltoall")
    assert run.returncode == 0, run.stderr
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [s["benchmark"] for s in skips] == ["neighbor_allgather", "neighbor_alltoall"]
    assert all("--cart-dims 3x1 does not fit 2 ranks" in s["reason"] for s in skips)


@pytest.mark.parametrize("args, fragment", [
    (["--cart-dims", "2y2"], "--cart-dims expects"),
    (["--cart-dims", ""], "--cart-dims expects"),
    (["--topology", "torus"], "--topology"),
    (["--graph-degree", "0"], "--graph-degree"),
])
def test_bad_topology_options_are_one_line_errors(engine_mpich, args, fragment):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "4", *args, "neighbor"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and fragment in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_family_name_plans_every_row(engine_mpich):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "4", "--sizes", "8", "neighbor"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["benchmarks"] == ROWS
    assert [p["phases"] if "phases" in p else 1 for p in plan["points"]] == [1] * 5 + [3] * 5
