"""A hang is no progress (issue 44): mpiscope's own wall-clock limit follows the progress the
engine reports, for real. One rank of a ping-pong run is stopped most of the time (SIGSTOP, then
SIGCONT for a few ms, in a cycle) while its 16 B point runs far past mpiscope's limit, which the
test shortens: the engine says at each of its own limits that the point still progresses, the
point is measured (slowed, not hung) and the size after it too, in the same launch. A real
deadlock (the ring study's unsafe algorithm past MPICH's eager limit) is still a hang at its size,
found by the engine's watchdog within its limit."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import mpiscope.execute.part as part_module
from mpiscope_test_fixtures._proc import engine_ranks_below, signal_alive

# Stopped most of each cycle, running a few ms: the ping-pong moves on at most 1/40 of its pace.
STOPPED_S, RUNNING_S = 0.195, 0.005
# mpiscope's limit for the whole launch in this test (MPICH starts and measures 8 B within it on
# a busy machine): short, so the slowed point outlives it, the fixed limit a launch had before.
LAUNCH_S = 20.0
# The slowed point's events as free-running seconds: its engine limit is about 8 x this (from the
# 8 B point before it), while cycled it takes about 40 x this.
FREE_S = 0.6


def records_of(run: Path) -> list[dict]:
    path = run / "records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def ranks_below(root: int) -> list[int]:
    """The pids of the engine's ranks started below `root` (this test's, not other jobs'), without
    the engine's --plan calls."""
    return engine_ranks_below(root, lambda args: args.split(" ", 1)[0].endswith("mpiscope-engine")
                              and " --plan" not in args)


def slow_the_16_bytes(runs: Path, done: threading.Event) -> None:
    """Once the run's 8 B point is stored, cycle one rank until the 16 B point is (or 120 s)."""
    def stored(size: int) -> bool:
        return any(r["type"] in ("point", "timeout") and r.get("size") == size
                   for run in runs.glob("*") for r in records_of(run))
    until = time.monotonic() + 120
    while not stored(8) and not done.is_set() and time.monotonic() < until:
        time.sleep(0.01)
    ranks = ranks_below(os.getpid())
    stopped = max(ranks, default=0)
    try:
        while stopped and not done.is_set() and not stored(16) and time.monotonic() < until \
                and signal_alive(stopped, signal.SIGSTOP):
            time.sleep(STOPPED_S)
            signal_alive(stopped, signal.SIGCONT)
            time.sleep(RUNNING_S)
    finally:
        for pid in ranks:
            signal_alive(pid, signal.SIGCONT)


def engine_limit_s(point8: dict, reps: int) -> float:
    """The engine's first watchdog limit for the 16 B point, as measure.c derives it from the 8 B
    point's median event: twice its size, four times the events at least warmed up and measured."""
    event16_s = 2 * point8["time_us"]["median"] * point8["ops_per_event"] * 1e-6
    return max(2.0, 3 * 0.05 + (max(point8.get("warmup", 0), 1000) + 3 + reps) * event16_s * 4)


def wall_event_s(point: dict) -> float:
    """Wall-clock seconds per event, warm-up included: on a busy machine far above the median."""
    return point["elapsed_s"] / (point["time_us"]["n"] + point.get("warmup", 0))


def test_a_point_slowed_past_mpiscopes_limit_is_measured_and_so_are_the_sizes_after_it(cli, tmp_path, monkeypatch):
    common = ["-b", "pingpong", "--launches", "1", "--max-time", "0.05", "--no-progress", "--no-report"]
    pace = cli("run", *common, "--sizes", "16", "--reps", "2000", "--runs-dir", str(tmp_path / "pace"))
    assert pace.returncode == 0, pace.stderr
    (paced,) = [r for run in (tmp_path / "pace").iterdir() for r in records_of(run) if r["type"] == "point"]
    reps = min(max(int(FREE_S / wall_event_s(paced)), 2000), 5_000_000)
    # mpiscope's limit after the 8 B point: above the engine's limit for 16 B, as the product's
    # is (else mpiscope would stop the point before the engine could say it progresses), but far
    # below what the slowed point takes (about 40 free-running paces, the engine's limit 8)
    limits: dict[str, float] = {}

    def after_8_bytes_s(runs: Path) -> float:
        (point8,) = [r for run in runs.iterdir() for r in records_of(run) if r["type"] == "point" and r["size"] == 8]
        limits["after"] = 2 * engine_limit_s(point8, reps) + 2
        return limits["after"]

    monkeypatch.setattr(part_module, "launch_limit_s",
                        lambda planned, entries, timeout_s, sim=None: LAUNCH_S if len(entries) == 3 else after_8_bytes_s(runs))
    for attempt in range(3):
        runs = tmp_path / f"slowed{attempt}"
        done = threading.Event()
        staller = threading.Thread(target=slow_the_16_bytes, args=(runs, done), daemon=True)
        staller.start()
        try:
            r = cli("run", *common, "--sizes", "8,16,32", "--reps", str(reps), "--runs-dir", str(runs), timeout=300)
        finally:
            done.set()
            staller.join(timeout=30)
        assert r.returncode == 0, r.stderr
        (run,) = runs.iterdir()
        recs = records_of(run)
        points = {p["size"]: p for p in recs if p["type"] == "point"}
        if points.get(16, {}).get("elapsed_s", 0) > max(LAUNCH_S, limits.get("after", 0)):
            break
        reps *= 4  # the machine ran faster than it was paced: the point ended within the limit
    # no time-out at all: the slowed point is measured, and so is the size after it, in one launch
    assert [r for r in recs if r["type"] == "timeout"] == [], r.stderr
    assert sorted(points) == [8, 16, 32]
    slowed = points[16]
    # what mpiscope's fixed limit would have called a hang, and past its limit after the 8 B point
    assert slowed["elapsed_s"] > max(LAUNCH_S, limits["after"])
    assert slowed["watchdog_extensions"] >= 1  # past the engine's own limit too, while it progressed
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and len(meta["launches"]) == 1 and meta["timeouts"] == []
    assert not any("hung" in w for w in meta["warnings"])
    # the engine said so while it ran, with the count of events its rank 0 had finished
    stderr = (run / "stderr.txt").read_text()
    assert "still progressing: pingpong 16 B on 2 ranks" in stderr and "events finished: " in stderr
    counts = [int(line.rsplit(": ", 1)[1]) for line in stderr.splitlines() if "events finished: " in line]
    assert counts and all(n > 0 for n in counts)


def test_a_deadlock_is_still_a_hang_at_its_size_found_by_the_watchdog(cli, tmp_path):
    """MPICH's eager limit sits between 4 and 8 KiB: the unsafe ring deadlocks from 8 KiB on."""
    r = cli("run", "-n", "2", "-b", "ringcs1", "--sizes", "2K:32K", "--max-time", "0.05", "--launches", "1",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    recs = records_of(run)
    hung = [t for t in recs if t["type"] == "timeout"]
    assert [t["size"] for t in hung] == [8192, 16384]  # two in a row: the larger size is given up
    # the engine's watchdog found each within its own limit (a few seconds), not mpiscope's
    assert all(t.get("source") is None and t["limit_s"] < 30 for t in hung)
    assert {(p["type"], p["size"]) for p in recs if p["type"] in ("point", "skip")} == \
        {("point", 2048), ("point", 4096), ("skip", 32768)}
    meta = json.loads((run / "run.json").read_text())
    assert all(launch["wall_s"] < launch["limit_s"] for launch in meta["launches"])


def test_a_time_out_while_progressing_reads_slowed_in_the_tables_never_hung_or_deadlocked():
    """The sweep's side-by-side table and the ring study's deadlock table: a point mpiscope
    stopped while it still progressed (a starved ring cannot deadlock) is slowed, not hung."""
    from types import SimpleNamespace

    import pandas as pd

    from mpiscope.report.deadlocks import deadlock_table
    from mpiscope.records import Timeout
    from mpiscope.records.model import STILL_PROGRESSING
    from mpiscope.report.table import _marks
    from mpiscope.results.table import unmeasured

    tag = {"series": "alg1 1", "algorithm": 1, "load": 1}
    slowed = Timeout("ringcs1", 4096, 4, 70.0, None, STILL_PROGRESSING, tag)
    hung = Timeout("ringcs1", 8192, 4, 2.0, None, None, tag)
    runs = [SimpleNamespace(id="r1", records=lambda: [slowed]), SimpleNamespace(id="r2", records=lambda: [hung])]
    found = unmeasured(runs)
    assert list(found["what"]) == ["slowed", "hung"]
    part = pd.DataFrame({"run_id": ["r1", "r2"], "benchmark": ["ringcs1"] * 2, "size": [1024, 1024],
                         "config": ["a", "b"], "variant": [None, None]})
    assert _marks(part, found, False) == {(4096, "a"): "slowed", (8192, "b"): "hung"}
    (only_slowed,) = deadlock_table([slowed]).to_dict("records")
    assert only_slowed["deadlock"] is None and "not a deadlock" in only_slowed["result"]
    (both,) = deadlock_table([slowed, hung]).to_dict("records")
    assert both["deadlock"] == 8192 and both["result"].startswith("deadlock at 8192 bytes")
