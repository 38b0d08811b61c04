"""The congestion family (osu_multi_lat, osu_latency_mp, osu_bw_fan_in/out,
IMB-P2P Unirandom, Birandom, Corandom, Stencil2D, Stencil3D) on the real
engine at 1, 2 (MPICH) and 4 ranks (Open MPI): records, figures as defined in
docs/engine.md, every received byte checked."""
from __future__ import annotations

import math

import pytest

from conftest import run_engine

QUICK = ["--reps", "6", "--warmup", "2", "--warmup-bytes", "0"]
ALL = ["multi_lat", "latency_mp", "fan_in", "fan_out", "unirandom", "birandom", "corandom", "stencil2d",
       "stencil3d"]
ONE_RANK = ["corandom", "stencil2d", "stencil3d"]
WINDOW = 4


def verified(bench: str, n: int, size: int) -> int:
    """Bytes the --check pass compares (3 passes) on n ranks."""
    per_pass = {"multi_lat": 2 * (n // 2), "latency_mp": 2, "fan_in": n - 1, "fan_out": (n - 1) * WINDOW,
                "unirandom": n, "birandom": 2 * n, "corandom": n, "stencil2d": 4 * n, "stencil3d": 6 * n}[bench]
    return 3 * per_pass * size


def messages(bench: str, n: int) -> float:
    """Messages per event: the message rate's numerator."""
    return {"multi_lat": 2 * (n // 2), "fan_in": (n - 1) * WINDOW, "fan_out": (n - 1) * WINDOW, "unirandom": n,
            "birandom": 2 * n, "corandom": n, "stencil2d": 4 * n, "stencil3d": 6 * n}[bench]


def check_points(run, benches: list[str], n: int, sizes: list[int]) -> None:
    assert run.returncode == 0, run.stderr
    for bench in benches:
        points = run.points(bench)
        assert [p["size"] for p in points] == sizes, bench
        for p in points:
            assert p["family"] == "congestion" and p["ranks"] == n
            assert p["check"] == {"errors": 0, "verified_bytes": verified(bench, n, p["size"])}, (bench, p["size"])
            assert p["time_us"]["n"] == 6 and p["time_us"]["median"] > 0
            event_s = p["time_us"]["median"] * p["ops_per_event"] * 1e-6
            if bench != "latency_mp":
                assert p["msg_rate"] == pytest.approx(messages(bench, n) / event_s, rel=1e-6), bench
            if p["size"]:
                assert p["bw_MBps"]["median"] == pytest.approx(p["bytes_per_op"] / p["time_us"]["median"])
        if bench.startswith("stencil"):
            for p in points:
                dims = p["stencil"]["dims"]
                assert len(dims) == (2 if bench == "stencil2d" else 3) and math.prod(dims) == n
                assert p["stencil"]["neighbours"] == 2 * len(dims)
                assert p["bytes_per_op"] == messages(bench, n) * p["size"] and p["ops_per_event"] == 1
        if bench == "multi_lat":
            assert all(p["participants"] == list(range(2 * (n // 2))) for p in points)
            assert all([q["ranks"] for q in p["pairs"]] == [[i, i + n // 2] for i in range(n // 2)] for p in points)
        if bench in ("fan_in", "fan_out"):
            assert all(p["ops_per_event"] == WINDOW and p["bytes_per_op"] == (n - 1) * p["size"] for p in points)
        if bench == "latency_mp":
            assert all(p["forked_procs"] == 2 and p["forked_procs_rank0"] == 2 for p in points)
            assert all(p["participants"] == [0, 1] for p in points)


def test_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,4096", "--window", str(WINDOW), "--procs", "2",
                     "--check", *QUICK, *ALL)
    check_points(run, ALL, 2, [8, 4096])


def test_four_ranks_openmpi(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "0,1000", "--window", str(WINDOW), "--procs",
                     "2", "--check", *QUICK, *ALL)
    check_points(run, ALL, 4, [0, 1000])


def test_one_rank(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(1), engine_openmpi, "--sizes", "64", "--check", *QUICK, *ONE_RANK)
    check_points(run, ONE_RANK, 1, [64])
    for bench in sorted(set(ALL) - set(ONE_RANK)):
        refused = run_engine([], engine_openmpi, "--plan", "--ranks", "1", "--sizes", "64", bench)  # as a launch
        assert refused.returncode == 2 and f"{bench} needs at least 2 ranks" in refused.stderr


def test_npmin_gives_skips_for_pair_rows(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--npmin", "1", "--sizes", "8", "--check", *QUICK,
                     "unirandom", "stencil2d")
    assert run.returncode == 0, run.stderr
    skips = [(r["benchmark"], r["ranks"], r["reason"]) for r in run.records if r["type"] == "skip"]
    assert skips == [("unirandom", 1, "too few ranks")]
    assert sorted((p["benchmark"], p["ranks"]) for p in run.points()) == [("stencil2d", 1), ("stencil2d", 2),
                                                                          ("unirandom", 2)]


def test_check_catches_corruption(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "64", "--window", str(WINDOW), "--check",
                     *QUICK, *ALL, env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    assert {p["benchmark"] for p in run.points() if p["check"]["errors"] > 0} == set(ALL)
