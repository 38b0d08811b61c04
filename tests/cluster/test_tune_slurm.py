"""`mpiscope tune --launcher srun` under a real (local) Slurm, as `run` launches there: every
launch of the tune (the liveness check, the race) is one srun job of the tune's ranks with the
PMI the library speaks, and the tune ends with its file."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from mpiscope.store.runs import Run


def test_tune_launches_through_srun(slurm_cluster, mpiscope_home, tmp_path):
    runs = tmp_path / "runs"
    r = slurm_cluster.run([sys.executable, "-m", "mpiscope", "tune", "allreduce", "--launcher", "srun",
                           "--runs-dir", str(runs), "--sizes", "8,64K", "--algorithms", "allreduce=ring",
                           "--rounds", "2", "--live-launches", "2", "--verify-launches", "2",
                           "--verify-max-launches", "2", "--max-time", "0.05", "--no-progress"],
                          cwd=tmp_path, timeout=900)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    (directory,) = runs.glob("tune-*")
    res = json.loads((directory / "tune.json").read_text())
    runs_of_tune = [Run(Path(p)) for p in {row["run"] for row in res["liveness"]} | {res.get("race_run")} if p]
    assert runs_of_tune
    for run in runs_of_tune:
        meta = run.meta()
        argv = meta.launcher_command
        assert Path(argv[0]).name == "srun" and "--mpi=pmi2" in argv, argv
        contexts = run.records().contexts
        assert contexts and all(c.world_size == 2 for c in contexts)  # one job of 2 ranks a launch
    assert Path(res["file"]).is_file()
