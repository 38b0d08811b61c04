"""The watchdog tells a slow point from a stuck one, for real: one rank of a ping-pong is
stopped most of the time (SIGSTOP, then SIGCONT for a few ms, in a cycle) while its point runs
past its derived limit; the point still finishes, and its record says it was extended. A real
deadlock is still a time-out (tests/engine/test_ringcs.py, tests/test_reliability.py)."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

from conftest import ROOT_OK, run_engine
from mpiscope_test_fixtures._proc import engine_ranks_below, signal_alive

# Stopped most of each cycle, running a few ms: the ping-pong moves on only in those windows, at
# most 1/40 of its free pace.
STOPPED_S, RUNNING_S = 0.195, 0.005
# Events of the slowed point, as free-running seconds: its derived limit stays near the 2 s
# floor, and cycled it would take 40 times as long, so it is still running when the limit passes.
FREE_S = 0.15


def ranks_of(root: int, engine: Path) -> list[int]:
    """The pids of `engine` below `root` (this test's ranks, not other jobs')."""
    return engine_ranks_below(root, lambda args: args.startswith(str(engine)))


def event_s(point: dict) -> float:
    return point["time_us"]["median"] * point["ops_per_event"] * 1e-6


def derived_limit_s(first: dict, size: int, reps: int, max_time_s: float) -> float:
    """The engine's limit for `size` after `first` of the same series (docs/engine.md, step 7)."""
    work = 4 * (1000 + 3 + reps) * event_s(first) * size / first["size"]  # warm-up counted as 1000 at least
    return max(3 * max_time_s + work, 2.0)


def slowed_launch(engine: Path, launch: list[str], quick: list[str], reps: int) -> tuple[list[dict], float, str]:
    """pingpong at 8 B (free) and 16 B (one rank stopped in a cycle until both ranks' first
    alarms are past): the records, the 16 B point's derived limit, stderr."""
    proc = subprocess.Popen([*launch, str(engine), *quick, "--sizes", "8,16", "--reps", str(reps), "pingpong"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **ROOT_OK})
    lines: "queue.Queue[str | None]" = queue.Queue()
    threading.Thread(target=lambda: [*map(lines.put, proc.stdout), lines.put(None)], daemon=True).start()
    records: list[dict] = []
    limit = 0.0
    try:
        # the ranks, found while the free point runs: the slowed one may end before a look after it
        # (then its record shows it within its limit, and the caller sizes again)
        ranks: list[int] = []
        while len(ranks) < 2 and proc.poll() is None:
            ranks = ranks_of(proc.pid, engine)
            time.sleep(0.01)
        while not any(r["type"] == "point" for r in records):
            line = lines.get(timeout=120)
            assert line is not None, proc.stderr.read()
            records.append(json.loads(line))
        limit = derived_limit_s(records[-1], 16, reps, 0.05)
        stopped = max(ranks, default=0)
        # past both ranks' first alarms (the others wait 10 %, at least 1 s, longer than rank 0)
        until = time.monotonic() + limit + max(0.1 * limit, 1.0) + 1.5
        while time.monotonic() < until and proc.poll() is None and stopped and signal_alive(stopped, signal.SIGSTOP):
            time.sleep(STOPPED_S)
            signal_alive(stopped, signal.SIGCONT)
            time.sleep(RUNNING_S)
        while (line := lines.get(timeout=120)) is not None:
            records.append(json.loads(line))
    finally:
        for pid in ranks_of(proc.pid, engine):
            signal_alive(pid, signal.SIGCONT)
        if proc.poll() is None and records[-1:] and records[-1]["type"] != "end":
            proc.kill()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    return records, limit, err


def test_a_point_slowed_past_its_limit_while_it_progresses_is_not_a_hang(engine_mpich, mpich_launch):
    quick = ["--max-time", "0.05", "--warmup", "8", "--warmup-bytes", "8"]
    # how fast this machine ping-pongs now: the number of events is chosen from it
    pace = run_engine(mpich_launch(2), engine_mpich, *quick, "--sizes", "16", "--reps", "2000", "pingpong")
    assert pace.returncode == 0, pace.stderr
    reps = min(max(int(FREE_S / event_s(pace.points()[0])), 2000), 1_000_000)
    for _ in range(3):
        records, limit, err = slowed_launch(engine_mpich, mpich_launch(2), quick, reps)
        assert [r["type"] for r in records] == ["context", "control", "point", "point", "end"], err
        if records[3]["elapsed_s"] > limit:
            break
        reps *= 8  # the machine ran faster than it was paced: the point ended within its limit
    slowed = records[3]
    assert slowed["size"] == 16 and slowed["time_us"]["n"] == reps
    assert slowed["elapsed_s"] > limit
    assert slowed["watchdog_extensions"] >= 1
    assert abs(slowed["watchdog_limit_s"] - limit) < 0.01 * limit
    assert "watchdog_extensions" not in records[2]  # a point within its limit says nothing
    # and rank 0 said so on stderr as it happened (what mpiscope reads if its own limit stops a launch)
    assert "still progressing: pingpong 16 B on 2 ranks, past its limit" in err
