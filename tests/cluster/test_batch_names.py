"""Issue 47: a batch script's #SBATCH lines read by a real sbatch. A log and working directory
named with blanks, quotes, '#', '%' and shell forms reach sbatch as the very paths they are: the
job runs in that directory, its log lands there, and nothing the names say is run."""
from __future__ import annotations

from pathlib import Path

from mpiscope.execute.submit import BatchJob

ODD = "a b 'c' \"d\" #e %f $(touch {m}1) `touch {m}2`; touch {m}3"


def test_sbatch_reads_the_escaped_paths_as_they_are(slurm_cluster, tmp_path):
    odd = tmp_path / ODD.format(m=tmp_path / "marker")
    odd.mkdir(parents=True)
    job = BatchJob(name="mpiscope-names", command=["sh", "-c", 'pwd > where; echo logged'], ranks=1,
                   time_limit_s=60, log_dir=odd, workdir=odd)
    job_id = slurm_cluster.sbatch(job.script(), cwd=tmp_path)
    state = slurm_cluster.wait_job(job_id, timeout=60)
    log = odd / f"slurm-{job_id}.out"
    assert state == "COMPLETED", f"job {job_id} {state}\n{slurm_cluster.logs()}"
    assert log.read_text().strip() == "logged"
    assert Path((odd / "where").read_text().strip()) == odd
    assert not list(tmp_path.glob("marker*"))
