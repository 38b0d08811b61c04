"""Every point-to-point benchmark on the real engine under real mpiexec:
records, figures that follow from the definitions, and --check."""
from __future__ import annotations

import pytest

from conftest import run_engine

P2P = ["pingpong", "pingping", "bw", "bibw", "msgrate", "ring", "sendrecv", "exchange"]
QUICK = ["--max-time", "0.05", "--warmup-bytes", "64K"]


def test_every_benchmark_on_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "0,1,1000,64K", "--check", *QUICK, *P2P)
    assert run.returncode == 0, run.stderr
    assert [r["type"] for r in run.records][0] == "context"
    end = run.records[-1]  # and, since issue 28, every rank's disturbance counters over the launch
    assert {k: v for k, v in end.items() if k != "disturbance"} == {"type": "end", "points": 32,
                                                                    "elapsed_s": end["elapsed_s"]}
    assert len(end["disturbance"]["nivcsw"]) == 2
    for bench in P2P:
        points = run.points(bench)
        assert [p["size"] for p in points] == [0, 1, 1000, 65536]
        for p in points:
            assert p["check"]["errors"] == 0
            assert p["check"]["verified_bytes"] > 0 or p["size"] == 0
            assert p["ranks"] == 2


@pytest.mark.parametrize("ranks", [3, 4])
def test_every_benchmark_on_more_ranks_openmpi(engine_openmpi, openmpi_launch, ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "8,4097", "--check", *QUICK, *P2P)
    assert run.returncode == 0, run.stderr
    assert run.context["world_size"] == ranks
    for p in run.points():
        assert p["check"]["errors"] == 0, p
        assert p["ranks"] == ranks
    ring = run.points("ring")[0]
    assert [pair["ranks"] for pair in ring["pairs"]] == [[r, (r + 1) % ranks] for r in range(ranks)]
    assert ring["ops_per_event"] == ranks
    assert ring["participants"] == list(range(ranks))
    msgrate = run.points("msgrate")[0]
    assert [pair["ranks"] for pair in msgrate["pairs"]] == [[i, i + ranks // 2] for i in range(ranks // 2)]
    assert len(msgrate["participants"]) == 2 * (ranks // 2)
    assert run.points("pingpong")[0]["participants"] == [0, 1]


def test_figures_follow_from_definitions(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1K", "--window", "16", *QUICK,
                     "pingpong", "bw", "bibw", "sendrecv", "exchange")
    assert run.returncode == 0, run.stderr
    expect_bytes = {"pingpong": 1024, "bw": 1024, "bibw": 2048, "sendrecv": 2048, "exchange": 4096}
    expect_ops = {"pingpong": 2, "bw": 16, "bibw": 16, "sendrecv": 1, "exchange": 1}
    for p in run.points():
        t = p["time_us"]
        assert p["bytes_per_op"] == expect_bytes[p["benchmark"]]
        assert p["ops_per_event"] == expect_ops[p["benchmark"]]
        assert p["bw_MBps"]["median"] == pytest.approx(p["bytes_per_op"] / t["median"], rel=1e-6)
        assert p["bw_MBps"]["max"] == pytest.approx(p["bytes_per_op"] / t["min"], rel=1e-6)
    pingpong = run.points("pingpong")[0]
    assert pingpong["sample_from"] == "rank0"
    assert pingpong["pairs"] == [{"ranks": [0, 1], "same_host": True}]
    bw = run.points("bw")[0]
    # 16 messages per event: rate = 16 / (median per message x 16)
    assert bw["msg_rate"] == pytest.approx(1e6 / bw["time_us"]["median"], rel=1e-6)
    assert "bw_MBps" not in run_engine(mpich_launch(2), engine_mpich, "--sizes", "0", *QUICK,
                                       "pingpong").points()[0]


def test_check_detects_corruption(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", "--reps", "3", "pingpong",
                     env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    check = run.points()[0]["check"]
    # each of the 2 ranks flips one byte in each of the 3 verification iterations
    assert check == {"errors": 6, "verified_bytes": 3 * 2 * 64}


def test_off_cache_and_words(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--units", "words", "--sizes", "1:16:2^k-1",
                     "--off-cache=1M", "--check", *QUICK, "pingpong")
    assert run.returncode == 0, run.stderr
    assert [p["size"] for p in run.points()] == [8, 16, 24, 32, 56, 64, 120, 128]
    assert run.context["options"]["off_cache_bytes"] == 1 << 20
    assert all(p["check"]["errors"] == 0 for p in run.points())
