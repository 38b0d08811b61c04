"""Collectives on the real engine under real mpiexec with 2, 3 and 4 ranks:
--check on every rank (datatypes, ops, in-place, rotating roots, uneven
v-variants), window clock synchronisation and the error bound that makes it
give way, IMB / OSU figures, bus bandwidth,
nonblocking overlap, --npmin scaling and the memory limit."""
from __future__ import annotations

import json
import statistics

import pytest

from conftest import run_engine

BLOCKING = ["barrier", "bcast", "reduce", "allreduce", "allgather", "allgatherv", "alltoall", "alltoallv",
            "gather", "gatherv", "scatter", "scatterv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan"]
NONBLOCKING = ["ibarrier", "ibcast", "ireduce", "iallreduce", "iallgather", "ialltoall", "ireduce_scatter"]
ALL = BLOCKING + NONBLOCKING
NO_DATA = {"barrier", "ibarrier"}
REDUCTIONS = {"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
              "ireduce", "iallreduce", "ireduce_scatter"}
# few samples: these tests are about results and records, not figures
QUICK = ["--reps", "5", "--warmup", "2", "--warmup-bytes", "0"]


def assert_checked(run, ranks: int, sizes: list[int]) -> None:
    assert run.returncode == 0, run.stderr
    for bench in ALL:
        points = run.points(bench)
        want = [0] if bench in NO_DATA else sizes
        assert [p["size"] for p in points] == want, bench
        for p in points:
            assert p["ranks"] == ranks
            assert p["check"]["errors"] == 0, p
            if bench not in NO_DATA and p["size"] > 0:
                assert p["check"]["verified_bytes"] > 0, p


def test_every_collective_checks_on_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "0,24,4100", "--check", *QUICK, *ALL)
    assert_checked(run, 2, [0, 24, 4100])
    assert run.records[-1]["points"] == 2 + 21 * 3


@pytest.mark.parametrize("ranks", [3, 4])
def test_every_collective_checks_on_more_ranks_openmpi(engine_openmpi, openmpi_launch, ranks):
    # 4100 bytes = 1025 floats: reduce_scatter shares are uneven on 3 and 4 ranks;
    # 16 bytes still gives reduce_scatter_block one float per rank
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "16,4100", "--check", "--rotate-root",
                     *QUICK, *ALL)
    assert_checked(run, ranks, [16, 4100])


@pytest.mark.parametrize("datatype,op", [("byte", "max"), ("int", "sum"), ("double", "min"), ("float", "sum")])
def test_datatypes_ops_in_place_and_rotating_root(engine_openmpi, openmpi_launch, datatype, op):
    run = run_engine(openmpi_launch(3), engine_openmpi, "--sizes", "0,24,1000", "--datatype", datatype,
                     "--op", op, "--in-place", "--rotate-root", "--check", *QUICK, *ALL)
    assert_checked(run, 3, [0, 24, 1000])
    for p in run.points():
        assert p["datatype"] == datatype and p["in_place"] and p["rotate_root"]
        assert p.get("op") == (op if p["benchmark"] in REDUCTIONS else None)
    width = {"byte": 1, "int": 4, "float": 4, "double": 8}[datatype]
    assert run.points("allreduce")[-1]["count"] == 1000 // width


def test_check_catches_a_wrong_reduction(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", "--reps", "2",
                     "allreduce", "alltoallv", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    # one flipped byte per rank and verification iteration, even in a float's last bit
    assert [p["check"]["errors"] for p in run.points()] == [6, 6]


def test_window_sync_and_imb_osu_figures(engine_mpich, mpich_launch):
    # named by --sync, window sync is kept however large the clock-offset error bound
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,64K", "--max-time", "0.3", "--raw",
                     "--sync", "window", "allreduce", "bcast")
    assert run.returncode == 0, run.stderr
    offsets = []
    for p in run.points():
        assert p["sync"] == "window" and p["sample_from"] == "max_over_ranks" and "sync_reason" not in p
        assert p["invalid"] >= 0 and p["window_us"] >= 10
        assert len(p["samples_us"]) == p["time_us"]["n"]
        cs = p["clock_sync"]
        # one host, one clock: the true offset is 0, so an estimate is as far off as it is large
        assert 0 <= cs["max_offset_us"] and 0 < cs["error_us"] and cs["pings"] in (16, 80, 336)
        offsets.append(cs["max_offset_us"])
        assert p["t_min_us"] <= p["t_avg_us"] <= p["t_max_us"]
        assert p["osu_avg_us"] == p["t_avg_us"]
    assert statistics.median(offsets) < 5.0, offsets


def test_the_clock_offset_error_bound_and_the_method_it_chose(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,1M", "--max-time", "0.3", "allreduce", "pingpong")
    assert run.returncode == 0, run.stderr
    for p in run.points("allreduce"):
        cs = p["clock_sync"]
        assert cs["error_us"] > 0 and cs["pings"] in (16, 80, 336)
        assert cs["error_share"] == pytest.approx(cs["error_us"] / p["time_us"]["median"], rel=1e-6)
        if p["sync"] == "window":  # the bound was small beside the event, perhaps after more ping-pongs
            assert "sync_reason" not in p and p["window_us"] >= 10
        else:  # it stayed large: timed by barrier sync, which does not depend on the offsets
            assert p["sync"] == "barrier" and "window_us" not in p
            assert "clock-offset error bound" in p["sync_reason"] and "barrier sync" in p["sync_reason"]
            if "no valid sample" not in p["sync_reason"]:
                assert cs["pings"] == 336  # every tightening round was tried first
    # a 1 MiB allreduce takes far longer than a clock's error bound
    big = run.points("allreduce")[1]
    assert big["sync"] == "window" and big["clock_sync"]["error_share"] < 0.25
    for p in run.points("pingpong"):  # self-synchronising: no clocks to claim anything about
        assert p["sync"] == "none" and "clock_sync" not in p and "sync_reason" not in p


def test_clock_offsets_on_four_ranks(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "8,1K,8K", "--max-time", "0.1", "allreduce")
    assert run.returncode == 0, run.stderr
    offsets = [p["clock_sync"]["max_offset_us"] for p in run.points()]
    assert len(offsets) == 3 and statistics.median(offsets) < 5.0, offsets


def test_barrier_and_none_sync(engine_mpich, mpich_launch):
    for method in ("barrier", "none"):
        run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1K", "--sync", method, *QUICK,
                         "allreduce", "pingpong")
        assert run.returncode == 0, run.stderr
        assert [p["sync"] for p in run.points()] == [method, method]
        assert "clock_sync" not in run.points("allreduce")[0]
        assert run.points("allreduce")[0]["invalid"] == 0
    listing = run_engine([], engine_mpich, "--list", "--json")
    # the defaults: window for collectives, as before for point-to-point
    by_name = {row["name"]: row for row in json.loads(listing.stdout)}
    assert by_name["allreduce"]["sync"] == "window" and by_name["pingpong"]["sync"] == "none"
    assert by_name["msgrate"]["sync"] == "barrier" and by_name["iallreduce"]["overlap"]


FACTORS = {  # nccl-tests: bus bandwidth = algorithm bandwidth x factor(n)
    "bcast": lambda n: 1.0, "reduce": lambda n: 1.0,
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n, "allgatherv": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n, "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n, "gatherv": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n, "scatterv": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n, "reduce_scatter_block": lambda n: (n - 1) / n,
}
PER_RANK_BLOCK = {"allgather", "allgatherv", "alltoall", "alltoallv", "gather", "gatherv", "scatter", "scatterv"}


@pytest.mark.parametrize("ranks", [2, 3])
def test_bus_bandwidth_factors(engine_openmpi, openmpi_launch, ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "4K", *QUICK, *BLOCKING)
    assert run.returncode == 0, run.stderr
    for p in run.points():
        name = p["benchmark"]
        if name in NO_DATA:
            assert "bw_MBps" not in p and "busbw_MBps" not in p
            continue
        assert p["bytes_per_op"] == 4096 * (ranks if name in PER_RANK_BLOCK else 1), name
        if p["time_us"]["n"] == 0:
            continue  # every sample invalid on an overloaded machine: no figures to compare
        if name not in FACTORS:
            assert "busbw_MBps" not in p, name  # scan, exscan: no accepted factor
            continue
        assert p["busbw_factor"] == pytest.approx(FACTORS[name](ranks)), name
        assert p["busbw_MBps"]["median"] == pytest.approx(p["bw_MBps"]["median"] * p["busbw_factor"], rel=1e-6)
        assert p["bw_MBps"]["median"] == pytest.approx(p["bytes_per_op"] / p["time_us"]["median"], rel=1e-6)


@pytest.mark.parametrize("tests", ["0", "8"])
def test_nonblocking_overlap(engine_mpich, mpich_launch, tests):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64K", "--max-time", "0.2", "--nbc-test", tests,
                     *NONBLOCKING)
    assert run.returncode == 0, run.stderr
    assert [p["benchmark"] for p in run.points()] == NONBLOCKING
    for p in run.points():
        o = p["overlap"]
        assert 0.0 <= o["overlap_pct"] <= 100.0, p
        assert o["mpi_test_calls"] == int(tests)
        assert o["pure_us"] == p["time_us"]["median"]
        if p["time_us"]["n"] and o["cpu_n"] and o["ovrl_n"]:
            assert o["cpu_us"] > 0 and o["ovrl_us"] > 0 and o["compute_iters"] > 0
            shorter = min(o["pure_us"], o["cpu_us"])
            expect = 100 * max(0.0, min(1.0, (o["pure_us"] + o["cpu_us"] - o["ovrl_us"]) / shorter))
            # the record's medians have 9 digits; the difference above loses some of them
            assert o["overlap_pct"] == pytest.approx(expect, abs=1e-4)


@pytest.mark.parametrize("ranks,groups", [(3, [1, 2, 3]), (4, [1, 2, 4])])
def test_npmin_scaling(engine_openmpi, openmpi_launch, ranks, groups):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--npmin", "1", "--sizes", "8", "--check", *QUICK,
                     "allreduce", "alltoall", "pingpong")
    assert run.returncode == 0, run.stderr
    for bench in ("allreduce", "alltoall"):
        points = run.points(bench)
        assert [p["ranks"] for p in points] == groups
        for p in points:
            assert p["participants"] == list(range(p["ranks"]))
            assert p["check"]["errors"] == 0
    # point-to-point needs two ranks: skipped on one, measured on the rest
    assert [p["ranks"] for p in run.points("pingpong")] == groups[1:]
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [(s["benchmark"], s["ranks"]) for s in skips] == [("pingpong", 1)]


def test_memory_limit_counts_collective_buffers(engine_openmpi, openmpi_launch):
    # alltoall at 256 KiB on 4 ranks needs 1 MiB to send and 1 MiB to receive
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "256K", "--max-memory", "1M", *QUICK,
                     "allreduce", "alltoall", "allgather")
    assert run.returncode == 0, run.stderr
    assert [p["benchmark"] for p in run.points()] == ["allreduce"]
    skips = {r["benchmark"]: r for r in run.records if r["type"] == "skip"}
    assert set(skips) == {"alltoall", "allgather"}
    assert "--max-memory" in skips["alltoall"]["reason"]


def test_sizes_that_are_not_whole_elements_are_skipped(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "6,8", "--datatype", "double", *QUICK, "allreduce")
    assert run.returncode == 0, run.stderr
    assert [p["size"] for p in run.points()] == [8]
    skip = next(r for r in run.records if r["type"] == "skip")
    assert skip["size"] == 6 and "8-byte double" in skip["reason"]


@pytest.mark.parametrize("args,message", [
    (["--datatype", "long"], "--datatype expects"),
    (["--op", "prod"], "--op expects"),
    (["--sync", "round"], "--sync expects"),
    (["--npmin", "0"], "--npmin expects"),
])
def test_option_errors(engine_mpich, mpich_launch, args, message):
    run = run_engine(mpich_launch(1), engine_mpich, *args, "allreduce")
    assert run.returncode == 2 and message in run.stderr
