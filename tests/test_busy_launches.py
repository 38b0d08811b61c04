"""A busy machine does not buy launches that cannot narrow (issue 44): a point whose launches were
mostly disturbed ("machine busy") and whose latest launch was disturbed too gets no auto launch,
since the next would be disturbed again and the point would stay without a usable interval; once a
launch of it comes out clean the machine has calmed and it gets launches again. The planner says
why it stopped, and the headline's evidence line says that more launches would not narrow such
points. The default run's first round, past its first three launches, measures no point the
machine still disturbs either.
"""
from __future__ import annotations

import random
from dataclasses import replace

from mpiscope.plan.engine import Part, Plan
from mpiscope.plan.repetition import LaunchPolicy
from mpiscope.plan.schedule import first_round_todo, next_launch, still_busy
from mpiscope.report.headline import on_target
from mpiscope.results.launches import aggregate, launches_needed
from mpiscope_test_fixtures.synthetic import launch_point

SPREAD = (1.0, 1.6, 0.7, 1.3, 0.8)  # launches far apart: wider than the +-5 % target


def launches(disturbed: set[int], size: int = 8) -> list:
    """Five launches of one point; those in `disturbed` with a third of their samples invalid
    (a rank started late: the disturbance rule's cause)."""
    return [replace(launch_point(m, k, size=size), invalid=500) if k in disturbed else launch_point(m, k, size=size)
            for k, m in enumerate(SPREAD)]


def test_a_point_still_disturbed_gets_no_launch_and_one_calmed_does():
    (busy,) = aggregate(launches({1, 3, 4}))
    (calmed,) = aggregate(launches({0, 1, 2}))
    (clean,) = aggregate(launches(set()))
    assert busy.busy and calmed.busy and not clean.busy
    assert launches_needed(busy, 0.05) > busy.launches  # more launches would be asked for by width alone
    assert still_busy(busy)
    assert not still_busy(calmed)  # its latest launch was clean: the machine calmed
    assert not still_busy(clean)


def test_the_planner_says_the_busy_points_stopped_it():
    parts, why = next_launch(launches({1, 3, 4}), [], None, LaunchPolicy(), 0.0, 0.0, random.Random(1))
    assert parts == []
    assert why == "every point within the target but 1 that more launches cannot narrow: 1 on a busy machine"


def test_the_headline_says_more_launches_would_not_narrow_a_busy_point():
    points = aggregate(launches({1, 3, 4}, size=8) + launches(set(), size=1024))
    line = on_target(points, 0.05)
    assert "1 on a busy machine (no usable interval; more launches on it would not narrow one)" in line
    assert line.startswith("evidence: 2 points from 5 launches: 0 within the target")
    # a busy point the first round left out of its last launches: named with why it has fewer
    short = aggregate(launches({0, 1, 2}, size=8)[:3] + launches(set(), size=1024))
    line = on_target(short, 0.05, asked=5)
    assert line.endswith("Fewer launches than the 5 asked: 1 point(s), pingpong 8 B")  # not said left out...
    line = on_target(short, 0.05, asked=5, left_out={("pingpong", 8, 2, None)})  # ...unless the run says so
    assert line.endswith("Fewer launches than the 5 asked: 1 point(s), pingpong 8 B (all left out of the "
                         "first round's later launches while the machine still disturbed them)")
    two = aggregate(launches({0, 1, 2}, size=8)[:3] + launches(set(), size=1024)[:3])
    line = on_target(two, 0.05, asked=5, left_out={("pingpong", 8, 2, None)})
    assert line.endswith("Fewer launches than the 5 asked: 2 point(s), pingpong 8 B-1 KiB (2 sizes) (1 of them, "
                         "pingpong 8 B, left out of the first round's later launches while the machine still "
                         "disturbed them)")


def test_the_first_round_measures_no_point_the_machine_still_disturbs(mpich_engine):
    """Past MIN_LAUNCHES launches of an auto run's first round (the default run makes 5), a point
    disturbed in most launches and in the latest is left out of the next launch; a clean point,
    one whose latest launch came out clean, a fixed --launches count and earlier launches are
    measured as planned."""
    part = Part(Plan(("pingpong",), 2, sizes="8,1K"), tag={"launch": 3})
    clean = launches(set(), size=1024)[:3]
    auto = LaunchPolicy(first=5)
    (todo,) = first_round_todo(launches({0, 1, 2})[:3] + clean, [part], mpich_engine, auto)
    assert [e.size for e in todo] == [1024]
    assert first_round_todo(launches({0, 1})[:3] + clean, [part], mpich_engine, auto) is None  # calmed
    assert first_round_todo(launches({0, 1})[:2] + clean[:2], [part], mpich_engine, auto) is None  # too early
    assert first_round_todo(launches({0, 1, 2})[:3] + clean, [part], mpich_engine, LaunchPolicy(count=5)) is None


def test_a_launch_narrowed_to_its_calm_points_is_written_down(mpich_engine, tmp_path):
    """The launch's parts as measured are written down before it (run.json's parts and the points
    left out, for the headline), so that a resume finds nothing left to measure."""
    from types import SimpleNamespace
    from mpiscope.execute.session import _narrowed, remaining
    from mpiscope.plan.engine import engine_plan
    from mpiscope.plan.schedule import left_out_points
    from mpiscope_test_fixtures.synthetic import stored_run
    plans = [Plan(("pingpong",), 2, sizes="8,1K"), Plan(("pingpong",), 2, sizes="64")]
    parts = [Part(plan, tag={"launch": launch, "part": 2 * (launch - 2) + k})
             for launch in (2, 3) for k, plan in enumerate(plans)]
    run = stored_run(tmp_path, [], parts=parts)
    group = parts[2:]  # launch 3 of both parts
    todo = [[e for e in p.entries(engine_plan(mpich_engine, p.plan)) if e.size == 1024] for p in group]
    narrowed = _narrowed(run, group, todo, mpich_engine)
    assert run.meta().parts == parts[:2] + narrowed  # launch 2 as it was
    assert [[e.size for e in p.entries(engine_plan(mpich_engine, p.plan))] for p in run.meta().parts] == \
        [[8, 1024], [64], [1024], []]
    assert left_out_points(run.meta().extra) == {("pingpong", 8, 2, None), ("pingpong", 64, 2, None)}
    run.append([launch_point(1.0, launch, size=size, part=part) for launch, size, part in
                ((2, 8, 0), (2, 1024, 0), (2, 64, 1), (3, 1024, 2))])
    assert remaining(run, SimpleNamespace(engine=mpich_engine), run.meta().parts) == [[], [], [], []]
    assert left_out_points({"first_round_left_out": [["pingpong", [8], 2, None, 3], "x"]}) == set()  # damaged


def test_points_shorter_than_the_clocks_agree_are_counted_apart():
    """A point disturbed in most launches by the clock-sync bound alone is flagged and counted as
    shorter than the ranks' clocks agree; one where another cause joins the clock's is busy."""
    from mpiscope.results.evidence import launch_evidence

    def clocked(by: dict[int, str], size: int) -> list:
        marks = {"clock": {"clock_sync": {"error_share": 3.0}}, "late": {"invalid": 500}}
        return [replace(p, **marks[by[k]]) if k in by else p for k, p in enumerate(launches(set(), size))]
    tiny = clocked({1: "clock", 3: "clock", 4: "clock"}, 4)
    mixed = clocked({1: "clock", 3: "clock", 4: "late"}, 64)
    points = aggregate(tiny + mixed + launches({1, 3, 4}, size=8) + launches(set(), size=1024))
    by_size = {lp.size: lp for lp in points}
    assert launch_evidence(by_size[4]).startswith("shorter than the clocks agree: clock-sync error 3.0 x one event")
    assert launch_evidence(by_size[64]).startswith("machine busy: clock-sync error")
    line = on_target(points, 0.05)
    assert "2 on a busy machine (no usable interval" in line
    assert "1 shorter than the ranks' clocks agree (clock-sync error beyond 2 x one event" in line


def test_a_launchs_cost_is_counted_over_the_launches_made_not_the_parts_planned():
    """Three parts were planned, one narrowed to nothing (no launch, no context): 2 s of a run
    whose points sampled 0.5 s cost 0.75 s a launch, not 0.5 s."""
    from mpiscope.plan.schedule import launch_overhead_s
    from mpiscope.records.model import Context
    records = [Context(world_size=2, tag={"launch": 0}), replace(launch_point(1.0, 0), elapsed_s=0.25),
               Context(world_size=2, tag={"launch": 1}), replace(launch_point(1.0, 1), elapsed_s=0.25)]
    assert launch_overhead_s(records, 2.0) == 0.75
    assert launch_overhead_s(iter(records), 0.1) == 0.0  # never below nothing
    assert launch_overhead_s([], 1.0) == 1.0
