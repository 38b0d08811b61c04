"""The warm-up is capped in time as the sampling is (issue 44): after `--warmup` events it goes on
towards the bytes of `--warmup-bytes` (at most 1000 events) only while it has lasted less than
`--max-time`. A starved rank (ranks sharing their cores with busy processes) once took 0.5-0.9 s
to warm up a 64-message bw window 1000 times, against 30 ms alone, before sampling that stops at
`--max-time` anyway. Where the cap is not reached the count is the byte rule's, as before."""
from __future__ import annotations

from conftest import run_engine


def test_a_warm_up_past_the_time_cap_stops_after_the_warmup_events(engine_mpich, mpich_launch):
    # 1 us: any 8 events of either benchmark outlast it, so the cap ends every warm-up at --warmup
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,1K", "--warmup", "8", "--max-time", "0.000001",
                     "bw", "pingpong")
    assert run.returncode == 0, run.stderr
    points = run.points()
    assert len(points) == 4 and all(p["time_us"]["n"] >= 1 for p in points)  # every point still measured
    assert [p["warmup"] for p in points] == [8, 8, 8, 8]


def test_a_warm_up_within_the_time_cap_is_the_byte_rule_s(engine_mpich, mpich_launch):
    # each benchmark's warm-up pumps data through: --warmup-bytes over the size events, at least
    # --warmup and at most 1000 (a 0-byte message: 1000)
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "0,1K,1M", "--warmup", "3", "--warmup-bytes", "4M",
                     "--max-time", "600", "--reps", "5", "bw", "pingpong")
    assert run.returncode == 0, run.stderr
    warmups = {b: [p["warmup"] for p in sorted(run.points(), key=lambda p: p["size"]) if p["benchmark"] == b]
               for b in ("bw", "pingpong")}
    assert warmups == {"bw": [1000, 1000, 4], "pingpong": [1000, 1000, 4]}
