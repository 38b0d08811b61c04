"""Silent misconfigurations become warnings: unbound ranks (from a real job's context record)
and CPU frequency scaling (read from a sysfs tree: this VM exposes no cpufreq)."""
from __future__ import annotations

import json

from mpiscope.analysis.checks import governors
from mpiscope.doctor.misconfig import frequency_scaling, unbound_ranks
from mpiscope.records import Context, RankPlace


def test_unbound_ranks_of_a_real_mpich_job_are_named(cli, tmp_path):
    # The MPICH wheel's Hydra does not bind unless asked: its context says so.
    r = cli("run", "-b", "pingpong", "--sizes", "8", "--reps", "5", "--no-progress",
            "--bind-to", "none", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert any("not bound to a core" in w for w in meta["warnings"])
    assert "not bound to a core" in r.stderr


def test_bound_ranks_give_no_warning():
    ctx = Context(world_size=2, ranks=(RankPlace(0, "h", bound=True), RankPlace(1, "h", bound=True)))
    assert unbound_ranks(ctx) is None
    loose = Context(world_size=2, ranks=(RankPlace(0, "h", bound=True), RankPlace(1, "h", bound=False)))
    assert "rank(s) 1 " in unbound_ranks(loose)


def _sysfs(root, governor_of: dict[int, str]):
    for cpu, gov in governor_of.items():
        d = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(gov + "\n")


def test_frequency_scaling_is_reported_for_the_cpus_of_local_ranks(tmp_path):
    _sysfs(tmp_path, {0: "powersave", 1: "performance", 2: "schedutil"})
    ctx = Context(world_size=3, ranks=(RankPlace(0, "h", (0,)), RankPlace(1, "h", (1,)), RankPlace(2, "other", (2,))))
    assert governors([0, 1, 2], tmp_path) == {"powersave": [0], "performance": [1], "schedutil": [2]}
    w = frequency_scaling(ctx, tmp_path, hostname="h")
    assert "'powersave'" in w and "CPU(s) 0 " in w and "schedutil" not in w  # cpu 2 is another host's
    _sysfs(tmp_path / "steady", {0: "performance"})
    assert frequency_scaling(ctx, tmp_path / "steady", hostname="h") is None
    assert frequency_scaling(ctx, tmp_path / "none", hostname="h") is None  # no cpufreq: nothing to say
