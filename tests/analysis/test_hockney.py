"""Hockney fit: recovers known alpha and beta within 2 % despite noise and
outliers; CIs cover the truth; cycles and the summary table."""
from __future__ import annotations

import pytest

from mpiscope.analysis.clock import Clock, detect_clock
from mpiscope.analysis.hockney import fit_hockney
from mpiscope.report.hockney import format_hockney_table
from mpiscope.analysis.measured import select, sigma
from mpiscope.records.measured import Synthetic
from mpiscope.records import Context, End, Point, Stats, Timeout
from mpiscope.results.policy import POLICY

from .conftest import make_points

ALPHA, BETA = 1.5, 1 / 9000.0       # us, us/byte (~9 GB/s)
POW2 = [0] + [2 ** k for k in range(23)]


@pytest.mark.parametrize("seed", range(10))
def test_recovers_alpha_beta_within_2_percent_with_outliers(seed):
    sizes = sorted(set(POW2 + [3 * 2 ** k for k in range(21)]))
    pts = make_points(lambda n: ALPHA + BETA * n, sizes, noise=0.01, seed=seed,
                      outliers=[4, 17, 40], outlier_factor=1.8)
    fit = fit_hockney(pts, reps=500)
    assert fit.alpha_us == pytest.approx(ALPHA, rel=0.02)
    assert fit.beta_us_per_byte == pytest.approx(BETA, rel=0.02)
    assert set(fit.outliers) >= {sizes[4], sizes[17], sizes[40]}


def test_intervals_cover_truth_most_of_the_time():
    hits = 0
    for seed in range(40):
        pts = make_points(lambda n: ALPHA + BETA * n, POW2, noise=0.02, seed=seed)
        f = fit_hockney(pts, reps=500)
        hits += f.alpha_ci[0] <= ALPHA <= f.alpha_ci[1] and f.beta_ci[0] <= BETA <= f.beta_ci[1]
    assert hits >= 30            # two 95 % intervals at once, bootstrap on 24 points


def test_derived_quantities_and_their_intervals():
    pts = make_points(lambda n: ALPHA + BETA * n, POW2, noise=0.0)
    f = fit_hockney(pts, reps=200)
    bw = 1e6 / BETA / 2 ** 20
    assert f.bandwidth_MiBps == pytest.approx(bw, rel=1e-6)
    assert f.n_half == pytest.approx(ALPHA / BETA, rel=1e-6)
    assert f.bandwidth_ci[0] <= f.bandwidth_MiBps <= f.bandwidth_ci[1]
    assert f.n_half_ci[0] <= f.n_half <= f.n_half_ci[1]


def test_few_points_use_covariance_intervals():
    pts = make_points(lambda n: ALPHA + BETA * n, [1, 1024, 65536, 1 << 20], noise=0.01)
    f = fit_hockney(pts)
    assert "covariance" in f.ci_method
    assert f.alpha_ci[0] < f.alpha_us < f.alpha_ci[1]


def test_cycles_match_a_known_conversion():
    # an IBM SP within a node: Ts 2.393 us = 1675 cycles, Tc 0.002606 us/B = 1.824 cycles/B (700 MHz)
    pts = [Synthetic(n, 2.393310547 + 0.002606123 * n, None, None) for n in (8, 1024, 65536, 1 << 20)]
    f = fit_hockney(pts, clock=Clock(700.0, "override"))
    assert f.alpha_cycles == pytest.approx(1675.317, rel=1e-3)
    assert f.beta_cycles_per_byte == pytest.approx(1.824286, rel=1e-3)
    assert f.bandwidth_MiBps == pytest.approx(365.936, rel=1e-3)
    table = format_hockney_table({"within a node": f})
    for row in ("Latency Ts (us)", "alpha (cycles)", "Throughput (MB/s)",
                "Tc (us/byte)", "beta (cycles/byte)"):
        assert row in table
    assert "1675" in table and "383.7" in table  # 365.9 MiB/s in MB/s and "700.0 MHz (override)" in table


def test_clock_detection_order(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2400.5\n"
                                           "processor\t: 1\ncpu MHz\t\t: 1200.0\n")
    assert detect_clock(root=tmp_path) == Clock(2400.5, "/proc/cpuinfo cpu MHz")
    assert detect_clock(root=tmp_path, cpus=[1]).mhz == 1200.0
    freq = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3500000\n")
    assert detect_clock(root=tmp_path).mhz == 3500.0
    assert detect_clock(root=tmp_path, context=Context(world_size=2, cpu_mhz=3000)).source.startswith("context")
    assert detect_clock(1000.0, root=tmp_path) == Clock(1000.0, "override")
    assert detect_clock(root=tmp_path / "nothing") is None


def test_points_from_engine_records():
    recs = [Context(world_size=2),
            Point("pingpong", 8, 2, Stats(n=10, median=1.0, ci_low=0.9, ci_high=1.1)),
            Point("bw", 8, 2, Stats(n=10, median=0.3, ci_low=0.2, ci_high=0.4)),
            Point("pingpong", 0, 2, Stats(n=10, median=0.9, ci_low=0.89, ci_high=0.91), samples_us=(0.9, 0.91)),
            Point("pingpong", 16, 2, Stats(n=0, median=None)),  # no valid sample: nothing to fit
            Timeout("pingpong", 32, 2), End(points=4)]
    pts = select(recs)
    assert [p.size for p in pts] == [0, 8]
    assert pts[0].samples == (0.9, 0.91)
    assert sigma(pts[1]) == pytest.approx(0.1 / POLICY.z95)  # the one normal quantile (results.policy)
    assert sigma(Synthetic(8, 100.0, 99.99, 100.01)) == pytest.approx(0.5)  # floored at 0.5 % of the median
