"""The ring case study kernels: data moves correctly, the imbalance pattern and
sizes follow the study's driver, and algorithm 1 beyond the eager limit is a reported
deadlock, not a hang."""
from __future__ import annotations

import pytest

from conftest import run_engine

ALGORITHMS = [f"ringcs{k}" for k in range(1, 6)]


@pytest.mark.parametrize("ranks", [2, 4])
def test_every_algorithm_moves_the_data(engine_openmpi, openmpi_launch, ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--units", "words", "--sizes", "1,100,500",
                     "--check", "--reps", "3", "--ncompute", "1,20", "--nblock", "64", *ALGORITHMS)
    assert run.returncode == 0, run.stderr
    for p in run.points():
        assert p["check"]["errors"] == 0, p
        assert p["check"]["verified_bytes"] > 0
        assert p["ops_per_event"] == 10
        assert p["bytes_per_op"] == 2 * p["size"]
        assert p["sync"] == "barrier"


def test_study_sizes_and_options_are_recorded(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--units", "words", "--sizes", "0:30:*1.2",
                     "--reps", "2", "--ncompute", "1,200", "--niter", "4", "ringcs4")
    assert run.returncode == 0, run.stderr
    words = [p["size"] // 8 for p in run.points()]
    assert words == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29]
    opts = run.context["options"]
    assert (opts["ncompute_a"], opts["ncompute_b"], opts["niter"]) == (1, 200, 4)
    assert run.points()[0]["ops_per_event"] == 4


def test_imbalance_slows_the_blocking_algorithms_more(engine_openmpi, openmpi_launch):
    """Structure, not speed: with 200x more work on alternating ranks every
    algorithm still completes and reports one point per size."""
    run = run_engine(openmpi_launch(2), engine_openmpi, "--units", "words", "--sizes", "64,1000",
                     "--reps", "3", "--ncompute", "1,200", *ALGORITHMS[1:])
    assert run.returncode == 0, run.stderr
    assert len(run.points()) == 8


def test_odd_ranks_and_odd_sizes_are_refused(engine_openmpi, openmpi_launch, engine_mpich, mpich_launch):
    run = run_engine(openmpi_launch(3), engine_openmpi, "--units", "words", "--sizes", "8", "ringcs2")
    assert run.returncode == 2 and "even number of ranks" in run.stderr
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "12", "ringcs2")
    assert run.returncode == 2 and "multiple of 8" in run.stderr


def test_algorithm_one_deadlock_is_reported_at_the_eager_limit(engine_openmpi, openmpi_launch):
    # Open MPI's shared-memory transport sends eagerly up to btl_sm_eager_limit;
    # set it small and MPI_Send-before-MPI_Recv must deadlock just above it.
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "256,512,1024,2048", "--max-time", "0.1",
                     "ringcs1", env={"OMPI_MCA_btl_sm_eager_limit": "1024"}, timeout=90)
    assert run.returncode != 0
    sizes = [p["size"] for p in run.points()]
    timeouts = [r for r in run.records if r["type"] == "timeout"]
    assert len(timeouts) == 1
    assert timeouts[0]["benchmark"] == "ringcs1"
    assert 256 in sizes and timeouts[0]["size"] > max(sizes)
    assert timeouts[0]["size"] in (1024, 2048)  # the header makes 1024 itself too big
    assert timeouts[0]["limit_s"] < 10  # derived from the previous size, not a fixed guess


def test_the_watchdog_learns_from_its_series_in_any_order(engine_openmpi, openmpi_launch):
    # ids: ringcs1 at 256, 512, 2048 (0-2), ringcs2 at the same (3-5). Between
    # ringcs1's points come ringcs2's, and its 2048 deadlocks: its limit still
    # comes from ringcs1's nearest smaller measured size, not from a first-point guess.
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "256,512,2048", "--max-time", "0.1",
                     "--points", "1,3,0,5,2", "ringcs1", "ringcs2", env={"OMPI_MCA_btl_sm_eager_limit": "1024"},
                     timeout=90)
    assert run.returncode != 0
    assert [(p["benchmark"], p["size"]) for p in run.points()] == [
        ("ringcs1", 512), ("ringcs2", 256), ("ringcs1", 256), ("ringcs2", 2048)]
    timeouts = [r for r in run.records if r["type"] == "timeout"]
    assert [(t["benchmark"], t["size"]) for t in timeouts] == [("ringcs1", 2048)]
    assert timeouts[0]["limit_s"] < 10


@pytest.mark.parametrize("ranks", [2, 4])
def test_record_states_the_imbalance_pattern_and_that_bandwidth_includes_compute(engine_openmpi, openmpi_launch,
                                                                                 ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--units", "words", "--sizes", "16", "--reps", "2",
                     "--ncompute", "1,200", "--niter", "6", "--nblock", "4", *ALGORITHMS)
    assert run.returncode == 0, run.stderr
    for k, p in enumerate(run.points(), 1):
        rc = p["ringcs"]
        assert rc["algorithm"] == k and rc["words"] == 16 and rc["bw_includes_compute"] is True
        assert ("nblock" in rc) == (k == 5)
        # the study's reference driver: iand(iter + me, 1) == 0 -> ncompute_A, iterations counted from 1
        assert rc["ncompute_schedule"] == [[1 if (it + r) % 2 == 0 else 200 for it in range(1, 7)]
                                           for r in range(ranks)]
        # every iteration half the ranks work 200x more, the other half less: balanced on average
        for it in range(6):
            assert sorted(row[it] for row in rc["ncompute_schedule"]) == [1] * (ranks // 2) + [200] * (ranks // 2)
