"""IMB-MT on the real engine (family threads, rows *_mt): --threads threads per
rank, each on its own duplicated communicator, run an IMB-MPI1 kernel at once;
and latency_mt's osu_latency_mt -t S:R form (--threads S --threads-recv R).
Records, figures and --check counts at 1, 2 (MPICH) and 2, 4 ranks (Open MPI,
oversubscribed); a thread level below multiple gives skips."""
from __future__ import annotations

import pytest

from conftest import run_engine

QUICK = ["--reps", "6", "--warmup", "1", "--warmup-bytes", "0", "--max-time", "0.2", "--sync", "barrier"]
P2P = ["pingpong_mt", "pingping_mt", "sendrecv_mt", "exchange_mt", "uniband_mt", "biband_mt"]
COLL = ["barrier_mt", "bcast_mt", "reduce_mt", "allreduce_mt", "gather_mt", "scatter_mt", "allgather_mt",
        "alltoall_mt"]
WINDOW = 4
PASSES = 3  # --check runs three verified events


def p2p_expectations(name: str, n: int, t: int, size: int) -> dict:
    """ops per event, bytes per op, messages per event and verified bytes, as IMB-MT defines the rows."""
    pairs = n // 2
    return {
        "pingpong_mt": (2, t * size, 2 * pairs * t, 2 * pairs * t * size),
        "pingping_mt": (1, t * size, 2 * pairs * t, 2 * pairs * t * size),
        "sendrecv_mt": (1, 2 * t * size, n * t, n * t * size),
        "exchange_mt": (1, 4 * t * size, 2 * n * t, 2 * n * t * size),
        "uniband_mt": (WINDOW, pairs * t * size, pairs * t * WINDOW, pairs * t * WINDOW * size),
        "biband_mt": (2 * WINDOW, pairs * t * size, 2 * pairs * t * WINDOW, 2 * pairs * t * WINDOW * size),
    }[name]


def coll_verified(name: str, n: int, t: int, size: int) -> int:
    """Bytes one event verifies over all ranks and threads (default datatypes; root 0)."""
    return t * size * {"barrier_mt": 0, "bcast_mt": n - 1, "reduce_mt": 1, "allreduce_mt": n, "gather_mt": n,
                       "scatter_mt": n, "allgather_mt": n * n, "alltoall_mt": n * n}[name]


def check_threads(p: dict, t: int, active: list[int]) -> None:
    th = p["threads"]
    assert th["per_rank"] == t and th["level_requested"] == "multiple" and th["level_provided"] == "multiple"
    assert th["comm"] == "one MPI_Comm_dup per thread"
    assert th["on_rank0_host"] == t * len(active)  # one host: every taking-part rank's threads


def check_p2p(run, n: int, t: int, sizes: list[int]) -> None:
    assert run.returncode == 0, run.stderr
    assert run.context["thread_level"] == {"requested": "multiple", "provided": "multiple"}
    for name in P2P:
        points = run.points(name)
        assert [p["size"] for p in points] == sizes, name
        for p in points:
            ops, bytes_per_op, msgs, verified = p2p_expectations(name, n, t, p["size"])
            pairs = n // 2
            active = list(range(n)) if name in ("sendrecv_mt", "exchange_mt") else list(range(2 * pairs))
            assert p["family"] == "threads" and p["ranks"] == n and p["participants"] == active, name
            # IMB-MT's stride N/2: at 2 and 4 ranks the ring rows pair like the others
            assert [q["ranks"] for q in p["pairs"]] == [[i, i + pairs] for i in range(pairs)], name
            assert p["ops_per_event"] == ops and p["bytes_per_op"] == bytes_per_op, name
            assert p["check"] == {"errors": 0, "verified_bytes": PASSES * verified}, name
            median = p["time_us"]["median"]
            assert p["msg_rate"] == pytest.approx(msgs / (median * ops * 1e-6), rel=1e-6), name
            if p["size"]:
                assert p["bw_MBps"]["median"] == pytest.approx(bytes_per_op / median, rel=1e-6), name
            check_threads(p, t, active)


def check_coll(run, n: int, t: int, sizes: list[int]) -> None:
    assert run.returncode == 0, run.stderr
    for name in COLL:
        points = run.points(name)
        assert [p["size"] for p in points] == ([0] if name == "barrier_mt" else sizes), name
        for p in points:
            size = p["size"]
            assert p["participants"] == list(range(n)) and p["ops_per_event"] == 1, name
            per_thread = size * (n if name in ("gather_mt", "scatter_mt", "allgather_mt", "alltoall_mt") else 1)
            assert p["bytes_per_op"] == t * per_thread, name
            assert p["check"] == {"errors": 0, "verified_bytes": PASSES * coll_verified(name, n, t, size)}, name
            assert "msg_rate" not in p
            # coll.c's fields for thread 0's call, and IMB's t_min / t_max / t_avg over ranks
            if name != "barrier_mt":
                reduction = name in ("reduce_mt", "allreduce_mt")
                assert p["datatype"] == ("float" if reduction else "byte")
                assert p["count"] == size // (4 if reduction else 1)
            assert p["t_min_us"] <= p["t_avg_us"] <= p["t_max_us"]
            check_threads(p, t, list(range(n)))


def test_every_row_at_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,1024", "--threads", "2", "--window",
                     str(WINDOW), "--check", *QUICK, *P2P, *COLL)
    check_p2p(run, 2, 2, [8, 1024])
    check_coll(run, 2, 2, [8, 1024])


def test_collective_rows_at_one_rank_and_pair_rows_refused(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", "64", "--threads", "3", "--check", *QUICK, *COLL)
    check_coll(run, 1, 3, [64])
    for name in P2P:
        refused = run_engine(mpich_launch(1), engine_mpich, "--sizes", "8", *QUICK, name)
        assert refused.returncode == 2 and not refused.points()
        assert f"{name} needs at least 2 ranks" in refused.stderr


def test_every_row_at_two_and_four_ranks_openmpi(engine_openmpi, openmpi_launch):
    for n in (2, 4):
        run = run_engine(openmpi_launch(n), engine_openmpi, "--sizes", "16,256", "--threads", "2", "--window",
                         str(WINDOW), "--check", *QUICK, *P2P, *COLL)
        check_p2p(run, n, 2, [16, 256])
        check_coll(run, n, 2, [16, 256])


def test_odd_ranks_leave_the_last_rank_out_of_the_pairs(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(3), engine_openmpi, "--sizes", "32", "--threads", "2", "--window",
                     str(WINDOW), "--check", *QUICK, "pingpong_mt", "uniband_mt", "sendrecv_mt")
    assert run.returncode == 0, run.stderr
    for name in ("pingpong_mt", "uniband_mt"):
        (p,) = run.points(name)
        assert p["participants"] == [0, 1] and p["check"]["errors"] == 0
        assert p["check"]["verified_bytes"] == PASSES * p2p_expectations(name, 3, 2, 32)[3]
    (p,) = run.points("sendrecv_mt")  # a ring with step 1 at 3 ranks: everybody
    assert p["participants"] == [0, 1, 2] and [q["ranks"] for q in p["pairs"]] == [[0, 1], [1, 2], [0, 2]]
    assert p["check"] == {"errors": 0, "verified_bytes": PASSES * 3 * 2 * 32}


def test_check_catches_corruption_in_a_thread_buffer(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "64", "--check", *QUICK, "exchange_mt",
                     "allreduce_mt", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    assert all(p["check"]["errors"] > 0 for p in run.points()) and len(run.points()) == 2


@pytest.mark.parametrize("level", ["serialized", "funneled"])
def test_a_level_below_multiple_skips_every_mt_row(engine_mpich, mpich_launch, level):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--thread-level", level, *QUICK,
                     "pingpong_mt", "biband_mt", "barrier_mt", "allreduce_mt", "pingpong")
    assert run.returncode == 0, run.stderr
    got = run.context["thread_level"]
    assert got["requested"] == level and got["provided"] != "multiple"
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [(s["benchmark"], s["size"]) for s in skips] == [("pingpong_mt", 8), ("biband_mt", 8),
                                                            ("barrier_mt", 0), ("allreduce_mt", 8)]
    assert {s["reason"] for s in skips} == {f"needs MPI_THREAD_MULTIPLE: the library provided '{got['provided']}' "
                                            f"(requested '{level}')"}
    assert [p["benchmark"] for p in run.points()] == ["pingpong"]


# ---- latency_mt with different sender and receiver thread counts (osu_latency_mt -t S:R) ----

@pytest.mark.parametrize("senders, receivers", [(1, 3), (3, 1), (2, 3)])
def test_latency_mt_senders_and_receivers(engine_mpich, mpich_launch, senders, receivers):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,512", "--threads", str(senders),
                     "--threads-recv", str(receivers), "--check", *QUICK, "latency_mt")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["threads"] == senders and run.context["options"]["threads_recv"] == receivers
    pingpongs = max(senders, receivers)
    per_sender = -(-pingpongs // senders)
    for p in run.points("latency_mt"):
        assert p["latency_mt"] == {"senders": senders, "receivers": receivers, "pingpongs_per_event": pingpongs,
                                   "pingpongs_per_sender": per_sender}
        assert p["threads"]["per_rank"] == senders and p["threads"]["on_rank0_host"] == senders + receivers
        # every ping-pong lands in a slot of its own on both ranks
        assert p["check"] == {"errors": 0, "verified_bytes": PASSES * 2 * pingpongs * p["size"]}
        assert p["ops_per_event"] == 2 * per_sender
        event_s = p["time_us"]["median"] * p["ops_per_event"] * 1e-6
        assert p["msg_rate"] == pytest.approx(2 * pingpongs / event_s, rel=1e-6)


def test_latency_mt_receivers_default_to_senders(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "64", "--threads", "2", "--check", *QUICK,
                     "latency_mt")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["threads_recv"] is None
    (p,) = run.points()
    assert p["latency_mt"] == {"senders": 2, "receivers": 2, "pingpongs_per_event": 2, "pingpongs_per_sender": 1}


def test_bad_threads_recv_is_a_one_line_error(engine_mpich):
    run = run_engine([], engine_mpich, "--plan", "--ranks", "2", "--threads-recv", "0", "latency_mt")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "--threads-recv expects a whole number from 1 to 64" in run.stderr
