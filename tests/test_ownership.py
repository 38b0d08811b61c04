"""One owner at a time (issue 32): real mpiscope processes racing on a real runs directory. A
run or sweep being measured cannot be resumed by a second mpiscope; run.json says running until
the last launch ends; readers of a run still measuring say so; two runs into one runs directory
both stay whole."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# every point runs to its time cap (a CI target it cannot reach): a launch lasts ~5 s, so the two
# launches after the first leave some 10 s to race it, far more than the test's 0.05 s polls take
MEASURE = ["-b", "pingpong", "-n", "2", "--sizes", "1:1K", "--ci-target", "0.00001", "--max-time", "0.4",
           "--no-progress", "--no-report"]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mpiscope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def wait_for(check, timeout: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def first_launch_logged(runs: Path) -> Path | None:
    """The run in `runs` once its first launch is logged in run.json (between launches)."""
    for run in runs.glob("*/run.json"):
        try:
            if json.loads(run.read_text()).get("launches"):
                return run.parent
        except ValueError:
            pass
    return None


def test_a_run_being_measured_cannot_be_resumed_and_says_running(cli, tmp_path, mpiscope_home):
    runs = tmp_path / "runs"
    owner = start("run", *MEASURE, "--launches", "3", "--runs-dir", str(runs))
    try:
        wait_for(lambda: first_launch_logged(runs) or owner.poll() is not None, what="the first launch")
        run = first_launch_logged(runs)
        assert run is not None and owner.poll() is None, "the run ended before the test could race it"
        # held between launches (stopped, not killed: it keeps its lock), however slow the machine
        owner.send_signal(signal.SIGSTOP)
        assert json.loads((run / "run.json").read_text())["status"] == "running"
        r = cli("run", "--resume", run.name, "--runs-dir", str(runs), "--no-progress", "--no-report")
        said = " ".join(r.stderr.split())
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert f"pid {owner.pid} on host {socket.gethostname()}" in said and "Traceback" not in said
        assert len([line for line in r.stderr.splitlines() if line.strip()]) == 1
        shown = cli("export", run.name, "--runs-dir", str(runs), "--format", "csv")
        assert shown.returncode == 0 and "still being measured" in shown.stderr, shown.stderr
        assert " running " in cli("runs", "--runs-dir", str(runs)).stdout
    finally:
        owner.send_signal(signal.SIGCONT)
        out, err = owner.communicate(timeout=300)
    assert owner.returncode == 0, err
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and len(meta["launches"]) == 3
    # each launch keeps mpiscope's wall-clock limit for it and how long it ran
    assert all(launch["limit_s"] > 60 and launch["wall_s"] > 0 for launch in meta["launches"])
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    contexts = [r for r in records if r["type"] == "context"]
    points = [(r["size"], r["tag"]["launch"]) for r in records if r["type"] == "point"]
    assert len(contexts) == 3 and len(points) == len(set(points)) == 3 * 11  # 1 B .. 1 KiB, no point twice
    after = cli("export", run.name, "--runs-dir", str(runs), "--format", "csv")
    assert "still being measured" not in after.stderr


def test_a_killed_owner_frees_the_run_for_resume(cli, tmp_path, mpiscope_home):
    runs = tmp_path / "runs"
    owner = start("run", *MEASURE, "--launches", "3", "--runs-dir", str(runs))
    wait_for(lambda: first_launch_logged(runs) or owner.poll() is not None, what="the first launch")
    run = first_launch_logged(runs)
    assert run is not None and owner.poll() is None
    owner.send_signal(signal.SIGKILL)  # no handler runs: only the kernel releases the lock
    owner.communicate(timeout=60)
    listed = cli("runs", "--runs-dir", str(runs))
    assert "stopped" in listed.stdout
    r = cli("run", "--resume", run.name, "--runs-dir", str(runs), "--no-progress", "--no-report")
    assert r.returncode == 0, r.stderr
    assert json.loads((run / "run.json").read_text())["status"] == "ok"


def test_a_sweep_being_measured_cannot_be_resumed(cli, tmp_path, mpiscope_home):
    runs = tmp_path / "runs"
    spec = tmp_path / "race.toml"
    spec.write_text('name = "race"\nlaunches = 1\n[measure]\nbenchmarks = ["pingpong"]\nsizes = "1:1K"\n'
                    'ci_target = 0.00001\nmax_time = 0.3\n[factors]\nranks = [2]\n[factors.env]\nRACE = ["a", "b", "c"]\n')
    owner = start("sweep", str(spec), "--runs-dir", str(runs), "--no-progress", "--no-report")
    try:
        wait_for(lambda: any(runs.glob("sweeps/race-*/sweep.json")) or owner.poll() is not None,
                 what="the sweep to start")
        assert owner.poll() is None, owner.communicate()
        owner.send_signal(signal.SIGSTOP)  # held mid-sweep, its lock kept, however slow the machine
        r = cli("sweep", str(spec), "--resume", "--runs-dir", str(runs), "--no-progress", "--no-report")
        assert r.returncode == 2, (r.stdout, r.stderr)
        said = " ".join(r.stderr.split())
        assert f"pid {owner.pid} on host {socket.gethostname()}" in said and "Traceback" not in said
    finally:
        owner.send_signal(signal.SIGCONT)
        out, err = owner.communicate(timeout=300)
    assert owner.returncode == 0, err
    (sweep,) = runs.glob("sweeps/race-*")
    finished = [json.loads(line) for line in (sweep / "results.jsonl").read_text().splitlines()]
    assert sorted(e["config"] for e in finished) == ["c001", "c002", "c003"]  # each configuration once


def test_two_runs_into_one_runs_directory_both_stay_whole(tmp_path, mpiscope_home, embedded_mpi):
    runs = tmp_path / "runs"
    both = [start("run", *MEASURE, "--launches", "1", "--runs-dir", str(runs)) for _ in range(2)]
    for p in both:
        p.communicate(timeout=300)
        assert p.returncode == 0
    made = sorted(runs.iterdir())
    assert len(made) == 2
    for run in made:
        records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
        assert [r["type"] for r in records].count("context") == 1
        assert sorted(r["size"] for r in records if r["type"] == "point") == [2 ** k for k in range(11)]
        assert json.loads((run / "run.json").read_text())["status"] == "ok"


def test_the_lock_names_its_owner_and_dies_with_it(tmp_path):
    """owner.holder sees another process's claim and not this process's own."""
    from mpiscope.store import owner
    code = ("import sys, time; from pathlib import Path; from mpiscope.store.owner import claim; "
            f"claim(Path({str(tmp_path)!r}), 'x', 'y'); print('held', flush=True); time.sleep(60)")
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        assert owner.holder(tmp_path) == (other.pid, socket.gethostname())
        with pytest.raises(Exception, match=f"pid {other.pid}"):
            owner.claim(tmp_path, "x", "y")
    finally:
        other.kill()
        other.wait()
    assert owner.holder(tmp_path) is None
    with owner.claim(tmp_path, "x", "y"):
        assert owner.holder(tmp_path) is None  # its own claim is not a foreign owner


def test_a_run_stays_owned_and_running_into_its_find_switches_rounds(cli, tmp_path, monkeypatch):
    """Between a run's own launches and its --find-switches rounds the lock is never let go:
    when the refinement starts, another process sees this one as the owner and run.json says
    running; once it ends, ok."""
    from mpiscope.execute import refine
    seen = []
    real = refine.refine_run

    def watched(session, target, run):
        code = ("import sys; from pathlib import Path; from mpiscope.store.owner import holder; "
                "print(holder(Path(sys.argv[1])))")
        said = subprocess.run([sys.executable, "-c", code, str(run.path)], capture_output=True, text=True,
                              timeout=60)
        seen.append((said.stdout.strip(), json.loads((run.path / "run.json").read_text())["status"]))
        return real(session, target, run)

    monkeypatch.setattr(refine, "refine_run", watched)
    runs = tmp_path / "runs"
    r = cli("run", "-b", "pingpong", "--sizes", "1:64K", "--max-time", "0.05", "--no-progress", "--no-report",
            "--find-switches", "--runs-dir", str(runs))
    assert r.returncode == 0, r.stderr
    assert seen == [(str((os.getpid(), socket.gethostname())), "running")]
    (run,) = runs.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and "refinement" in meta  # run.json keeps its extras at the top level
