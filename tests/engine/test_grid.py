"""The grid benchmark and --order on the real engine (Open MPI, 4 and 6 ranks
on a 2-core machine): every factorisation, HPL's row-major rows and columns,
the phase figures, --check, --grid, and rank renumbering."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import ROOT_OK, run_engine

QUICK = ["--max-time", "0.02", "--min-reps", "4", "--warmup", "2", "--warmup-bytes", "0"]


def factorisations(n: int) -> list[str]:
    return [f"{p}x{n // p}" for p in range(1, n + 1) if n % p == 0]


@pytest.mark.parametrize("ranks", [4, 6])
def test_every_factorisation_with_rows_columns_and_phases(engine_openmpi, openmpi_launch, ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "8,4096", "--check", *QUICK, "grid")
    assert run.returncode == 0, run.stderr
    points = run.points("grid")
    assert [(p["grid"]["shape"], p["size"]) for p in points] == [
        (s, size) for s in factorisations(ranks) for size in (8, 4096)]
    for p in points:
        g = p["grid"]
        P, Q = g["p"], g["q"]
        assert P * Q == ranks and g["mapping"] == "row-major"
        assert [row["ranks"] for row in g["rows"]] == [list(range(r * Q, r * Q + Q)) for r in range(P)]
        assert [col["ranks"] for col in g["columns"]] == [list(range(q, ranks, Q)) for q in range(Q)]
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] == 2 * p["size"] * ranks * 3
        assert set(p["phases_us"]) == {"step", "row", "column"}
        assert p["phases_us"]["step"] == p["time_us"]["median"]
        assert all(v > 0 for v in p["phases_us"].values())
        assert all(n >= 1 for n in p["phase_samples"].values())


def test_one_shape_with_grid_option(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(6), engine_openmpi, "--sizes", "64", "--grid", "3x2", *QUICK, "grid")
    assert run.returncode == 0, run.stderr
    assert [p["grid"]["shape"] for p in run.points()] == ["3x2"]
    assert run.context["options"]["grid"] == "3x2"


def test_grid_that_does_not_fit_is_one_error_line(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "64", "--grid", "2x3", *QUICK, "grid")
    assert run.returncode != 0 and not run.points()
    lines = [ln for ln in run.stderr.splitlines() if "mpiscope-engine: error:" in ln]
    assert len(lines) == 1 and "needs 6 ranks, this job has 4" in lines[0], run.stderr


@pytest.mark.parametrize("option,value", [("--grid", v) for v in ("2x", "x3", "0x4", "2x3x", "two")]
                         + [("--order", v) for v in ("0,0", "1,", ",1", "a,b", "-1,0", "random")])
def test_bad_grid_and_order_values_are_refused_before_mpi(engine_openmpi, option, value):
    done = subprocess.run([str(engine_openmpi), option, value, "grid"], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"mpiscope-engine: error: {option} expects") and done.stderr.count("\n") == 1


def test_order_list_must_cover_the_job(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--order", "0,1,2", "--sizes", "8", *QUICK, "grid")
    assert run.returncode != 0 and not run.points()
    assert "--order needs every rank from 0 to 3 exactly once" in run.stderr


@pytest.mark.parametrize("order", ["block", "cyclic"])
def test_block_and_cyclic_on_one_host_keep_the_launch_order(engine_openmpi, openmpi_launch, order):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--order", order, "--sizes", "8", *QUICK, "grid")
    assert run.returncode == 0, run.stderr
    ctx = run.context
    assert ctx["order"] == order and ctx["options"]["order"] == order
    # one host: dealing ranks across hosts and keeping them together agree
    assert ctx["ranks_by_host"] == [[0, 1, 2, 3]]
    assert [r["launch_rank"] for r in ctx["ranks"]] == [0, 1, 2, 3]
    for p in run.points():
        assert p["order"] == order
        assert all(len(g["hosts"]) == 1 for g in p["grid"]["rows"] + p["grid"]["columns"])


def test_order_list_renumbers_the_ranks(engine_openmpi, openmpi_prefix):
    # --tag-output names the launch rank of each line's writer: the records come
    # from the new rank 0, which must be launch rank 2
    launch = [str(openmpi_prefix / "bin" / "mpirun"), "-n", "4", "--oversubscribe", "--bind-to", "none",
              "--tag-output"]
    done = subprocess.run([*launch, str(engine_openmpi), "--order", "2,0,3,1", "--sizes", "8", "--grid", "2x2",
                           *QUICK, "grid"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **ROOT_OK})
    assert done.returncode == 0, done.stderr
    tagged = [ln for ln in done.stdout.splitlines() if "{" in ln]
    assert tagged and all(ln.startswith("[1,2]<stdout>:") or ln.split("]", 1)[0].endswith(",2") for ln in tagged)
    records = [json.loads(ln[ln.index("{"):]) for ln in tagged]
    ctx, point = records[0], next(r for r in records if r["type"] == "point")
    assert ctx["order"] == "list" and ctx["options"]["order_list"] == [2, 0, 3, 1]
    assert [r["launch_rank"] for r in ctx["ranks"]] == [2, 0, 3, 1]
    assert len({r["pid"] for r in ctx["ranks"]}) == 4
    # the grid is laid over the new numbering: row 0 holds launch ranks 2 and 0
    rows = [[ctx["ranks"][r]["launch_rank"] for r in row["ranks"]] for row in point["grid"]["rows"]]
    assert rows == [[2, 0], [3, 1]]
