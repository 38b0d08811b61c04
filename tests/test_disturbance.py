"""The disturbed-launch rule on synthetic counters with a known answer, and its column in the
tidy table of a real run."""
from __future__ import annotations

import json

import pytest

from mpiscope.records import Context, Point, Stats
from mpiscope.results.disturbance import (CLOCK_ERROR_SHARE, INVALID_SHARE, MIN_SWITCHES, STEAL_SHARE,
                                          SWITCH_SHARE, Counters, cause, counters)

QUIET = Counters(involuntary_switches=3, events=1000, samples=900, invalid=0, steal_s=0.0, elapsed_s=1.0,
                 run_queue=2, cores=2, clock_error_share=0.1)


def with_(**kw) -> Counters:
    return Counters(**{**vars(QUIET), **kw})


def test_a_quiet_point_is_not_disturbed():
    assert cause(QUIET) == ""
    assert cause(with_(involuntary_switches=None, steal_s=None, run_queue=None, clock_error_share=None)) == ""


@pytest.mark.parametrize("share, hit", [(SWITCH_SHARE * 0.9, False), (SWITCH_SHARE * 1.1, True)])
def test_involuntary_switches_beyond_their_share_of_events_disturb(share, hit):
    got = cause(with_(involuntary_switches=share * 1000, run_queue=5))
    assert bool(got) is hit
    if hit:
        assert got == f"involuntary context switches {share * 1000:.0f} in 1000 events (run queue 5 on 2 cores)"


def test_a_few_switches_on_a_short_point_are_not_a_disturbance():
    assert cause(with_(involuntary_switches=MIN_SWITCHES - 1, events=MIN_SWITCHES)) == ""
    assert cause(with_(involuntary_switches=MIN_SWITCHES, events=MIN_SWITCHES)) != ""


def test_steal_invalid_samples_and_clock_error_each_name_their_cause():
    stolen = cause(with_(steal_s=2 * (STEAL_SHARE * 1.5)))  # over 1 s on 2 cores
    assert stolen == f"CPU steal {STEAL_SHARE * 1.5:.0%} of the host's time"
    invalid = cause(with_(samples=100, invalid=int(100 * INVALID_SHARE) + 10))
    assert invalid.startswith("invalid samples ") and "a rank started late" in invalid
    assert "clock-sync error" in cause(with_(clock_error_share=CLOCK_ERROR_SHARE * 2))
    every = cause(with_(involuntary_switches=900, steal_s=1.0, invalid=900, clock_error_share=5.0))
    assert every.count("; ") == 3 and every.startswith("involuntary")


def test_a_clock_bound_alone_is_not_called_a_busy_machine():
    """A tiny collective shorter than the ranks' clocks agree is flagged on an idle machine too:
    its flag names the clocks, not a busy machine, unless another cause joins it."""
    from types import SimpleNamespace
    from mpiscope.results.disturbance import clock_bound_only
    from mpiscope.results.evidence import busy_flag
    clock = cause(with_(clock_error_share=CLOCK_ERROR_SHARE * 1.2))
    both = cause(with_(clock_error_share=CLOCK_ERROR_SHARE * 1.2, steal_s=1.0))
    assert clock_bound_only(clock) and not clock_bound_only(both) and not clock_bound_only("")

    def flag(*causes: str) -> str:  # a point whose launches `causes` were left out, the first commonest
        return busy_flag(SimpleNamespace(busy=causes[0], disturbed=causes))
    assert flag(clock, clock) == f"shorter than the clocks agree: {clock}"
    assert flag(both, both) == f"machine busy: {both}"
    # the commonest cause the clock's, but another launch disturbed otherwise: a busy machine
    assert flag(clock, clock, "invalid samples 40% (a rank started late)") == f"machine busy: {clock}"


def test_the_worst_rank_decides_and_unknowns_are_ignored():
    p = Point("pingpong", 8, 2, Stats(90), invalid=0, warmup=10, elapsed_s=0.5,
              disturbance={"nvcsw": [0, 0], "nivcsw": [2, 40], "steal_s": [None, None], "run_queue": [3, 4],
                           "loadavg_1m": [1.0, 1.0]})
    c = counters(p, Context(world_size=2, cores_online=2))
    assert (c.involuntary_switches, c.events, c.run_queue, c.steal_s, c.cores) == (40, 100, 4, None, 2)
    assert cause(c) == "involuntary context switches 40 in 100 events (run queue 4 on 2 cores)"
    assert cause(counters(Point("pingpong", 8, 2, Stats(90)), None)) == ""  # no counters: an older record


def test_the_tidy_table_has_one_disturbed_cell_per_point_and_launch(cli, tmp_path):
    """A real run of two launches; one launch's records then carry counters that the rule calls
    disturbed (as a loaded machine would), the other's stay as measured. Every record is kept."""
    from mpiscope.results.table import tidy
    from mpiscope.store.runs import list_runs
    done = cli("run", "--runs-dir", str(tmp_path), "--sizes", "8,1K", "--max-time", "0.05", "--launches", "2",
               "-b", "pingpong", "--no-report", timeout=900)
    assert done.returncode == 0, done.stderr
    (run,) = list_runs(tmp_path)
    path = run.path / "records.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for rec in lines:
        if rec["type"] == "point" and rec.get("tag", {}).get("launch") == 1:
            rec["disturbance"]["nivcsw"] = [10_000, 0]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    table = tidy([run])
    assert len(table) == 4 and set(table["launch"]) == {0, 1}
    loaded = table[table["launch"] == 1]
    assert all(c.startswith("involuntary context switches 10000 in ") for c in loaded["disturbed"])
    assert all(isinstance(c, str) for c in table["disturbed"])
