"""What can disturb a measurement, as the engine records it: the clock's real tick in the
context, points whose target is finer than the clock stopped at its resolution, and per point
and rank the context switches, steal and run queue, which rise when a busy process shares a
rank's core."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from conftest import run_engine
from mpiscope.records import parse_record
from mpiscope.results.disturbance import disturbed, launch_disturbed

FIELDS = ("nvcsw", "nivcsw", "steal_s", "run_queue", "loadavg_1m")


def test_the_context_holds_the_clock_s_real_tick(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--reps", "5", "pingpong")
    assert run.returncode == 0, run.stderr
    timer = run.context["timer"]
    tick, smallest = timer["tick_s"], timer["min_step_s"]
    assert 0 < tick <= smallest < 1e-3
    assert tick >= timer["resolution_s"] * 0.999  # the clock never moves by less than it claims
    ratio = smallest / tick  # every difference of reads is a multiple of the tick
    assert abs(ratio - round(ratio)) < 1e-6


def test_a_target_finer_than_the_clock_stops_at_its_resolution(engine_mpich, mpich_launch):
    """On one rank a 4-byte collective takes tens of ns, a few ticks: a target of 1e-6 x median
    is far below half a tick, so no number of samples converges. The core stops such a point at
    the clock's floor instead of at --max-time, and says why."""
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", "4", "--ci-target", "0.000001",
                     "--max-time", "20", "--max-reps", "10000000", "barrier", "allreduce")
    assert run.returncode == 0, run.stderr
    tick_us = run.context["timer"]["tick_s"] * 1e6
    for p in run.points():
        t = p["time_us"]
        assert p["stop_reason"] == "timer_resolution", p
        assert not p["converged"] and not parse_record(p).stopped_early
        step = max(tick_us, p["sample_step_us"])
        assert t["median"] - t["ci_low"] <= 2 * step + 1e-12 and t["ci_high"] - t["median"] <= 2 * step + 1e-12
        assert p["elapsed_s"] < 20


def test_every_point_records_every_rank_s_counters(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,64K", "--max-time", "0.05", "pingpong",
                     "allreduce")
    assert run.returncode == 0, run.stderr
    for p in run.points():
        d = p["disturbance"]
        assert set(d) == set(FIELDS)
        for name in FIELDS:
            assert len(d[name]) == p["ranks"]
            assert all(x is not None and x >= 0 for x in d[name]), (name, d[name])
        assert all(float(x).is_integer() for x in d["nivcsw"] + d["nvcsw"])
        assert min(d["run_queue"]) >= 1  # the rank reading it is runnable
    (end,) = [r for r in run.records if r["type"] == "end"]
    whole = end["disturbance"]  # the launch's counters cover every point's
    assert set(whole) == set(FIELDS) and all(len(whole[name]) == 2 for name in FIELDS)
    for rank in range(2):
        assert whole["nivcsw"][rank] >= sum(p["disturbance"]["nivcsw"][rank] for p in run.points())


@pytest.fixture
def busy_core0() -> Iterator[None]:
    """Two processes that never sleep pinned to each of CPUs 0 and 1, where the ranks are bound
    (which rank the launcher puts on which core is its own business)."""
    taskset = shutil.which("taskset")
    if taskset is None or (os.cpu_count() or 1) < 2:
        pytest.fail("this test needs taskset (util-linux) and two cores")
    procs = [subprocess.Popen([taskset, "-c", cpu, "sh", "-c", "while :; do :; done"])
             for cpu in ("0", "0", "1", "1")]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_busy_process_on_a_rank_s_core_disturbs_the_point(engine_mpich, mpich_bin: Path, busy_core0):
    """Each of the three processes on a core gets a scheduler slice of milliseconds in turn, so
    the ranks lose their cores every few ms and 16 MiB events (milliseconds) are hit: the
    involuntary switches rise and the rule names them as the cause."""
    launch = [str(mpich_bin / "mpiexec"), "-n", "2", "-bind-to", "core"]
    # 16 MiB events last milliseconds, as long as a scheduler slice: most of them lose the core
    run = run_engine(launch, engine_mpich, "--sizes", "16M", "--min-reps", "40", "--max-time", "2",
                     "--warmup", "1", "pingpong")
    assert run.returncode == 0, run.stderr
    (rec,) = run.points()
    assert rec["rank_cpus"][0] == 0
    switches = rec["disturbance"]["nivcsw"]
    events = rec["time_us"]["n"] + rec["warmup"]
    # the worst rank, as the rule reads it (the scheduler may also move the partner's turns)
    assert max(switches) > 0.2 * events, (switches, events)
    cause = disturbed(parse_record(rec), parse_record(run.context))
    assert cause.startswith("involuntary context switches "), cause
    assert int(cause.split()[3]) == max(switches) and "run queue" in cause
    # the launch as a whole: its end record's counters under the same rule, beside the point's
    (end,) = [r for r in run.records if r["type"] == "end"]
    whole = launch_disturbed(parse_record(end), parse_record(run.context), [parse_record(rec)])
    assert whole.startswith("involuntary context switches "), whole
