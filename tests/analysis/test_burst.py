"""A token bucket's burst is not a protocol switch (docs/models.md): on the records of a real
shaped run (two namespace hosts, `tc tbf rate 200mbit burst 64kb`, MPICH over TCP, pingpong
1 B-4 MiB) the break is named a rate limiter's burst in the model, its JSON and the headline, and
is not refined; the same curve with whole samples, and a busy machine's slow points after a
protocol switch, stay a switch."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from mpiscope.analysis.burst import is_burst
from mpiscope.analysis.measured import select
from mpiscope.analysis.switches import find_switches, sizes_to_refine
from mpiscope.records import Point, Stats
from mpiscope.records.reader import read_records
from mpiscope.report.headline import run_headline
from mpiscope.report.model import to_json
from mpiscope.report.switches import format_switches

SHAPED = Path(__file__).resolve().parents[1] / "data" / "shaped" / "tbf-200mbit-64kb-pingpong.jsonl"


def shaped_records() -> list:
    return list(read_records(SHAPED))


def whole(rec):
    """The record with its fastest sample near its median: what a protocol regime looks like."""
    if isinstance(rec, Point) and rec.time_us.median:
        return replace(rec, time_us=replace(rec.time_us, min=rec.time_us.median / 1.1))
    return rec


def test_a_token_bucket_s_burst_is_named_and_not_refined():
    recs = shaped_records()
    rep = find_switches(select(recs, "pingpong", 2), reps=50)
    (sw,) = rep.switches
    assert sw.burst and 4096 <= sw.bracket[0] < sw.bracket[1] <= 65536   # the 64 kB bucket's reach
    assert "burst of a rate limiter (not a protocol switch)" in format_switches(rep)
    assert sizes_to_refine(rep, {p.size for p in select(recs, "pingpong", 2)}) == []
    from mpiscope.api import Model
    from mpiscope.report.model import model_summary
    model = Model(model_summary(recs))
    assert model.bursts == [sw.size] == model.switches
    assert to_json(model.summary)["switches"][0]["burst"] is True      # mpiscope model --json
    head = "\n".join(run_headline(recs, ()))
    assert "burst of a rate limiter (not a protocol switch)" in head
    assert "protocol switch (pingpong): ~" not in head


def test_the_same_curve_with_whole_samples_is_a_protocol_switch():
    recs = [whole(r) for r in shaped_records()]
    rep = find_switches(select(recs, "pingpong", 2), reps=50)
    (sw,) = rep.switches
    assert not sw.burst and 4096 <= sw.bracket[0]
    assert "burst" not in format_switches(rep)
    assert "protocol switch (pingpong): ~" in "\n".join(run_headline(recs, ()))


def points(sizes, T, fastest_share) -> list[Point]:
    """One launch: medians on T, the fastest sample at `fastest_share(n)` of the median."""
    return [Point("pingpong", n, 2, Stats(n=100, median=T(n), min=T(n) * fastest_share(n), ci_low=T(n) * 0.99,
                                           ci_high=T(n) * 1.01)) for n in sizes]


SIZES = [1 << k for k in range(0, 21, 2)]


def rendezvous(n: float) -> float:   # eager to 4 KiB, then 3 us more and a faster copy
    return 1.0 + n * 1e-3 if n <= 4096 else 4.0 + n * 2e-4


def test_a_busy_machine_after_a_protocol_switch_is_not_a_burst():
    # the two sizes after the switch slowed 8-fold by a busy moment: their fastest samples stay on the line
    busy = {16384, 65536}
    pts = points(SIZES, lambda n: rendezvous(n) * (8 if n in busy else 1), lambda n: 1 / 8 if n in busy else 0.9)
    assert not is_burst((4096, 16384), pts, beta_after=2e-4)
    # samples that beat the regime's own per-byte cost many times over are a bucket's
    pts = points(SIZES, rendezvous, lambda n: 1 / 40 if n in busy else 0.9)
    assert is_burst((4096, 16384), pts, beta_after=2e-4)
    # split up to the largest size: a busy machine splits the longest points most, a bucket's share fades
    pts = points(SIZES, rendezvous, lambda n: 1 / 40 if n >= 16384 else 0.9)
    assert not is_burst((4096, 16384), pts, beta_after=2e-4)
    # the split sizes just below the break (the segmentation may put it after them): a burst too
    pts = points(SIZES, rendezvous, lambda n: 1 / 40 if n in (1024, 4096) else 0.9)
    assert is_burst((4096, 16384), pts, beta_after=2e-3)
    assert not is_burst((4096, 16384), pts, beta_after=float(np.nan))
