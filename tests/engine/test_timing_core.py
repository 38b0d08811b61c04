"""The timing core: adaptive stopping, fixed repetitions, caps, raw samples,
statistics that are consistent, and the watchdog."""
from __future__ import annotations

import pytest

from conftest import run_engine


def stats_ok(t: dict) -> None:
    assert t["min"] <= t["ci_low"] <= t["median"] <= t["ci_high"]
    assert t["median"] <= t["p90"] <= t["p99"]
    assert t["min"] <= t["mean"] and t["stddev"] >= 0


def test_converged_points_meet_the_target(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,64K", "--ci-target", "0.05",
                     "--max-time", "2", "pingpong", "bw")
    assert run.returncode == 0, run.stderr
    for p in run.points():
        t = p["time_us"]
        stats_ok(t)
        if p["converged"]:
            assert p["stop_reason"] == "ci"
            assert t["n"] >= 16
            assert t["median"] - t["ci_low"] <= 0.05 * t["median"] + 1e-12
            assert t["ci_high"] - t["median"] <= 0.05 * t["median"] + 1e-12
        else:
            assert p["stop_reason"] in ("max_time", "max_reps")


def test_an_interval_is_never_narrower_than_the_clock_can_tell(engine_mpich, mpich_launch):
    """Barrier-synchronised samples of a tiny broadcast read the clock's steps (10 ns on this
    VM), so thousands tie: an interval on tied samples once had zero width and "converged" at
    any target. A bound on tied samples lies half-way to the next distinct sample instead."""
    run = run_engine(mpich_launch(2), engine_mpich, "--sync", "barrier", "--sizes", "4", "--ci-target", "0.0001",
                     "--max-time", "0.05", "--raw", "bcast")
    assert run.returncode == 0, run.stderr
    (p,) = run.points()
    t, samples = p["time_us"], sorted(p["samples_us"])
    stats_ok(t)
    assert len(set(samples)) > 1 and t["ci_high"] > t["ci_low"]
    below = [x for x in samples if x < t["ci_low"]]
    if below and samples.count(samples[len(below)]) > 1:  # the lower bound sits on tied samples
        assert below[-1] < t["ci_low"] < samples[len(below)]


def test_fixed_reps_and_raw_samples(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1,512", "--reps", "37", "--raw", "pingpong")
    assert run.returncode == 0, run.stderr
    for p in run.points():
        assert p["stop_reason"] == "reps"
        assert p["time_us"]["n"] == 37
        samples = p["samples_us"]
        assert len(samples) == 37
        assert min(samples) == pytest.approx(p["time_us"]["min"])
        assert sorted(samples)[18] == pytest.approx(p["time_us"]["median"])


def test_caps_end_a_point_that_cannot_converge(engine_mpich, mpich_launch):
    # a minimum no run can reach in the time cap
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--min-reps", "10000000",
                     "--max-reps", "10000000", "--max-time", "0.05", "pingpong")
    p = run.points()[0]
    assert not p["converged"] and p["stop_reason"] == "max_time"
    assert 16 < p["time_us"]["n"] < 10000000
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--min-reps", "50", "--max-reps", "50",
                     "pingpong")
    p = run.points()[0]
    assert p["stop_reason"] in ("max_reps", "ci") and p["time_us"]["n"] == 50


def test_the_time_cap_waits_for_identical_samples_only_under_simulation(engine_mpich, mpich_launch):
    # a real clock's cap is a cost: --stop-identical 2 does not keep a point past it (under SMPI it
    # does, tests/test_smpi.py: simulated time is no cost and repeats exactly); barrier sync, whose
    # samples are never late, so that the one sample is a valid one on a busy machine too
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64K", "--max-time", "1e-6", "--stop-identical", "2",
                     "--sync", "barrier", "allreduce")
    assert run.returncode == 0, run.stderr
    (p,) = run.points()
    assert (p["stop_reason"], p["converged"], p["time_us"]["n"]) == ("max_time", False, 1)


def test_watchdog_turns_a_hang_into_a_timeout(engine_mpich, mpich_launch):
    # a limit far below the time a 4 MiB point takes stands in for a hang
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1,4M", "--timeout", "0.001",
                     "--reps", "1000", "pingpong", timeout=60)
    assert run.returncode != 0
    timeout = [r for r in run.records if r["type"] == "timeout"]
    assert timeout == [{"type": "timeout", "benchmark": "pingpong", "size": 1, "ranks": 2, "limit_s": 0.001}] \
        or timeout[0]["size"] in (1, 4194304)
    assert not any(r["type"] == "end" for r in run.records)


def test_memory_limit_skips_points(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1K,8M", "--max-memory", "4M",
                     "--reps", "3", "pingpong")
    assert run.returncode == 0, run.stderr
    skips = [r for r in run.records if r["type"] == "skip"]
    assert [s["size"] for s in skips] == [8 << 20]
    assert "--max-memory" in skips[0]["reason"]
    assert [p["size"] for p in run.points()] == [1024]


def test_context_record(engine_mpich, mpich_launch, tmp_path):
    out = tmp_path / "records.jsonl"
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--reps", "3", "--output", str(out),
                     "pingpong", env={"MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE": "4096", "UNRELATED_VAR": "x"})
    assert run.returncode == 0 and run.stdout == ""
    import json
    records = [json.loads(line) for line in out.read_text().splitlines()]
    ctx = records[0]
    assert ctx["type"] == "context" and ctx["schema_version"] == 1
    assert "MPICH" in ctx["mpi_library_version"]
    assert ctx["world_size"] == 2 and len(ctx["ranks"]) == 2
    assert {"rank", "host", "pid", "cpus", "bound", "cores_online"} <= set(ctx["ranks"][0])
    assert ctx["env"] == {"MPIR_CVAR_CH4_EAGER_MAX_MSG_SIZE": "4096"}
    timer = ctx["timer"]
    assert timer["resolution_s"] > 0 and timer["overhead_s"] > 0 and timer["mpi_wtick_s"] > 0
    assert ctx["options"]["sizes_bytes"] == [8] and ctx["options"]["benchmarks"] == ["pingpong"]
    assert ctx["options"]["stop_identical"] == 0  # a real clock never repeats: only a simulation stops so
    assert records[-1]["type"] == "end"


def test_context_records_each_hosts_kernel_cpu_and_governor(engine_mpich, mpich_launch):
    """What history names when it changes (docs/history.md): per host, the kernel release, the
    CPU model and cpu0's frequency governor (absent where cpufreq is not exposed)."""
    import os
    from pathlib import Path
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--reps", "3", "pingpong")
    assert run.returncode == 0, run.stderr
    (host,) = run.context["host_facts"]
    assert host["host"] == run.context["hosts"][0] and host["kernel"] == os.uname().release
    cpuinfo = Path("/proc/cpuinfo").read_text()
    if "model name" in cpuinfo:
        assert host["cpu_model"] in cpuinfo and f"model name\t: {host['cpu_model']}" in cpuinfo
    governor = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    assert host.get("governor") == (governor.read_text().strip() if governor.is_file() else None)


def test_where_each_rank_ran_and_its_clock(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,1K", "--reps", "5", "pingpong", "allreduce")
    assert run.returncode == 0, run.stderr
    places = run.context["ranks"]
    for place in places:  # at the start of the launch: a CPU it may run on, and that CPU's clock
        assert place["cpu"] in place["cpus"]
        if "cpu_mhz" in place:  # absent where neither cpufreq nor /proc/cpuinfo tells
            assert place["cpu_mhz"] > 0 and place["cpu_mhz_source"] in ("scaling_cur_freq", "cpuinfo")
    for p in run.points():  # at the end of each point, in rank order
        assert len(p["rank_cpus"]) == p["ranks"] == 2
        assert all(cpu is None or cpu in place["cpus"] for cpu, place in zip(p["rank_cpus"], places))


def test_oversubscription_is_recorded(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "8", "--reps", "5", "pingpong")
    assert run.returncode == 0, run.stderr
    assert run.context["oversubscribed"] is (4 > run.context["cores_online"])


def test_table_format(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,1K", "--reps", "20", "--format", "table",
                     "pingpong")
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert lines[0].startswith("# MPICH") and "2 ranks" in lines[0]  # a human header, no JSON
    assert not any(line.startswith("{") for line in lines)
    assert any(line.startswith("# pingpong") for line in lines)
    assert any(line.split()[:1] == ["1024"] for line in lines)
    assert lines[-1].startswith("# 2 points in")
