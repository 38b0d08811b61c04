"""The threads family (latency_mt, osu_latency_mt) on the real engine: threads
per rank ping-pong at once under MPI_THREAD_MULTIPLE, which the engine requests
only when such a benchmark is selected; a lower level gives a skip record with
the reason. Both wheels; 4 ranks on Open MPI."""
from __future__ import annotations

import pytest

from conftest import run_engine

QUICK = ["--reps", "8", "--warmup", "2", "--warmup-bytes", "0"]
LEVELS = {"single", "funneled", "serialized", "multiple"}


def check_latency_mt(run, ranks: int, threads: int, sizes: list[int]) -> None:
    assert run.returncode == 0, run.stderr
    assert run.context["thread_level"] == {"requested": "multiple", "provided": "multiple"}
    assert run.context["options"]["threads"] == threads
    points = run.points("latency_mt")
    assert [p["size"] for p in points] == sizes
    for p in points:
        assert p["family"] == "threads" and p["ranks"] == ranks and p["participants"] == [0, 1]
        cores = run.context["ranks"][0]["cores_online"]
        assert p["threads"] == {"per_rank": threads, "level_requested": "multiple", "level_provided": "multiple",
                                "on_rank0_host": 2 * threads, "more_than_cores": 2 * threads > cores}
        # every thread of both ranks verifies its own receive slot in each of the 3 check passes
        assert p["check"] == {"errors": 0, "verified_bytes": 2 * threads * p["size"] * 3}
        assert p["ops_per_event"] == 2 and p["time_us"]["n"] == 8
        # 2 messages per thread per event; the reported time is half the event
        assert p["msg_rate"] == pytest.approx(2 * threads / (2 * p["time_us"]["median"] * 1e-6), rel=1e-6)


def test_latency_mt_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,4096", "--threads", "3", "--check", *QUICK,
                     "latency_mt")
    check_latency_mt(run, 2, 3, [8, 4096])


def test_latency_mt_four_ranks_openmpi(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "0,1024", "--check", *QUICK, "latency_mt")
    check_latency_mt(run, 4, 2, [0, 1024])


def test_latency_mt_two_ranks_openmpi_one_thread(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "64", "--threads", "1", "--check", *QUICK,
                     "latency_mt")
    check_latency_mt(run, 2, 1, [64])


def test_latency_mt_on_one_rank_is_refused(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", "8", *QUICK, "latency_mt")
    assert run.returncode == 2 and not run.points()
    assert "latency_mt needs at least 2 ranks" in run.stderr


@pytest.mark.parametrize("level", ["serialized", "single"])
def test_a_level_below_multiple_gives_a_skip(engine_mpich, mpich_launch, level):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,64", "--thread-level", level, *QUICK,
                     "latency_mt", "pingpong")
    assert run.returncode == 0, run.stderr
    got = run.context["thread_level"]
    assert got["requested"] == level and got["provided"] in LEVELS
    assert got["provided"] != "multiple"  # MPICH gives what is asked for, no more
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [(s["benchmark"], s["size"]) for s in skips] == [("latency_mt", 8), ("latency_mt", 64)]
    assert all(s["reason"] == f"needs MPI_THREAD_MULTIPLE: the library provided '{got['provided']}' "
               f"(requested '{level}')" for s in skips)
    assert [p["benchmark"] for p in run.points()] == ["pingpong", "pingpong"]  # the rest is measured


def test_other_benchmarks_do_not_request_threads(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "8", *QUICK, "pingpong")
    assert run.returncode == 0, run.stderr
    assert run.context["thread_level"]["requested"] is None
    assert run.context["thread_level"]["provided"] in LEVELS


def test_check_catches_corruption(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "64", "--check", *QUICK, "latency_mt",
                     env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    (p,) = run.points()
    assert p["check"]["errors"] > 0


def test_bad_thread_options_are_one_line_errors(engine_mpich):
    for args, text in ((["--threads", "0"], "--threads expects a whole number from 1 to 64"),
                       (["--thread-level", "many"], "--thread-level expects 'single', 'funneled', 'serialized' or "
                                                    "'multiple'")):
        run = run_engine([], engine_mpich, "--plan", "--ranks", "2", *args, "latency_mt")
        assert run.returncode == 2 and text in run.stderr and len(run.stderr.strip().splitlines()) == 1
