"""The startup family (osu_init, osu_hello) on the real engine: one sample per
rank per launch, handed to the timing core (n = 1, no warm-up), the figure the
slowest rank's, the record every rank's own time and their spread; several
launches through `mpiscope run` give the launch-level statistics."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_engine
from mpiscope_test_fixtures.synthetic import records_of

ROWS = ["init", "hello"]


def check_startup(run, ranks: int) -> None:
    assert run.returncode == 0, run.stderr
    by_name = {p["benchmark"]: p for p in run.points()}
    assert sorted(by_name) == sorted(ROWS)
    for name, p in by_name.items():
        assert p["family"] == "startup" and p["ranks"] == ranks and p["size"] == 0
        assert p["time_us"]["n"] == 1 and p["stop_reason"] == "once" and p["warmup"] == 0
        assert p["sample_from"] == "max_over_ranks" and not p["converged"]
        s = p["startup"]
        assert s["samples_per_rank"] == 1 and len(s["rank_ms"]) == ranks and all(t > 0 for t in s["rank_ms"])
        assert s["min_ms"] == min(s["rank_ms"]) and s["max_ms"] == max(s["rank_ms"])
        assert s["avg_ms"] == pytest.approx(sum(s["rank_ms"]) / ranks)
        # the point's one sample is the slowest rank's
        assert p["time_us"]["median"] == pytest.approx(s["max_ms"] * 1e3, rel=1e-6)
        assert p["check"] == {"errors": 0, "verified_bytes": 0}  # nothing moves
    # hello is MPI_Init and a barrier after it: on every rank at least MPI_Init's time
    init, hello = by_name["init"]["startup"]["rank_ms"], by_name["hello"]["startup"]["rank_ms"]
    assert all(h >= i for h, i in zip(hello, init))
    assert by_name["init"]["startup"]["measures"] == "MPI_Init"


def test_one_and_two_ranks_mpich(engine_mpich, mpich_launch):
    for ranks in (1, 2):
        check_startup(run_engine(mpich_launch(ranks), engine_mpich, "--check", *ROWS), ranks)


def test_four_ranks_openmpi(engine_openmpi, openmpi_launch):
    check_startup(run_engine(openmpi_launch(4), engine_openmpi, "--check", "--sizes", "8,64", *ROWS), 4)


def test_listed_as_sizeless_and_one_sample(engine_mpich):
    rows = {r["name"]: r for r in json.loads(run_engine([], engine_mpich, "--list", "--json").stdout)}
    assert all(rows[n]["family"] == "startup" and rows[n]["sizeless"] and rows[n]["min_ranks"] == 1 for n in ROWS)


def test_launches_give_launch_level_statistics(cli, tmp_path):
    runs = tmp_path / "runs"
    r = cli("run", "--runs-dir", str(runs), "-n", "2", "-b", "init,hello", "--launches", "3", "--no-progress",
            "--no-report")
    assert r.returncode == 0, r.stderr
    (run_dir,) = [p for p in Path(runs).iterdir() if p.is_dir()]
    records = records_of(run_dir)
    contexts = [x for x in records if x["type"] == "context"]
    points = [x for x in records if x["type"] == "point"]
    assert len(contexts) == 3 and len({c["ranks"][0]["pid"] for c in contexts}) == 3  # three processes started
    assert sorted(p["benchmark"] for p in points) == ["hello"] * 3 + ["init"] * 3
    assert all(p["time_us"]["n"] == 1 for p in points)
    rows = [ln for ln in r.stdout.splitlines() if ln.strip("│ ").startswith(("init", "hello"))]
    assert len(rows) == 2 and all(" 3 " in ln for ln in rows)  # each estimated from its 3 launches
    assert "not converged" not in r.stdout and "did not converge" not in r.stdout  # one sample is by design
