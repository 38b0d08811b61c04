"""Batch submission: one sbatch script per measurement, each running `mpiscope batch-run`
inside its allocation, so the results land in the same run store as interactive runs.

The measurement (its parts, factors and sweep reference) is saved as JSON beside its script:
the job needs no command line rebuilt from options, and it launches with srun by default,
since it runs inside the allocation.
"""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from mpiscope.util import bounded
from mpiscope.util.atomic import write_atomic
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.plan.engine import engine_plan
from mpiscope.execute.session import Measurement
from mpiscope.store.runs import SweepDir, SweepEntry, SweepRef
from mpiscope.util.typed import dump, load

BATCH_DIR = "batch"  # under the runs directory: scripts, saved configurations, job logs
MAX_SAVED_BYTES = 256 << 20  # a saved measurement: its parts' plans, a few kB each
START_MARGIN_S = 120  # queue-side start-up: the job's Python, the launcher, MPI_Init on many nodes


# -- a measurement saved for the job -----------------------------------------------------

def save_measurement(m: Measurement, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dump(m), indent=1) + "\n")   # the job reads it, perhaps much later


def load_measurement(path: Path) -> Measurement:
    """A measurement saved for a batch job."""
    try:
        return load(Measurement, bounded.read_json(path, MAX_SAVED_BYTES, "a configuration saved by --submit"),
                    str(path))
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = bounded.why(e) if isinstance(e, (OSError, ValueError)) else bounded.excerpt(str(e), 200)
        raise UsageError(f"{path} is not a configuration saved by --submit ({why}): submit it again") from e


# -- one batch job ----------------------------------------------------------------------------

@dataclass
class BatchJob:
    """What sbatch needs for one configuration, and the command that measures it."""
    name: str
    command: list[str]
    ranks: int
    time_limit_s: float
    log_dir: Path
    workdir: Path
    nodes: int | None = None
    ranks_per_node: int | None = None
    nodelist: list[str] | None = None
    sbatch_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # exported in the script before the command

    @property
    def time_minutes(self) -> int:
        return max(1, math.ceil(self.time_limit_s / 60))

    def script(self) -> str:
        lines = ["#!/bin/bash",
                 "# written by mpiscope --submit slurm: one configuration, measured inside the allocation",
                 f"#SBATCH --job-name={self.name}"]
        if self.nodes:
            lines.append(f"#SBATCH --nodes={self.nodes}")
        lines.append(f"#SBATCH --ntasks={self.ranks}")
        if self.ranks_per_node:
            lines.append(f"#SBATCH --ntasks-per-node={self.ranks_per_node}")
        if self.nodelist:
            lines.append(f"#SBATCH --nodelist={','.join(self.nodelist)}")
        if "\\" in str(self.log_dir):  # sbatch then leaves %j unexpanded: every job would write one file
            raise UsageError(f"cannot name the job log in {str(self.log_dir)!r}: sbatch reads a backslash in "
                             f"--output as 'no %j'; give another --runs-dir")
        output = str(self.log_dir).replace("%", "%%") + "/slurm-%j.out"  # sbatch expands %j, and %x in a name
        lines += [f"#SBATCH --time={self.time_minutes}",
                  f"#SBATCH {sbatch_word('--output=' + output)}",
                  f"#SBATCH {sbatch_word('--chdir=' + str(self.workdir))}"]
        if self.sbatch_args:
            lines.append("#SBATCH " + " ".join(map(sbatch_word, self.sbatch_args)))
        lines += [f"export {k}={shlex.quote(v)}" for k, v in self.env.items()]
        lines.append("exec " + shlex.join(self.command))
        return "\n".join(lines) + "\n"


def sbatch_word(value: str) -> str:
    """`value` as one word of an `#SBATCH` line: in double quotes, where sbatch (22.05) keeps blanks,
    `#` and `'` and takes `\\"` and `\\\\` for `"` and `\\`. bash ends the comment at a line break, so a
    value holding one cannot be written."""
    if "\n" in value or "\r" in value:
        raise UsageError(f"cannot write {value!r} into a batch script: its line break would end the #SBATCH "
                         f"line and start a command; rename the directory, or give another --runs-dir or "
                         f"--sbatch-args")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _nodes(m: Measurement) -> int | None:
    p = m.parts[0].placement
    if p.nodes:
        return p.nodes
    if p.hosts:
        return len(p.hosts)
    if p.ranks_per_node:
        return math.ceil(max(part.plan.ranks for part in m.parts) / p.ranks_per_node)
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"


def batch_job(m: Measurement, runs_dir: Path, name: str, sbatch_args: list[str] | None = None) -> tuple[BatchJob, Path]:
    """The job for `m` and where its saved measurement goes. Time limit: the parts' own
    wall-clock limits (every point at its cap, with slack) plus start-up; tasks: the largest
    part."""
    runs_dir = runs_dir.resolve()
    batch = runs_dir / BATCH_DIR
    saved = batch / f"{name}.json"
    env = {k: os.environ[k] for k in ("MPISCOPE_HOME",) if k in os.environ}
    placement = m.parts[0].placement
    plans = [engine_plan(m.target.engine, p.plan) for p in m.parts]
    limit = m.over_launches(sum(planned.wall_limit_s(planned.points) for planned in plans))
    job = BatchJob(name=f"mpiscope-{name}",
                   command=[sys.executable, "-m", "mpiscope", "batch-run", str(saved), "--runs-dir", str(runs_dir)],
                   ranks=max(p.plan.ranks for p in m.parts), time_limit_s=limit + START_MARGIN_S,
                   log_dir=batch, workdir=Path.cwd(), nodes=_nodes(m), ranks_per_node=placement.ranks_per_node,
                   nodelist=[h.split(":")[0] for h in placement.hosts] if placement.hosts else None,
                   sbatch_args=list(sbatch_args or []), env=env)
    return job, saved


def job_names(ms: list[Measurement]) -> list[str]:
    """Unique, sortable names: a time stamp, the configuration's index, its factors."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = []
    for i, m in enumerate(ms):
        what = "-".join(f"{k}{v}" for k, v in m.factors.items() if not isinstance(v, (list, dict)))
        out.append(_slug(f"{stamp}-{i:03d}" + (f"-{what}" if what else "")))
    return out


# -- submitting ---------------------------------------------------------------------------------

def sbatch(script: Path) -> int:
    exe = shutil.which("sbatch")
    if exe is None:
        raise UsageError("--submit slurm: no `sbatch` on PATH; load the Slurm module, or run without --submit")
    try:
        done = subprocess.run([exe, "--parsable", str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise MpiscopeError(f"sbatch {script} did not answer in 120 s: check the Slurm controller (`sinfo`)") from e
    if done.returncode != 0:
        raise MpiscopeError(f"sbatch refused {script}: {done.stderr.strip()}: fix the job's size or "
                            f"--sbatch-args (the script is kept)")
    return int(done.stdout.strip().split(";")[0])


def submit(ms: list[Measurement], runs_dir: Path, console: Console, dry_run: bool = False,
           sbatch_args: list[str] | None = None, names: list[str] | None = None) -> list[int]:
    """One batch job per measurement; returns the job ids (none on a dry run, which prints the
    scripts and writes nothing)."""
    ids = []
    names = names or job_names(ms)
    for m, name in zip(ms, names):
        job, saved = batch_job(m, runs_dir, name, sbatch_args)
        text = job.script()
        if dry_run:
            console.print(f"# --- {job.name} (dry run: not written, not submitted)", markup=False, soft_wrap=True)
            console.print(text, markup=False, end="", soft_wrap=True, highlight=False)
            continue
        save_measurement(m, saved)
        script = saved.with_suffix(".sbatch")
        write_atomic(script, text)
        job_id = sbatch(script)
        ids.append(job_id)
        console.print(f"submitted batch job {job_id}: {script} (log {job.log_dir}/slurm-{job_id}.out)",
                      markup=False, soft_wrap=True)
    if ids:
        console.print(f"results will be in {runs_dir.resolve()} (`mpiscope runs`); `squeue -j "
                      f"{','.join(map(str, ids))}` shows the jobs", markup=False, soft_wrap=True)
    return ids


def submit_sweep(spec, configs: list, planned: list, runs_dir: Path, spec_path: Path, console: Console, *,
                 resume: bool = False, dry_run: bool = False, sbatch_args: list[str] | None = None) -> int:
    """`mpiscope sweep SPEC --submit slurm`: one job per configuration (its run makes its
    launches), each logged in the sweep directory when it finishes (so `mpiscope table` and
    `--resume` work as for an interactive sweep); with --resume only those not finished yet."""
    from mpiscope.execute.sweep import create_sweep_dir, open_for_resume
    done: dict = {}
    sd = None
    if dry_run:
        pass
    elif resume:
        sd = open_for_resume(runs_dir, spec, configs)
        done = sd.finished()
    else:
        sd = create_sweep_dir(runs_dir, spec, configs, spec.launches, spec_path)
    todo = [(c, m, 1) for c, m in planned if (c.id, 1) not in done]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    names = [_slug(f"{spec.name}-{stamp}-{c.id}-{k}") for c, _, k in todo]
    ms = [replace(m, sweep=SweepRef(spec.name, c.id, k, str(sd.path.resolve()) if sd else None)) for c, m, k in todo]
    ids = submit(ms, runs_dir, console, dry_run=dry_run, sbatch_args=sbatch_args, names=names)
    if sd is not None:
        for (c, _, k), job_id in zip(todo, ids):
            sd.log(SweepEntry(c.id, k, event="submitted", job=job_id))
        console.print(f"sweep '{spec.name}': {len(ids)} job(s) submitted, logged in {sd.path}; when they are done "
                      f"`mpiscope table {sd.path}` shows the results", markup=False, soft_wrap=True)
    return 0


def log_to_sweep(sweep: SweepRef | None, run_id: str | None, status: str, error: str | None) -> None:
    """A batch job of a sweep records its launch as finished, as an interactive sweep does."""
    if sweep is not None and sweep.dir:
        SweepDir(Path(sweep.dir)).log(SweepEntry(sweep.config, sweep.launch, run=run_id, status=status, error=error))

