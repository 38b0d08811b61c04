"""Configurations measured side by side (issue 44): a sweep's and `run --vs`'s launches run in
randomised blocks, each configuration still its own run; resuming a cut-off interleaved sweep
finishes every configuration's run in place."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from mpiscope_test_fixtures.synthetic import records_of

from mpiscope.execute.interleave import interleave
from mpiscope.util.errors import MpiscopeError

SPEC = """
name = "side"
[measure]
benchmarks = ["pingpong"]
sizes = "{sizes}"
max_time = {max_time}
ranks = 2
[factors.env]
MPISCOPE_TEST_LEVEL = ["a", "b"]
"""


def _runs(runs: Path) -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in runs.glob("*/run.json")), key=lambda m: m["started"])


def _blocks(metas: list[dict]) -> dict[int, list[tuple[str, str, str]]]:
    """block -> (began, ended, run id) of every step in it, in time order."""
    out: dict[int, list] = {}
    for m in metas:
        for step in m["interleave"]["steps"]:
            out.setdefault(step["block"], []).append((step["began"], step["ended"], m["id"]))
    return {b: sorted(steps) for b, steps in out.items()}


def _assert_interleaved(metas: list[dict], launches: int) -> None:
    """Block k holds launch k of every run, and ends before block k+1 begins; blocks after the
    first `launches` are a `run --vs` second stage's, of the runs its mark names (tests/test_second_stage.py)."""
    blocks = _blocks(metas)
    assert sorted(blocks)[:launches] == list(range(launches))
    for b, steps in blocks.items():
        if b < launches:
            assert sorted(run for _, _, run in steps) == sorted(m["id"] for m in metas), (b, steps)
        if b + 1 in blocks:
            assert max(end for _, end, _ in steps) <= min(began for began, _, _ in blocks[b + 1])
    for m in metas:
        steps = m["interleave"]["steps"]
        assert [s["launches"] for s in steps[:launches]] == [[k] for k in range(launches)]
        if len(steps) > launches:
            stages = m["interleave"]["stages"]
            assert stages["first"] == launches and len(steps) <= launches + stages["second"]


def _killed_after_a_step(args: list[str], runs: Path) -> list[dict]:
    """`mpiscope ARGS` of two configurations killed (SIGKILL) once both runs exist and one launch
    is done, so that the kill lands in the next: the runs' metadata as they were left."""
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    end = time.monotonic() + 300
    while len(_runs(runs)) < 2 or not any(m["interleave"]["steps"] for m in _runs(runs)):
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    return _runs(runs)


def test_a_sweep_measures_its_configurations_in_blocks(cli, mpiscope_home, tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC.format(sizes="8,1K", max_time=0.01))
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--launches", "3",
            "--seed", "7", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    metas = _runs(tmp_path / "runs")
    assert len(metas) == 2 and all(m["status"] == "ok" for m in metas)
    _assert_interleaved(metas, 3)
    # one session, one seed, each run naming every run of it; configurations stay separable
    assert {m["interleave"]["session"] for m in metas} == {metas[0]["interleave"]["session"]}
    assert all(m["interleave"]["seed"] == 7 for m in metas)
    assert all(m["interleave"]["runs"] == [x["id"] for x in sorted(metas, key=lambda x: x["sweep"]["config"])]
               for m in metas)
    assert sorted(m["factors"]["env.MPISCOPE_TEST_LEVEL"] for m in metas) == ["a", "b"]
    for m in metas:
        recs = records_of(tmp_path / "runs" / m["id"])
        assert sorted({x["tag"]["launch"] for x in recs if x["type"] == "point"}) == [0, 1, 2]
    sd = next((tmp_path / "runs" / "sweeps").glob("side-*"))
    t = cli("table", str(sd), "--format", "csv")
    assert t.returncode == 0 and "MPISCOPE_TEST_LEVEL=a" in t.stdout and "MPISCOPE_TEST_LEVEL=b" in t.stdout


def test_run_vs_measures_both_side_by_side_and_compares(cli, mpiscope_home, tmp_path):
    r = cli("run", "-b", "pingpong", "--sizes", "8,1K", "--max-time", "0.01", "--launches", "2", "--no-report",
            "--vs", "--env MPIR_CVAR_CH4_SHM_POSIX_EAGER_MAX_MSG_SIZE=1024", "--runs-dir", str(tmp_path / "runs"),
            "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    metas = _runs(tmp_path / "runs")
    assert len(metas) == 2 and all(m["status"] == "ok" for m in metas)
    base, vs = sorted(metas, key=lambda m: m["interleave"]["label"] != "base")
    assert vs["interleave"]["label"] == "--env MPIR_CVAR_CH4_SHM_POSIX_EAGER_MAX_MSG_SIZE=1024"
    assert vs["description"]["env"] == {"MPIR_CVAR_CH4_SHM_POSIX_EAGER_MAX_MSG_SIZE": "1024"}
    assert not base["description"].get("env")
    assert base["interleave"]["runs"] == vs["interleave"]["runs"] == [base["id"], vs["id"]]
    _assert_interleaved(metas, 2)
    # the verdict table of `mpiscope compare BASE VS`
    assert f"{vs['id']} against baseline {base['id']}" in r.stdout
    assert "verdict" in r.stdout and "points compared" in r.stdout


def test_bad_vs_is_one_line_and_creates_nothing(cli_offline, tmp_path):
    for vs, said in (("--bogus", "unrecognized arguments: --bogus"), ("-n 0", "-n/--ranks must be at least 1"),
                     ("--env novalue", "--env expects NAME=VALUE"), ("", "no option given"),
                     ("--runs-dir x", "--runs-dir applies to the whole session"), ("--env 'X", "cannot be split")):
        r = cli_offline("run", "-b", "pingpong", f"--vs={vs}", "--runs-dir", str(tmp_path / "runs"))
        assert r.returncode == 2, (vs, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and said in r.stderr and f"--vs '{vs}'" in r.stderr, r.stderr
    r = cli_offline("run", "-b", "pingpong", "--vs", "--env X=1", "--resume", "x", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "leave out --vs" in r.stderr
    r = cli_offline("run", "-b", "pingpong", "--seed", "3", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "add --vs" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_resume_of_a_killed_interleaved_sweep_finishes_every_run_in_place(cli, mpiscope_home, tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC.format(sizes="1:4K", max_time=0.05))
    args = ["sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--launches", "3"]
    cut = _killed_after_a_step([*args, "--no-progress"], tmp_path / "runs")
    assert sum(len(m["interleave"]["steps"]) for m in cut) < 6  # not every launch was measured

    r = cli(*args, "--resume", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    metas = _runs(tmp_path / "runs")
    assert [m["id"] for m in metas] == [m["id"] for m in cut]  # the same runs, finished in place
    assert all(m["status"] == "ok" for m in metas)
    for m in metas:
        recs = records_of(tmp_path / "runs" / m["id"])
        launches = sorted({x["tag"]["launch"] for x in recs if x["type"] == "point"})
        assert launches == [0, 1, 2], (m["id"], launches)
    log = [json.loads(line) for line in next((tmp_path / "runs" / "sweeps").glob("side-*/results.jsonl")).read_text()
           .splitlines()]
    assert sorted((e["config"], e["status"], e["run"]) for e in log) == sorted(
        (m["sweep"]["config"], "ok", m["id"]) for m in metas)


def test_resume_of_a_killed_run_vs_goes_on_side_by_side_and_compares(cli, mpiscope_home, tmp_path):
    """`run --resume` of either run of a cut-off `run --vs` session resumes both, still in blocks
    (numbered after the ones before the cut, so the comparison still pairs by block)."""
    args = ["run", "-b", "pingpong", "--sizes", "1:4K", "--max-time", "0.05", "--launches", "3", "--no-report",
            "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    cut = _killed_after_a_step([*args, "--vs", "--env MPISCOPE_TEST_LEVEL=b"], tmp_path / "runs")
    before = sum(len(m["interleave"]["steps"]) for m in cut)
    assert before < 6 and all("runs" not in m["interleave"] for m in cut)  # killed: never linked

    r = cli(*args[:1], "--resume", cut[-1]["id"], *args[-3:])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "side by side, resumed from block" in r.stderr
    metas = _runs(tmp_path / "runs")
    assert [m["id"] for m in metas] == [m["id"] for m in cut] and all(m["status"] == "ok" for m in metas)
    base, vs = sorted(metas, key=lambda m: m["interleave"]["index"])
    assert base["interleave"]["label"] == "base" and base["interleave"]["runs"] == [base["id"], vs["id"]]
    for m in metas:
        recs = records_of(tmp_path / "runs" / m["id"])
        assert sorted({x["tag"]["launch"] for x in recs if x["type"] == "point"}) == [0, 1, 2], m["id"]
        blocks = [step["block"] for step in m["interleave"]["steps"]]
        assert blocks == sorted(set(blocks)), blocks  # each block once per run, in order
    assert f"{vs['id']} against baseline {base['id']}" in r.stdout and "interleaved" in r.stdout
    assert cli(*args[:1], "--resume", base["id"], *args[-3:]).stdout.count("nothing to resume") == 1


class _Run:
    """What `interleave` reads of a run between its steps."""

    def __init__(self, name: str):
        self.id = name

    def meta(self):
        return SimpleNamespace(launches=[], extra={}, status="ok")


def _steps(name: str, n: int, trace: list, fail_at: int | None = None):
    def steps():
        run = _Run(name)
        for k in range(n):
            if k:  # as Session.steps: a pause between launches, the last one ending the run
                yield run
            if k == fail_at:
                raise MpiscopeError(f"{name} cannot go on")
            trace.append((name, k))
        return run, SimpleNamespace(status="ok")
    return steps


def _order(seed: int, names: str = "abcd", n: int = 4) -> list:
    trace: list = []
    schedule = interleave([_steps(x, n, trace) for x in names], seed, "s")
    assert len(schedule.blocks) == n
    return trace


def test_blocks_hold_each_configuration_once_in_a_seeded_order():
    trace = _order(1)
    blocks = [trace[4 * k:4 * k + 4] for k in range(4)]
    assert all(sorted(b) == [(x, k) for x in "abcd"] for k, b in enumerate(blocks))
    assert _order(1) == trace  # the seed gives the order
    orders = {tuple(tuple(name for name, _ in trace[4 * k:4 * k + 4]) for k in range(4))
              for trace in (_order(seed) for seed in range(6))}
    assert len(orders) > 1  # and another seed another


def test_a_failed_configuration_leaves_the_others_going():
    trace: list = []
    ended: list = []
    interleave([_steps("a", 3, trace, fail_at=1), _steps("b", 3, trace)], 3, "s", ended.append)
    assert sorted(trace) == [("a", 0), ("b", 0), ("b", 1), ("b", 2)]
    assert [(e.index, e.error) for e in sorted(ended, key=lambda e: e.index)] == [
        (0, "a cannot go on"), (1, None)]
