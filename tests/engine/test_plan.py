"""The engine's plan (`--plan --ranks N`) is what a launch measures: for every
benchmark the points and skips a real run records, in the same order; `--points`
measures exactly the entries chosen, in the order given (also back and forth
between --npmin groups); bad plans and selections are one-line errors with exit
status 2, found before MPI_Init where they can be."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import run_engine

# as tests/fixtures/engine.py: every point is over in well under a second
QUICK = ["--max-time", "0.1", "--min-reps", "8", "--warmup", "2", "--warmup-bytes", "64K", "--timeout", "30"]


def plan_of(engine: Path, ranks: int, *args: str) -> dict:
    """`--plan` needs no launcher: the engine alone, one JSON line."""
    done = subprocess.run([str(engine), "--plan", "--ranks", str(ranks), *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[:500]
    plan = json.loads(lines[0])
    assert plan["type"] == "plan" and plan["schema_version"] == 1 and plan["ranks"] == ranks
    return plan


def plan_error(engine: Path, *args: str) -> str:
    done = subprocess.run([str(engine), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (args, done.stdout[:300], done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpiscope-engine: error: "), done.stderr
    return lines[0]


def key(r: dict) -> tuple:
    return (r["benchmark"], r["size"], r["ranks"], r.get("variant"))


def recorded(run) -> list[tuple]:
    return [key(r) for r in run.records if r["type"] in ("point", "skip")]


def names(engine: Path) -> list[str]:
    done = subprocess.run([str(engine), "--list", "--json"], capture_output=True, text=True, timeout=60)
    return [row["name"] for row in json.loads(done.stdout)]


def test_the_plan_says_what_bounds_each_points_time(engine_mpich):
    plan = plan_of(engine_mpich, 3, "--sizes", "8", "--reps", "5", "--timeout", "2", "--max-time", "0.5",
                   "pairs", "iallreduce", "pingpong")
    assert (plan["max_time_s"], plan["reps"], plan["timeout_s"]) == (0.5, 5, 2)
    # pairs: the whole ring, each of the 3 pairs alone, each of the 2 shifted rings
    assert [p.get("phases", 1) for p in plan["points"]] == [6, 3, 1]


def test_plan_json_shape(engine_mpich):
    plan = plan_of(engine_mpich, 4, "--sizes", "1,8", "pingpong", "grid", "barrier", "allreduce")
    assert plan["engine_version"] and plan["benchmarks"] == ["pingpong", "grid", "barrier", "allreduce"]
    assert plan["sizes_bytes"] == [1, 8]
    assert (plan["max_time_s"], plan["reps"], plan["timeout_s"]) == (1, None, None)
    float_skip = "1 bytes is not a whole number of 4-byte float elements (--datatype)"
    assert plan["points"] == [
        {"id": 0, "benchmark": "pingpong", "family": "p2p", "size": 1, "ranks": 4},
        {"id": 1, "benchmark": "pingpong", "family": "p2p", "size": 8, "ranks": 4},
        *[{"id": 2 + 2 * v + s, "benchmark": "grid", "family": "grid", "size": size, "ranks": 4, "variant": shape,
           "phases": 3} for v, shape in enumerate(["1x4", "2x2", "4x1"]) for s, size in enumerate([1, 8])],
        {"id": 8, "benchmark": "barrier", "family": "coll", "size": 0, "ranks": 4, "sizeless": True},
        {"id": 9, "benchmark": "allreduce", "family": "coll", "size": 1, "ranks": 4, "skip": float_skip},
        {"id": 10, "benchmark": "allreduce", "family": "coll", "size": 8, "ranks": 4},
    ]


def test_every_benchmark_on_two_ranks_records_its_plan(engine_mpich, mpich_launch):
    every = names(engine_mpich)
    plan = plan_of(engine_mpich, 2, *QUICK, "--sizes", "0,8,1K", *every)
    points = plan["points"]
    assert [p["id"] for p in points] == list(range(len(points)))
    assert {p["benchmark"] for p in points} == set(every)
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--sizes", "0,8,1K", *every, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert recorded(run) == [key(p) for p in points]
    assert run.records[-1]["points"] == len(run.points())
    for p in points:  # a skip the plan knows is the skip record, with the same reason
        if "skip" in p:
            record = next(r for r in run.records if r["type"] == "skip" and key(r) == key(p))
            assert record["reason"] == p["skip"]
    for r in run.points():  # a variant only on rows that have them (grid shapes, RMA sync modes)
        assert ("variant" in r) == (r["benchmark"] == "grid" or r["family"] == "rma")


def test_every_benchmark_on_fewer_ranks_is_a_skip_or_an_error(engine_mpich):
    every = names(engine_mpich)
    rows = {r["name"]: r for r in json.loads(subprocess.run([str(engine_mpich), "--list", "--json"],
                                                            capture_output=True, text=True).stdout)}
    # --npmin 1: on the one-rank group every benchmark needing two is planned as a skip
    plan = plan_of(engine_mpich, 2, "--npmin", "1", "--sizes", "8", *every)
    on_one = {p["benchmark"]: p for p in plan["points"] if p["ranks"] == 1}
    for name in every:
        if rows[name]["min_ranks"] > 1:
            assert on_one[name]["skip"] == "too few ranks" and on_one[name]["size"] == 0, name
        else:
            assert "skip" not in on_one[name], name
    # a job too small for a benchmark is an error before anything runs
    for name in every:
        if rows[name]["min_ranks"] > 1:
            line = plan_error(engine_mpich, "--plan", "--ranks", "1", "--sizes", "8", name)
            assert f"{name} needs at least 2 ranks, this job has 1" in line
        else:
            assert plan_of(engine_mpich, 1, "--sizes", "8", name)["points"]
    line = plan_error(engine_mpich, "--plan", "--ranks", "3", "--units", "words", "--sizes", "8", "ringcs2")
    assert "even number of ranks" in line


def test_grid_variants_on_four_ranks_record_their_plan(engine_openmpi, openmpi_launch):
    plan = plan_of(engine_openmpi, 4, "--sizes", "8,1K", "grid")
    assert [(p["variant"], p["size"]) for p in plan["points"]] == [
        (shape, size) for shape in ("1x4", "2x2", "4x1") for size in (8, 1024)]
    run = run_engine(openmpi_launch(4), engine_openmpi, *QUICK, "--sizes", "8,1K", "grid")
    assert run.returncode == 0, run.stderr
    assert recorded(run) == [key(p) for p in plan["points"]]
    assert all(r["variant"] == r["grid"]["shape"] for r in run.points())
    assert [p["variant"] for p in plan_of(engine_openmpi, 4, "--grid", "2x2", "--sizes", "8", "grid")["points"]] \
        == ["2x2"]


def test_npmin_groups_record_their_plan(engine_openmpi, openmpi_launch):
    args = ["--npmin", "1", "--sizes", "2,8", "allreduce", "pingpong"]
    plan = plan_of(engine_openmpi, 4, *args)
    assert [p["ranks"] for p in plan["points"]] == [1] * 3 + [2] * 4 + [4] * 4
    skips = [(p["benchmark"], p["size"], p["ranks"]) for p in plan["points"] if "skip" in p]
    assert skips == [("allreduce", 2, 1), ("pingpong", 0, 1), ("allreduce", 2, 2), ("allreduce", 2, 4)]
    run = run_engine(openmpi_launch(4), engine_openmpi, *QUICK, *args)
    assert run.returncode == 0, run.stderr
    assert recorded(run) == [key(p) for p in plan["points"]]
    assert run.records[-1]["points"] == 7


def test_memory_limit_is_a_skip_of_a_planned_point(engine_mpich, mpich_launch):
    args = ["--sizes", "1K,8M", "--max-memory", "4M", "pingpong"]
    plan = plan_of(engine_mpich, 2, *args)
    assert not any("skip" in p for p in plan["points"])  # the limit is found at run time
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, *args)
    assert run.returncode == 0, run.stderr
    assert recorded(run) == [key(p) for p in plan["points"]]
    assert "--max-memory" in next(r for r in run.records if r["type"] == "skip")["reason"]


@pytest.mark.parametrize("spec, order", [("4,1,1", [4, 1]), ("1,4", [1, 4]), ("4-4,1-1", [4, 1])])
def test_points_measure_exactly_the_chosen_entries(engine_mpich, mpich_launch, spec, order):
    args = ["--sizes", "1,8,64", "pingpong", "bw"]
    plan = plan_of(engine_mpich, 2, *args)
    chosen = [p for p in plan["points"] if p["id"] in (1, 4)]
    assert [key(p) for p in chosen] == [("pingpong", 8, 2, None), ("bw", 8, 2, None)]
    assert plan_of(engine_mpich, 2, "--points", spec, *args)["points"] == chosen  # the plan lists them by id
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--points", spec, *args)
    assert run.returncode == 0, run.stderr
    assert recorded(run) == [key(plan["points"][i]) for i in order]  # measured in the order given
    assert run.records[-1]["points"] == 2


def test_points_are_measured_in_the_order_given(engine_mpich, mpich_launch):
    args = ["--sizes", "1:512", "pingpong"]  # 10 sizes: ids 0..9, size 2^id
    for spec, ids in [("9,2,5", [9, 2, 5]), ("7-9,0-2", [7, 8, 9, 0, 1, 2]), ("5,3,5,4-6,3", [5, 3, 4, 6])]:
        run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--points", spec, *args)
        assert run.returncode == 0, run.stderr
        assert [p["size"] for p in run.points()] == [1 << i for i in ids], spec
        assert run.records[-1]["points"] == len(ids)


def _interleaved_groups(engine: Path, launch, ranks: int, npmin: int) -> None:
    """Ids of both --npmin groups in alternating order: each run of one group's ids
    is measured on that group's communicator, and the records are those of the plan."""
    args = ["--npmin", str(npmin), "--sizes", "8", "allreduce", "memcpy", "pingpong"]
    plan = plan_of(engine, ranks, *args)["points"]
    small = [p["id"] for p in plan if p["ranks"] == npmin]
    whole = [p["id"] for p in plan if p["ranks"] == ranks]
    assert len(small) == len(whole) == 3
    order = [whole[0], small[0], whole[2], small[2], small[1], whole[1]]
    run = run_engine(launch(ranks), engine, *QUICK, "--points", ",".join(map(str, order)), *args)
    assert run.returncode == 0, run.stderr
    assert recorded(run) == [key(plan[i]) for i in order]
    for p in run.points():
        assert len(p["rank_cpus"]) == p["ranks"]
        if p["benchmark"] == "allreduce":
            assert p["participants"] == list(range(p["ranks"]))
    measured = [i for i in order if "skip" not in plan[i]]
    assert run.records[-1]["points"] == len(measured)


def test_points_go_back_and_forth_between_npmin_groups_mpich(engine_mpich, mpich_launch):
    # groups of 1 and 2 ranks: pingpong is a skip on one rank
    _interleaved_groups(engine_mpich, mpich_launch, 2, 1)


def test_points_go_back_and_forth_between_npmin_groups_openmpi(engine_openmpi, openmpi_launch):
    _interleaved_groups(engine_openmpi, openmpi_launch, 4, 2)


def test_points_from_a_file(engine_mpich, mpich_launch, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("0\n  2,3\n\n5-6, 9\n")
    args = ["--sizes", "1:512", "pingpong"]  # 10 sizes: ids 0..9
    plan = plan_of(engine_mpich, 2, "--points", f"@{ids}", *args)
    assert [p["id"] for p in plan["points"]] == [0, 2, 3, 5, 6, 9]
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--points", f"@{ids}", *args)
    assert run.returncode == 0, run.stderr
    assert [p["size"] for p in run.points()] == [1, 4, 8, 32, 64, 512]
    # a thousand ids need no long argv
    ids.write_text("\n".join(str(i) for i in range(0, 2000, 2)))
    plan = plan_of(engine_mpich, 2, "--points", f"@{ids}", "--sizes", "0:1999:+1", "memcpy")
    assert [p["size"] for p in plan["points"]] == list(range(0, 2000, 2))


@pytest.mark.parametrize("spec, message", [
    ("", "--points expects point ids and ranges"),
    ("x", "'x' is not a point id"),
    ("1,,2", "empty item"),
    ("1,", "ends with a comma"),
    (",1", "empty item"),
    ("-3", "'-3' is not a point id"),
    ("9-5", "range 9-5 is empty"),
    ("1 2", "'1 2' is not a point id"),
    ("99999999999999999999", "is not a point id"),
    ("@", "needs a file name"),
    ("@/nonexistent/ids", "cannot read '/nonexistent/ids'"),
])
def test_bad_points_are_one_line_errors_before_mpi(engine_mpich, mpich_launch, spec, message):
    line = plan_error(engine_mpich, "--plan", "--ranks", "2", "--points", spec, "pingpong")
    assert message in line
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--points", spec, "pingpong", timeout=60)
    assert run.returncode == 2 and run.records == []
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("mpiscope-engine: error:")]
    assert len(errors) == 1 and message in errors[0], run.stderr


def test_points_beyond_the_plan(engine_mpich, mpich_launch):
    args = ["--sizes", "1,8", "pingpong", "bw"]  # 4 points
    message = "--points: id 57 is beyond the plan's 4 points (ids 0-3; `--plan --ranks 2` lists them)"
    assert message in plan_error(engine_mpich, "--plan", "--ranks", "2", "--points", "0,3-57", *args)
    run = run_engine(mpich_launch(2), engine_mpich, *QUICK, "--points", "0,3-57", *args, timeout=60)
    assert run.returncode == 2 and run.records == []
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("mpiscope-engine: error:")]
    assert errors == [f"mpiscope-engine: error: {message}"], run.stderr


@pytest.mark.parametrize("args, message", [
    (["--plan", "pingpong"], "--plan needs --ranks N: the points depend on the number of ranks"),
    (["--ranks", "2", "pingpong"], "--ranks goes with --plan; a launch takes its ranks from the launcher"),
    (["--plan", "--ranks", "0", "pingpong"], "--ranks expects a whole number from 1 to 16777216"),
    (["--plan", "--ranks", "2"], "no benchmark given"),
    (["--plan", "--ranks", "2", "nosuch"], "unknown benchmark 'nosuch'"),
    (["--plan", "--ranks", "2", "--reps", "0", "pingpong"], "--reps expects"),
    (["--plan", "--ranks", "4", "--grid", "2x3", "grid"], "--grid 2x3 needs 6 ranks, this job has 4"),
    (["--plan", "--ranks", "4", "--order", "0,1,2", "grid"], "--order needs every rank from 0 to 3 exactly once"),
    (["--plan", "--ranks", "4", "--order", "0,1,2,7", "grid"], "--order needs every rank from 0 to 3 exactly once"),
    (["--plan", "--ranks", "2", "--sizes", "12", "ringcs1"], "moves 8-byte doubles"),
])
def test_plan_errors(engine_mpich, args, message):
    assert message in plan_error(engine_mpich, *args)


@pytest.mark.parametrize("sizes, units", [
    ("2147483647G", "words"),
    ("2147483647G", "bytes"),
    ("268435456", "words"),
    ("2048M", "bytes"),
    ("9223372036854775807", "bytes"),
    ("99999999999999999999999", "bytes"),
    ("1:4G", "bytes"),
    ("1:2147483647K:*2", "words"),
])
def test_sizes_beyond_an_mpi_count_are_errors(engine_mpich, sizes, units):
    line = plan_error(engine_mpich, "--plan", "--ranks", "2", "--sizes", sizes, "--units", units, "pingpong")
    assert "is larger than 2^31-1 bytes, the largest MPI count" in line


@pytest.mark.parametrize("step", ["*0x2", "*inf", "*nan", "*1", "*1.", "*.5", "*1e-1", "*1e7", "*2e", "* 2", "*+2"])
def test_geometric_steps_are_decimal(engine_mpich, step):
    assert "step" in plan_error(engine_mpich, "--plan", "--ranks", "2", "--sizes", f"1:64:{step}", "pingpong")


@pytest.mark.parametrize("sizes, units, expected", [
    ("2147483647", "bytes", [2147483647]),
    ("268435455", "words", [268435455 * 8]),
    ("1:100:*1e1", "bytes", [1, 10, 100]),
    ("1:64:*2.5", "bytes", [1, 3, 8, 20, 50]),
    ("2G:2147483647:*1e6", "bytes", None),  # 2G itself is too large
    ("1:2147483647:+9223372036854775807", "bytes", [1]),
    ("1:16:+9223372036854775807", "words", [8]),
    ("2147483000:2147483647:+256", "bytes", [2147483000, 2147483256, 2147483512]),
    ("1073741824:2147483647:*1.5", "bytes", [1073741824, 1610612736]),
    ("134217727:268435455:+67108864", "words", [134217727 * 8, 201326591 * 8, 268435455 * 8]),
    ("1G:2147483647:2^k-1", "bytes", [1 << 30]),
])
def test_ranges_near_the_limit_do_not_overflow(engine_mpich, sizes, units, expected):
    args = ["--sizes", sizes, "--units", units, "memcpy"]
    if expected is None:
        assert "2^31-1" in plan_error(engine_mpich, "--plan", "--ranks", "1", *args)
    else:
        assert plan_of(engine_mpich, 1, *args)["sizes_bytes"] == expected


def test_timeout_record_names_the_variant(engine_mpich, mpich_launch):
    # grid has three phases: the watchdog allows each the limit
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "4M", "--grid", "2x1", "--timeout", "0.001",
                     "--reps", "100000", "grid", timeout=60)
    assert run.returncode != 0
    timeouts = [r for r in run.records if r["type"] == "timeout"]
    assert timeouts == [{"type": "timeout", "benchmark": "grid", "size": 4 << 20, "ranks": 2, "variant": "2x1",
                         "limit_s": 0.003}]
