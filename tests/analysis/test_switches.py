"""Switch detection: every known break within 5 % of its size, no false
breaks on clean or noisy lines, staircases found, refinement converges."""
from __future__ import annotations

import numpy as np
import pytest

from mpiscope.analysis.switches import find_switches, refine
from mpiscope.report.switches import format_switches

from .conftest import geometric_sizes, make_points

DENSE = [0] + geometric_sizes(1, 4 << 20, 1.04)
POW2 = [0] + [2 ** k for k in range(23)]
LINEAR = list(range(0, 4097, 32))
BREAKS = (12000, 300000)


def three_regimes(n):
    # eager (fast, copy-bound), rendezvous (extra round trip), large (pipelined)
    return np.where(n < BREAKS[0], 1.0 + n / 8000.0,
                    np.where(n < BREAKS[1], 4.0 + n / 12000.0, 30.0 + n / 11000.0))


@pytest.mark.parametrize("seed", range(8))
def test_finds_every_break_within_5_percent(seed):
    pts = make_points(three_regimes, DENSE, noise=0.01, seed=seed, outliers=[40, 200])
    r = find_switches(pts, reps=200)
    assert len(r.switches) == len(BREAKS)
    for sw, true in zip(r.switches, BREAKS):
        assert abs(sw.size - true) / true <= 0.05
    fits = [reg.fit for reg in r.regimes]
    assert fits[0].alpha_us == pytest.approx(1.0, rel=0.02)
    assert fits[0].beta_us_per_byte == pytest.approx(1 / 8000.0, rel=0.02)
    assert fits[1].beta_us_per_byte == pytest.approx(1 / 12000.0, rel=0.02)
    assert fits[2].beta_us_per_byte == pytest.approx(1 / 11000.0, rel=0.02)


def test_slope_change_without_jump():
    # continuous T: the bandwidth changes at 65536, the latency term does not jump
    T = lambda n: np.where(n < 65536, 2 + n / 5000.0, 2 + 65536 / 5000.0 + (n - 65536) / 10000.0)
    r = find_switches(make_points(T, DENSE, noise=0.01, seed=1), reps=200)
    assert len(r.switches) == 1
    assert abs(r.switches[0].size - 65536) / 65536 <= 0.05


@pytest.mark.parametrize("sizes", [DENSE, POW2, LINEAR], ids=["dense", "pow2", "linear"])
@pytest.mark.parametrize("noise", [0.0, 0.01, 0.03])
def test_no_false_breaks_on_a_line(sizes, noise):
    false = 0
    for seed in range(10):
        pts = make_points(lambda n: 1.2 + n / 9000.0, sizes, noise=noise, seed=seed,
                          outliers=[7, 20] if noise else [])
        false += len(find_switches(pts, reps=50).switches)
    assert false == 0


def test_eager_then_packet_staircase():
    # an IBM SP-like staircase: eager up to 1000 bytes, then ~480-byte packets
    T = lambda n: np.where(n < 1000, 5.0 + n * 0.002,
                           9.0 + 1.2 * np.floor((n - 1000) / 480.0) + 0.0005 * n)
    r = find_switches(make_points(T, list(range(8, 4097, 24)), noise=0.005, seed=3), reps=200)
    assert len(r.switches) == 1 and abs(r.switches[0].size - 1000) <= 50
    assert len(r.steps) == 1
    st = r.steps[0]
    assert st.period == pytest.approx(480, rel=0.05)
    assert abs(st.start - 1480) <= 48 and st.count >= 5
    assert r.regimes[1].steps == st
    text = format_switches(r)
    assert "packetisation" in text and "switch 1" in text


def test_refinement_converges_on_a_step_function():
    truth = (12345, 200000)
    T = lambda n: np.where(n <= truth[0], 2 + n / 5000.0,
                           np.where(n <= truth[1], 6 + n / 9000.0, 6 + n / 7000.0))
    calls: list[list[int]] = []

    def measure(sizes: list[int]):
        calls.append(sizes)
        return make_points(T, sizes, noise=0.01, seed=len(calls))

    pts, r = refine(measure, make_points(T, POW2, noise=0.01), tolerance=0.05)
    assert 1 <= len(calls) <= 10
    assert len(r.switches) == 2
    for sw, true in zip(r.switches, truth):
        assert abs(sw.size - true) / true <= 0.05
        assert sw.bracket[0] <= true + 1 and sw.bracket[1] >= true
        assert (sw.bracket[1] - sw.bracket[0]) <= 0.05 * sw.bracket[1]
    assert len(pts) == len(POW2) + sum(map(len, calls))
    # every batch re-measures its bracket's ends, so it straddles the switch alone
    first = set(calls[0])
    assert any(n in POW2 for n in first)


def test_refinement_stops_at_once_without_switches():
    calls = []
    pts, r = refine(lambda s: calls.append(s) or [],
                    make_points(lambda n: 1 + n / 1e4, POW2, noise=0.01))
    assert calls == [] and r.switches == ()


def test_repeated_sizes_and_a_single_size_segment():
    # every size measured three times (three launches): no segment may be one size
    T = lambda n: np.where(n < 4096, 1 + n / 4000.0, 3 + n / 6000.0)
    sizes = [2 ** k for k in range(4, 20)]
    pts = sum((make_points(T, sizes, noise=0.01, seed=s) for s in range(3)), [])
    r = find_switches(pts, reps=100)
    assert len(r.switches) == 1 and r.switches[0].bracket == (2048, 4096)
    assert all(reg.size_range[0] < reg.size_range[1] for reg in r.regimes)


def test_too_few_sizes_is_a_clear_error():
    with pytest.raises(ValueError, match="different sizes"):
        find_switches(make_points(lambda n: 1 + n, [1, 2, 4]))
