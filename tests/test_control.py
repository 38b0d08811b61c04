"""The machine-state control (results.control, engine/src/control.c). Synthetic runs whose
controls moved turn a would-be "slower" into "inconclusive: machine state differs", unchanged
controls still allow "slower", a switched launch is flagged with its cause, history learns no
drift across a switch and runs without a control read as before. The MPI pingpong decides
between runs of one configuration (and within a run), never across configurations. Real runs (mpi lane): every
launch records a control, and a run under four busy processes started by the test compared
with a quiet one follows the rule whichever way its control went."""
from __future__ import annotations

import math
import multiprocessing
from pathlib import Path

import numpy as np

from mpiscope.records.model import Context, Control, ControlFigure, End, parse_record
from mpiscope.results.compare import compare_runs
from mpiscope.results.control import control_shift, run_control, side_control
from mpiscope.results.history import learn_drift, same_configuration
from mpiscope.results.view import results_of
from mpiscope.store.runs import Run
from mpiscope_test_fixtures.synthetic import launch_point, records_of, saved_id, stored_run

SIZES = {8: 1.2, 1024: 2.0, 65536: 12.0}


def figure(rng, median: float, spread: float = 0.02) -> ControlFigure:
    samples = tuple(float(median * math.exp(spread * rng.standard_normal())) for _ in range(5))
    return ControlFigure(float(np.median(samples)), min(samples), max(samples), samples)


def control(rng, launch: int, handoff: float = 0.27, compute: float = 52.0, copy: float = 100.0,
            mpi: float = 1.2) -> Control:
    return Control(reps=5, ranks=(0, 1), compute_us=figure(rng, compute), copy_us=figure(rng, copy, 0.1),
                   handoff_us=figure(rng, handoff), mpi_pingpong_us=figure(rng, mpi, 0.05), tag={"launch": launch})


def run_records(rng, launches: int = 5, slower: float = 1.0, handoff=0.27, with_control: bool = True,
                mpi=1.2, env: dict | None = None) -> list:
    """A run of `launches` launches of three pingpong sizes, each launch opened by a context
    (its environment `env`) and (`with_control`) a control whose handoff is `handoff` and whose
    MPI pingpong is `mpi` (each a number, or one per launch)."""
    handoffs = handoff if isinstance(handoff, (list, tuple)) else [handoff] * launches
    mpis = mpi if isinstance(mpi, (list, tuple)) else [mpi] * launches
    out: list = []
    for k in range(launches):
        out.append(Context(world_size=2, env=env or {}, tag={"launch": k}))
        if with_control:
            out.append(control(rng, k, handoffs[k], mpi=mpis[k]))
        effect = 0.03 * rng.standard_normal()
        out += [launch_point(t * slower * math.exp(effect + 0.01 * rng.standard_normal()), k, 0.01, size)
                for size, t in SIZES.items()]
        out.append(End(points=len(SIZES), tag={"launch": k}))
    return out


def points(records: list) -> list:
    return [r for r in records if not isinstance(r, (Context, Control, End))]


def test_a_control_shift_turns_slower_into_inconclusive():
    """The candidate's points 2.5x slower and its handoff 3.8x slower (the two placements of the
    cores seen here, 0.07 and 0.27 us): no verdict; the same points with unchanged controls are
    slower."""
    rng = np.random.default_rng(4)
    base, cand = run_records(rng, handoff=0.07), run_records(rng, slower=2.5, handoff=0.27)
    shift = control_shift(run_control(base, "b"), run_control(cand, "c"))
    assert shift is not None and shift.shifted and shift.piece == "handoff_us"
    assert 3.3 < shift.ratio < 4.4
    moved = compare_runs([points(base)], [points(cand)], shift=shift)
    assert moved and all(pc.verdict == "inconclusive" and "machine's state differs" in pc.state for pc in moved)
    assert all(pc.launches_needed is None for pc in moved)  # more launches cannot tell
    unchanged = run_records(rng, slower=2.5, handoff=0.07)
    same_state = control_shift(run_control(base, "b"), run_control(unchanged, "u"))
    assert same_state is not None and not same_state.shifted
    slower = compare_runs([points(base)], [points(unchanged)], shift=same_state)
    assert all(pc.verdict == "slower" and not pc.state for pc in slower)


def test_a_change_beyond_the_machines_move_is_still_called():
    """A 10x change against a 1.4x move of the compute loop: still slower."""
    rng = np.random.default_rng(5)
    base = run_records(rng)
    cand = [r if not isinstance(r, Control) else control(rng, r.tag["launch"], compute=52.0 * 1.4)
            for r in run_records(rng, slower=10.0)]
    shift = control_shift(run_control(base), run_control(cand))
    assert shift.shifted and shift.piece == "compute_us"
    assert all(pc.verdict == "slower" for pc in compare_runs([points(base)], [points(cand)], shift=shift))


def test_runs_without_a_control_compare_as_before():
    rng = np.random.default_rng(6)
    base, cand = run_records(rng, with_control=False), run_records(rng, slower=2.5)
    assert run_control(base) is None and control_shift(run_control(base), run_control(cand)) is None
    assert all(pc.verdict == "slower" for pc in compare_runs([points(base)], [points(cand)]))


def test_the_command_says_the_machine_state_differs(tmp_path, capsys):
    from mpiscope.cli import main
    rng = np.random.default_rng(7)
    base = stored_run(tmp_path, run_records(rng, handoff=0.07)).id
    cand = stored_run(tmp_path, run_records(rng, slower=2.5, handoff=0.27)).id
    assert main(["compare", base, cand, "--fail-on", "5%", "--runs-dir", str(tmp_path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "inconclusive: the machine's state differs (control: cache-line handoff x3.8" in text
    assert "0 slower" in text and "3 inconclusive because the machine's state differs" in text


def test_a_switched_launch_is_flagged_with_its_cause(tmp_path):
    rng = np.random.default_rng(8)
    run = stored_run(tmp_path, run_records(rng, handoff=[0.27, 0.27, 0.07, 0.27, 0.27]))
    res = results_of([run])
    assert set(res.launches_switched) == {(run.id, 2)}
    assert res.launches_switched[(run.id, 2)].startswith("machine state switched: cache-line handoff x0.2")
    flagged = res.per_launch.loc[res.per_launch["control_switched"] != ""]
    assert set(flagged["launch"]) == {2}
    assert set(res.frame["state_switched_launches"]) == {1}
    quiet = stored_run(tmp_path, run_records(rng))
    assert results_of([quiet]).launches_switched == {}


def test_a_run_split_three_and_three_between_states_is_seen(tmp_path):
    """Six launches, three with the handoff at 0.07 us and three at 0.30 (a run measured here):
    one median over all would fall between them and their MAD hide both. No state holds a
    majority: the run's main state is the one holding its first launch, the other three launches
    are flagged, and against a run
    wholly in the first state the split run differs by its other state where every launch is
    read (`states`, as `compare` reads runs), not where the switched launches are left out."""
    rng = np.random.default_rng(21)
    split = run_records(rng, launches=6, handoff=[0.07, 0.30, 0.07, 0.30, 0.30, 0.07])
    rc = run_control(split, "s")
    assert rc is not None
    states = rc.levels["handoff_us"].states()
    assert 0.065 < states.level < 0.075 and states.other is not None and 0.28 < states.other < 0.32
    assert set(rc.switched()) == {("s", 1), ("s", 3), ("s", 4)}
    # the first launch's state leads a tie, whichever it is
    mirrored = run_control(run_records(rng, launches=6, handoff=[0.30, 0.07, 0.30, 0.07, 0.07, 0.30]), "m")
    assert mirrored is not None and 0.28 < mirrored.levels["handoff_us"].level < 0.32
    assert set(mirrored.switched()) == {("m", 1), ("m", 3), ("m", 4)}
    # two launches apart, or a split copy, make no states (the copy names no launch either)
    two = run_control(run_records(rng, launches=2, handoff=[0.07, 0.30]), "t")
    assert two is not None and two.levels["handoff_us"].states().other is None
    copies = [control(rng, k, copy=200.0 if k % 2 else 100.0) for k in range(6)]
    assert run_control(copies, "c").levels["copy_us"].states().other is None
    steady = run_control(run_records(rng, launches=6, handoff=0.07), "q")
    for base, cand in ((steady, rc), (rc, steady)):
        shift = control_shift(base, cand, states=True)
        assert shift is not None and shift.shifted and shift.piece == "handoff_us", shift
        # history leaves the switched launches out of a run's estimate: there the main states agree
        assert not control_shift(base, cand).shifted
    assert not control_shift(steady, run_control(run_records(rng, launches=6, handoff=0.07), "r"),
                             states=True).shifted
    # a minority (one odd launch, or two of six) is flagged but is no state of the run: the level
    # stays the others' and the runs compare as in one state
    for minority in ([5], [1, 4]):
        handoffs = [0.30 if i in minority else 0.07 for i in range(6)]
        odd = run_control(run_records(rng, launches=6, handoff=handoffs), "o")
        assert odd is not None and 0.065 < odd.levels["handoff_us"].level < 0.075
        assert odd.levels["handoff_us"].states().other is None
        assert set(odd.switched()) == {("o", i) for i in minority}
        assert not control_shift(steady, odd, states=True).shifted


def test_compare_of_a_run_split_between_states_says_the_state_differs(tmp_path, capsys):
    """`compare` reads every launch of both runs: a run half in another state is not compared as
    if in one, though its level (the main state's) agrees with the other run's."""
    rng = np.random.default_rng(22)
    base = stored_run(tmp_path, run_records(rng, launches=6, handoff=0.07))
    cand = stored_run(tmp_path, run_records(rng, launches=6, slower=1.8,
                                            handoff=[0.07, 0.30, 0.07, 0.30, 0.30, 0.07]))
    from mpiscope.cli import main
    assert main(["compare", base.id, cand.id, "--runs-dir", str(tmp_path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0 slower" in text and "3 inconclusive because the machine's state differs" in text, text


def test_history_learns_no_drift_across_a_control_shift(tmp_path):
    rng = np.random.default_rng(9)
    earlier = [stored_run(tmp_path, run_records(rng, handoff=h)) for h in (0.27, 0.07, 0.27)]
    run = stored_run(tmp_path, run_records(rng))
    kept = learn_drift(run, earlier[::-1])
    assert kept["points"]
    for p in kept["points"]:
        assert earlier[1].id not in p["from"]
        assert [why for rid, why in p["left_out"] if rid == earlier[1].id][0].startswith("the machine's state differs")
        assert set(p["from"]) == {earlier[0].id, earlier[2].id}


def test_a_run_in_another_state_than_earlier_runs_says_so(tmp_path):
    """The newest run names the earlier runs of its configuration measured in another state
    (their control moved against its own), once, in its warnings: its intervals hold within one
    state. A run whose earlier runs were all in its state says nothing of it."""
    from mpiscope.report.warnings import run_warnings
    rng = np.random.default_rng(14)
    earlier = [stored_run(tmp_path, run_records(rng, handoff=h)) for h in (0.27, 0.07)]
    run = stored_run(tmp_path, run_records(rng))
    kept = learn_drift(run, earlier[::-1])
    assert [rid for rid, _ in kept["other_state"]] == [earlier[1].id]
    assert kept["other_state"][0][1].startswith("the machine's state differs (control: cache-line handoff x")
    run.update(extra={**run.meta().extra, "drift": kept})
    (said,) = [w for w in run_warnings(run) if "another state than" in w]
    assert said.startswith(f"this run measured the machine in another state than 1 earlier run(s) of this "
                           f"configuration (run {earlier[1].id}: the machine's state differs")
    same = stored_run(tmp_path, run_records(rng))
    alike = learn_drift(same, [earlier[0]])
    assert alike["other_state"] == []
    same.update(extra={**same.meta().extra, "drift": alike})
    assert not [w for w in run_warnings(same) if "another state than" in w]


def _stored_pair(tmp_path, cand_env: dict | None = None) -> tuple:
    """Open MPI's two whole-run states as seen here: the candidate's points 1.8x slower and its
    MPI pingpong 3x, the pieces no configuration changes alike (docs/statistics.md)."""
    rng = np.random.default_rng(11)
    base = stored_run(tmp_path, run_records(rng, mpi=0.25))
    cand = stored_run(tmp_path, run_records(rng, slower=1.8, mpi=0.75, env=cand_env))
    return base, cand


def test_the_mpi_pingpong_decides_between_runs_of_one_configuration(tmp_path):
    from dataclasses import replace
    from mpiscope import api
    from mpiscope.results.policy import POLICY
    from mpiscope.results.sides import compare_sides
    base, cand = _stored_pair(tmp_path)
    changes = api.compare(base.id, cand.id, runs_dir=tmp_path).changes
    assert changes and all(pc.verdict == "inconclusive" for pc in changes)
    assert all(pc.state.startswith("the machine's state differs (control: MPI pingpong x") for pc in changes)
    assert all(pc.launches_needed is None for pc in changes)
    # the rule switched off (the policy's switch, bench/evidence's before): the state reads as slower
    before = compare_sides([base], [cand], POLICY.alpha, POLICY.margin,
                           policy=replace(POLICY, control_mpi_same_config=False))
    assert all(pc.verdict == "slower" and not pc.state for pc in before)


def test_the_mpi_pingpong_does_not_decide_across_configurations(tmp_path):
    """The same move between two configurations (another eager limit): the library's
    configuration may be what moved it, so only the pieces it cannot change decide, and the
    slowdown is called."""
    from mpiscope import api
    base, cand = _stored_pair(tmp_path, cand_env={"OMPI_MCA_btl_sm_eager_limit": "256"})
    changes = api.compare(base.id, cand.id, runs_dir=tmp_path).changes
    assert changes and all(pc.verdict == "slower" and not pc.state for pc in changes)


def test_history_learns_no_drift_across_an_mpi_pingpong_shift(tmp_path):
    rng = np.random.default_rng(12)
    earlier = [stored_run(tmp_path, run_records(rng, mpi=m)) for m in (0.25, 0.75, 0.25)]
    run = stored_run(tmp_path, run_records(rng, mpi=0.25))
    kept = learn_drift(run, earlier[::-1])
    assert kept["points"]
    for p in kept["points"]:
        assert set(p["from"]) == {earlier[0].id, earlier[2].id}
        (why,) = [why for rid, why in p["left_out"] if rid == earlier[1].id]
        assert why.startswith("the machine's state differs (control: MPI pingpong x")


def test_a_launch_in_another_state_is_named_by_the_run(tmp_path):
    from mpiscope.report.warnings import run_warnings
    rng = np.random.default_rng(13)
    run = stored_run(tmp_path, run_records(rng, mpi=[0.25, 0.25, 0.75, 0.25, 0.25]))
    results = results_of([run])
    switched = results.launches_switched
    assert set(switched) == {(run.id, 2)}
    assert switched[(run.id, 2)].startswith("machine state switched: MPI pingpong x")
    (said,) = [w for w in run_warnings(run) if "another state of the machine" in w]
    assert said.startswith("1 of 5 launches ran in another state") and "launch 2: machine state switched" in said
    # given the results layer's reading of the run, the warnings read its control, not their own
    judged = results.judged(run.id)
    assert judged.control is results.controls[run.id]
    assert run_warnings(run, judged=judged) == run_warnings(run)
    assert not [w for w in run_warnings(run, judged=judged._replace(control=None)) if "another state of the" in w]
    quiet = stored_run(tmp_path, run_records(rng, mpi=0.25))
    assert not [w for w in run_warnings(quiet) if "another state of the machine" in w]


def test_the_copy_names_no_launch_unless_the_policy_lets_it():
    """A launch whose copy alone moved 2x is not named (`control_launch_excluded`, the copy's
    launches moved with the points unmoved); with the policy's list empty it is."""
    from dataclasses import replace
    from mpiscope.results.policy import POLICY
    rng = np.random.default_rng(15)
    records = [control(rng, k, copy=200.0 if k == 2 else 100.0) for k in range(5)]
    rc = run_control(records, "r")
    assert rc is not None and rc.switched() == {}
    named = rc.switched(replace(POLICY, control_launch_excluded=()))
    assert list(named) == [("r", 2)] and named[("r", 2)].startswith("machine state switched: memory copy x")


def test_a_control_record_reads_back_and_old_records_still_load():
    line = {"type": "control", "reps": 5, "ranks": [0, 1],
            "compute_us": {"median": 52.0, "min": 51.0, "max": 55.0, "samples": [52.0, 51.0, 55.0, 52.5, 51.5]},
            "copy_us": {"median": 90.0, "min": 80.0, "max": 99.0, "samples": [90.0, 80.0, 99.0, 91.0, 85.0]},
            "handoff_us": {"median": 0.27, "min": 0.26, "max": 0.3, "samples": [0.27, 0.26, 0.3, 0.27], "waited": 1},
            "mpi_pingpong_us": None, "skipped": {"mpi_pingpong_us": "why"}, "elapsed_s": 0.004}
    rec = parse_record(line)
    assert isinstance(rec, Control) and rec.handoff_us.median == 0.27 and rec.mpi_pingpong_us is None
    assert parse_record({"type": "end", "points": 1}).points == 1  # a launch without a control


# -- real runs ---------------------------------------------------------------------------------

def _busy() -> None:
    while True:
        pass


def _measured(cli, where: Path, load: int) -> Run:
    procs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(load)]
    for p in procs:
        p.start()
    try:
        r = cli("run", "-b", "pingpong", "--sizes", "64,1K", "--launches", "3", "--max-time", "0.05",
                "--no-progress", "--no-report", "--runs-dir", str(where))
    finally:
        for p in procs:
            p.terminate()
            p.join()
    assert r.returncode == 0, r.stderr
    return Run(where / saved_id(r.stdout))


def test_a_real_run_records_a_control_per_launch(cli, tmp_path):
    run = _measured(cli, tmp_path, 0)
    records = records_of(run.path)
    controls = [r for r in records if r["type"] == "control"]
    assert len(controls) == 3 and len({c["tag"]["launch"] for c in controls}) == 3
    for c in controls:
        assert c["compute_us"]["median"] > 0 and c["copy_us"]["median"] > 0 and len(c["compute_us"]["samples"]) == 5
        assert c.get("handoff_us") is not None or "handoff_us" in c["skipped"]
        assert c["elapsed_s"] < 5
    # each control follows its launch's context
    kinds = [r["type"] for r in records]
    assert all(kinds[i - 1] == "context" for i, k in enumerate(kinds) if k == "control")


def test_a_loaded_run_against_a_quiet_one_follows_the_control(cli, tmp_path):
    """A quiet run, then one under four busy processes on the two cores (started and stopped
    here): both record their controls, and the comparison follows them: where they differ, no
    point whose change lies within the machine's move is slower, faster or same, and each such
    point says why; where they agree, no point blames the machine. Whether the load moves the
    control is the machine's business (here it mostly did not: the handoff follows which cores
    the machine gives, docs/statistics.md), so the test asserts the rule, not the move: the two
    runs are one configuration, so the MPI pingpong decides too."""
    from mpiscope import api
    quiet, loaded = _measured(cli, tmp_path, 0), _measured(cli, tmp_path, 4)
    for run in (quiet, loaded):
        assert sum(isinstance(r, Control) for r in run.records()) == 3
    # one configuration both times: the MPI pingpong decides too (results.history.same_configuration)
    assert same_configuration([quiet], [loaded])
    shift = control_shift(side_control([(quiet.id, quiet.records())]), side_control([(loaded.id, loaded.records())]),
                          same_config=True)
    assert shift is not None and shift.ratio > 0
    changes = api.compare(quiet.id, loaded.id, runs_dir=tmp_path).changes
    assert changes
    for pc in changes:
        if shift.shifted and abs(pc.diff) <= shift.cover():
            assert pc.verdict == "inconclusive" and pc.state == shift.text
        else:
            assert not pc.state
