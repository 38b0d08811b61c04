"""The LogGP overhead kernels (overhead_send, overhead_recv) and the hardware
kernels (memcpy, reduce_local, cacheline) on the real engine under real
launchers: records, --check, rendezvous sizes without deadlock, more ranks than
the pair, and the LogGP / hardware figures mpiscope derives from them."""
from __future__ import annotations

import pytest

from conftest import run_engine

from mpiscope.analysis.hw import hardware_from_records
from mpiscope.analysis.loggp import loggp_from_records
from mpiscope.records import parse_record

QUICK = ["--max-time", "0.05", "--warmup-bytes", "64K"]
LOGGP = ["overhead_send", "overhead_recv"]
HW = ["memcpy", "reduce_local", "cacheline"]
# 1 MiB is past every eager limit: overhead_recv's pipeline must not deadlock there.
SIZES = "1,64,4096,65536,1M"


def _check_points(run, benchmarks, sizes):
    for bench in benchmarks:
        points = run.points(bench)
        assert [p["size"] for p in points] == sizes, bench
        for p in points:
            assert p["check"]["errors"] == 0, p
            t = p["time_us"]
            assert 0 < t["ci_low"] <= t["median"] <= t["ci_high"], p


def test_overheads_and_hardware_on_two_ranks_mpich(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", SIZES, "--check", *QUICK,
                     *LOGGP, "memcpy", "reduce_local", "cacheline", "pingpong", "bw")
    assert run.returncode == 0, run.stderr
    sizes = [1, 64, 4096, 65536, 1 << 20]
    _check_points(run, LOGGP + ["memcpy", "reduce_local", "pingpong"], sizes)
    line = run.points("cacheline")
    assert [p["size"] for p in line] == [0] and line[0]["check"]["errors"] == 0
    assert line[0]["check"]["verified_bytes"] > 0
    for bench in LOGGP + ["cacheline"]:
        assert [pair["ranks"] for pair in run.points(bench)[0]["pairs"]] == [[0, 1]]
    # the time inside one call cannot exceed a whole round trip of the same message
    pp = {p["size"]: p["time_us"]["median"] for p in run.points("pingpong")}
    for bench in LOGGP:
        small = run.points(bench)[0]
        assert small["time_us"]["median"] < 2 * pp[1], small
    # derived figures: every LogGP parameter present and non-negative
    m = loggp_from_records([parse_record(r) for r in run.records])
    assert m is not None and m.size == 1
    for v in (m.L_us, m.o_s_us, m.o_r_us, m.g_us):
        assert v >= 0
    assert m.o_s_us + m.o_r_us + m.L_us == pytest.approx(max(pp[1], m.o_s_us + m.o_r_us))
    assert m.g_us >= m.o_s_us
    hw = hardware_from_records([parse_record(r) for r in run.records])
    assert hw is not None and hw.efficiency_size == 1 << 20 and hw.efficiency > 0
    assert hw.cacheline_us == line[0]["time_us"]["median"]
    assert set(hw.memcpy_MBps) == set(sizes)


def test_overheads_and_hardware_on_three_ranks_openmpi(engine_openmpi, openmpi_launch):
    """Rank 2 takes no part: the pair's kernels still end cleanly around it."""
    run = run_engine(openmpi_launch(3), engine_openmpi, "--sizes", "8,65536", "--check", *QUICK,
                     *LOGGP, *HW)
    assert run.returncode == 0, run.stderr
    _check_points(run, LOGGP + ["memcpy", "reduce_local"], [8, 65536])
    assert run.points("cacheline")[0]["participants"] == [0, 1]
    assert run.points("memcpy")[0]["participants"] == [0]


def test_listed_in_the_registry(engine_mpich, mpich_launch):
    import json
    import subprocess
    reg = json.loads(subprocess.run([str(engine_mpich), "--list", "--json"], capture_output=True,
                                    text=True).stdout)
    rows = {b["name"]: b for b in reg}
    assert {b: rows[b]["family"] for b in LOGGP + HW} == {
        "overhead_send": "loggp", "overhead_recv": "loggp", "memcpy": "hw", "reduce_local": "hw",
        "cacheline": "hw"}
    assert rows["cacheline"]["min_ranks"] == 2 and rows["memcpy"]["min_ranks"] == 1
