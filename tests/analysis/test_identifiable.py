"""Models never print the impossible (issue 28, point 7): on synthetic fits with a known truth,
a parameter whose interval reaches 0 is "not identifiable" with its reason in the terminal, the
JSON, the HTML and the API; a regime of large messages only keeps its bandwidth; predict refuses
a falling line."""
from __future__ import annotations

import argparse
import math
import re

import pytest

from mpiscope.analysis.hockney import MIB, fit_hockney, implausible
from mpiscope.records.measured import Synthetic
from mpiscope.api import Model
from mpiscope.util.errors import UsageError
from mpiscope.report.hockney import format_hockney_table, issue_text, why
from mpiscope.report.model import render, model_summary, to_json

from .conftest import make_points, typed

# A notebook's case: a flat small-message sweep whose noise tilts the line down (beta -0.0002
# us/byte printed with "bandwidth inf").
FLAT = [Synthetic(n, 5.0 - 0.0002 * n + (0.02 if n in (8, 32) else -0.02), None, None)
        for n in (1, 2, 4, 8, 16, 32, 64)]


def test_a_flat_line_has_no_identifiable_per_byte_cost_and_no_bandwidth():
    f = fit_hockney(FLAT)
    assert f.beta_us_per_byte < 0 and f.beta_ci[0] < 0 < f.beta_ci[1]  # the interval reaches 0
    assert f.latency_issue is None and f.per_byte_issue and not f.valid
    assert "reaches 0: the bandwidth is unbounded" in why(f)
    table = format_hockney_table({"flat": f})
    rows = dict(line.split("  ", 1) for line in table.splitlines()[2:8])
    assert rows["Throughput (MB/s)"].strip() == "not identifiable"
    assert rows["n_1/2 (bytes)"].strip() == "not identifiable"
    assert "inf" not in table and "-0.0002" not in rows["Tc (us/byte)"]
    assert rows["Latency Ts (us)"].strip().startswith("4.9") or rows["Latency Ts (us)"].strip().startswith("5")
    assert issue_text(implausible(f)).startswith("negative per-byte cost")  # predict must not extrapolate it


def test_a_regime_of_large_messages_keeps_its_bandwidth_within_its_interval():
    """A 200 Mbit/s shaped link: 25 MB/s and a latency the sizes cannot show (it is 50 us, but
    against 40 ms at 1 MiB the intercept's interval spans 0)."""
    truth_MBps = 25.0
    pts = make_points(lambda n: 50.0 + n / truth_MBps, [2 ** k for k in range(18, 23)], noise=0.01, seed=0)
    f = fit_hockney(pts)
    assert f.latency_issue and f.alpha_ci[0] < 0 < f.alpha_ci[1]
    assert f.per_byte_issue is None
    lo, hi = (v * MIB / 1e6 for v in f.bandwidth_ci)
    assert lo <= truth_MBps <= hi and lo <= f.bandwidth_MBps <= hi
    assert implausible(f) is None  # its line still prices its own sizes
    s = model_summary([typed(p) for p in pts])
    text = render(s)
    assert "Throughput (MB/s)" in text and f"{f.bandwidth_MBps:.4g}" in text
    assert "Latency Ts (us)       not identifiable" in text and "latency" in text.split("Summary")[1]
    regime = to_json(s)["regimes"][0]
    assert regime["alpha_us"] is None and regime["alpha_ci"] is None and regime["n_half_bytes"] is None
    assert regime["bandwidth_MBps"] == pytest.approx(f.bandwidth_MBps)
    assert regime["valid"] is False and "latency" in regime["not_identifiable"]["latency"]
    assert regime["not_identifiable"]["per_byte"] is None


def test_the_api_model_says_valid_or_not_and_why():
    good = Model(model_summary([typed(p) for p in make_points(lambda n: 2.0 + n / 1e4, [2 ** k for k in range(0, 21, 5)])]))
    assert good.valid and good.why == "" and good.regimes["valid"].all()
    bad = Model(model_summary([typed(p) for p in FLAT]))
    assert not bad.valid and "negative per-byte cost" in bad.why
    row = bad.regimes.iloc[0]
    assert math.isnan(row["bandwidth_MBps"]) and math.isnan(row["n_half_bytes"]) and not row["valid"]
    assert "unbounded" in row["why"]


def test_n_half_and_bandwidth_bounds_that_cross_zero_are_not_printed_in_the_report():
    """A sweep report once printed n1/2 [-4273, 16580] and 1/beta [1571, inf]."""
    from mpiscope.report.html import _models
    from mpiscope.report.plots import SeriesModel
    from mpiscope.analysis.switches import find_switches
    small = make_points(lambda n: 1.0 + 0 * n, [1, 2, 4, 8, 16, 32], noise=0.002)
    big = make_points(lambda n: 4.0 + n / 2000.0, [2 ** k for k in range(13, 19)], noise=0.002)
    rep = find_switches(small + big, reps=50)
    html = _models([SeriesModel("pingpong", "pingpong", rep)])
    shown = re.sub(r' title="[^"]*"', "", html)  # the reasons, on hover
    assert shown.count("not identifiable") == 3 and "inf" not in shown and "[-" not in shown
    assert 'title="per-byte cost' in html


def test_predict_refuses_a_falling_line_with_one_usage_error():
    from mpiscope.commands.predict import params_from_args
    a = argparse.Namespace(alpha=None, beta=None, gamma=None, from_run=None, runs_dir=None)
    with pytest.raises(UsageError, match="no pingpong regime that is a model") as caught:
        params_from_args(a, fallback=[typed(p) for p in FLAT])
    assert "\n" not in str(caught.value)
