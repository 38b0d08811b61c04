"""Issue 47: `tune` has one owner at a time, as runs do, and a launch that fails before the engine
starts (a bad --launcher-args, a host `run` would refuse) ends in one line, never a traceback.
Real processes, a real lock, real launches."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpiscope.execute.tune import FORMAT, STATE, tune_description
from mpiscope.plan.describe import to_json


def one_error_line(r, *fragments: str) -> str:
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len([x for x in r.stderr.splitlines() if x.startswith("mpiscope: error:")]) == 1, r.stderr
    assert all(f in said for f in fragments), said
    return said


@pytest.fixture
def owned_tune(tmp_path):
    """A tune directory, and another process that owns it the way a running tune does."""
    directory = tmp_path / "runs" / "tune-x"
    directory.mkdir(parents=True)
    d = tune_description({"benchmarks": "allreduce", "sizes": "8"})
    (directory / STATE).write_text(json.dumps({"format": FORMAT, "description": to_json(d), "failed": {}}))
    owner = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                              "from mpiscope.store.owner import claim; claim(Path(sys.argv[1]), 'x', 'y'); "
                              "print('owned', flush=True); time.sleep(120)", str(directory)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "owned"
        yield directory, owner.pid
    finally:
        owner.kill()
        owner.wait()


def test_a_resume_beside_a_running_tune_is_refused(cli, owned_tune):
    directory, pid = owned_tune
    before = (directory / STATE).read_text()
    r = cli("tune", "--resume", str(directory), "--runs-dir", str(directory.parent), "--no-progress")
    one_error_line(r, f"tune {directory} is being measured by mpiscope pid {pid}",
                   f"`mpiscope tune --resume {directory}`")
    assert (directory / STATE).read_text() == before
    assert [p.name for p in directory.parent.iterdir()] == ["tune-x"]  # no race run began


def test_a_launch_that_fails_before_the_engine_is_one_line(cli, tmp_path):
    runs = tmp_path / "runs"
    r = cli("tune", "allreduce", "--sizes", "8", "--launcher-args=--no-such-flag", "--runs-dir", str(runs),
            "--no-progress")
    one_error_line(r, "tune cannot race allreduce at 2 ranks: its launch with the library's default algorithm "
                      "failed", "`mpiscope run -b allreduce -n 2`")
    (directory,) = runs.glob("tune-*")
    assert "allreduce|2|default" in json.loads((directory / STATE).read_text())["failed"]
    again = cli("tune", "--resume", str(directory), "--runs-dir", str(runs), "--no-progress")
    one_error_line(again, "tune cannot race allreduce at 2 ranks")


@pytest.mark.parametrize("hosts", ["a..b", "-x", "a b", "h:0"])
def test_hosts_are_checked_as_run_checks_them(cli_offline, tmp_path, hosts):
    runs = tmp_path / "runs"
    tune = cli_offline("tune", "allreduce", f"--hosts={hosts}", "--runs-dir", str(runs))
    run = cli_offline("run", "-b", "allreduce", f"--hosts={hosts}", "--runs-dir", str(runs))
    said = one_error_line(tune, "--hosts")
    assert said == " ".join(run.stderr.split())
    assert not runs.exists()
