"""The command in-process (tests/fixtures/cli.py) is the command as a process: the same exit
status, stdout and stderr, byte for byte; it leaves the test's process as it found it; and a
command that hangs ends in subprocess.TimeoutExpired as a process would, not in a hung suite."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from mpiscope.util import console
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

OFFLINE = [
    ["--version"],
    ["--help"],
    ["run", "--help"],
    ["nosuchcommand"],
    ["run", "--reps", "0"],
    ["show", "nothing-here"],
    ["runs"],
    ["show", "latest"],
    ["export", "latest", "--format", "csv"],
    ["table", "latest", "--format", "markdown"],
    ["compare", "latest", "latest"],
]


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    where = tmp_path_factory.mktemp("runs")
    stored_run(where, [launch_point(1.0 + k / 10, k, size=s) for k in range(3) for s in (8, 1024)])
    return where


@pytest.mark.parametrize("args", OFFLINE, ids=" ".join)
def test_the_same_output_as_a_process(cli_offline, cli_process, runs_dir, args):
    env = {"MPISCOPE_RUNS": str(runs_dir), "COLUMNS": "100"}
    real, here = cli_process(*args, env=env), cli_offline(*args, env=env)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr)
    assert here.args == real.args


def test_the_process_is_left_as_it_was(cli_offline, runs_dir, tmp_path):
    before = (dict(os.environ), os.getcwd(), sys.argv, sys.stdout, sys.stderr, sys.stdin,
              signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM), console.err.width)
    r = cli_offline("runs", env={"MPISCOPE_RUNS": str(runs_dir), "LANES_PROBE": "1"}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    after = (dict(os.environ), os.getcwd(), sys.argv, sys.stdout, sys.stderr, sys.stdin,
             signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM), console.err.width)
    assert after == before


def test_cwd_and_env_are_the_commands(cli_offline, runs_dir, tmp_path):
    """A relative --runs-dir is read from cwd=, MPISCOPE_RUNS from env=."""
    (tmp_path / "here").symlink_to(runs_dir)
    by_cwd = cli_offline("runs", "--runs-dir", "here", cwd=tmp_path)
    by_env = cli_offline("runs", env={"MPISCOPE_RUNS": str(runs_dir)})
    assert by_cwd.returncode == by_env.returncode == 0
    (run,) = runs_dir.iterdir()
    assert run.name in by_cwd.stdout and run.name in by_env.stdout
    assert "runs in here" in by_cwd.stdout and f"runs in {runs_dir}" in by_env.stdout


def test_a_hang_ends_in_a_timeout(cli_offline, tmp_path, monkeypatch):
    """A command that never returns (readers refuse a FIFO now, so the command itself is made to
    block): the runner's alarm ends it."""
    import time

    from mpiscope.commands import runs
    monkeypatch.setattr(runs, "cmd_runs", lambda a: time.sleep(600))
    handler = signal.getsignal(signal.SIGALRM)
    with pytest.raises(subprocess.TimeoutExpired) as hung:
        cli_offline("runs", "--runs-dir", str(tmp_path / "runs"), timeout=2)
    assert hung.value.timeout == 2
    assert signal.getsignal(signal.SIGALRM) == handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert cli_offline("--version").returncode == 0  # and the next call is as good as ever
