"""Launches as the unit of evidence (issue 16), for real: a run measures every point in several
launches, each in its own shuffled order, adds launches where the interval asks for them, keeps
its launches apart in the records, resumes launch by launch, and does not wait for a deadlock
twice. The statistics themselves are tested on synthetic data (tests/analysis/test_launches.py)."""
from __future__ import annotations

import csv
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from mpiscope.results.history import shifted_runs
from mpiscope.results.launches import aggregate, drifts_kept, with_drift, with_other_state
from mpiscope.results.points import launch_of
from mpiscope.results.view import results_of
from mpiscope.store.runs import Run
from mpiscope_test_fixtures.synthetic import records_of

AUTO = {"MPISCOPE_LAUNCHES": ""}  # the default, as a user gets it (the suite measures one launch)


def by_launch(recs: list[dict], kind: str = "point") -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for r in recs:
        if r["type"] == kind:
            out[r.get("tag", {}).get("launch", 0)].append(r)
    return dict(out)


def only_run(runs_dir: Path) -> Path:
    (run,) = [p for p in runs_dir.iterdir() if (p / "run.json").is_file()]
    return run


def test_three_launches_measure_every_point_each_in_its_own_order(cli, tmp_path):
    sizes = "1,4,16,64,256,1K,4K,16K"
    r = cli("run", "-b", "pingpong,bw", "--sizes", sizes, "--launches", "3", "--max-time", "0.02",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    run = only_run(tmp_path)
    launches = by_launch(records_of(run))
    assert sorted(launches) == [0, 1, 2]
    keys = [sorted((p["benchmark"], p["size"]) for p in pts) for pts in launches.values()]
    assert keys[0] == keys[1] == keys[2] and len(keys[0]) == 16   # every point, once per launch
    orders = {tuple((p["benchmark"], p["size"]) for p in pts) for pts in launches.values()}
    assert len(orders) > 1, "three launches in the same order: not shuffled"   # 16! orders: never by chance
    contexts = by_launch(records_of(run), "context")
    assert sorted(contexts) == [0, 1, 2]                            # each launch describes itself
    meta = json.loads((run / "run.json").read_text())
    assert [p["tag"]["launch"] for p in meta["parts"]] == [0, 1, 2]  # written down before the first launch
    assert all(p["points"] for p in meta["parts"])                   # with the order each measured
    assert "launches" in r.stdout and "single launch" not in r.stdout.lower()


def test_one_launch_keeps_the_plan_order_and_says_what_its_interval_covers(cli, tmp_path):
    r = cli("run", "-b", "pingpong", "--sizes", "8,64,512", "--launches", "1", "--max-time", "0.02",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    recs = records_of(only_run(tmp_path))
    assert [p["size"] for p in recs if p["type"] == "point"] == [8, 64, 512]
    assert all("launch" not in p.get("tag", {}) for p in recs)
    assert "launch only" in " ".join(r.stdout.split())


def test_the_default_is_auto_launches_within_the_budget(cli, tmp_path):
    r = cli("run", "-b", "pingpong", "--sizes", "8,1K", "--time-budget", "8", "--no-progress", "--no-report",
            "--runs-dir", str(tmp_path), env=AUTO)
    assert r.returncode == 0, r.stderr
    run = only_run(tmp_path)
    launches = by_launch(records_of(run))
    assert len(launches) >= 3                                        # at least three, however quiet
    meta = json.loads((run / "run.json").read_text())
    policy = meta["launch_policy"]
    assert policy["policy"] == "auto" and policy["launches"] == len(launches) and policy["stopped"]
    per_point = defaultdict(set)
    for k, pts in launches.items():
        for p in pts:
            per_point[p["size"]].add(k)
    assert all(set(range(3)) <= ks for ks in per_point.values())    # the first round measures everything


def test_bad_launch_options_are_one_line_errors(cli_offline, tmp_path):
    for args, words in ((["--launches", "0"], "--launches"), (["--launches", "many"], "--launches"),
                        (["--launch-target", "0"], "--launch-target"), (["--launch-target", "2"], "--launch-target")):
        r = cli_offline("run", "-b", "pingpong", "--sizes", "8", *args, "--runs-dir", str(tmp_path))
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    r = cli_offline("run", "-b", "pingpong", "--sizes", "8", "--runs-dir", str(tmp_path), env={"MPISCOPE_LAUNCHES": "x"})
    assert r.returncode == 2 and "MPISCOPE_LAUNCHES" in r.stderr
    assert not any(tmp_path.iterdir())                               # nothing half-made


def test_resume_measures_the_launches_a_run_still_lacks(cli, tmp_path):
    r = cli("run", "-b", "pingpong", "--sizes", "8,64,512", "--launches", "3", "--max-time", "0.02",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    run = only_run(tmp_path)
    lines = (run / "records.jsonl").read_text().splitlines()
    cut = [line for line in lines if json.loads(line).get("tag", {}).get("launch") != 2]
    (run / "records.jsonl").write_text("\n".join(cut) + "\n")      # as if cut off before launch 2
    meta = json.loads((run / "run.json").read_text())
    meta["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(meta))
    r = cli("run", "--resume", str(run), "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    launches = by_launch(records_of(run))
    assert sorted(launches) == [0, 1, 2] and all(len(pts) == 3 for pts in launches.values())
    assert json.loads((run / "run.json").read_text())["status"] == "ok"


def test_a_deadlock_found_in_one_launch_is_not_waited_for_in_the_next(cli_process, openmpi_prefix, tmp_path):
    # a real process, as before the command ran in-process: in-process it failed 2 of 3 times on a
    # machine at load 25 (a ringcs1 time-out in launch 2), for a cause not found yet
    # --timeout 10: with nothing of its series measured yet, the engine's own limit for the first
    # point a shuffled launch reaches assumes 10 ms an event (40-80 s for a deadlock at 2-4 KiB)
    r = cli_process("run", "--mpi", "openmpi", "-n", "2", "-b", "ringcs1,ringcs2", "--sizes", "256:4K",
            "--env", "OMPI_MCA_btl_sm_eager_limit=1024", "--max-time", "0.05", "--launches", "3",
            "--engine-args=--timeout 10",
            "--no-progress", "--no-report", "--runs-dir", str(tmp_path), timeout=400)
    assert r.returncode == 0, r.stderr
    recs = records_of(only_run(tmp_path))
    hung = {k: [t for t in ts if t["benchmark"] == "ringcs1"] for k, ts in by_launch(recs, "timeout").items()}
    hung = {k: ts for k, ts in hung.items() if ts}  # (a loaded machine may stall a ringcs2 point too)
    assert set(hung) == {0}, f"time-outs in launches {sorted(hung)}: a deadlock was waited for again"
    smallest = min(t["size"] for t in hung[0])
    skips = by_launch(recs, "skip")
    for k in (1, 2):
        skipped = {s["size"] for s in skips[k] if s["benchmark"] == "ringcs1"}
        assert skipped == {s for s in (256, 512, 1024, 2048, 4096) if s >= smallest}
        assert all("earlier launch" in s["reason"] for s in skips[k])
    points = by_launch(recs)
    for k in (0, 1, 2):                                              # below the limit, and the other
        got = {(p["benchmark"], p["size"]) for p in points[k]}      # benchmark, in every launch
        assert {("ringcs1", 256), ("ringcs1", 512)} <= got
        assert sum(b == "ringcs2" for b, _ in got) >= 3


def test_the_third_run_of_a_configuration_includes_its_drift_from_run_to_run(cli, tmp_path):
    """Launches of one run share the machine's state; from the third run of a configuration in a
    runs directory, each point's interval includes the drift between runs, learnt from the
    earlier runs of the same setting (not from a run with other tuning variables or one launch),
    kept in run.json and used by every reader."""
    def run(*extra: str) -> tuple[subprocess.CompletedProcess, dict]:
        r = cli("run", "-b", "pingpong", "--sizes", "8,1K", "--max-time", "0.02", "--no-progress", "--no-report",
                "--runs-dir", str(tmp_path), *extra, env={"COLUMNS": "250"})
        assert r.returncode == 0, r.stderr
        found = re.search(r"saved in (\S+)", r.stdout)
        return r, json.loads((Path(found.group(1)) / "run.json").read_text())

    first, meta1 = run("--launches", "3")
    # a first run: its intervals carry the stated prior for the drift (issue 28), and say so
    assert "include the prior drift (7 %, not yet learnt from earlier runs)" in " ".join(first.stdout.split())
    assert meta1["drift"] == {"runs": [], "points": []}
    run("--launches", "1")                                            # one launch: no use for drift
    run("--launches", "3", "--env", "MPIR_CVAR_ENABLE_GPU=0")      # another setting
    second, meta2 = run("--launches", "3")
    assert meta2["drift"]["points"] == []                            # two runs of the setting: too few
    # Drift is learnt only from runs in this one's machine state whose launches were not disturbed
    # (results.control, results.history): where the machine switched state between runs (here its
    # two vCPUs near or far apart) or a load disturbed a launch, those runs are left out, so runs
    # are made until three of the setting qualify, and every run passed over must have had a cause.
    earlier = [meta2["id"], meta1["id"]]  # newest first
    for _ in range(6):
        third, meta3 = run("--launches", "3")
        if len(meta3["drift"]["points"]) == 2:
            break
        earlier.insert(0, meta3["id"])
    used = meta3["drift"]["runs"]
    # two earlier runs at least: a run that learnt the drift of one point only (the other's launches
    # disturbed in an earlier run) was made another earlier run, so the next may learn from three
    assert len(used) >= 2 and set(used) <= set(earlier), "no three runs of the setting to learn from"
    passed_over = [i for i in earlier[:earlier.index(used[-1])] if i not in used]
    shifted = shifted_runs(Run(Path(tmp_path) / meta3["id"]), [Run(Path(tmp_path) / i) for i in passed_over])
    disturbed = {i for i in passed_over if any(lp.disturbed for lp in aggregate(Run(Path(tmp_path) / i).records()))}
    assert set(passed_over) <= set(shifted) | disturbed, "a run of the setting was passed over without a cause"
    # three runs of the setting at least: a run passed over in the loop above for one point only
    # still counts for the other, so a point may learn from four
    learnt = {p["size"]: p["runs"] for p in meta3["drift"]["points"]}
    assert sorted(learnt) == [8, 1024] and min(learnt.values()) >= 3
    runs = str(min(learnt.values())) if len(set(learnt.values())) == 1 else \
        f"{min(learnt.values())}-{max(learnt.values())}"
    assert f"include the drift from run to run, learnt from {runs} runs" in " ".join(third.stdout.split())
    # the launch-level frame (tables, exports, report) widens the same intervals
    out = tmp_path / "levels.csv"
    r = cli("export", meta3["id"], "--runs-dir", str(tmp_path), "-o", str(out))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(out.open()))
    assert {int(row["size"]): int(row["drift_runs"]) for row in rows} == learnt
    kept = drifts_kept(meta3)
    third_run = Run(Path(tmp_path) / meta3["id"])
    switched = {launch for _, launch in results_of([third_run]).launches_switched}
    for lp in aggregate(third_run.records()):
        row = next(row for row in rows if int(row["size"]) == lp.size)
        # with a launch in another state of the machine, the interval also covers that state
        wide = with_other_state(with_drift(lp, kept[(lp.key, lp.config)]), [launch_of(p) in switched for p in lp.points])
        assert (float(row["time_ci_low_us"]), float(row["time_ci_high_us"])) == pytest.approx((wide.ci_low, wide.ci_high))
        assert wide.ci_low <= lp.ci_low + 1e-12 and wide.ci_high >= lp.ci_high - 1e-12
    # compare of two runs of the setting says the drift was part of the test
    r = cli("compare", used[0], meta3["id"], "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert re.search(r"with the drift from run to run learnt from [3-9](-[3-9])? runs", " ".join(r.stdout.split()))


def test_no_more_launches_where_the_drift_from_run_to_run_dominates():
    """Launches of one run narrow only the launch part of the interval: a point whose variance
    over launches is already a third of its drift or less gets no more (Kalibera and Jones: a
    level's repetitions pay while its variance is not swamped by the level above)."""
    from mpiscope.results.launches import Drift, log_se, launch_summary
    from mpiscope.records import Point, Stats
    from mpiscope.results.launches import drift_dominates
    from mpiscope.results.policy import POLICY
    DRIFT_DOMINATES = POLICY.drift_dominates
    lp = launch_summary([Point("pingpong", 8, 2, Stats(n=100, median=m, ci_low=m * 0.99, ci_high=m * 1.01),
                          tag={"launch": k}) for k, m in enumerate((1.0, 1.1, 0.95))])
    var = log_se(lp) ** 2
    assert drift_dominates(lp, Drift(var / DRIFT_DOMINATES * 1.01, 5))
    assert not drift_dominates(lp, Drift(var / DRIFT_DOMINATES * 0.99, 5))
    assert not drift_dominates(lp, None) and not drift_dominates(lp, Drift(0.0, 5))
