"""`mpiscope study grid` end to end: the real engine under Open MPI's mpirun with 4
ranks, every shape under block and cyclic ordering, the comparison table best first."""
from __future__ import annotations

import re

from mpiscope.analysis.grid import ranking
from mpiscope.results.table import tidy
from mpiscope.store.runs import resolve


def test_study_prints_every_shape_and_order_best_first(cli, openmpi_prefix, tmp_path):
    runs = tmp_path / "runs"
    r = cli("study", "grid", "--runs-dir", str(runs), "--mpi", "openmpi", "-n", "4", "--sizes", "64,4K",
            "--max-time", "0.02", "--no-progress")
    assert r.returncode == 0, r.stderr
    run = resolve("latest", runs)
    rows = ranking(tidy([run]))
    assert sorted(zip(rows["size"], rows["shape"], rows["order"])) == sorted(
        (size, shape, order) for size in (64, 4096) for shape in ("1x4", "2x2", "4x1")
        for order in ("block", "cyclic"))
    for size, group in rows.groupby("size"):
        steps = list(group["step_us"])
        assert steps == sorted(steps) and len(group) == 6
    # the printed tables follow the same ranking: shape and order columns, in order
    for title, size in (("64 B panel", 64), ("4 KiB panel", 4096)):
        block = r.stdout.split(title, 1)[1].split("panel", 1)[0]
        printed = re.findall(r"│ (\dx\d)\s+│ (block|cyclic)", block)
        group = rows[rows["size"] == size]
        assert printed == list(zip(group["shape"], group["order"]))


def test_study_refuses_bad_input_in_one_line(cli_offline, tmp_path):
    r = cli_offline("study", "grid", "--runs-dir", str(tmp_path), "--sizes", "64", "--max-time", "-1")
    assert r.returncode == 2 and r.stderr.startswith("mpiscope: error: --max-time")
    assert "Traceback" not in r.stderr


def test_auto_launches_of_a_study_measure_again_the_points_still_too_wide(cli, openmpi_prefix, tmp_path):
    """A study's records say more than its parts (their rank order): the points still wider
    than the target must still be found in the parts, so the run goes on launching or ends
    for a reason it names (before, it stopped after the first round without one)."""
    runs = tmp_path / "runs"
    r = cli("study", "grid", "--runs-dir", str(runs), "--mpi", "openmpi", "-n", "4", "--sizes", "64",
            "--max-time", "0.02", "--launches", "auto", "--launch-target", "0.001",
            "--no-progress", env={"MPISCOPE_LAUNCHES": "auto"})
    assert r.returncode == 0, r.stderr
    policy = resolve("latest", runs).meta().extra["launch_policy"]
    # four ranks on two cores: where the launches stay disturbed, more cannot narrow them, and the
    # run ends saying so (plan.schedule.still_busy) instead of launching on
    assert policy["launches"] > 3 or "on a busy machine" in policy["stopped"], policy
    assert "match no part" not in policy["stopped"] and policy["stopped"], policy
