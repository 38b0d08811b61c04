"""Family names: `mpiscope run -b FAMILY` (expanded from the engine's own registry, which is
the only list), and `mpiscope bench list` with each family's availability for the chosen MPI
(from the engine built for it: an MPI without persistent collectives gets them as skips)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mpiscope.util.errors import UsageError
from mpiscope.plan.engine import availability, default_ranks, expand_benchmarks, families, make_plan, registry
from mpiscope_test_fixtures.synthetic import records_of

ENGINE_SRC = Path(__file__).resolve().parents[1] / "engine"
QUICK = ["--max-time", "0.02", "--no-progress", "--no-report", "--launches", "1"]


def test_a_family_stands_for_its_rows_in_registry_order(mpich_engine):
    rows = families(mpich_engine)
    persistent = [b.name for b in rows["persistent"]]
    assert persistent[:3] == ["pingpong_persistent", "bw_persistent", "barrier_persistent"]
    assert len(persistent) == 19 and {b.family for b in rows["neighbor"]} == {"neighbor"}
    names = expand_benchmarks(mpich_engine, ["pingpong", "persistent", "bw_persistent", "neighbor"])
    assert names == ("pingpong", *persistent, *[b.name for b in rows["neighbor"]])
    # every row in exactly one family, each family in the registry's order
    order = [b.name for b in registry(mpich_engine)]
    assert sorted(b.name for f in rows.values() for b in f) == sorted(order)
    for f in rows.values():
        assert [b.name for b in f] == sorted((b.name for b in f), key=order.index)
    with pytest.raises(UsageError, match="unknown benchmark or family 'persistant': did you mean 'persistent'"):
        expand_benchmarks(mpich_engine, ["persistant"])


def test_plans_and_default_ranks_take_family_names(mpich_engine):
    plan, planned = make_plan(mpich_engine, ["neighbor", "alltoallw"], 2, sizes="8")
    assert plan.benchmarks[-1] == "alltoallw" and len(plan.benchmarks) == 11
    assert {p.family for p in planned.points} == {"neighbor", "coll"}
    assert default_ranks(["loggp"], mpich_engine, 8) == 2  # pair benchmarks only
    assert default_ranks(["persistent"], mpich_engine, 8) == 8  # the collectives want every core


def test_availability_comes_from_the_engine_build(mpich_engine, mpich_mpicc, tmp_path):
    assert all(f.available == f.benchmarks and not f.reasons for f in availability(mpich_engine))
    # an engine built as for an MPI without persistent collectives (on every core, as mpi/build.py does)
    done = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "-C", str(ENGINE_SRC), f"MPICC={mpich_mpicc}",
                           f"BUILD={tmp_path}",
                           "CFLAGS=-O2 -DMPISCOPE_NO_PERSISTENT_COLL"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    by = {f.family: f for f in availability(tmp_path / "mpiscope-engine")}
    assert (by["persistent"].benchmarks, by["persistent"].available) == (19, 2)
    assert len(by["persistent"].reasons) == 1 and "without persistent collectives" in by["persistent"].reasons[0]
    assert by["neighbor"].available == by["neighbor"].benchmarks == 10


def test_run_with_a_family_name(cli, tmp_path):
    r = cli("run", "-b", "neighbor,pingpong", "-n", "2", "--sizes", "8", "--check", *QUICK,
            "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    recs = records_of(run)
    points = [p for p in recs if p["type"] == "point"]
    assert [p["benchmark"] for p in points] == [
        "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw",
        "ineighbor_allgather", "ineighbor_allgatherv", "ineighbor_alltoall", "ineighbor_alltoallv",
        "ineighbor_alltoallw", "pingpong"]
    assert all(p["check"]["errors"] == 0 and p["check"]["verified_bytes"] > 0 for p in points)


def test_bench_list_shows_families_and_their_availability(cli, openmpi_prefix):
    r = cli("bench", "list", "--mpi", "openmpi")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "families (openmpi, MPI 3.1)" in text
    family_lines = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") == 5}
    # Open MPI 5 has the persistent collectives although it reports MPI 3.1
    for family in ("p2p", "coll", "nbc", "persistent", "neighbor"):
        assert family in family_lines and family_lines[family].split("│")[3].strip() == "yes"
    assert "alltoallw_persistent" in text and "-b FAMILY" in text


def test_unknown_family_is_a_one_line_error(cli, tmp_path):
    r = cli("run", "-b", "neighbour", "--sizes", "8", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "unknown benchmark or family 'neighbour': did you mean 'neighbor'" in " ".join(r.stderr.split())
