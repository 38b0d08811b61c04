"""`run --vs` ends with the comparison (issue 44): once every configuration's own launches are
done the session looks at its comparisons once, and the points they leave undecided, but that
more blocks would decide, get a second stage of blocks before the session ends; every verdict
of such a session is at the level of each of its two looks (Pocock's), so looking twice does
not raise the chance of a false call. Synthetic sessions (fast), the interleaving itself with
stand-in steps (fast), and a real `run --vs` whose look is made to ask for one point (slow)."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from mpiscope import api
from mpiscope.commands import vs
from mpiscope.execute.interleave import interleave
from mpiscope.execute.session import CUT, Waiting
from mpiscope.results.compare import compare_runs
from mpiscope.results.sides import undecided
from mpiscope.results.verdict import two_look_alpha
from mpiscope_test_fixtures.synthetic import launch_point, records_of, stored_run

SIZES = (8, 1024, 65536)


def session(rng, blocks: int, noise: float, slower: float) -> tuple[list, list]:
    """Base and candidate launches of one session, one launch each per block."""
    base, cand = [], []
    for k in range(blocks):
        for size in SIZES:
            t = 1.0 + size / 1000
            base.append(launch_point(t * np.exp(noise * rng.standard_normal()), k, size=size))
            cand.append(launch_point(t * slower * np.exp(noise * rng.standard_normal()), k, size=size))
    return base, cand


def mark(order: int, blocks: int, stages: dict | None = None) -> dict:
    """run.json's extra["interleave"] as execute/interleave.py writes it."""
    m = {"session": "s1", "seed": 1, "label": "base" if order == 0 else "vs", "index": order,
         "steps": [{"session": "s1", "block": k, "launches": [k], "began": "", "ended": ""} for k in range(blocks)]}
    return {"interleave": {**m, **({"stages": stages} if stages else {})}}


def test_two_looks_at_the_level_keep_the_chance_of_any_false_call():
    assert two_look_alpha(0.05, 6, 12) == pytest.approx(0.0294, abs=2e-4)  # Pocock's 2.178 for two equal stages
    assert two_look_alpha(0.05, 6, 6) == 0.05  # no second stage: one look
    assert two_look_alpha(0.05, 6, 9) > two_look_alpha(0.05, 6, 12)  # a shorter second stage costs less
    # the two z statistics of a growing mean under no change: either look past the level, 5 % of the time
    rng = np.random.default_rng(1)
    first, total, n = 6, 10, 200_000
    sums = rng.standard_normal((n, first)).sum(1), rng.standard_normal((n, total - first)).sum(1)
    z1, z2 = sums[0] / np.sqrt(first), (sums[0] + sums[1]) / np.sqrt(total)
    c = stats.norm.isf(two_look_alpha(0.05, first, total) / 2)
    assert ((abs(z1) > c) | (abs(z2) > c)).mean() == pytest.approx(0.05, abs=0.003)
    c_once = stats.norm.isf(0.05 / 2)
    assert ((abs(z1) > c_once) | (abs(z2) > c_once)).mean() > 0.07  # each look at 0.05: too many


def test_the_look_picks_the_undecided_points_that_more_blocks_decide(tmp_path):
    """25 % slower under 15 % launch noise in 6 blocks, at the two-look level: 8 B is called
    slower, 1 KiB and 64 KiB are not yet, at the variance seen 1 KiB would be in 6 blocks a side and
    64 KiB in 9: a second stage of 6 more blocks takes both, of 2 the first."""
    base, cand = session(np.random.default_rng(4), 6, 0.15, 1.25)
    runs = [stored_run(tmp_path, recs, extra=mark(i, 6)) for i, recs in enumerate((base, cand))]
    alpha = two_look_alpha(0.05, 6, 12)
    verdicts = {pc.size: (pc.verdict, pc.launches_needed)
                for pc in compare_runs([base], [cand], alpha, blocks=({k: k for k in range(6)},) * 2)}
    assert verdicts[8][0] == "slower" and verdicts[1024][0] == verdicts[65536][0] == "inconclusive"
    assert {key[0][1] for key in undecided(runs[0], runs[1], alpha, 0.05, 6)} == {1024, 65536}
    assert verdicts[1024][1] == 6 and verdicts[65536][1] == 9
    assert {key[0][1] for key in undecided(runs[0], runs[1], alpha, 0.05, 2)} == {1024}
    assert all(key[0][0] == "pingpong" and key[0][2] == 2 for key in undecided(runs[0], runs[1], alpha, 0.05, 6))


def test_compare_of_a_two_stage_session_is_at_the_two_look_level(tmp_path):
    """The same launches: one look calls 1 KiB slower (p adj. 0.038); marked as a session that
    looked before a second stage, the level is 0.0294 and it is not called."""
    base, cand = session(np.random.default_rng(4), 6, 0.15, 1.25)
    once = [stored_run(tmp_path / "once", recs, extra=mark(i, 6)) for i, recs in enumerate((base, cand))]
    twice = [stored_run(tmp_path / "twice", recs, extra=mark(i, 6, {"first": 3, "second": 3}))
             for i, recs in enumerate((base, cand))]
    v1 = {pc.size: pc.verdict for pc in api.compare(once[0].path, once[1].path, runs_dir=tmp_path / "once").changes}
    v2 = {pc.size: pc.verdict for pc in api.compare(twice[0].path, twice[1].path, runs_dir=tmp_path / "twice").changes}
    assert v1[1024] == "slower" and v2[1024] == "inconclusive"
    assert v1[8] == v2[8] == "slower"


class _Run:
    """What `interleave` reads and writes of a run between its steps."""

    def __init__(self, name: str):
        self.id, self.extra = name, {"interleave": {"session": "s", "steps": []}}

    def meta(self):
        return SimpleNamespace(launches=[], extra=self.extra, status="running")

    def update(self, extra):
        self.extra = extra


def _lingering(name: str, n: int, trace: list, then: int = 0):
    """Stand-in steps: n launches, then waiting to be sent the points of one more, or None (then
    `then` launches more, as `--find-switches` rounds do), or CUT (ends at once)."""
    def steps():
        run = _Run(name)
        for k in range(n):
            if k:
                yield run
            trace.append((name, k))
        while True:
            points = yield Waiting(run)
            if points is CUT:
                trace.append((name, "cut"))
                return run, SimpleNamespace(status="ok")
            if not points:
                break
            trace.append((name, sorted(points)))
        for k in range(then):
            yield run
            trace.append((name, f"then {k}"))
        return run, SimpleNamespace(status="ok")
    return steps


def test_a_second_stage_measures_its_points_in_blocks_then_every_run_ends():
    trace, ended, looked = [], [], []

    def look(runs, first):
        looked.append((sorted(r.id for r in runs.values()), first))
        return {0: {"p"}, 2: {"p", "q"}}, 2
    schedule = interleave([_lingering(x, 3, trace) for x in "abc"], 5, "s", ended.append, second_stage=look)
    assert looked == [(["a", "b", "c"], 3)]  # once, after every configuration's own launches
    assert len(schedule.blocks) == 5 and all(sorted(b) == [0, 2] for b in schedule.blocks[3:])
    assert trace[9:] and sorted(trace[9:]) == [("a", ["p"])] * 2 + [("c", ["p", "q"])] * 2
    assert sorted(e.index for e in ended) == [0, 1, 2] and all(e.outcome.status == "ok" for e in ended)
    runs = {e.run.id: e.run for e in ended}
    assert runs["a"].extra["interleave"]["stages"] == runs["c"].extra["interleave"]["stages"] == {"first": 3, "second": 2}
    assert runs["b"].extra["interleave"]["stages"] == {"first": 3, "second": 2}  # every verdict looked twice


def test_what_follows_a_lingering_run_is_measured_after_it_is_told_to_end():
    trace, ended = [], []
    interleave([_lingering(x, 2, trace, then=2) for x in "ab"], 5, "s", ended.append,
               second_stage=lambda runs, first: ({}, 2))
    assert sorted(t for t in trace if "then" in str(t[1])) == [("a", "then 0"), ("a", "then 1"), ("b", "then 0"),
                                                              ("b", "then 1")]
    assert all(e.outcome.status == "ok" for e in ended) and len(ended) == 2


def test_a_cut_session_ends_its_lingering_runs_as_measured():
    """Ctrl-C while `a` waits for `b`: `a` ends as measured, nothing more; `b` is interrupted."""
    trace, ended = [], []

    def cut_in_b():
        run = _Run("b")
        trace.append(("b", 0))
        yield run
        raise KeyboardInterrupt
    interleave([_lingering("a", 1, trace, then=2), cut_in_b], 5, "s", ended.append,
               second_stage=lambda runs, first: ({0: {"p"}}, 2))
    assert ("a", "cut") in trace and not [t for t in trace if "then" in str(t[1])]
    by = {e.index: e for e in ended}
    assert by[0].outcome.status == "ok" and by[1].outcome.status == "interrupted"


def test_a_look_that_fails_leaves_one_stage():
    trace, ended = [], []

    def broken(runs, first):
        raise ValueError("no root")
    schedule = interleave([_lingering(x, 2, trace) for x in "ab"], 5, "s", ended.append, second_stage=broken)
    assert len(schedule.blocks) == 2 and all(e.outcome.status == "ok" for e in ended)


def test_a_look_that_finds_nothing_ends_the_session():
    trace: list = []
    schedule = interleave([_lingering(x, 2, trace) for x in "ab"], 5, "s", second_stage=lambda runs, first: ({}, 2))
    assert len(schedule.blocks) == 2 and len(trace) == 4


def test_run_vs_second_stage_measures_only_the_points_asked(cli, mpiscope_home, tmp_path, monkeypatch):
    """A real session whose look (the real one, then made to ask for 1 KiB) adds two blocks: both
    runs measure 1 KiB alone in blocks 3 and 4, their marks say so, and the comparison after it
    is at the two-look level."""
    seen, own = [], vs.second_stage

    def asked(runs, first):
        points, more = own(runs, first)  # the session's own look runs on real runs
        assert more == first and set(points) <= {0, 1}
        seen.append(first)
        one_k = {((b, s, r, v), c) for b, s, r, v, c in [("pingpong", 1024, 2, None, ())]}
        return {0: one_k, 1: one_k}, 2
    monkeypatch.setattr(vs, "second_stage", asked)
    r = cli("run", "-b", "pingpong", "--sizes", "8,1K", "--max-time", "0.01", "--launches", "3", "--no-report",
            "--vs", "--env MPISCOPE_TEST_LEVEL=b", "--runs-dir", str(tmp_path / "runs"), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    assert seen == [3]
    for meta_path in (tmp_path / "runs").glob("*/run.json"):
        meta = json.loads(meta_path.read_text())
        assert meta["status"] == "ok" and meta["interleave"]["stages"] == {"first": 3, "second": 2}
        assert [s["block"] for s in meta["interleave"]["steps"]] == [0, 1, 2, 3, 4]
        sizes = {}
        for rec in records_of(meta_path.parent):
            if rec["type"] == "point":
                sizes.setdefault(rec["tag"]["launch"], set()).add(rec["size"])
        assert sizes == {0: {8, 1024}, 1: {8, 1024}, 2: {8, 1024}, 3: {1024}, 4: {1024}}, sizes
    assert "second stage" in r.stdout
