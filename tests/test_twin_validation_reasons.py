"""Why a twin's validation point is outside its target (analysis/calibrate/validation.py, worded in
report/calibrate.py), on synthetic validation rows: a cause the point's own size and benchmark name
(a regime switch the fit found, a breakpoint of SMPI's factors, messages in flight together) comes
before a disturbance of its launches, and "disturbed" is said only where it can be the cause (the
measured time the longer)."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from mpiscope.analysis.calibrate.validation import compare, factor_breakpoints
from mpiscope.report.calibrate import why

BUSY = "machine busy: 3 rank(s) shared their cores (run queue 4 on node-0)"


def frame(rows: list[tuple[str, int, float]], busy: str = "", ranks: int = 2) -> pd.DataFrame:
    """Launch-level estimates as the results layer gives them: (benchmark, size, median us) with a
    1 % interval; `busy` what it found disturbed every launch of them."""
    return pd.DataFrame([{"benchmark": b, "ranks": ranks, "size": n, "time_median_us": t,
                          "time_ci_low_us": t * 0.99, "time_ci_high_us": t * 1.01,
                          "point": SimpleNamespace(busy=busy, disturbed=())} for b, n, t in rows])


def reasons(measured: pd.DataFrame, simulated: pd.DataFrame, **known) -> dict[tuple[str, int], tuple[str, str]]:
    t = compare(measured, simulated, fitted=set(), held=set(), **known)
    return {(r.benchmark, r.size): (r.reason.kind, why(r.reason, r.benchmark)) for r in t.itertuples() if r.outside}


SIZES = [1024, 16384, 32768, 65536, 262144]


def test_a_switch_or_factor_breakpoint_comes_before_a_disturbance():
    # every launch disturbed, every point 30 % slower measured than simulated
    measured = frame([("pingpong", n, 10.0 + n / 1e3) for n in SIZES], busy=BUSY)
    simulated = frame([("pingpong", n, (10.0 + n / 1e3) * 0.7) for n in SIZES])
    # the fit found a switch between 16 and 32 KiB; SMPI's factors change at 64 KiB
    cfg = ["smpi/lat-factor:0:1.1;65536:1.3", "smpi/bw-factor:0:0.9;65536:0.97", "smpi/coll-selector:mpich"]
    got = reasons(measured, simulated, switches=((16384, 32768),), breakpoints=factor_breakpoints(cfg))
    assert got[("pingpong", 16384)][0] == got[("pingpong", 32768)][0] == "switch"
    assert "between 16384 and 32768 B" in got[("pingpong", 16384)][1]
    # SMPI's breakpoint at 64 KiB lies between the measured 32 KiB (taken by the switch) and 64 KiB
    assert got[("pingpong", 65536)] == ("breakpoint", "beside SMPI's factor breakpoint between 32768 and 65536 B: "
                                                       "its factors change at one size")
    # the sizes no switch or breakpoint is next to: the disturbance is what is left, and can cause it
    assert {n: got[("pingpong", n)] for n in (1024, 262144)} == {
        n: ("disturbed", f"the measurement was disturbed: {BUSY}") for n in (1024, 262144)}


def test_messages_in_flight_come_before_a_disturbance():
    measured = frame([("bw", 65536, 100.0)], busy=BUSY)
    simulated = frame([("bw", 65536, 50.0)])
    assert reasons(measured, simulated)[("bw", 65536)][0] == "in_flight"
    # ...but not before the measurement's own state: its interval wider than the target, or a
    # disturbance of the slower side that can have made it so
    wide = frame([("bw", 65536, 100.0)]).assign(time_ci_low_us=60.0, time_ci_high_us=160.0)
    assert reasons(wide, simulated)[("bw", 65536)][0] == "spread"
    assert reasons(measured.assign(time_ci_low_us=60.0, time_ci_high_us=160.0), simulated)[("bw", 65536)][0] == \
        "disturbed"


@pytest.mark.parametrize("simulated_us, kind", [(70.0, "disturbed"), (130.0, "algorithm")])
def test_disturbed_only_where_the_measurement_is_the_slower_side(simulated_us, kind):
    # a disturbance adds time to a measurement: a simulation 30 % slower is not explained by it
    measured = frame([("allreduce", 8, 100.0)], busy=BUSY, ranks=4)
    simulated = frame([("allreduce", 8, simulated_us)], ranks=4)
    got = reasons(measured, simulated, selector="ompi")[("allreduce", 8)]
    assert got[0] == kind
    if kind == "algorithm":
        assert got[1] == "SimGrid's ompi algorithm of allreduce, not the library's own code"


def test_an_undisturbed_point_keeps_the_fallbacks():
    measured = frame([("pingpong", 1024, 10.0), ("allreduce", 8, 20.0)])
    simulated = frame([("pingpong", 1024, 7.0), ("allreduce", 8, 14.0)])
    got = reasons(measured, simulated, breakpoints=(65536,))  # no measured size beside it
    assert {k: v[0] for k, v in got.items()} == {("pingpong", 1024): "regime", ("allreduce", 8): "algorithm"}


def test_factor_breakpoints_are_read_from_a_twins_cfg():
    cfg = ["smpi/lat-factor:0:1.1;1024:1.2;65536:1.3", "smpi/bw-factor:0:0.9;65536:0.97",
           "smpi/async-small-thresh:65537", "smpi/coll-selector:mpich"]
    assert factor_breakpoints(cfg) == (1024, 65536)
    assert factor_breakpoints(["smpi/bw-factor:0:1"]) == ()
