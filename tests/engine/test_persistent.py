"""Persistent point-to-point (pingpong_persistent, bw_persistent) on the real
engine: the same records and --check as their plain twins, data verified
through requests made once, --window and --off-cache honoured, more ranks
than the pair."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_engine

PERSISTENT = ["pingpong_persistent", "bw_persistent"]
QUICK = ["--max-time", "0.05", "--warmup-bytes", "64K"]


def test_listed_as_a_family_of_their_own(engine_mpich):
    rows = {r["name"]: r for r in json.loads(subprocess.run([str(engine_mpich), "--list", "--json"],
                                                            capture_output=True, text=True).stdout)}
    assert {name: rows[name]["family"] for name in PERSISTENT} == {name: "persistent" for name in PERSISTENT}
    assert rows["pingpong_persistent"]["half_round_trip"] and rows["bw_persistent"]["message_rate"]
    assert all(rows[name]["min_ranks"] == 2 and rows[name]["sample_from"] == "rank0" for name in PERSISTENT)


def test_checked_points_on_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "0,1,1000,64K,1M", "--check", "--window", "16",
                     *QUICK, *PERSISTENT, "pingpong", "bw")
    assert run.returncode == 0, run.stderr
    for bench in PERSISTENT:
        points = run.points(bench)
        assert [p["size"] for p in points] == [0, 1, 1000, 65536, 1 << 20]
        for p in points:
            assert p["family"] == "persistent" and p["ranks"] == 2
            assert p["pairs"] == [{"ranks": [0, 1], "same_host": True}] and p["participants"] == [0, 1]
            assert p["check"]["errors"] == 0
            assert p["check"]["verified_bytes"] == 3 * p["size"] * (2 if bench == "pingpong_persistent" else 16)
    # the twins' definitions: half a round trip; one message of a window of 16
    twin = {"pingpong_persistent": "pingpong", "bw_persistent": "bw"}
    for bench, plain in twin.items():
        mine, theirs = run.points(bench)[-1], run.points(plain)[-1]
        for field in ("ops_per_event", "bytes_per_op", "sample_from", "sync"):
            assert mine[field] == theirs[field], (bench, field)
    bw = run.points("bw_persistent")[-1]
    assert bw["ops_per_event"] == 16
    assert bw["msg_rate"] == pytest.approx(1e6 / bw["time_us"]["median"], rel=1e-6)


def test_check_detects_corruption(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64", "--check", "--reps", "3", *PERSISTENT,
                     env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    # a flipped byte per verifying rank and iteration: both ranks of a ping-pong, bw's receiver
    assert [p["check"]["errors"] for p in run.points()] == [6, 3]


@pytest.mark.parametrize("ranks", [3, 4])
def test_more_ranks_and_off_cache_openmpi(engine_openmpi, openmpi_launch, ranks):
    # --off-cache changes the buffers every event: the requests follow them
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "8,4097", "--off-cache=1M", "--check",
                     "--window", "8", *QUICK, *PERSISTENT)
    assert run.returncode == 0, run.stderr
    assert [(p["benchmark"], p["size"]) for p in run.points()] == [(b, s) for b in PERSISTENT for s in (8, 4097)]
    for p in run.points():
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] > 0
        assert p["participants"] == [0, 1] and p["ranks"] == ranks


def test_planned_like_every_benchmark(engine_mpich):
    done = subprocess.run([str(engine_mpich), "--plan", "--ranks", "2", "--sizes", "8,1K", *PERSISTENT],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    points = json.loads(done.stdout)["points"]
    assert [(p["benchmark"], p["family"], p["size"]) for p in points] == [
        (b, "persistent", s) for b in PERSISTENT for s in (8, 1024)]
