"""`mpiscope model RUN` in one call, the launch-disagreement warning, LogGP."""
from __future__ import annotations

import numpy as np
import pytest

from mpiscope.analysis.loggp import LogGP, loggp_from_measurements
from mpiscope.analysis.model import model_records
from mpiscope.analysis.switches import find_switches
from mpiscope.report.switches import format_switches

from mpiscope.records import Context, End, RankPlace

from .conftest import make_points, typed


def engine_records(T, sizes, noise=0.01, seed=0, cpu_mhz=None):
    ctx = Context(world_size=2, ranks=(RankPlace(0, "h", (0,)), RankPlace(1, "h", (1,))), cpu_mhz=cpu_mhz)
    return [ctx, *(typed(p, n=100) for p in make_points(T, sizes, noise=noise, seed=seed)),
            End(points=len(sizes), elapsed_s=1.0)]


def test_model_records_end_to_end():
    T = lambda n: np.where(n <= 8192, 0.4 + n / 20000.0, 2.0 + n / 25000.0)
    sizes = sorted({0, *range(1, 65537, 1024), *(2 ** k for k in range(17))})
    r = model_records(engine_records(T, sizes, cpu_mhz=3000.0))
    assert len(r.switches) == 1 and abs(r.switches[0].size - 8192) / 8192 <= 0.05
    assert r.regimes[0].fit.clock.source.startswith("context")
    assert r.regimes[0].fit.alpha_cycles == pytest.approx(0.4 * 3000, rel=0.02)
    text = format_switches(r)
    assert "switch 1" in text and "beta (cycles/byte)" in text and "3000.0 MHz" in text


def test_model_records_needs_a_sweep():
    with pytest.raises(ValueError, match="--sizes"):
        model_records(engine_records(lambda n: 1 + n, [8]))


def test_warns_when_launches_disagree():
    line = lambda n: 1.0 + n / 9000.0
    sizes = [2 ** k for k in range(20)]
    a = make_points(line, sizes, noise=0.005, seed=1)
    b = make_points(lambda n: 1.4 * line(n), sizes, noise=0.005, seed=2)   # a slower launch
    r = find_switches(a + b, reps=50)
    assert r.repeat_spread == pytest.approx(0.4, abs=0.05)
    assert "launches disagree" in format_switches(r)
    assert "launches disagree" not in format_switches(find_switches(a, reps=50))


def test_loggp_from_netgauge_measurements():
    # stream of 64 messages: per-message time g + G n
    g, G = 0.3, 1 / 12000.0
    stream = make_points(lambda n: g + G * n, [2 ** k for k in range(1, 21)], noise=0.005)
    m = loggp_from_measurements(pingpong_small_us=1.0, send_overhead_us=0.2,
                                recv_overhead_us=0.25, stream=stream, window=64)
    assert m.L_us == pytest.approx(0.55)
    assert m.g_us == pytest.approx(g, rel=0.02)
    assert m.G_us_per_byte == pytest.approx(G, rel=0.02)
    assert m.ptp_time(1) == pytest.approx(1.0)
    m2 = LogGP(1.0, 0.1, 0.1, 0.5, 0.001)
    assert m2.stream_time(3, 1) == pytest.approx(0.1 + 2 * 0.5 + 1.0 + 0.1)
