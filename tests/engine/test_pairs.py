"""The pairs benchmark on the real engine (Open MPI, 4 and 6 ranks on a 2-core
machine): complete square matrices per mode, the one-pair map symmetric, the
bandwidth matrix consistent with the times, every shifted ring checked."""
from __future__ import annotations

import pytest

from conftest import run_engine

QUICK = ["--max-time", "0.02", "--min-reps", "4", "--warmup", "2", "--warmup-bytes", "0"]


@pytest.mark.parametrize("ranks", [4, 6])
def test_pair_matrices_are_complete_and_square(engine_openmpi, openmpi_launch, ranks):
    run = run_engine(openmpi_launch(ranks), engine_openmpi, "--sizes", "8,8192", "--check", *QUICK, "pairs")
    assert run.returncode == 0, run.stderr
    points = run.points("pairs")
    assert [p["size"] for p in points] == [8, 8192]
    for p in points:
        # phase 0 runs every shift: each rank receives ranks-1 messages
        assert p["check"] == {"errors": 0, "verified_bytes": ranks * (ranks - 1) * p["size"] * 3}
        assert set(p["pair_map"]) >= {"one_pair", "rings"}
        for mode in ("one_pair", "rings"):
            us, mbps = p["pair_map"][mode]["matrix_us"], p["pair_map"][mode]["matrix_MBps"]
            assert len(us) == len(mbps) == ranks
            for a in range(ranks):
                assert len(us[a]) == len(mbps[a]) == ranks
                for b in range(ranks):
                    if a == b:
                        assert us[a][b] is None and mbps[a][b] is None
                    else:
                        assert us[a][b] > 0, (mode, a, b)
                        assert mbps[a][b] == pytest.approx(p["size"] / us[a][b], rel=1e-6)
        one = p["pair_map"]["one_pair"]["matrix_us"]
        assert all(one[a][b] == one[b][a] for a in range(ranks) for b in range(ranks))


def test_pairs_on_one_rank_is_refused(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(1), engine_openmpi, "--sizes", "8", *QUICK, "pairs")
    assert run.returncode == 2 and not run.points()
    assert "pairs needs at least 2 ranks" in run.stderr


def test_pairs_follow_the_order_option(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--order", "3,2,1,0", "--sizes", "64", *QUICK, "pairs")
    assert run.returncode == 0, run.stderr
    assert [r["launch_rank"] for r in run.context["ranks"]] == [3, 2, 1, 0]
    (p,) = run.points()
    assert p["order"] == "list" and len(p["pair_map"]["rings"]["matrix_us"]) == 4


def test_pairs_command_prints_the_maps_and_slowest_pairs(cli, openmpi_prefix, tmp_path):
    runs = str(tmp_path / "runs")
    r = cli("run", "--runs-dir", runs, "--mpi", "openmpi", "-n", "4", "-b", "pairs", "--sizes", "8,4K",
            "--max-time", "0.02", "--no-progress", "--no-report")
    assert r.returncode == 0, r.stderr
    shown = cli("pairs", "--runs-dir", runs, "latest", "--size", "4096", "--top", "2")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "4 KiB, one pair at a time" in text and "4 KiB, all pairs at once" in text and "8 B," not in text
    # two slowest per map: each one-pair pair once (a <-> b), ring pairs by direction
    slow = [ln for ln in text.splitlines() if ln.strip().startswith("slow:")]
    assert len(slow) == 4 and sum("<->" in ln for ln in slow) == 2 and all("x the median pair" in ln for ln in slow)
    missing = cli("pairs", "--runs-dir", runs, "latest", "--top", "0")
    assert missing.returncode == 2 and missing.stderr.startswith("mpiscope: error: --top")
