"""One-sided communication (the rma family) on the real engine: every row under
every synchronisation mode as its own labelled point, on MPICH and Open MPI,
1 (skip), 2 and 4 ranks, the three window kinds, with --check verifying the
data each operation moved, and the skips a mode that does not apply gives."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_engine

PAIR = ["put_latency", "get_latency", "put_bw", "get_bw", "put_bibw", "get_bibw", "acc_latency",
        "get_acc_latency", "fop_latency", "cas_latency", "truly_passive_put"]
ALL_RANKS = ["one_put_all", "one_get_all", "all_put_all", "all_get_all", "exchange_put", "exchange_get"]
RMA = PAIR + ALL_RANKS
MODES = ["fence", "lock", "flush", "flush_local", "lock_all", "pscw"]
ATOMIC = {"fop_latency", "cas_latency"}
STREAMING = {"put_bw", "get_bw", "put_bibw", "get_bibw"}
QUICK = ["--reps", "12", "--warmup", "2", "--warmup-bytes", "1K"]
CHECK_ITERATIONS = 3


def verified_bytes(bench: str, size: int, ranks: int, ops: int = 4) -> int:
    """What --check compares over its three iterations: each target's slot per
    origin, each origin's fetched data; the bandwidth rows' ops places each
    (--rma-buffers multiple, their default)."""
    if bench in ATOMIC:
        return CHECK_ITERATIONS * 2 * 8                  # the result at the origin, the value at the target
    per = {"get_acc_latency": 2 * size, "put_bibw": 2 * size, "get_bibw": 2 * size,
           "one_put_all": (ranks - 1) * size, "one_get_all": (ranks - 1) * size,
           "all_put_all": ranks * (ranks - 1) * size, "all_get_all": ranks * (ranks - 1) * size,
           # on 2 ranks both neighbours are the same rank: one slot written twice, two gets
           "exchange_put": ranks * (1 if ranks == 2 else 2) * size, "exchange_get": ranks * 2 * size}
    return CHECK_ITERATIONS * per.get(bench, size) * (ops if bench in STREAMING else 1)


def assert_rma_points(run, benches, modes, sizes, ranks, window="allocate", ops=4):
    assert run.returncode == 0, run.stderr[-3000:]
    by_key = {(p["benchmark"], p["variant"], p["size"]): p for p in run.points()}
    skips = {(s["benchmark"], s["variant"], s["size"]): s for s in run.records if s["type"] == "skip"}
    for bench in benches:
        for mode in modes:
            for size in ([0] if bench in ATOMIC else sizes):
                key = (bench, mode, size)
                if bench == "truly_passive_put" and mode in ("fence", "pscw"):
                    assert key in skips and "active-target" in skips[key]["reason"], key
                    assert key not in by_key
                    continue
                p = by_key[key]
                assert p["family"] == "rma" and p["ranks"] == ranks
                assert p["check"]["errors"] == 0, key
                assert p["check"]["verified_bytes"] == verified_bytes(bench, size, ranks, ops), key
                assert p["time_us"]["median"] > 0 and p["time_us"]["n"] > 0
                rma = p["rma"]
                assert rma["sync"] == mode and rma["window"] == window
                assert rma["memory_model"] in ("unified", "separate")
                assert rma["ops_per_epoch"] == (ops if bench in STREAMING else 1)
                assert p["ops_per_event"] == rma["ops_per_epoch"]
                if mode in ("flush", "flush_local"):
                    # the epoch the point spans, as OSU and IMB open it: a shared lock of the one
                    # target, a lock_all for several (rank 0, which writes the record, is an origin)
                    several = bench in ALL_RANKS and ranks > 2
                    assert rma["epoch"] == ("lock_all" if several else "lock_shared"), key
                else:
                    assert "epoch" not in rma
                # bytes per operation: to every target of the origin (bibw: both directions)
                fan = {"put_bibw": 2, "get_bibw": 2, "exchange_put": 2, "exchange_get": 2}.get(
                    bench, ranks - 1 if bench in ALL_RANKS else 1)
                assert p["bytes_per_op"] == (8 if bench in ATOMIC else size) * fan
                if size > 0:
                    assert p["bw_MBps"]["median"] == pytest.approx(p["bytes_per_op"] / p["time_us"]["median"])
                if bench in STREAMING:
                    assert p["msg_rate"] > 0
                if bench in PAIR:
                    assert p["participants"] == [0, 1]
                if bench == "truly_passive_put":
                    passive = p["passive"]
                    assert passive["pure_us"] == p["time_us"]["median"]
                    assert passive["ovrl_us"] > 0 and passive["target_compute_us"] >= 50
                    assert 0 <= passive["passive_pct"] <= 100


def test_listed_as_the_rma_family(engine_mpich):
    rows = {r["name"]: r for r in json.loads(subprocess.run([str(engine_mpich), "--list", "--json"],
                                                            capture_output=True, text=True).stdout)}
    assert {name: rows[name]["family"] for name in RMA} == {name: "rma" for name in RMA}
    assert all(rows[name]["min_ranks"] == 2 for name in RMA)
    assert all(rows[name]["message_rate"] for name in STREAMING)
    assert rows["fop_latency"]["sizeless"] and rows["cas_latency"]["sizeless"]


def test_every_mode_of_every_row_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1,4K", "--check", "--rma-ops", "4",
                     "--rma-sync", ",".join(MODES), *QUICK, *RMA)
    assert_rma_points(run, RMA, MODES, [1, 4096], 2)
    assert run.context["options"]["rma_sync"] == MODES
    assert run.context["options"]["rma_win"] == "allocate" and run.context["options"]["rma_ops"] == 4


def test_one_rank_group_is_a_skip_record(engine_mpich, mpich_launch):
    # one rank has no target: with --npmin 1 the group of one records a skip, the pair measures
    run = run_engine(mpich_launch(2), engine_mpich, "--npmin", "1", "--sizes", "8", "--check", *QUICK,
                     "put_latency", "one_put_all")
    assert run.returncode == 0, run.stderr
    skips = [s for s in run.records if s["type"] == "skip"]
    assert {(s["benchmark"], s["ranks"], s["reason"]) for s in skips} == {
        ("put_latency", 1, "too few ranks"), ("one_put_all", 1, "too few ranks")}
    assert [(p["benchmark"], p["ranks"]) for p in run.points()] == [("put_latency", 2), ("one_put_all", 2)]


def test_one_rank_job_is_refused(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", "8", "put_latency")
    assert run.returncode == 2 and "put_latency needs at least 2 ranks" in run.stderr


@pytest.mark.parametrize("window", ["create", "dynamic"])
def test_window_kinds_mpich(engine_mpich, mpich_launch, window):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--check", "--rma-win", window,
                     "--rma-ops", "4", "--rma-sync", "fence,lock_all,flush", *QUICK, *RMA)
    assert_rma_points(run, RMA, ["fence", "lock_all", "flush"], [8], 2, window=window)


# every mode on 4 ranks; on 2 (as MPICH measured every mode) two, to keep the yielding ranks quick
@pytest.mark.parametrize("ranks, modes, sizes", [(2, ["lock", "flush"], [8]), (4, MODES, [8, 1024])])
def test_every_row_openmpi(engine_openmpi, openmpi_launch, ranks, modes, sizes):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", ",".join(map(str, sizes)), "--check",
                     "--rma-ops", "4", "--rma-sync", ",".join(modes), *QUICK, *RMA, timeout=240)
    assert_rma_points(run, RMA, modes, sizes, ranks)


@pytest.mark.parametrize("window", ["create", "dynamic"])
def test_window_kinds_four_ranks_openmpi(engine_openmpi, openmpi_launch, window):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "64", "--check", "--rma-win", window,
                     "--rma-ops", "4", "--rma-sync", "pscw,lock,flush_local", *QUICK, *RMA, timeout=240)
    assert_rma_points(run, RMA, ["pscw", "lock", "flush_local"], [64], 4, window=window)


def test_check_detects_corruption(engine_mpich, mpich_launch):
    # the fault flips one received byte per verifying rank and iteration; sizeless rows are spared
    sized = [b for b in RMA if b not in ATOMIC and b != "truly_passive_put"]
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", "--reps", "3", *sized,
                     env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    verifying = {"put_bibw": 2, "get_bibw": 2, "get_acc_latency": 2, "all_put_all": 2, "all_get_all": 2,
                 "exchange_put": 2, "exchange_get": 2}
    assert {p["benchmark"]: p["check"]["errors"] for p in run.points()} == {
        b: CHECK_ITERATIONS * verifying.get(b, 1) for b in sized}


def test_planned_with_a_variant_per_mode(engine_mpich):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "2", "--sizes", "8", "--rma-sync",
                           "lock,pscw", "put_latency", "truly_passive_put", "cas_latency"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    points = [(p["benchmark"], p["variant"], p["size"], "skip" in p) for p in json.loads(done.stdout)["points"]]
    assert points == [("put_latency", "lock", 8, False), ("put_latency", "pscw", 8, False),
                      ("truly_passive_put", "lock", 8, False), ("truly_passive_put", "pscw", 8, True),
                      ("cas_latency", "lock", 0, False), ("cas_latency", "pscw", 0, False)]


@pytest.mark.parametrize("bad, message", [
    (["--rma-sync", "fence,fence"], "--rma-sync expects modes from"),
    (["--rma-sync", "barrier"], "--rma-sync expects modes from"),
    (["--rma-win", "shared"], "--rma-win expects 'create', 'allocate' or 'dynamic'"),
    (["--rma-ops", "0"], "--rma-ops expects a whole number"),
])
def test_bad_options_are_one_line_errors(engine_mpich, bad, message):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "2", *bad, "put_bw"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_accumulate_element_is_a_choice(engine_mpich, mpich_launch):
    # --rma-acc-type char sums MPI_CHAR as osu_acc_latency does; the point says which element it summed
    for kind in ("char", "unsigned_char"):
        run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--check", "--rma-acc-type", kind,
                         *QUICK, "acc_latency", "get_acc_latency")
        assert run.returncode == 0, run.stderr
        assert {p["rma"]["datatype"] for p in run.points()} == {kind}
        assert all(p["check"]["errors"] == 0 for p in run.points())
        assert run.context["options"]["rma_acc_type"] == kind


def test_batched_latency_is_per_operation(engine_mpich, mpich_launch):
    # --rma-batch times several epochs per sample; the figure stays per operation
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--check", "--rma-batch", "10",
                     "--rma-sync", "flush,lock", *QUICK, "put_latency", "get_latency", "put_bw")
    assert run.returncode == 0, run.stderr
    for p in run.points():
        batched = p["benchmark"] != "put_bw"
        # put_bw's 64 puts each have a place of their own (--rma-buffers multiple), each verified
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] == 3 * 8 * (1 if batched else 64)
        assert p["ops_per_event"] == (10 if batched else 64)
        assert p["rma"]["epochs_per_sample"] == (10 if batched else 1)
    assert run.context["options"]["rma_batch"] == 10
