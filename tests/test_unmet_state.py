"""A run that met one state of a machine which has shown another says so (issue 44): the machine's
history of its control (store.machine, across every configuration and runs directory) tells a
state this run did not meet (results.states); its points then read "one machine state" instead of
an interval another run may rely on, and the headline counts them. Synthetic controls for the
rule and the history file; a real run on a history seeded with a state it cannot meet."""
from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from mpiscope.records.model import Context, Control, ControlFigure, End, RankPlace
from mpiscope.report.headline import run_to_run
from mpiscope.report.warnings import machine_history
from mpiscope.results.control import NAMES, run_control
from mpiscope.results.policy import POLICY
from mpiscope.results.states import machine_key, unmet_kept, unmet_state
from mpiscope.results.view import results_of
from mpiscope.store import machine
from mpiscope_test_fixtures.synthetic import launch_point, saved_id, stored_run

FAST, SLOW = 0.07, 0.27  # the cache-line handoff's two states here, us one way
PLACES = (RankPlace(0, host="node1", cpus=(0,), bound=True), RankPlace(1, host="node1", cpus=(1,), bound=True))


def figure(rng, median: float, spread: float = 0.02) -> ControlFigure:
    samples = tuple(float(median * math.exp(spread * rng.standard_normal())) for _ in range(5))
    return ControlFigure(float(np.median(samples)), min(samples), max(samples), samples)


def run_records(rng, handoffs: list[float], compute: list[float] | None = None,
                disturbed: frozenset[tuple[int, int]] = frozenset()) -> list:
    """Launches of pingpong at 8 B and 64 KiB, each with a control whose handoff is `handoffs[k]`;
    the (launch, size) pairs `disturbed` with a third of their samples invalid (a rank started late)."""
    out: list = []
    for k, handoff in enumerate(handoffs):
        out.append(Context(world_size=2, env={}, hosts=("node1",), ranks=PLACES, tag={"launch": k}))
        out.append(Control(reps=5, ranks=(0, 1), compute_us=figure(rng, compute[k] if compute else 52.0),
                           copy_us=figure(rng, 100.0), handoff_us=figure(rng, handoff),
                           mpi_pingpong_us=figure(rng, 1.2), tag={"launch": k}))
        for size, t in ((8, 1.2), (65536, 12.0)):
            p = launch_point(t * math.exp(0.02 * rng.standard_normal()), k, 0.01, size)
            out.append(replace(p, invalid=500) if (k, size) in disturbed else p)
        out.append(End(points=2, tag={"launch": k}))
    return out


def control(rng, handoffs: list[float], compute: list[float] | None = None):
    return run_control(run_records(rng, handoffs, compute), "r")


def levels(rng, handoffs: list[float], compute: list[float] | None = None) -> dict[str, list[float]]:
    rc = control(rng, handoffs, compute)
    return {p: list(lv.launches) for p, lv in rc.levels.items() if p != "mpi_pingpong_us"}


def test_a_state_of_the_machine_the_run_did_not_meet_is_told_from_its_history():
    """Four earlier runs (of any configuration) read the slow handoff in every launch, two the fast
    one: a run fast in all six launches did not meet the slow state, and it is named with how many
    launches of how many runs read it."""
    rng = np.random.default_rng(1)
    earlier = [levels(rng, [SLOW] * 3) for _ in range(4)] + [levels(rng, [FAST] * 3) for _ in range(2)]
    found = unmet_state(control(rng, [FAST] * 6), earlier)
    assert found is not None
    assert (found.piece, found.launches, found.runs) == ("handoff_us", 12, 4)
    assert found.other == pytest.approx(SLOW, rel=0.05) and found.level == pytest.approx(FAST, rel=0.05)
    assert re.fullmatch(r"cache-line handoff 0\.07\d* us in this run, 0\.2[67]\d* us in 12 launches of 4 earlier runs "
                        r"on this machine", found.text())
    # the other way round too: a state below the run's
    assert unmet_state(control(rng, [SLOW] * 6), [levels(rng, [FAST] * 3) for _ in range(4)]).other \
        == pytest.approx(FAST, rel=0.05)


def test_a_state_the_run_met_or_one_seen_too_rarely_is_no_unmet_state():
    rng = np.random.default_rng(2)
    slow_runs = [levels(rng, [SLOW] * 3) for _ in range(4)]
    # the run met the slow state in one launch of six: its own interval covers it (with_other_state)
    assert unmet_state(control(rng, [FAST, FAST, SLOW, FAST, FAST, FAST]), slow_runs) is None
    # nothing but the run's own state in the history
    assert unmet_state(control(rng, [FAST] * 6), [levels(rng, [FAST] * 3) for _ in range(6)]) is None
    # two runs are too few (policy.unmet_min_runs), however many launches they had
    assert unmet_state(control(rng, [FAST] * 6), [levels(rng, [SLOW] * 6) for _ in range(2)]) is None
    # a compute loop that waited for a time slice in 2 of 60 launches is no state (unmet_min_share)
    spikes = [levels(rng, [FAST] * 6, [52.0] * 5 + ([150.0] if k < 2 else [52.0])) for k in range(10)]
    assert unmet_state(control(rng, [FAST] * 6), spikes) is None
    # ...while a stricter share would call it one
    assert unmet_state(control(rng, [FAST] * 6), spikes, replace(POLICY, unmet_min_launches=2, unmet_min_runs=2,
                                                                  unmet_min_share=0.0)).piece == "compute_us"


def test_the_machine_key_is_the_host_and_the_control_pairs_binding():
    rng = np.random.default_rng(3)
    assert machine_key(run_records(rng, [FAST])) == "node1|0,1"
    unbound = [replace(r, ranks=tuple(replace(p, bound=False) for p in PLACES)) if isinstance(r, Context) else r
               for r in run_records(rng, [FAST])]
    assert machine_key(unbound) == "node1|-,-"
    assert machine_key([r for r in run_records(rng, [FAST]) if not isinstance(r, Control)]) is None


def test_the_history_is_kept_per_machine_and_each_run_is_judged_against_those_before(tmp_path, monkeypatch):
    ledger = tmp_path / "home" / "states.json"
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(ledger))
    rng = np.random.default_rng(4)
    notes = [machine.note_run(stored_run(tmp_path / "runs", run_records(rng, [SLOW] * 3))) for _ in range(4)]
    assert all(n["unmet"] is None for n in notes)  # the same state every time
    assert [n["runs"] for n in notes] == [0, 1, 2, 3]
    fast = stored_run(tmp_path / "runs", run_records(rng, [FAST] * 4))
    note = machine.note_run(fast)
    assert note["key"] == "node1|0,1" and note["runs"] == 4 and note["launches"] == 12
    assert note["unmet"]["piece"] == "handoff_us" and note["unmet"]["other"] == pytest.approx(SLOW, rel=0.05)
    kept = json.loads(ledger.read_text())
    assert kept["schema"] == 1 and len(kept["machines"]["node1|0,1"]) == 5
    assert kept["machines"]["node1|0,1"][-1]["run"] == fast.id
    assert sorted(kept["machines"]["node1|0,1"][-1]["pieces"]) == ["compute_us", "copy_us", "handoff_us"]
    # noting a run again (a resumed run) replaces its entry, and judges it without itself
    again = machine.note_run(fast)
    assert again["runs"] == 4 and len(json.loads(ledger.read_text())["machines"]["node1|0,1"]) == 5
    # the latest runs only
    machine.note_run(fast, replace(POLICY, machine_runs=3))
    assert len(json.loads(ledger.read_text())["machines"]["node1|0,1"]) == 3
    assert not list(ledger.parent.glob("*.tmp"))


def test_an_unreadable_history_is_said_and_left_as_it_is_and_off_keeps_none(tmp_path, monkeypatch):
    ledger = tmp_path / "states.json"
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(ledger))
    run = stored_run(tmp_path / "runs", run_records(np.random.default_rng(5), [FAST] * 3))
    for text in ("{not json", '{"schema": 1, "machines": {"a": 3}}', '[1, 2]', '{"schema": 99, "machines": {}}'):
        ledger.write_text(text)
        note = machine.note_run(run)
        assert "left as it is" in note["error"] and str(ledger) in note["error"]
        assert ledger.read_text() == text
    run.update(extra={**run.meta().extra, "machine_states": note})
    (said,) = machine_history(run.meta())
    assert said.startswith("the machine's history of its control was not used (") and "\n" not in said
    # hostile content: no traceback, the file left as it is
    for text in ('{"schema": 1, "machines": {"a": [{"pieces": {"handoff_us": [1' + "0" * 400 + ']}}]}}',
                 "[" * 100000 + "]" * 100000, '{"schema": true, "machines": {}}'):
        ledger.write_text(text)
        note = machine.note_run(run)
        assert note.get("error") is None or "left as it is" in note["error"]
        assert ledger.read_text() == text or note.get("error") is None
    ledger.write_text('{"schema": 1, "machines": {"node1|0,1": [{"run": "x", '
                      '"pieces": {"handoff_us": [Infinity, 1e999, -1, true, "a"]}}]}}')
    assert machine.note_run(run)["unmet"] is None  # nothing well formed in it to tell a state
    # a history where none can be kept (its directory a file): said, and the run goes on
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(ledger / "states.json"))
    assert "left as it is" in machine.note_run(run)["error"]
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", "off")
    assert machine.note_run(run) is None


def test_the_points_of_a_run_that_met_one_state_read_it_and_the_headline_counts_them(tmp_path):
    rng = np.random.default_rng(6)
    unmet = {"piece": "handoff_us", "level": FAST, "other": SLOW, "launches": 12, "runs": 4}
    run = stored_run(tmp_path, run_records(rng, [FAST] * 4), extra={"machine_states": {"unmet": unmet}})
    assert unmet_kept(run.meta().extra).other == SLOW
    frame = results_of([run]).frame
    for _, row in frame.iterrows():
        assert row["evidence"].startswith("one machine state: cache-line handoff 0.07 us in this run, 0.27 us in 12 ")
        assert row["time_ci_low_us"] < row["time_median_us"] < row["time_ci_high_us"]  # the run's state's, kept
    line = run_to_run([e.point for e in results_of([run]).points(run.id).values()])
    assert line.startswith("another run may read another state: no interval for 2 point(s) (pingpong 8 B-64 KiB")
    assert "measured in one state of the machine only (cache-line handoff 0.07 us in this run, 0.27 us in 12 " in line
    # a run without it reads its intervals
    plain = stored_run(tmp_path / "plain", run_records(rng, [FAST] * 4))
    assert set(results_of([plain]).frame["evidence"]) == {""}
    for bad in ({"unmet": {"piece": "handoff_us"}}, {"unmet": {**unmet, "other": -1}}, {"unmet": "x"}, []):
        assert unmet_kept({"machine_states": bad}) is None


def test_a_real_run_on_a_machine_whose_history_holds_another_state_says_so(cli, tmp_path, monkeypatch):
    """The engine's real control: a first run starts the history; four runs of a state 1000x
    below the first run's handoff (one the machine never shows: a handoff that waits for a time
    slice moves up, never down) are added under its machine's key; the next
    real run did not meet it, keeps that in run.json, and its table names it per point."""
    ledger = tmp_path / "states.json"
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(ledger))
    args = ("run", "-b", "pingpong", "--sizes", "8,1024", "--launches", "4", "--no-progress", "--no-report",
            "--runs-dir", str(tmp_path / "runs"))
    assert cli(*args).returncode == 0
    kept = json.loads(ledger.read_text())
    ((key, (first,)),) = kept["machines"].items()
    # the handoff, unless a loaded machine left it out of every launch (its ranks did not run at once)
    piece = "handoff_us" if first["pieces"].get("handoff_us") else "compute_us"
    level = float(np.median(first["pieces"][piece]))
    kept["machines"][key] = [{"run": f"seeded-{k}", "at": "", "pieces": {piece: [level / 1000] * 4}}
                             for k in range(4)] + [first]
    ledger.write_text(json.dumps(kept))
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    run_id = saved_id(r.stdout)
    meta = json.loads((tmp_path / "runs" / run_id / "run.json").read_text())
    assert meta["machine_states"]["runs"] == 5
    assert (meta["machine_states"]["unmet"] or {}).get("piece") == piece, (meta["machine_states"], ledger.read_text())
    assert meta["machine_states"]["unmet"]["other"] == pytest.approx(level / 1000)
    assert len(json.loads(ledger.read_text())["machines"][key]) == 6
    out = tmp_path / "t.csv"
    assert cli("export", run_id, "-o", str(out), "--runs-dir", str(tmp_path / "runs")).returncode == 0
    import pandas as pd
    table = pd.read_csv(out)
    # a point whose interval is no answer anyway (too wide, busy) keeps that flag first
    flags = [str(e) for e in table["evidence"].fillna("")]
    known = (f"one machine state: {NAMES[piece]}", "insufficient evidence", "two machine states", "machine busy",
             "shorter than the clocks agree")
    assert flags and all(f.startswith(known) for f in flags), flags
    assert all(str(u).startswith(NAMES[piece] + " ") for u in table["unmet_machine_state"])


def test_a_point_left_out_of_every_launch_of_the_other_state_reads_one_state(tmp_path):
    """The run met both states (launch 2 of 6 switched), but 64 KiB was disturbed there and left
    out: its interval holds for the main state only and says so; 8 B, kept in launch 2, gets the
    union of both states instead (launches.with_other_state)."""
    rng = np.random.default_rng(7)
    handoffs = [FAST, FAST, SLOW, FAST, FAST, FAST]
    run = stored_run(tmp_path, run_records(rng, handoffs, disturbed=frozenset({(2, 65536)})))
    rows = {int(r["size"]): r for _, r in results_of([run]).frame.iterrows()}
    assert rows[65536]["disturbed_launches"] == 1
    assert re.fullmatch(r"one machine state: cache-line handoff x3\.\d+ of the run's level in 1 launch\(es\) of this "
                        r"run, where this point was disturbed and left out; another run may read that state",
                        rows[65536]["evidence"])
    assert rows[8]["evidence"] == "" and rows[8]["state_switched_launches"] == 1
    # a point the switched launch did not measure at all keeps its interval
    records = [r for r in run_records(rng, handoffs) if not (getattr(r, "size", None) == 65536
                                                              and r.tag.get("launch") == 2)]
    rows = {int(r["size"]): r for _, r in results_of([stored_run(tmp_path / "b", records)]).frame.iterrows()}
    assert rows[65536]["evidence"] == "" and rows[65536]["launches"] == 5
    line = run_to_run([e.point for e in results_of([run]).points(run.id).values()])
    assert re.search(r"; no interval for 1 point\(s\) \(pingpong 64 KiB\) measured in one state of the machine only "
                     r"\(cache-line handoff x3\.\d+ of the run's level in 1 launch\(es\) of this run, where this "
                     r"point was disturbed and left out\): only a run that meets the other tells", line), line


def test_states_are_told_per_side_and_per_session():
    """Three slow and three fast excursions are no state either way; a `run --vs` session's runs
    count as one towards the runs a state needs."""
    rng = np.random.default_rng(8)
    mixed = [levels(rng, [FAST] * 3, [52.0, 52.0, 52.0 * (4 if k < 3 else 0.25)]) for k in range(6)]
    assert unmet_state(control(rng, [FAST] * 6), mixed) is None
    slow_runs = [levels(rng, [SLOW] * 3) for _ in range(4)]
    assert unmet_state(control(rng, [FAST] * 6), slow_runs, sessions=["s1", "s1", "s1", "s1"]) is None
    assert unmet_state(control(rng, [FAST] * 6), slow_runs, sessions=["s1", "s1", "s2", "s3"]).runs == 4


def test_a_long_session_does_not_push_the_machines_history_out(tmp_path, monkeypatch):
    """Forty runs of one `run --vs` session keep the runs of the sessions before them: the history
    keeps sessions, not runs."""
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(tmp_path / "states.json"))
    rng = np.random.default_rng(9)
    for _ in range(3):
        machine.note_run(stored_run(tmp_path / "runs", run_records(rng, [SLOW] * 3)))
    for _ in range(40):
        machine.note_run(stored_run(tmp_path / "runs", run_records(rng, [FAST] * 3),
                                    extra={"interleave": {"session": "vs-1", "label": "base"}}),
                         replace(POLICY, machine_runs=2))
    entries = json.loads((tmp_path / "states.json").read_text())["machines"]["node1|0,1"]
    sessions = [e["session"] for e in entries]
    assert sessions.count("session vs-1") == 40 and len(set(sessions)) == 2


def test_a_history_read_but_not_written_still_judges_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("MPISCOPE_MACHINE_STATES", str(tmp_path / "states.json"))
    rng = np.random.default_rng(10)
    for _ in range(4):
        machine.note_run(stored_run(tmp_path / "runs", run_records(rng, [SLOW] * 3)))
    before = (tmp_path / "states.json").read_text()
    fast = stored_run(tmp_path / "runs", run_records(rng, [FAST] * 3))

    def full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(machine.atomic, "write_atomic", full)
    note = machine.note_run(fast)
    assert note["unmet"]["piece"] == "handoff_us"
    assert note["error"].endswith("No space left on device; this run not kept in it")
    assert (tmp_path / "states.json").read_text() == before
