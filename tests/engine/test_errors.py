"""Bad input: one clear message from rank 0, exit status 2, no hang."""
from __future__ import annotations

import json

import pytest

from conftest import run_engine


@pytest.mark.parametrize("args, message", [
    (["--sizes", "1:4X", "pingpong"], "unknown suffix"),
    (["--sizes", "8:1", "pingpong"], "empty"),
    (["--sizes", "1:8:+0", "pingpong"], "step"),
    (["--sizes", "4G", "pingpong"], "2^31-1"),
    (["--sizes", "", "pingpong"], "empty"),
    (["--reps", "zero", "pingpong"], "--reps"),
    (["--ci-target", "2", "pingpong"], "--ci-target"),
    (["--format", "xml", "pingpong"], "--format"),
    (["--min-reps", "10", "--max-reps", "5", "pingpong"], "--min-reps"),
    (["--bogus", "pingpong"], "unknown option '--bogus'"),
    (["--sizes"], "needs a value"),
    (["nosuchbench"], "unknown benchmark 'nosuchbench'"),
    ([], "no benchmark given"),
])
def test_bad_options(engine_mpich, mpich_launch, args, message):
    run = run_engine(mpich_launch(2), engine_mpich, *args, timeout=60)
    assert run.returncode != 0
    errors = [line for line in run.stderr.splitlines() if line.startswith("mpiscope-engine: error:")]
    assert len(errors) == 1, run.stderr  # rank 0 alone speaks
    assert message in errors[0]
    assert run.records == []


def test_exit_status_two_without_launcher(engine_mpich):
    run = run_engine([], engine_mpich, "--window", "0", "bw")
    assert run.returncode == 2 and "--window" in run.stderr


def test_too_few_ranks(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", "8", "pingpong", timeout=60)
    assert run.returncode == 2
    assert "pingpong needs at least 2 ranks, this job has 1" in run.stderr


def test_list_and_info(engine_mpich):
    listing = run_engine([], engine_mpich, "--list", "--json")
    rows = json.loads(listing.stdout)
    names = [r["name"] for r in rows]
    assert names[:8] == ["pingpong", "pingping", "bw", "bibw", "msgrate", "ring", "sendrecv", "exchange"]
    assert all({"family", "min_ranks", "summary", "half_round_trip"} <= set(r) for r in rows)
    assert next(r for r in rows if r["name"] == "pingpong")["half_round_trip"] is True
    assert "pingpong" in run_engine([], engine_mpich, "--list").stdout
    info = json.loads(run_engine([], engine_mpich, "--mpi-info").stdout)
    assert info["mpi_library_version"].startswith("MPICH")
    assert run_engine([], engine_mpich, "--help").stdout.startswith("usage:")
