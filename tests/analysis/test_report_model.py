"""The model report on synthetic records with known parameters: Hockney regimes,
LogGP from overhead/pingpong/bw records, the hardware efficiency line, JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mpiscope.analysis.hw import hardware_from_records
from mpiscope.analysis.loggp import loggp_from_records
from mpiscope.report.model import render, model_summary, to_json

from mpiscope.records import Context, Point, RankPlace, Stats

from .conftest import make_points, typed


def records(bench: str, T, sizes, noise=0.005, seed=0) -> list[Point]:
    return [typed(p, bench, n=100) for p in make_points(T, sizes, noise=noise, seed=seed)]


CTX = Context(world_size=2, ranks=(RankPlace(0, "h", (0,)), RankPlace(1, "h", (1,))))
POW2 = [2 ** k for k in range(0, 23)]
PINGPONG = lambda n: np.where(n < 8192, 1.0 + n / 4000.0, 3.0 + n / 12000.0)
STREAM = lambda n: 0.4 + n / 9000.0


def full_run() -> list[Context | Point]:
    return [CTX, *records("pingpong", PINGPONG, POW2),
            *records("bw", STREAM, POW2, seed=1),
            *records("overhead_send", lambda n: 0.25 + n / 50000.0, [1, 64, 4096], seed=2),
            *records("overhead_recv", lambda n: 0.35 + n / 50000.0, [1, 64, 4096], seed=3),
            *records("memcpy", lambda n: 0.02 + n / 40000.0, [1024, 1 << 20, 1 << 22], seed=4),
            Point("cacheline", 0, 2, Stats(n=50, median=0.08, ci_low=0.079, ci_high=0.081))]


def test_loggp_from_records_follows_the_netgauge_definitions():
    m = loggp_from_records(full_run())
    assert m.size == 1
    assert m.o_s_us == pytest.approx(0.25, rel=0.02) and m.o_r_us == pytest.approx(0.35, rel=0.02)
    assert m.L_us == pytest.approx(1.0 - 0.25 - 0.35, abs=0.03)
    assert m.g_us == pytest.approx(0.4, rel=0.02)
    assert m.G_us_per_byte == pytest.approx(1 / 9000.0, rel=0.02)
    assert loggp_from_records([CTX, *records("pingpong", PINGPONG, POW2)]) is None


def test_hardware_efficiency_at_one_mebibyte():
    h = hardware_from_records(full_run())
    pp = (1 << 20) / float(PINGPONG(np.array([1 << 20]))[0])
    mc = (1 << 20) / (0.02 + (1 << 20) / 40000.0)
    assert h.efficiency_size == 1 << 20
    assert h.efficiency == pytest.approx(pp / mc, rel=0.02)
    assert h.cacheline_us == 0.08
    assert hardware_from_records([CTX, *records("pingpong", PINGPONG, POW2)]) is None


def test_render_and_json():
    s = model_summary(full_run(), clock_mhz=2000)
    text = render(s)
    assert "switch 1 (regime 1 -> 2)" in text and "Latency Ts (us)" in text
    assert "LogGP" in text and "o_r" in text
    assert "pingpong reaches" in text and "of memcpy at 1 MiB" in text
    j = json.loads(json.dumps(to_json(s), allow_nan=False))     # strict JSON: no inf or nan
    assert len(j["switches"]) == 1 and abs(j["switches"][0]["size"] - 8192) / 8192 < 0.5
    assert j["regimes"][1]["alpha_us"] == pytest.approx(3.0, rel=0.05)
    assert j["regimes"][1]["alpha_cycles"] == pytest.approx(j["regimes"][1]["alpha_us"] * 2000)
    assert j["loggp"]["o_s_us"] == pytest.approx(0.25, rel=0.02)
    assert j["hardware"]["efficiency_size"] == 1 << 20


def test_few_sizes_give_one_line_and_say_so():
    s = model_summary([CTX, *records("pingpong", PINGPONG, [1, 64, 1024])], clock_mhz=1000)
    assert s.report is None and s.single is not None
    assert "one line fitted" in render(s)
    assert model_summary([CTX]).empty
